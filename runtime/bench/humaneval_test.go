package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// execSandbox is a test-only Sandbox that runs jobs directly with os/exec
// (no isolation): it stands in for the local engine where bubblewrap is
// missing, so the benchmark's own logic is tested everywhere.
type execSandbox struct {
	slots   chan struct{}
	timeout time.Duration
	path    string // PATH for the programs (finds python3)
}

func newExecSandbox(t testing.TB, concurrency int) *execSandbox {
	t.Helper()
	testenv.LookPath(t, testenv.Python3)
	return &execSandbox{slots: make(chan struct{}, concurrency), timeout: 30 * time.Second, path: os.Getenv("PATH")}
}

func (s *execSandbox) Name() string { return "exec" }
func (s *execSandbox) Close() error { return nil }

var signalNames = map[syscall.Signal]string{
	syscall.SIGKILL: "SIGKILL", syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT",
	syscall.SIGTERM: "SIGTERM", syscall.SIGXCPU: "SIGXCPU",
}

func (s *execSandbox) Run(ctx context.Context, job sandbox.Job) (*sandbox.Result, error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.slots }()
	timeout := job.Timeout
	if timeout <= 0 {
		timeout = s.timeout
	}
	dir, err := os.MkdirTemp("", "nel-exec-sandbox")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, job.Command[0], job.Command[1:]...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(job.Stdin)
	cmd.Env = []string{"PATH=" + s.path, "HOME=" + dir}
	for k, v := range job.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	start := time.Now()
	err = cmd.Run()
	if cmd.ProcessState == nil {
		return nil, fmt.Errorf("exec sandbox: %w", err)
	}
	res := &sandbox.Result{ExitCode: cmd.ProcessState.ExitCode(), Stdout: out.Bytes(), Stderr: errb.Bytes(), Duration: time.Since(start)}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.ExitCode, res.Signal = -1, signalNames[ws.Signal()]
	}
	if errors.Is(rctx.Err(), context.DeadlineExceeded) {
		res.Limit = sandbox.LimitTimeout
	}
	return res, nil
}

// failingSandbox is a sandbox that cannot run anything (an engine that is
// missing).
type failingSandbox struct{}

func (failingSandbox) Run(context.Context, sandbox.Job) (*sandbox.Result, error) {
	return nil, fmt.Errorf("docker daemon not running: %w", sandbox.ErrUnavailable)
}
func (failingSandbox) Name() string { return "broken" }
func (failingSandbox) Close() error { return nil }

// localSandbox opens the real local engine, or nil with the reason when it
// cannot run here.
func localSandbox(t testing.TB, concurrency int) (sandbox.Sandbox, error) {
	t.Helper()
	sb, err := sandbox.Open(context.Background(), sandbox.Config{Type: "local", Concurrency: concurrency})
	if errors.Is(err, sandbox.ErrUnavailable) {
		return nil, err
	}
	if err != nil {
		t.Fatalf("open the local sandbox: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb, nil
}

// testSandbox is the local engine when it runs here, else execSandbox.
func testSandbox(t testing.TB, concurrency int) sandbox.Sandbox {
	t.Helper()
	sb, err := localSandbox(t, concurrency)
	if err != nil {
		t.Logf("local sandbox unavailable (%v): running programs directly with os/exec", err)
		return newExecSandbox(t, concurrency)
	}
	return sb
}

// ExtractCode: each rule, and NeMo's behaviour where it is right.
func TestHumanEvalExtractCode(t *testing.T) {
	const entry = "add"
	cases := []struct {
		name, response, code, how string
	}{
		{"python fence (NeMo)", "```python\n    return a + b\n```", "    return a + b\n", "fence"},
		{"untagged fence amid prose", "Sure!\n```\n    return a + b\n```\nDone.", "    return a + b\n", "fence"},
		{"py tag", "```py\n    return a + b\n```", "    return a + b\n", "fence"},
		{"python3 tag", "```python3\ndef add(a, b):\n    return a + b\n```", "def add(a, b):\n    return a + b\n", "fence"},
		{"tag in capitals", "```Python\n    return a + b\n```", "    return a + b\n", "fence"},
		{"blank line after the tag keeps indentation", "```python\n\n    return a + b\n```", "\n    return a + b\n", "fence"},
		{"the block defining the entry point wins",
			"```python\ndef helper(x):\n    return x\n```\nthen\n```python\ndef add(a, b):\n    return helper(a) + b\n```",
			"def add(a, b):\n    return helper(a) + b\n", "fence"},
		{"def with a space before the parenthesis",
			"```python\nx = 1\n```\n```python\ndef add (a, b):\n    return a + b\n```",
			"def add (a, b):\n    return a + b\n", "fence"},
		{"no block defines it: the first",
			"```python\n    return a + b\n```\nor\n```python\n    return b + a\n```", "    return a + b\n", "fence"},
		{"a shell block before the Python one is passed over",
			"```bash\npip install numpy\n```\n```python\n    return a + b\n```", "    return a + b\n", "fence"},
		{"a Python block defining nothing beats another language defining it",
			"```text\ndef add(a, b): ...\n```\n```python\n    return a + b\n```", "    return a + b\n", "fence"},
		{"only another language: taken", "```text\n    return a + b\n```", "    return a + b\n", "fence"},
		{"missing closing fence", "```python\ndef add(a, b):\n    return a + b\n", "def add(a, b):\n    return a + b\n", "open_fence"},
		{"closed block, then a cut-off one: the closed one",
			"```python\n    return a + b\n```\n```python\n    return", "    return a + b\n", "fence"},
		{"no fence: the raw response", "    return a + b\n", "    return a + b\n", "raw"},
		{"CRLF line ends", "```python\r\n    return a + b\r\n```", "    return a + b\n", "fence"},
		{"empty response", "", "", "raw"},
		{"empty block", "```python\n```", "", "fence"},
	}
	for _, c := range cases {
		code, how := ExtractCode(c.response, entry)
		if code != c.code || how != c.how {
			t.Errorf("%s: ExtractCode(%q) = %q, %q; want %q, %q", c.name, c.response, code, how, c.code, c.how)
		}
	}
}

const (
	hePrompt = "from typing import List\n\n\ndef helper(x: int) -> int:\n    return x\n\n\n" +
		"def add(a: int, b: int) -> int:\n    \"\"\"Add a and b.\n    >>> add(1, 2)\n    3\n    \"\"\"\n"
	heHeader = "from typing import List\n\n\ndef helper(x: int) -> int:\n    return x\n\n\n"
	heTest   = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n"
	heTail   = "\n" + heTest + "\ncheck(add)\n"
)

// HumanEvalProgram: NeMo's assembly for a body, the prompt's header for a
// whole function; every program built here must pass when run.
func TestHumanEvalProgram(t *testing.T) {
	cases := []struct {
		name, completion, program, mode string
	}{
		{"body (NeMo)", "    return a + b\n", hePrompt + "    return a + b\n" + heTail, "body"},
		{"body using the prompt's helper", "    return helper(a) + b\n", hePrompt + "    return helper(a) + b\n" + heTail, "body"},
		{"whole function: the prompt's header, then it",
			"def add(a: int, b: int) -> int:\n    return a + b\n",
			heHeader + "def add(a: int, b: int) -> int:\n    return a + b\n" + heTail, "function"},
		{"whole function using the helper from the prompt",
			"def add(a, b):\n    return helper(a) + helper(b)\n",
			heHeader + "def add(a, b):\n    return helper(a) + helper(b)\n" + heTail, "function"},
		{"whole function with its own imports",
			"import math\n\n\ndef add(a, b):\n    return math.floor(a) + b\n",
			heHeader + "import math\n\n\ndef add(a, b):\n    return math.floor(a) + b\n" + heTail, "function"},
		{"whole function indented as a block: dedented",
			"    def add(a, b):\n        return a + b\n",
			heHeader + "def add(a, b):\n    return a + b\n" + heTail, "function"},
		{"body whose first line lost its indentation",
			"s = a + b\n    return s\n", hePrompt + "    s = a + b\n    return s\n" + heTail, "body"},
		{"body written at column 0",
			"s = a + b\nreturn s\n", hePrompt + "    s = a + b\n    return s\n" + heTail, "body"},
		{"a nested def of another name stays a body",
			"    def inner(x):\n        return x\n    return inner(a) + b\n",
			hePrompt + "    def inner(x):\n        return x\n    return inner(a) + b\n" + heTail, "body"},
	}
	var programs []string
	for _, c := range cases {
		program, mode := HumanEvalProgram(hePrompt, c.completion, heTest, "add")
		if program != c.program || mode != c.mode {
			t.Errorf("%s: mode %q, program\n%s\nwant mode %q, program\n%s", c.name, mode, program, c.mode, c.program)
		}
		programs = append(programs, program)
	}
	runPrograms(t, programs)
}

// runPrograms requires each program to exit 0 under python3.
func runPrograms(t *testing.T, programs []string) {
	t.Helper()
	testenv.LookPath(t, testenv.Python3)
	for i, p := range programs {
		cmd := exec.Command("python3", "-")
		cmd.Stdin = strings.NewReader(p)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("program %d fails: %v\n%s\n%s", i, err, p, out)
		}
	}
}

// fixBodyIndent: each rule, on bodies whose intended indentation is known;
// every repaired body must also compile as a function body.
func TestHumanEvalBodyIndent(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"indented: unchanged", "    return a + b\n", "    return a + b\n"},
		{"indented after a blank line: unchanged", "\n    return a + b\n", "\n    return a + b\n"},
		{"a single statement at column 0", "return a + b", "    return a + b"},
		{"a single statement after blank lines", "\n\nreturn a + b\n", "\n\n    return a + b\n"},
		{"every statement at column 0", "s = a + b\nreturn s", "    s = a + b\n    return s"},
		{"dedented with a block", "s = 0\nfor i in range(a):\n    s += i\nreturn s + b",
			"    s = 0\n    for i in range(a):\n        s += i\n    return s + b"},
		{"stripped first line", "s = a + b\n    return s", "    s = a + b\n    return s"},
		{"stripped first line opening a block",
			"for i in range(a):\n        b += i\n    return b", "    for i in range(a):\n        b += i\n    return b"},
		{"one block written at column 0", "if a:\n    return b\nreturn a", "    if a:\n        return b\n    return a"},
		{"one block, no statement after it", "if a > b:\n    return a - b", "    if a > b:\n        return a - b"},
		{"stripped one block: both readings agree", "for i in range(a):\n        return i", "    for i in range(a):\n            return i"},
		{"block opener with a comment", "if a:  # positive\n    return b", "    if a:  # positive\n        return b"},
		{"tabs: the shallowest indentation is copied", "s = a + b\n\treturn s", "\ts = a + b\n\treturn s"},
		{"comment lines do not count", "# the sum\nreturn a + b", "    # the sum\n    return a + b"},
		{"comment at column 0 inside an indented body: unchanged", "    s = a\n# note\n    return s + b", "    s = a\n# note\n    return s + b"},
	}
	var bodies []string
	for _, c := range cases {
		if got := fixBodyIndent(c.in); got != c.want {
			t.Errorf("%s: fixBodyIndent(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
		bodies = append(bodies, c.want)
	}
	testenv.LookPath(t, testenv.Python3)
	// Compile each as the body of def f(a, b).
	var src strings.Builder
	src.WriteString("import sys\nbad = []\n")
	for i, b := range bodies {
		fmt.Fprintf(&src, "try:\n    compile(%q, 'body', 'exec')\nexcept SyntaxError as e:\n    bad.append((%d, str(e)))\n", "def f(a, b):\n"+b+"\n", i)
	}
	src.WriteString("print(bad)\nsys.exit(1 if bad else 0)\n")
	cmd := exec.Command("python3", "-")
	cmd.Stdin = strings.NewReader(src.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("repaired bodies that do not compile: %s (%v)", out, err)
	}
}

func heItem(timeout time.Duration) *Item {
	return &Item{ID: "he-test", Expected: "    return a + b\n", Meta: map[string]any{
		"task_id": "Test/0", "prompt": hePrompt, "test": heTest, "entry_point": "add", "timeout": timeout}}
}

// ScoreEnv's verdicts and failure kinds on programs that fail each way.
func TestHumanEvalFailureKinds(t *testing.T) {
	sb := testSandbox(t, 2)
	env := &Env{Sandbox: sb}
	b := mustLookup(t, "humaneval")
	cases := []struct {
		name, response string
		pass           bool
		kind, exc      string
	}{
		{"pass", "```python\n    return a + b\n```", true, "", ""},
		{"pass: whole function", "```python\ndef add(a, b):\n    return a + b\n```", true, "", ""},
		{"syntax error", "```python\n    return a +\n```", false, KindSyntaxError, "SyntaxError"},
		{"indentation error", "```python\ndef add(a, b):\nreturn a + b\n```", false, KindSyntaxError, "IndentationError"},
		{"wrong answer", "```python\n    return a - b\n```", false, KindAssertion, "AssertionError"},
		// `pass` returns None; check's first assert compares None == 3.
		{"pass body", "```python\n    pass\n```", false, KindAssertion, "AssertionError"},
		{"exception", "```python\n    return a // 0\n```", false, KindCrash, "ZeroDivisionError"},
		{"exit status", "```python\n    import sys\n    sys.exit(3)\n```", false, KindCrash, ""},
		{"signal", "```python\n    import os, signal\n    os.kill(os.getpid(), signal.SIGSEGV)\n```", false, KindCrash, ""},
		{"timeout", "```python\n    while True:\n        pass\n```", false, KindTimeout, ""},
	}
	it := heItem(2 * time.Second)
	for _, c := range cases {
		s := b.ScoreEnv(context.Background(), env, it, c.response)
		if s.Failure != failure.None {
			t.Errorf("%s: failure %q (%v)", c.name, s.Failure, s.Details)
			continue
		}
		if !s.Binary || s.Correct != c.pass || (s.Reward == 1) != c.pass {
			t.Errorf("%s: correct %v reward %v binary %v, want pass %v (%v)", c.name, s.Correct, s.Reward, s.Binary, c.pass, s.Details)
		}
		if s.Extracted == "" || s.Method != "code_sandbox" {
			t.Errorf("%s: extracted %q method %q", c.name, s.Extracted, s.Method)
		}
		kind, _ := s.Details["failure_kind"].(string)
		exc, _ := s.Details["exception"].(string)
		if kind != c.kind || exc != c.exc {
			t.Errorf("%s: failure_kind %q exception %q, want %q %q (%v)", c.name, kind, exc, c.kind, c.exc, s.Details)
		}
		if _, ok := s.Details["exit_code"]; !ok {
			t.Errorf("%s: no exit_code in %v", c.name, s.Details)
		}
		if !c.pass && s.Details["stderr_tail"] == nil && c.exc != "" {
			t.Errorf("%s: no stderr_tail in %v", c.name, s.Details)
		}
	}

	// A response without code is not run.
	s := b.ScoreEnv(context.Background(), env, it, "```python\n```")
	if s.Correct || s.Extracted != "" || s.Details["failure_kind"] != KindNoCode || s.Failure != failure.None {
		t.Errorf("empty code: %+v", s)
	}
	// A sandbox that cannot run the program: an infrastructure failure.
	for name, env := range map[string]*Env{"broken": {Sandbox: failingSandbox{}}, "none": {}, "nil": nil} {
		s := b.ScoreEnv(context.Background(), env, it, "    return a + b\n")
		if s.Failure != failure.SandboxError || s.Correct || s.Extracted == "" || s.Details["sandbox_error"] == nil {
			t.Errorf("%s sandbox: %+v", name, s)
		}
	}
	// Score, without a sandbox, runs nothing and passes nothing.
	if s := b.Score(it, ""); !s.Binary || s.Correct || s.Failure != failure.None {
		t.Errorf("Score probe: %+v", s)
	}
}

// FailureKind on results the sandbox reports and tracebacks Python writes.
func TestHumanEvalFailureKindTable(t *testing.T) {
	chained := "Traceback (most recent call last):\n  File \"<stdin>\", line 3, in f\nValueError: x\n\n" +
		"During handling of the above exception, another exception occurred:\n\n" +
		"Traceback (most recent call last):\n  File \"<stdin>\", line 9, in <module>\nAssertionError: a\nsecond line\n"
	cases := []struct {
		name      string
		res       sandbox.Result
		kind, exc string
	}{
		{"wall clock", sandbox.Result{ExitCode: -1, Signal: "SIGKILL", Limit: sandbox.LimitTimeout}, KindTimeout, ""},
		{"cpu", sandbox.Result{ExitCode: -1, Signal: "SIGXCPU", Limit: sandbox.LimitCPU}, KindTimeout, ""},
		{"memory limit", sandbox.Result{ExitCode: -1, Signal: "SIGKILL", Limit: sandbox.LimitMemory}, KindMemory, ""},
		{"process limit", sandbox.Result{ExitCode: 1, Limit: sandbox.LimitProcesses}, KindProcesses, ""},
		{"output limit", sandbox.Result{ExitCode: -1, Limit: sandbox.LimitOutput}, KindOutput, ""},
		{"file size limit", sandbox.Result{ExitCode: -1, Limit: sandbox.LimitFileSize}, KindFileSize, ""},
		{"MemoryError", sandbox.Result{ExitCode: 1, Stderr: []byte("Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\nMemoryError\n")}, KindMemory, "MemoryError"},
		{"fork refused", sandbox.Result{ExitCode: 1, Stderr: []byte("Traceback (most recent call last):\n  File \"<stdin>\", line 4, in f\nBlockingIOError: [Errno 11] Resource temporarily unavailable\n")}, KindProcesses, "BlockingIOError"},
		{"other OSError", sandbox.Result{ExitCode: 1, Stderr: []byte("Traceback (most recent call last):\n  File \"<stdin>\", line 4, in f\nOSError: [Errno 101] Network is unreachable\n")}, KindCrash, "OSError"},
		{"syntax error has no traceback header", sandbox.Result{ExitCode: 1, Stderr: []byte("  File \"<stdin>\", line 12\n    return a +\n              ^\nSyntaxError: invalid syntax\n")}, KindSyntaxError, "SyntaxError"},
		{"TabError", sandbox.Result{ExitCode: 1, Stderr: []byte("  File \"<stdin>\", line 3\n\tx\nTabError: inconsistent use of tabs and spaces in indentation\n")}, KindSyntaxError, "TabError"},
		{"chained: the last traceback counts", sandbox.Result{ExitCode: 1, Stderr: []byte(chained)}, KindAssertion, "AssertionError"},
		{"program output before the traceback", sandbox.Result{ExitCode: 1, Stderr: []byte("debug: x\nTraceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\nKeyError: 'k'\n")}, KindCrash, "KeyError"},
		{"dotted exception name", sandbox.Result{ExitCode: 1, Stderr: []byte("Traceback (most recent call last):\n  File \"x\", line 1\nnumpy.linalg.LinAlgError: Singular matrix\n")}, KindCrash, "numpy.linalg.LinAlgError"},
		{"signal", sandbox.Result{ExitCode: -1, Signal: "SIGSEGV"}, KindCrash, ""},
		{"exit status without output", sandbox.Result{ExitCode: 2}, KindCrash, ""},
	}
	for _, c := range cases {
		kind, exc := FailureKind(&c.res)
		if kind != c.kind || exc != c.exc {
			t.Errorf("%s: FailureKind = %q, %q; want %q, %q", c.name, kind, exc, c.kind, c.exc)
		}
	}
}

func loadHumanEval(t testing.TB) (*Benchmark, *Set) {
	t.Helper()
	dir := sharedDatasets(t)
	b, _ := Lookup("humaneval")
	s, err := b.Load(context.Background(), newLoader(dir), map[string]any{"data_path": "humaneval/HumanEval.jsonl.gz"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Items) != 164 {
		t.Fatalf("%d HumanEval items, want 164", len(s.Items))
	}
	return b, s
}

// scoreAll scores a response to every item concurrently.
func scoreAll(b *Benchmark, env *Env, items []Item, respond func(i int, it *Item) string) []Score {
	out := make([]Score, len(items))
	var wg sync.WaitGroup
	for i := range items {
		wg.Go(func() { out[i] = b.ScoreEnv(context.Background(), env, &items[i], respond(i, &items[i])) })
	}
	wg.Wait()
	return out
}

// The real data: every canonical solution passes, in every response shape
// Respond writes; every `pass` body fails, as an assertion or a crash.
func TestHumanEvalRealData(t *testing.T) {
	b, s := loadHumanEval(t)
	checkIDs(t, s, loadSet(t, newLoader(sharedDatasets(t)), "humaneval", map[string]any{"data_path": "humaneval/HumanEval.jsonl.gz"}))
	it := s.Items[0]
	if it.Meta["task_id"] != "HumanEval/0" || it.Meta["entry_point"] != "has_close_elements" ||
		!strings.HasPrefix(it.Prompt, humanevalPrompt+"from typing import List\n") || !strings.HasPrefix(it.Expected, "    for idx, elem in enumerate(numbers):") {
		t.Errorf("item 0: %+v", it)
	}
	env := &Env{Sandbox: testSandbox(t, 2)}
	rng := rand.New(rand.NewPCG(1, 164))
	shapes := map[string]int{}
	right := make([]string, len(s.Items))
	wrong := make([]string, len(s.Items))
	for i := range s.Items {
		right[i] = b.Respond(&s.Items[i], true, rng)
		wrong[i] = b.Respond(&s.Items[i], false, rng)
		shapes[shapeOf(right[i])]++
		shapes[shapeOf(wrong[i])]++
	}
	for _, sh := range []string{"body fence", "body raw", "function fence", "function python3 fence"} {
		if shapes[sh] == 0 {
			t.Errorf("Respond never wrote the shape %q (%v)", sh, shapes)
		}
	}
	for i, sc := range scoreAll(b, env, s.Items, func(i int, _ *Item) string { return right[i] }) {
		if !sc.Correct || sc.Reward != 1 || sc.Failure != failure.None {
			t.Errorf("%s: canonical solution (%s) failed: %v", s.Items[i].Meta["task_id"], shapeOf(right[i]), sc.Details)
		}
	}
	kinds := map[string]int{}
	for i, sc := range scoreAll(b, env, s.Items, func(i int, _ *Item) string { return wrong[i] }) {
		k, _ := sc.Details["failure_kind"].(string)
		kinds[k]++
		if sc.Correct || sc.Failure != failure.None || (k != KindAssertion && k != KindCrash) {
			t.Errorf("%s: `pass` body (%s): correct %v, failure %q, kind %q", s.Items[i].Meta["task_id"], shapeOf(wrong[i]), sc.Correct, sc.Failure, k)
		}
	}
	t.Logf("pass bodies: %v", kinds)
}

func shapeOf(resp string) string {
	switch {
	case strings.HasPrefix(resp, "```python3\n"):
		return "function python3 fence"
	case strings.HasPrefix(resp, "Here is"):
		return "function fence"
	case strings.HasPrefix(resp, "```python\n"):
		return "body fence"
	}
	return "body raw"
}

// Hostile completions through the benchmark, in the real local sandbox:
// each is contained and classified, and the next program runs as usual.
func TestHumanEvalHostile(t *testing.T) {
	sb, err := localSandbox(t, 2)
	if err != nil {
		testenv.Missing(t, testenv.LocalSandbox, err.Error())
	}
	secretFile := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secretFile, []byte("hunter2"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NEL_HE_TEST_SECRET", "hunter2")
	b := mustLookup(t, "humaneval")
	env := &Env{Sandbox: sb}
	it := heItem(5 * time.Second)
	body := func(code string) string { return "```python\n" + code + "```\n" }
	cases := []struct {
		name  string
		resp  string
		pass  bool
		kinds []string
	}{
		{"fork bomb", body("    import os\n    while True:\n        os.fork()\n"), false, []string{KindProcesses, KindTimeout}},
		{"memory hog", body("    x = bytearray(1 << 36)\n    return a + b\n"), false, []string{KindMemory}},
		{"growing memory", body("    xs = []\n    while True:\n        xs.append(bytearray(1 << 24))\n"), false, []string{KindMemory, KindTimeout}},
		{"output flood", body("    import sys\n    while True:\n        sys.stdout.write('x' * 65536)\n"), false, []string{KindOutput}},
		{"busy loop", body("    while True:\n        pass\n"), false, []string{KindTimeout}},
		// These pass only when the sandbox holds: a leak fails the program.
		{"network", body("    import socket\n    try:\n        socket.create_connection(('1.1.1.1', 53), timeout=2)\n    except OSError:\n        return a + b\n    raise RuntimeError('network reachable')\n"), true, nil},
		{"environment secret", body("    import os\n    if 'hunter2' in repr(os.environ):\n        raise RuntimeError('secret leaked')\n    return a + b\n"), true, nil},
		{"file secret", body("    try:\n        open(" + fmt.Sprintf("%q", secretFile) + ").read()\n    except OSError:\n        return a + b\n    raise RuntimeError('secret file readable')\n"), true, nil},
		{"then an ordinary program", body("    return a + b\n"), true, nil},
	}
	for _, c := range cases {
		start := time.Now()
		s := b.ScoreEnv(context.Background(), env, it, c.resp)
		kind, _ := s.Details["failure_kind"].(string)
		t.Logf("%s: %v in %v", c.name, s.Details["failure_kind"], time.Since(start).Round(time.Millisecond))
		if s.Failure != failure.None {
			t.Errorf("%s: the sandbox failed: %v", c.name, s.Details["sandbox_error"])
			continue
		}
		if s.Correct != c.pass {
			t.Errorf("%s: correct %v, want %v (%v)", c.name, s.Correct, c.pass, s.Details)
		}
		if !c.pass && !slices.Contains(c.kinds, kind) {
			t.Errorf("%s: failure_kind %q, want one of %v (%v)", c.name, kind, c.kinds, s.Details)
		}
	}
}

// BenchmarkHumanEval2Slots runs the 164 canonical programs through the local
// sandbox with 2 slots (the target: ≥ 20 programs/s).
func BenchmarkHumanEval2Slots(bm *testing.B) {
	sb, err := localSandbox(bm, 2)
	if err != nil {
		testenv.Missing(bm, testenv.LocalSandbox, err.Error())
	}
	b, s := loadHumanEval(bm)
	env := &Env{Sandbox: sb}
	resp := make([]string, len(s.Items))
	for i := range s.Items {
		resp[i] = "```python\n" + s.Items[i].Expected + "```"
	}
	bm.ResetTimer()
	start := time.Now()
	for bm.Loop() {
		for i, sc := range scoreAll(b, env, s.Items, func(i int, _ *Item) string { return resp[i] }) {
			if !sc.Correct {
				bm.Fatalf("%s failed: %v", s.Items[i].Meta["task_id"], sc.Details)
			}
		}
	}
	bm.ReportMetric(float64(bm.N*len(s.Items))/time.Since(start).Seconds(), "programs/s")
}

// recordSandbox records the jobs it is given and passes every program.
type recordSandbox struct {
	mu   sync.Mutex
	jobs []sandbox.Job
}

func (r *recordSandbox) Run(_ context.Context, job sandbox.Job) (*sandbox.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobs = append(r.jobs, job)
	return &sandbox.Result{}, nil
}
func (r *recordSandbox) Name() string { return "record" }
func (r *recordSandbox) Close() error { return nil }

// The job: python3 without site on stdin, a fixed hash seed and no host
// variable, under params.timeout (default 30 s, NeMo's).
func TestHumanEvalJob(t *testing.T) {
	dir := t.TempDir()
	line := `{"task_id": "T/0", "prompt": "def add(a, b):\n", "canonical_solution": "    return a + b\n", "test": "def check(c):\n    assert c(1, 2) == 3\n", "entry_point": "add"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "he.jsonl"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NEL_HE_TEST_SECRET", "hunter2")
	b := mustLookup(t, "humaneval")
	for _, c := range []struct {
		params map[string]any
		want   time.Duration
	}{
		{map[string]any{}, 30 * time.Second},
		{map[string]any{"timeout": 2.5}, 2500 * time.Millisecond},
		{map[string]any{"timeout": int64(7)}, 7 * time.Second},
	} {
		c.params["data_path"] = "he.jsonl"
		s, err := b.Load(context.Background(), newLoader(dir), c.params)
		if err != nil {
			t.Fatal(err)
		}
		rec := &recordSandbox{}
		sc := b.ScoreEnv(context.Background(), &Env{Sandbox: rec}, &s.Items[0], "    return a + b\n")
		if !sc.Correct || len(rec.jobs) != 1 {
			t.Fatalf("%v: %+v, %d jobs", c.params, sc, len(rec.jobs))
		}
		job := rec.jobs[0]
		if !slices.Equal(job.Command, []string{"python3", "-S", "-"}) || job.Timeout != c.want {
			t.Errorf("%v: command %q timeout %v, want timeout %v", c.params, job.Command, job.Timeout, c.want)
		}
		wantProgram := "def add(a, b):\n    return a + b\n\ndef check(c):\n    assert c(1, 2) == 3\n\ncheck(add)\n"
		if string(job.Stdin) != wantProgram {
			t.Errorf("program %q, want %q", job.Stdin, wantProgram)
		}
		if job.Env["PYTHONHASHSEED"] != "0" || strings.Contains(fmt.Sprint(job.Env), "hunter2") {
			t.Errorf("environment %v", job.Env)
		}
	}
	for _, bad := range []any{"30", -1.0, 0.0, 1e9} {
		_, err := b.Load(context.Background(), newLoader(dir), map[string]any{"data_path": "he.jsonl", "timeout": bad})
		if err == nil || !strings.Contains(err.Error(), "humaneval: params.timeout: ") {
			t.Errorf("timeout %v: err = %v", bad, err)
		}
	}
	// A record without entry_point is refused with its place.
	if err := os.WriteFile(filepath.Join(dir, "bad.jsonl"), []byte(`{"task_id": "T/0", "prompt": "p", "canonical_solution": "c", "test": "t"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(context.Background(), newLoader(dir), map[string]any{"data_path": "bad.jsonl"}); err == nil || !strings.Contains(err.Error(), `missing field "entry_point"`) {
		t.Errorf("missing entry_point: %v", err)
	}
}
