package results

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/atomicfile"
)

// Turn is one row of turns.parquet: one step of an agentic sample's
// trajectory (an agent.Turn), keyed like Row, with the sample's outcome.
//
// The shape answers the questions analysts ask of trajectories with plain
// SQL. A tool turn carries its call's name, id and arguments, so that
// `GROUP BY tool_name` over `role = 'tool'` counts calls, errors and
// truncations per tool, one row per call; the assistant turn that made the
// calls keeps them in order as a JSON list (ToolCalls), which is what an
// export to ATIF reads. The sample's agent outcome is on every row, so
// that turns.parquet alone answers "how did samples end" (the row's
// results.parquet outcome is coarser: scored, model_error, infra_error).
type Turn struct {
	RecipeHash string
	Benchmark  string
	ItemID     string
	ItemIdx    int64
	Repeat     int64
	// Shard is the index of the shard that ran the sample.
	Shard int64
	// TurnIndex is the turn's agent.Turn.Index (0-based, in conversation
	// order); RoleNone's row has 0.
	TurnIndex int64
	// Role is "assistant", "tool", or RoleNone.
	Role string
	// Content is the turn's text, or "" when it is longer than
	// MaxInlineContent bytes: ContentSHA256 then holds its digest.
	// ContentBytes is its length in bytes either way.
	Content       string
	ContentBytes  int64
	ContentSHA256 string
	// Reasoning is kept whole, as in trajectories.parquet: it is the
	// model's own text, which analyses of a trajectory read.
	Reasoning string
	// ToolCalls is an assistant turn's calls as a JSON list of
	// {"id", "name", "arguments"} (agent.ToolCall), "" when it made none.
	ToolCalls string
	// ToolCallID, ToolName and ToolArguments describe a tool turn's call:
	// the arguments are the JSON text the model sent, as sent.
	ToolCallID    string
	ToolName      string
	ToolArguments string
	IsError       bool
	// OutputChars is a tool output's length before truncation.
	OutputChars      int64
	Truncated        bool
	LatencyMS        float64
	PromptTokens     int64
	CompletionTokens int64
	FinishReason     string
	// Outcome is the sample's agent.Outcome.
	Outcome string
	// Model is the sample's served model id (Row.Model). Files written
	// before the column existed read back with it empty.
	Model string
}

// RoleNone marks the one row of a sample that ended before its first turn
// (its endpoint or sandbox failed at once): the row keeps the sample and
// its outcome in turns.parquet, so that outcome counts over the file see
// every sample. Turn counts leave it out (role != 'none').
const RoleNone = "none"

// MaxInlineContent is the longest content, in bytes, a turn keeps inline:
// 64 KiB holds any model message and the tool outputs a sane
// max_output_chars lets through, while a file dump that escaped
// truncation (max_output_chars: 0) is kept as its digest and length, not
// copied into every analysis of the run. The full text of what the model
// saw is in the sandbox's logs, not here.
const MaxInlineContent = 64 << 10

// TurnsOf returns the turns.parquet rows of one sample: the row's keys,
// the shard index, its turns in order and how it ended. A sample without
// turns gets one RoleNone row. The shard calls it once per finished
// sample.
func TurnsOf(row Row, shard int, turns []agent.Turn, outcome agent.Outcome) []Turn {
	base := Turn{
		RecipeHash: row.RecipeHash, Benchmark: row.Benchmark, ItemID: row.ItemID,
		ItemIdx: row.ItemIdx, Repeat: row.Repeat, Shard: int64(shard), Outcome: string(outcome), Model: row.Model,
	}
	if len(turns) == 0 {
		base.Role = RoleNone
		return []Turn{base}
	}
	// A tool turn's arguments are those of the call it answers, in the
	// latest assistant turn before it (endpoints reuse ids across turns).
	args := map[string]string{}
	out := make([]Turn, len(turns))
	for i, t := range turns {
		r := base
		r.TurnIndex, r.Role, r.Reasoning = int64(t.Index), t.Role, t.Reasoning
		r.Content, r.ContentBytes = t.Content, int64(len(t.Content))
		if len(t.Content) > MaxInlineContent {
			sum := sha256.Sum256([]byte(t.Content))
			r.Content, r.ContentSHA256 = "", "sha256:"+hex.EncodeToString(sum[:])
		}
		for _, c := range t.ToolCalls {
			args[c.ID] = c.Arguments
		}
		if len(t.ToolCalls) > 0 {
			// Marshalling strings and a fixed struct cannot fail.
			b, _ := json.Marshal(t.ToolCalls)
			r.ToolCalls = string(b)
		}
		r.ToolCallID, r.ToolName, r.ToolArguments = t.ToolCallID, t.ToolName, args[t.ToolCallID]
		if t.ToolCallID == "" {
			r.ToolArguments = ""
		}
		r.IsError, r.OutputChars, r.Truncated = t.IsError, int64(t.OutputChars), t.Truncated
		r.LatencyMS, r.FinishReason = t.LatencyMS, t.FinishReason
		r.PromptTokens, r.CompletionTokens = int64(t.PromptTokens), int64(t.CompletionTokens)
		out[i] = r
	}
	return out
}

// AgentTurns returns rows (one sample's, in order) as the agent.Turns they
// were made from; a RoleNone row gives none. Content kept as a digest
// comes back empty.
func AgentTurns(rows []Turn) ([]agent.Turn, error) {
	var out []agent.Turn
	for _, r := range rows {
		if r.Role == RoleNone {
			continue
		}
		t := agent.Turn{
			Index: int(r.TurnIndex), Role: r.Role, Content: r.Content, Reasoning: r.Reasoning,
			ToolCallID: r.ToolCallID, ToolName: r.ToolName, IsError: r.IsError,
			OutputChars: int(r.OutputChars), Truncated: r.Truncated, LatencyMS: r.LatencyMS,
			PromptTokens: int(r.PromptTokens), CompletionTokens: int(r.CompletionTokens),
			FinishReason: r.FinishReason,
		}
		if r.ToolCalls != "" {
			if err := json.Unmarshal([]byte(r.ToolCalls), &t.ToolCalls); err != nil {
				return nil, fmt.Errorf("item %s repeat %d turn %d: tool_calls: %w", r.ItemID, r.Repeat, r.TurnIndex, err)
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// WriteTurns writes turns to path like WriteRows, one column per Turn
// field. An empty turns writes a valid file with no rows. A shard of an
// agentic benchmark writes its file (rundir.Shard.Turns) before its
// results file, which marks the shard complete; merge concatenates the
// shards' files into turns.parquet.
func WriteTurns(path string, turns []Turn, meta map[string]string) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		return encodeParallel(w, turnFields(), turns, meta)
	})
}

// ReadTurns reads a file written by WriteTurns (or merged from such files).
func ReadTurns(path string) ([]Turn, map[string]string, error) {
	return readFile(path, turnFields(), nil, false)
}

// ReadTurnColumns reads only the named columns of a turns file (e.g.
// "item_id", "role", "tool_name"), as ReadTrajectoryColumns does for
// trajectories: the audit needs none of the text.
func ReadTurnColumns(path string, buf []Turn, columns ...string) ([]Turn, map[string]string, error) {
	return readColumns(path, turnFields(), buf, columns)
}

// turnFields is the turns.parquet schema: Turn's fields in order.
func turnFields() []field[Turn] {
	return []field[Turn]{
		strField("recipe_hash", func(t *Turn) *string { return &t.RecipeHash }),
		strField("benchmark", func(t *Turn) *string { return &t.Benchmark }),
		strField("item_id", func(t *Turn) *string { return &t.ItemID }),
		i64Field("item_idx", func(t *Turn) *int64 { return &t.ItemIdx }),
		i64Field("repeat", func(t *Turn) *int64 { return &t.Repeat }),
		i64Field("shard", func(t *Turn) *int64 { return &t.Shard }),
		i64Field("turn_index", func(t *Turn) *int64 { return &t.TurnIndex }),
		strField("role", func(t *Turn) *string { return &t.Role }),
		strField("content", func(t *Turn) *string { return &t.Content }),
		i64Field("content_bytes", func(t *Turn) *int64 { return &t.ContentBytes }),
		strField("content_sha256", func(t *Turn) *string { return &t.ContentSHA256 }),
		strField("reasoning", func(t *Turn) *string { return &t.Reasoning }),
		strField("tool_calls", func(t *Turn) *string { return &t.ToolCalls }),
		strField("tool_call_id", func(t *Turn) *string { return &t.ToolCallID }),
		strField("tool_name", func(t *Turn) *string { return &t.ToolName }),
		strField("tool_arguments", func(t *Turn) *string { return &t.ToolArguments }),
		boolField("is_error", func(t *Turn) *bool { return &t.IsError }),
		i64Field("output_chars", func(t *Turn) *int64 { return &t.OutputChars }),
		boolField("truncated", func(t *Turn) *bool { return &t.Truncated }),
		f64Field("latency_ms", func(t *Turn) *float64 { return &t.LatencyMS }),
		i64Field("prompt_tokens", func(t *Turn) *int64 { return &t.PromptTokens }),
		i64Field("completion_tokens", func(t *Turn) *int64 { return &t.CompletionTokens }),
		strField("finish_reason", func(t *Turn) *string { return &t.FinishReason }),
		strField("outcome", func(t *Turn) *string { return &t.Outcome }),
		optional(strField("model", func(t *Turn) *string { return &t.Model })),
	}
}
