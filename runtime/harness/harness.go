// Package harness reads what a peer evaluation harness wrote (lm-evaluation-
// harness, NeMo-Skills, an eval-factory container, VLMEvalKit, the Harbor CLI) into nel's rows: one row
// per (item, repeat) where the harness logs its samples, and an
// aggregate-only result, with no invented rows, where it writes only
// aggregate scores. nel-run ingest calls it on the node once the harness's
// container has exited; the rows then merge like any shard's.
package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/failure"
)

// Kinds of harness, as the plan names them (plan.Harness.Kind).
const (
	LMEval    = "lm-eval"
	Skills    = "skills"
	Container = "container" // an eval-factory image's run_eval
	// VLMEvalKit is VLMEvalKit's run.py; its task is the dataset.
	VLMEvalKit = "vlmevalkit"
)

// Sample is one (item, repeat) as a harness recorded it, in nel's terms.
type Sample struct {
	// Task is the harness's task (a subtask of a group for lm-eval): the
	// row's category.
	Task string
	// ItemID is a stable content id of the item within the benchmark;
	// ItemIdx the harness's index of it.
	ItemID  string
	ItemIdx int64
	Repeat  int64
	// Prompt is what the model was sent, as the harness logged it ("" when
	// it did not).
	Prompt    string
	Response  string
	Extracted string
	Expected  string
	// Reward is the harness's own verdict on the sample (its first
	// metric); Correct is set when that verdict is binary.
	Reward  float64
	Correct *bool
	// Scores are the harness's other per-sample metrics, by name.
	Scores map[string]float64
	// Record is the harness's whole record of the sample, as JSON: the
	// trajectory's scoring details.
	Record string
	// Error is set when the harness recorded no answer for the sample
	// because the endpoint failed (an infrastructure failure, never a
	// wrong answer).
	Error failure.Category

	// PromptTokens and CompletionTokens are the sample's token totals and
	// LatencyMS its wall-clock time, where the harness records them (the
	// Harbor CLI does, per trial); zero where not.
	PromptTokens, CompletionTokens int64
	LatencyMS                      float64

	// Turns are the agent's turns, for a harness whose agent takes them
	// (the Harbor CLI's, read from its ATIF trajectory); nil for others.
	Turns []agent.Turn

	// trial is the Harbor trial's folder, which orders a task's attempts.
	trial string
}

// Output is what a harness run produced.
type Output struct {
	// Samples are the per-sample results, sorted by item id and repeat;
	// empty when the harness wrote aggregates only.
	Samples []Sample
	// Aggregate are the harness's own aggregate metrics, by name.
	Aggregate map[string]float64
	// Primary names the aggregate metric that is the headline of an
	// aggregate-only result.
	Primary string
	// Files are the harness's files the output was read from, relative
	// to the harness's folder.
	Files []string
}

// AggregateOnly reports whether the harness wrote no per-sample results.
func (o *Output) AggregateOnly() bool { return len(o.Samples) == 0 }

// Read reads the output of harness kind from dir, the folder the harness
// wrote into (its --output_path, --output_dir or /results).
func Read(kind, dir string) (*Output, error) { return ReadTask(kind, "", dir) }

// ReadTask is Read for a kind whose files are named by its task
// (VLMEvalKit's, by the dataset).
func ReadTask(kind, task, dir string) (*Output, error) {
	var (
		o   *Output
		err error
	)
	switch kind {
	case VLMEvalKit:
		o, err = ReadVLMEvalKit(dir, task)
	case LMEval:
		o, err = ReadLMEval(dir)
	case Skills:
		o, err = ReadSkills(dir)
	case Container:
		o, err = ReadEvalFactory(dir)
	case Harbor:
		o, err = ReadHarbor(dir)
	default:
		return nil, fmt.Errorf("unknown harness %q (expected %s, %s, %s, %s or %s)", kind, LMEval, Skills, Container, VLMEvalKit, Harbor)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s output in %s: %w", kind, dir, err)
	}
	sortSamples(o.Samples)
	return o, nil
}

func sortSamples(s []Sample) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].ItemID != s[j].ItemID {
			return s[i].ItemID < s[j].ItemID
		}
		return s[i].Repeat < s[j].Repeat
	})
}

// number converts a JSON metric value (a number or a bool) to float64.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// binary returns a pointer to the verdict when x is 0 or 1.
func binary(x float64) *bool {
	if x != 0 && x != 1 {
		return nil
	}
	b := x == 1
	return &b
}

// firstString is the first string in v, looking into nested lists: lm-eval
// logs a response as "text", ["text"] or [["text"]] depending on its
// version and the task's output type.
func firstString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		if len(v) > 0 {
			return firstString(v[0])
		}
	}
	return ""
}

// eachJSONL calls f with every non-blank line of the JSON Lines file at
// path, decoded, and its line number; an error names the file and line.
func eachJSONL(path string, f func(line int, raw []byte, rec map[string]any) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30) // a long generation is one line
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if err := f(line, sc.Bytes(), rec); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
