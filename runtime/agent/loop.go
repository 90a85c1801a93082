package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/intercept"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/plan"
)

// Defaults of the tool_calling solver (NeMo Evaluator's, facts §2.5), and
// of the repeated-call breaker, which NeMo Evaluator does not have.
const (
	DefaultMaxTurns       = 50
	DefaultToolTimeout    = 180 * time.Second
	DefaultMaxOutputChars = 16384
	// DefaultRepeatLimit is 3: an identical call made twice in a row is
	// a fair retry (a flaky command, a poll of a file being written); a
	// third with nothing in between has already been answered twice the
	// same way, and models that reach it loop until the turn budget.
	DefaultRepeatLimit = 3
)

// Response modes: where the sample's answer comes from.
const (
	LastMessage     = "last_message"     // the last assistant message with text
	SandboxArtifact = "sandbox_artifact" // Config.Artifact, read after the model answered
)

// toolGrace is how long past its timeout a tool may take to return once
// its context is done before the loop stops waiting for it.
const toolGrace = 5 * time.Second

// Model is what the loop needs of an endpoint; *model.Client is one.
type Model interface {
	Complete(ctx context.Context, req model.Request) (*model.Response, error)
}

// Config is one tool_calling solver's settings. Zero values take the
// defaults above.
type Config struct {
	MaxTurns       int
	ToolTimeout    time.Duration
	MaxOutputChars int
	// RepeatLimit is how many identical calls (name and arguments) in a
	// row end the sample as RepeatedCall; negative turns the breaker off.
	RepeatLimit int
	// ResponseMode is LastMessage ("" too) or SandboxArtifact.
	ResponseMode string
	// Artifact reads the answer the agent left (SandboxArtifact): called
	// once, after the model answered without a call. Its error is an
	// infrastructure failure; an agent that left nothing is ("", nil).
	Artifact func(ctx context.Context) (string, error)
	// Generation and Seed are sent with every request.
	Generation plan.Generation
	Seed       int64
	Logger     *slog.Logger
	// toolGrace replaces the constant in tests.
	toolGrace time.Duration
}

// Result is how one sample's run went.
type Result struct {
	Outcome Outcome
	// Answer is the final answer (ResponseMode); "" unless Answered.
	Answer string
	Turns  []Turn
	// Err says why a run that did not end Answered ended; for a model
	// failure it is the client's *failure.Error.
	Err error
	// Messages is the conversation as last sent, plus the final answer.
	Messages                       []model.Message
	PromptTokens, CompletionTokens int64
}

// Category is the failure category a result row carries for this run
// (runtime/failure): the client's when the model request failed, else one
// implied by the outcome; None when the run answered.
func (r *Result) Category() failure.Category {
	var f *failure.Error
	switch {
	case errors.Is(r.Err, intercept.ErrTurnBudget):
		// The recipe's turn_counter refused the turn; the client carries
		// that as an api_error, but it is the agent's budget, as max_turns.
		return failure.TurnBudget
	case errors.As(r.Err, &f):
		return f.Category
	case errors.Is(r.Err, context.Canceled):
		return failure.Interrupted // nel was stopped, not the sample
	}
	switch r.Outcome {
	case Answered, Solved, FailedVerifier:
		return failure.None
	case TimeBudget:
		return failure.Timeout
	case ContextOverflow:
		return failure.ContextLength
	case TurnBudget:
		return failure.TurnBudget
	case RepeatedCall:
		return failure.RepeatedCall
	default:
		// InfraError and ToolFailure without a client failure: a tool
		// could not run (the sandbox, a resource server).
		return failure.SandboxError
	}
}

// run is one Run's state.
type run struct {
	cfg   Config
	m     Model
	tools map[string]Tool
	specs []model.Tool
	res   *Result
	// last and repeats count identical calls in a row.
	last    model.ToolCall
	repeats int
}

// Run is the tool-calling loop: it sends messages with the tools' specs,
// executes each call the model makes (parallel calls in the order given)
// and answers it, until the model answers without a call or a budget or
// breaker ends the sample. ctx's deadline is the sample's time budget.
// Its error is a misconfiguration (no tools, two tools of one name); how
// the sample went, failures included, is in the Result.
func Run(ctx context.Context, cfg Config, m Model, tools []Tool, messages []model.Message) (*Result, error) {
	r, err := newRun(cfg, m, tools)
	if err != nil {
		return nil, err
	}
	r.res.Messages = slices.Clone(messages)
	for turn := 0; ; turn++ {
		if turn == r.cfg.MaxTurns {
			return r.end(TurnBudget, fmt.Errorf("max_turns (%d) reached with the model still calling tools", r.cfg.MaxTurns)), nil
		}
		if ctx.Err() != nil {
			return r.end(r.ctxOutcome(ctx), fmt.Errorf("before turn %d: %w", turn+1, ctx.Err())), nil
		}
		resp, err := r.ask(intercept.WithTurn(ctx, turn+1))
		if err != nil {
			return r.end(r.modelOutcome(ctx, err), err), nil
		}
		if len(resp.ToolCalls) == 0 {
			return r.answer(ctx), nil
		}
		for _, call := range resp.ToolCalls {
			if o, err := r.call(ctx, call); o != "" {
				return r.end(o, err), nil
			}
		}
	}
}

func newRun(cfg Config, m Model, tools []Tool) (*run, error) {
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if cfg.ToolTimeout <= 0 {
		cfg.ToolTimeout = DefaultToolTimeout
	}
	if cfg.MaxOutputChars <= 0 {
		cfg.MaxOutputChars = DefaultMaxOutputChars
	}
	if cfg.RepeatLimit == 0 {
		cfg.RepeatLimit = DefaultRepeatLimit
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.toolGrace <= 0 {
		cfg.toolGrace = toolGrace
	}
	switch cfg.ResponseMode {
	case "", LastMessage:
	case SandboxArtifact:
		if cfg.Artifact == nil {
			return nil, errors.New("tool_calling: response_mode sandbox_artifact without a way to read the artifact")
		}
	default:
		return nil, fmt.Errorf("tool_calling: unknown response_mode %q (want %s or %s)", cfg.ResponseMode, LastMessage, SandboxArtifact)
	}
	if len(tools) == 0 {
		return nil, errors.New("tool_calling: no tools to offer")
	}
	r := &run{cfg: cfg, m: m, tools: map[string]Tool{}, res: &Result{}}
	for _, t := range tools {
		s := t.Spec()
		if _, dup := r.tools[s.Name]; dup {
			return nil, fmt.Errorf("tool_calling: two tools are named %q", s.Name)
		}
		r.tools[s.Name] = t
		r.specs = append(r.specs, model.Tool{Name: s.Name, Description: s.Description, Parameters: s.Parameters})
	}
	return r, nil
}

// ask sends the conversation and records the assistant's turn.
func (r *run) ask(ctx context.Context) (*model.Response, error) {
	start := time.Now()
	resp, err := r.m.Complete(ctx, model.Request{Messages: r.res.Messages, Tools: r.specs, Generation: r.cfg.Generation, Seed: r.cfg.Seed})
	if err != nil {
		return nil, err
	}
	r.res.PromptTokens += resp.PromptTokens
	r.res.CompletionTokens += resp.CompletionTokens
	t := Turn{
		Index: len(r.res.Turns), Role: "assistant", Content: resp.Content, Reasoning: resp.Reasoning,
		LatencyMS:    float64(time.Since(start).Microseconds()) / 1000,
		PromptTokens: int(resp.PromptTokens), CompletionTokens: int(resp.CompletionTokens),
		FinishReason: resp.FinishReason,
	}
	for _, c := range resp.ToolCalls {
		t.ToolCalls = append(t.ToolCalls, ToolCall(c))
	}
	r.res.Turns = append(r.res.Turns, t)
	r.res.Messages = append(r.res.Messages, model.Message{Role: "assistant", Content: resp.Content, ToolCalls: resp.ToolCalls})
	return resp, nil
}

// answer ends a run whose model answered without a call.
func (r *run) answer(ctx context.Context) *Result {
	r.res.Outcome = Answered
	if r.cfg.ResponseMode != SandboxArtifact {
		r.res.Answer = lastText(r.res.Messages)
		return r.res
	}
	a, err := r.cfg.Artifact(ctx)
	if err != nil {
		return r.end(InfraError, fmt.Errorf("read the answer the agent left: %w", err))
	}
	r.res.Answer = a
	return r.res
}

// lastText is the last assistant message's text: the final answer, or an
// earlier one when the final message has none (a model that spoke, then
// ended with an empty message).
func lastText(msgs []model.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" && strings.TrimSpace(msgs[i].Content) != "" {
			return msgs[i].Content
		}
	}
	return ""
}

func (r *run) end(o Outcome, err error) *Result {
	r.res.Outcome, r.res.Err, r.res.Answer = o, err, ""
	r.cfg.Logger.Debug("agent run ended", "outcome", o, "turns", len(r.res.Turns), "err", err)
	return r.res
}

// ctxOutcome is the outcome of a run whose ctx ended: the time budget when
// its deadline passed; an infrastructure stop when it was cancelled.
func (r *run) ctxOutcome(ctx context.Context) Outcome {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return TimeBudget
	}
	return InfraError
}

// modelOutcome is the outcome of a failed model request.
func (r *run) modelOutcome(ctx context.Context, err error) Outcome {
	var f *failure.Error
	switch {
	case errors.Is(err, intercept.ErrTurnBudget):
		return TurnBudget
	case errors.As(err, &f) && f.Category == failure.ContextLength:
		return ContextOverflow
	case ctx.Err() != nil:
		return r.ctxOutcome(ctx)
	case errors.As(err, &f) && f.Category.Outcome() == failure.ModelError:
		return ModelError
	default:
		return InfraError
	}
}

// call executes one tool call and appends its answer. A non-empty outcome
// ends the run (err says why).
func (r *run) call(ctx context.Context, c model.ToolCall) (Outcome, error) {
	if r.cfg.RepeatLimit > 0 {
		if c.Name == r.last.Name && c.Arguments == r.last.Arguments && r.repeats > 0 {
			r.repeats++
		} else {
			r.last, r.repeats = c, 1
		}
		if r.repeats >= r.cfg.RepeatLimit {
			return RepeatedCall, fmt.Errorf("the model called %s with the same arguments %d times in a row", c.Name, r.repeats)
		}
	}
	start := time.Now()
	res, o, err := r.execute(ctx, c)
	if o != "" {
		return o, err
	}
	out, n, cut := truncate(res.Output, r.cfg.MaxOutputChars)
	if out == "" {
		// A tool message needs content (vLLM refuses one without); say
		// there was none rather than send nothing.
		out = "(no output)"
	}
	r.res.Turns = append(r.res.Turns, Turn{
		Index: len(r.res.Turns), Role: "tool", Content: out,
		ToolCallID: c.ID, ToolName: c.Name, IsError: res.IsError,
		OutputChars: n, Truncated: cut,
		LatencyMS: float64(time.Since(start).Microseconds()) / 1000,
	})
	r.res.Messages = append(r.res.Messages, model.Message{Role: "tool", Content: out, ToolCallID: c.ID})
	return "", nil
}

// execute runs the call's tool under the tool timeout. Arguments that are
// not a JSON object and unknown tools are answered as tool errors; so is a
// tool that timed out while the sample's budget lasts. A tool's own error
// is an infrastructure failure.
func (r *run) execute(ctx context.Context, c model.ToolCall) (ToolResult, Outcome, error) {
	t, ok := r.tools[c.Name]
	if !ok {
		names := make([]string, 0, len(r.tools))
		for n := range r.tools {
			names = append(names, n)
		}
		slices.Sort(names)
		return ToolResult{IsError: true, Output: fmt.Sprintf("error: there is no tool named %q; the tools are %s",
			c.Name, strings.Join(names, ", "))}, "", nil
	}
	args := json.RawMessage(c.Arguments)
	if strings.TrimSpace(c.Arguments) == "" {
		args = json.RawMessage("{}") // some servers send "" for a call without arguments
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil { // "null" decodes without error
		why := "null"
		if err != nil {
			why = err.Error()
		}
		return ToolResult{IsError: true, Output: fmt.Sprintf("error: the arguments of %s are not a JSON object (%s); nothing was run", c.Name, why)}, "", nil
	}
	tctx, cancel := context.WithTimeout(ctx, r.cfg.ToolTimeout)
	defer cancel()
	type ret struct {
		res ToolResult
		err error
	}
	done := make(chan ret, 1)
	go func() {
		res, err := t.Call(tctx, args)
		done <- ret{res, err}
	}()
	var got ret
	select {
	case got = <-done:
	case <-tctx.Done():
		select {
		case got = <-done:
		case <-time.After(r.cfg.toolGrace):
			// The tool ignores its context: what it still does to the
			// sandbox is unknown, so nothing after it can be trusted.
			return ToolResult{}, ToolFailure, fmt.Errorf("tool %s did not stop %v after its context ended", c.Name, r.cfg.toolGrace)
		}
	}
	switch {
	case ctx.Err() != nil:
		return ToolResult{}, r.ctxOutcome(ctx), fmt.Errorf("tool %s: %w", c.Name, ctx.Err())
	case tctx.Err() != nil:
		return ToolResult{IsError: true, Output: fmt.Sprintf("error: %s timed out after %v", c.Name, r.cfg.ToolTimeout)}, "", nil
	case got.err != nil:
		return ToolResult{}, InfraError, fmt.Errorf("tool %s: %w", c.Name, got.err)
	}
	return got.res, "", nil
}

// truncate cuts s to max characters (code points, as the model's
// context counts text, not bytes), keeping the first max/2 and the last
// max-max/2 with a marker between that says how many were removed. It
// returns the text, s's length in characters and whether it cut.
func truncate(s string, max int) (string, int, bool) {
	if n := utf8.RuneCountInString(s); n <= max {
		return s, n, false
	}
	rs := []rune(s)
	head, tail := max/2, max-max/2
	removed := len(rs) - head - tail
	return string(rs[:head]) + fmt.Sprintf("\n\n[... %d characters removed ...]\n\n", removed) + string(rs[len(rs)-tail:]), len(rs), true
}
