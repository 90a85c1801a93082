package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/sandbox"
	"github.com/nel-eval/nel/runtime/sim"
)

// fakeTool is an in-memory tool: it answers with out(args) and records
// every call in a log shared by the test's tools, so order is visible.
type fakeTool struct {
	name string
	out  func(ctx context.Context, args json.RawMessage) (ToolResult, error)
	log  *callLog
}

type callLog struct {
	mu    sync.Mutex
	calls []string // "name args"
}

func (l *callLog) add(s string) { l.mu.Lock(); l.calls = append(l.calls, s); l.mu.Unlock() }

func (l *callLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

func (t *fakeTool) Spec() ToolSpec {
	return ToolSpec{Name: t.name, Description: "a test tool", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (t *fakeTool) Call(ctx context.Context, args json.RawMessage) (ToolResult, error) {
	t.log.add(t.name + " " + string(args))
	return t.out(ctx, args)
}

// echo answers with its arguments.
func echo(name string, log *callLog) *fakeTool {
	return &fakeTool{name: name, log: log, out: func(_ context.Context, a json.RawMessage) (ToolResult, error) {
		return ToolResult{Output: name + " got " + string(a)}, nil
	}}
}

// simModel serves scripts from the simulator over HTTP and returns a real
// model client for it.
func simModel(t *testing.T, scripts ...sim.Script) *model.Client {
	t.Helper()
	return simModelWith(t, sim.Config{Scripts: scripts})
}

func simModelWith(t *testing.T, cfg sim.Config) *model.Client {
	t.Helper()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c, err := model.New(model.Config{BaseURL: srv.URL + "/v1", Model: sim.DefaultModel, RetryBase: time.Millisecond, MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func user(text string) []model.Message { return []model.Message{{Role: "user", Content: text}} }

func call(name, args string) sim.ScriptCall {
	return sim.ScriptCall{Name: name, Arguments: json.RawMessage(args)}
}

func answer(s string) sim.ScriptTurn { return sim.ScriptTurn{Answer: &s} }

func runOK(t *testing.T, ctx context.Context, cfg Config, m Model, tools []Tool, task string) *Result {
	t.Helper()
	res, err := Run(ctx, cfg, m, tools, user(task))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// An endless tool-calling script (two calls alternating, so the repeat
// breaker stays out of it) is stopped at max_turns, after the calls of the
// last turn ran.
func TestEndlessStoppedAtMaxTurns(t *testing.T) {
	m := simModel(t, sim.Script{Match: "endless task", Endless: []sim.ScriptCall{call("bash", `{"command":"ls"}`), call("bash", `{"command":"pwd"}`)}})
	var log callLog
	res := runOK(t, context.Background(), Config{MaxTurns: 4}, m, []Tool{echo("bash", &log)}, "the endless task")
	if res.Outcome != TurnBudget || res.Answer != "" {
		t.Fatalf("outcome %s answer %q, want turn_budget and none (%v)", res.Outcome, res.Answer, res.Err)
	}
	if n := len(log.get()); n != 4 {
		t.Errorf("%d tool calls ran, want 4 (one per turn)", n)
	}
	if len(res.Turns) != 8 || res.Turns[6].Role != "assistant" || res.Turns[7].Role != "tool" {
		t.Errorf("%d turns, want 8 alternating assistant and tool: %+v", len(res.Turns), res.Turns)
	}
	if res.Category() != failure.TurnBudget || res.Category().Outcome() != failure.ModelError {
		t.Errorf("category %s, want turn_budget, a model failure", res.Category())
	}
	if res.Turns[7].ToolCallID != "call_3_0" || res.Turns[0].FinishReason != "tool_calls" {
		t.Errorf("last tool turn %+v, first %+v", res.Turns[7], res.Turns[0])
	}
}

// A 100,000-character tool output reaches the model cut to the first and
// last 8192 characters, with a marker saying how many were removed; the
// turn records the length before the cut.
func TestToolOutputCutHeadAndTail(t *testing.T) {
	m := simModel(t, sim.Script{Match: "big output", Turns: []sim.ScriptTurn{{Calls: []sim.ScriptCall{call("big", `{}`)}}, answer("seen")}})
	big := strings.Repeat("h", 50000) + strings.Repeat("t", 50000)
	tool := &fakeTool{name: "big", log: &callLog{}, out: func(context.Context, json.RawMessage) (ToolResult, error) {
		return ToolResult{Output: big}, nil
	}}
	res := runOK(t, context.Background(), Config{}, m, []Tool{tool}, "big output please")
	if res.Outcome != Answered || res.Answer != "seen" {
		t.Fatalf("outcome %s answer %q (%v)", res.Outcome, res.Answer, res.Err)
	}
	tt := res.Turns[1]
	want := strings.Repeat("h", 8192) + "\n\n[... 83616 characters removed ...]\n\n" + strings.Repeat("t", 8192)
	if tt.Content != want {
		t.Errorf("tool turn content: %d chars starting %q, want %d", len(tt.Content), tt.Content[8180:8240], len(want))
	}
	if tt.OutputChars != 100000 || !tt.Truncated {
		t.Errorf("OutputChars %d Truncated %v, want 100000 true", tt.OutputChars, tt.Truncated)
	}
	if got := res.Messages[2]; got.Role != "tool" || got.Content != want || got.ToolCallID != "call_0_0" {
		t.Errorf("the model was sent a tool message of %d chars, id %q", len(got.Content), got.ToolCallID)
	}
}

// Characters, not bytes, are counted and kept: an odd limit keeps one more
// at the tail, and no rune is split.
func TestTruncateRunes(t *testing.T) {
	s := strings.Repeat("é", 10) + strings.Repeat("ж", 10)
	out, n, cut := truncate(s, 5)
	want := "éé\n\n[... 15 characters removed ...]\n\nжжж"
	if out != want || n != 20 || !cut {
		t.Errorf("truncate = %q, %d, %v; want %q, 20, true", out, n, cut, want)
	}
	if out, n, cut := truncate(s, 20); out != s || n != 20 || cut {
		t.Errorf("a text of exactly the limit was changed: %q %d %v", out, n, cut)
	}
}

// Parallel calls run in the order the model gave them, each answered with
// its own id (the simulator refuses the next request otherwise).
func TestParallelCallsInOrder(t *testing.T) {
	m := simModel(t, sim.Script{Match: "parallel", Turns: []sim.ScriptTurn{
		{Content: "Reading three things.", Calls: []sim.ScriptCall{call("file_read", `{"path":"/app/a"}`), call("bash", `{"command":"ls"}`), call("file_read", `{"path":"/app/c"}`)}},
		answer("all read"),
	}})
	var log callLog
	res := runOK(t, context.Background(), Config{}, m, []Tool{echo("file_read", &log), echo("bash", &log)}, "parallel reads")
	if res.Outcome != Answered || res.Answer != "all read" {
		t.Fatalf("outcome %s answer %q (%v)", res.Outcome, res.Answer, res.Err)
	}
	wantCalls := []string{`file_read {"path":"/app/a"}`, `bash {"command":"ls"}`, `file_read {"path":"/app/c"}`}
	if got := log.get(); strings.Join(got, "|") != strings.Join(wantCalls, "|") {
		t.Errorf("calls ran %q, want %q", got, wantCalls)
	}
	a := res.Turns[0]
	if a.Content != "Reading three things." || len(a.ToolCalls) != 3 || a.ToolCalls[1] != (ToolCall{ID: "call_0_1", Name: "bash", Arguments: `{"command":"ls"}`}) {
		t.Errorf("assistant turn %+v", a)
	}
	for k, id := range []string{"call_0_0", "call_0_1", "call_0_2"} {
		if tt := res.Turns[1+k]; tt.ToolCallID != id || tt.Role != "tool" || tt.ToolName != a.ToolCalls[k].Name {
			t.Errorf("tool turn %d: %+v, want id %s", k, tt, id)
		}
	}
	if res.PromptTokens == 0 || res.CompletionTokens == 0 || res.Turns[4].PromptTokens == 0 {
		t.Errorf("tokens not summed: %d %d", res.PromptTokens, res.CompletionTokens)
	}
}

// Malformed argument JSON and an unknown tool are answered to the model as
// tool errors, nothing is run, and the run goes on to the answer.
func TestMalformedAndUnknownCalls(t *testing.T) {
	bad := `{"command": "ls`
	m := simModel(t, sim.Script{Match: "malformed", Turns: []sim.ScriptTurn{
		{Calls: []sim.ScriptCall{{Name: "bash", RawArguments: &bad}, call("browser", `{"url":"x"}`), call("bash", `null`), call("bash", `["ls"]`)}},
		{Calls: []sim.ScriptCall{call("bash", `{"command":"ls"}`)}},
		answer("recovered"),
	}})
	var log callLog
	res := runOK(t, context.Background(), Config{}, m, []Tool{echo("bash", &log), echo("file_read", &log)}, "malformed calls")
	if res.Outcome != Answered || res.Answer != "recovered" {
		t.Fatalf("outcome %s answer %q (%v)", res.Outcome, res.Answer, res.Err)
	}
	if got := log.get(); len(got) != 1 || got[0] != `bash {"command":"ls"}` {
		t.Errorf("calls ran: %q, want only the well-formed one", got)
	}
	if tt := res.Turns[1]; !tt.IsError || !strings.Contains(tt.Content, "not a JSON object") || tt.ToolCallID != "call_0_0" {
		t.Errorf("malformed call's answer: %+v", tt)
	}
	if tt := res.Turns[2]; !tt.IsError || !strings.Contains(tt.Content, `no tool named "browser"`) || !strings.Contains(tt.Content, "bash, file_read") {
		t.Errorf("unknown tool's answer: %+v", tt)
	}
	for _, tt := range res.Turns[3:5] {
		if !tt.IsError || !strings.Contains(tt.Content, "not a JSON object") {
			t.Errorf("arguments that are JSON but no object: %+v", tt)
		}
	}
	if res.Turns[0].ToolCalls[0].Arguments != bad {
		t.Errorf("the malformed arguments were recorded as %q, want them as sent", res.Turns[0].ToolCalls[0].Arguments)
	}
}

// The same call, identical, three times in a row ends the sample; the
// third is not run.
func TestRepeatedCallBreaker(t *testing.T) {
	m := simModel(t, sim.Script{Match: "stuck", Endless: []sim.ScriptCall{call("bash", `{"command":"make test"}`)}})
	var log callLog
	res := runOK(t, context.Background(), Config{}, m, []Tool{echo("bash", &log)}, "a stuck model")
	if res.Outcome != RepeatedCall {
		t.Fatalf("outcome %s, want repeated_call (%v)", res.Outcome, res.Err)
	}
	if n := len(log.get()); n != 2 {
		t.Errorf("%d calls ran, want 2", n)
	}
	if !strings.Contains(res.Err.Error(), "3 times in a row") || res.Category() != failure.RepeatedCall {
		t.Errorf("err %v category %s", res.Err, res.Category())
	}
	// With the breaker off the same model runs into the turn budget.
	res = runOK(t, context.Background(), Config{RepeatLimit: -1, MaxTurns: 5}, m, []Tool{echo("bash", &log)}, "a stuck model")
	if res.Outcome != TurnBudget {
		t.Errorf("breaker off: outcome %s, want turn_budget", res.Outcome)
	}
}

// A conversation that outgrows the window gets the endpoint's 400 and
// ends as context_overflow, a model failure, not retried.
func TestContextOverflow(t *testing.T) {
	m := simModel(t, sim.Script{Match: "growing", ContextChars: 40000,
		Endless: []sim.ScriptCall{call("big", `{"n":1}`), call("big", `{"n":2}`)}})
	tool := &fakeTool{name: "big", log: &callLog{}, out: func(context.Context, json.RawMessage) (ToolResult, error) {
		return ToolResult{Output: strings.Repeat("x", 30000)}, nil
	}}
	res := runOK(t, context.Background(), Config{}, m, []Tool{tool}, "a growing conversation")
	if res.Outcome != ContextOverflow || res.Category() != failure.ContextLength {
		t.Fatalf("outcome %s category %s, want context_overflow context_length (%v)", res.Outcome, res.Category(), res.Err)
	}
	// A tool answer is cut to 16384 characters and a marker: the third
	// request holds two (~32,800 characters), the fourth three (~49,300).
	if n := len(tool.log.get()); n != 3 {
		t.Errorf("%d calls ran before the overflow, want 3", n)
	}
	if len(res.Turns) != 6 {
		t.Errorf("%d turns, want 6 (three calls and their answers)", len(res.Turns))
	}
}

// slow blocks until its context ends.
func slow(log *callLog) *fakeTool {
	return &fakeTool{name: "slow", log: log, out: func(ctx context.Context, _ json.RawMessage) (ToolResult, error) {
		<-ctx.Done()
		return ToolResult{}, ctx.Err()
	}}
}

// The sample's deadline passing during a tool call ends it as time_budget;
// a tool call over tool_timeout, on the contrary, is answered to the model
// as an error and the run goes on.
func TestTimeBudgetAndToolTimeout(t *testing.T) {
	m := simModel(t, sim.Script{Match: "slow task", Turns: []sim.ScriptTurn{{Calls: []sim.ScriptCall{call("slow", `{}`)}}, answer("gave up waiting")}})
	var log callLog
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := runOK(t, ctx, Config{ToolTimeout: time.Minute}, m, []Tool{slow(&log)}, "a slow task")
	if res.Outcome != TimeBudget || res.Category() != failure.Timeout {
		t.Fatalf("outcome %s category %s, want time_budget timeout (%v)", res.Outcome, res.Category(), res.Err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the run took %v past a 300ms budget", d)
	}

	res = runOK(t, context.Background(), Config{ToolTimeout: 50 * time.Millisecond}, m, []Tool{slow(&log)}, "a slow task")
	if res.Outcome != Answered || res.Answer != "gave up waiting" {
		t.Fatalf("outcome %s answer %q (%v)", res.Outcome, res.Answer, res.Err)
	}
	if tt := res.Turns[1]; !tt.IsError || !strings.Contains(tt.Content, "timed out after 50ms") {
		t.Errorf("timed-out call's answer: %+v", tt)
	}
}

// A model slower than what is left of the budget ends the sample as
// time_budget too, not as an endpoint failure.
func TestTimeBudgetInModelRequest(t *testing.T) {
	m := simModelWith(t, sim.Config{Latency: 2 * time.Second, Scripts: []sim.Script{{Match: "slow model", Turns: []sim.ScriptTurn{answer("late")}}}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res := runOK(t, ctx, Config{}, m, []Tool{echo("bash", &callLog{})}, "a slow model")
	if res.Outcome != TimeBudget || res.Category() != failure.Timeout || len(res.Turns) != 0 {
		t.Errorf("outcome %s category %s turns %d, want time_budget timeout 0 (%v)", res.Outcome, res.Category(), len(res.Turns), res.Err)
	}
}

// A run cancelled (nel stopped, not the sample's budget) is an
// interruption, never scored.
func TestCancelled(t *testing.T) {
	m := simModel(t, sim.Script{Match: "cancelled", Turns: []sim.ScriptTurn{{Calls: []sim.ScriptCall{call("slow", `{}`)}}, answer("x")}})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res := runOK(t, ctx, Config{}, m, []Tool{slow(&callLog{})}, "cancelled run")
	if res.Outcome != InfraError || res.Category() != failure.Interrupted {
		t.Errorf("outcome %s category %s, want infra_error interrupted (%v)", res.Outcome, res.Category(), res.Err)
	}
}

// A tool that cannot run at all (its error) ends the sample as an
// infrastructure failure, never a wrong answer.
func TestToolInfraError(t *testing.T) {
	m := simModel(t, sim.Script{Match: "broken sandbox", Turns: []sim.ScriptTurn{{Calls: []sim.ScriptCall{call("bash", `{"command":"ls"}`)}}, answer("unreachable")}})
	tool := &fakeTool{name: "bash", log: &callLog{}, out: func(context.Context, json.RawMessage) (ToolResult, error) {
		return ToolResult{}, errors.New("sandbox session is gone")
	}}
	res := runOK(t, context.Background(), Config{}, m, []Tool{tool}, "a broken sandbox")
	if res.Outcome != InfraError || res.Answer != "" || !strings.Contains(res.Err.Error(), "sandbox session is gone") {
		t.Fatalf("outcome %s answer %q err %v", res.Outcome, res.Answer, res.Err)
	}
	if res.Category().Outcome() != failure.InfraError {
		t.Errorf("category %s is not an infrastructure failure", res.Category())
	}
}

// sandbox_artifact takes the answer from Config.Artifact, not the last
// message; an artifact that cannot be read is an infrastructure failure.
func TestSandboxArtifact(t *testing.T) {
	m := simModel(t, sim.Script{Match: "artifact", Turns: []sim.ScriptTurn{{Calls: []sim.ScriptCall{call("bash", `{}`)}}, answer("I wrote it.")}})
	var log callLog
	cfg := Config{ResponseMode: SandboxArtifact, Artifact: func(context.Context) (string, error) { return "42\n", nil }}
	res := runOK(t, context.Background(), cfg, m, []Tool{echo("bash", &log)}, "artifact task")
	if res.Outcome != Answered || res.Answer != "42\n" {
		t.Errorf("outcome %s answer %q, want the artifact's", res.Outcome, res.Answer)
	}
	cfg.Artifact = func(context.Context) (string, error) { return "", errors.New("no session") }
	res = runOK(t, context.Background(), cfg, m, []Tool{echo("bash", &log)}, "artifact task")
	if res.Outcome != InfraError || res.Answer != "" {
		t.Errorf("outcome %s answer %q, want infra_error", res.Outcome, res.Answer)
	}
	if _, err := Run(context.Background(), Config{ResponseMode: SandboxArtifact}, m, []Tool{echo("bash", &log)}, user("x")); err == nil {
		t.Error("sandbox_artifact without a reader was accepted")
	}
}

// A misconfigured run is refused before any request.
func TestRunRefuses(t *testing.T) {
	var log callLog
	for name, tc := range map[string]struct {
		cfg   Config
		tools []Tool
	}{
		"no tools":       {Config{}, nil},
		"duplicate name": {Config{}, []Tool{echo("bash", &log), echo("bash", &log)}},
		"bad mode":       {Config{ResponseMode: "final_file"}, []Tool{echo("bash", &log)}},
	} {
		if _, err := Run(context.Background(), tc.cfg, nil, tc.tools, user("x")); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A tool that ignores its context past the grace ends the sample as a
// tool failure: what it still does to the sandbox cannot be known.
func TestToolIgnoringContext(t *testing.T) {
	m := simModel(t, sim.Script{Match: "stuck tool", Turns: []sim.ScriptTurn{{Calls: []sim.ScriptCall{call("hang", `{}`)}}, answer("unreachable")}})
	release := make(chan struct{})
	defer close(release)
	tool := &fakeTool{name: "hang", log: &callLog{}, out: func(context.Context, json.RawMessage) (ToolResult, error) {
		<-release
		return ToolResult{}, nil
	}}
	res := runOK(t, context.Background(), Config{ToolTimeout: 20 * time.Millisecond, toolGrace: 20 * time.Millisecond}, m, []Tool{tool}, "a stuck tool")
	if res.Outcome != ToolFailure || res.Category().Outcome() != failure.InfraError {
		t.Errorf("outcome %s category %s, want tool_error, an infrastructure failure (%v)", res.Outcome, res.Category(), res.Err)
	}
}

// fakeSession answers Exec from a table of files.
type fakeSession struct {
	files map[string]string
	err   error
	argv  []string
}

func (s *fakeSession) Exec(_ context.Context, c sandbox.Command) (*sandbox.Result, error) {
	s.argv = c.Argv
	if s.err != nil {
		return nil, s.err
	}
	f, ok := s.files[c.Argv[len(c.Argv)-1]]
	if !ok {
		return &sandbox.Result{ExitCode: 3}, nil
	}
	return &sandbox.Result{Stdout: []byte(f)}, nil
}

func (s *fakeSession) Close() error { return nil }

// ReadArtifact reads the file in the session; a missing file is an empty
// answer, a session that fails an infrastructure error; the path is
// passed as an argument, never in the shell text.
func TestReadArtifact(t *testing.T) {
	s := &fakeSession{files: map[string]string{"/app/answer.txt": "B\n"}}
	read, err := ReadArtifact(s, "/app/answer.txt")
	if err != nil {
		t.Fatal(err)
	}
	if a, err := read(context.Background()); a != "B\n" || err != nil {
		t.Errorf("read = %q, %v", a, err)
	}
	if strings.Contains(s.argv[2], "answer.txt") {
		t.Errorf("the path is in the shell text: %q", s.argv)
	}
	missing, _ := ReadArtifact(s, "/app/none.txt")
	if a, err := missing(context.Background()); a != "" || err != nil {
		t.Errorf("missing file: %q, %v; want an empty answer", a, err)
	}
	s.err = errors.New("session closed")
	if _, err := read(context.Background()); err == nil {
		t.Error("a failed session is not an error")
	}
	for _, p := range []string{"answer.txt", "/app/../etc/passwd", ""} {
		if _, err := ReadArtifact(s, p); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
}
