package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// HumanEval (Chen et al. 2021): the model completes a Python function from
// its signature and docstring; the answer is right when the problem's own
// tests pass. The program that runs is NeMo Evaluator's code_sandbox one:
// prompt + completion + "\n" + test + "\ncheck(<entry_point>)\n", fed to
// `python3 -` in the benchmark's sandbox; exit status 0 passes.

const (
	humanevalSource = "hf://openai/openai_humaneval?split=test"
	humanevalPrompt = "Read the following function signature and docstring, and fully implement the function described. " +
		"Your response should only contain the code for this function.\n\n"
	// HumanEvalTimeout is a program's default wall-clock limit, NeMo's
	// code_sandbox one. params.timeout (seconds) replaces it; the
	// sandbox's own timeout caps either (the runtime runs every job under
	// the smaller of the two).
	HumanEvalTimeout = 30 * time.Second
	// humanevalDetail bounds the extracted completion and the stderr tail
	// kept in a row: enough to see the failure, small at 164 × repeats.
	humanevalDetail = 2048
)

// The failure kinds of a HumanEval program that ran and failed
// (Details["failure_kind"]). They are the model's failures, so the row's
// error category stays empty; only a sandbox that could not run the program
// is an infrastructure failure (failure.SandboxError).
const (
	KindSyntaxError = "syntax_error" // SyntaxError, IndentationError, TabError
	KindAssertion   = "assertion"    // a test's assert failed
	KindTimeout     = "timeout"      // wall-clock or CPU limit
	KindMemory      = "memory"       // memory limit, MemoryError
	KindProcesses   = "processes"    // process limit (fork failed or was stopped)
	KindOutput      = "output"       // too much output
	KindFileSize    = "file_size"    // a file grew past the limit
	KindCrash       = "crash"        // any other exception, exit status or signal
	KindNoCode      = "no_code"      // nothing to run: the response holds no code
)

func humaneval() *Benchmark {
	return &Benchmark{
		Name:         "humaneval",
		Category:     "Coding",
		Source:       humanevalSource,
		Scorer:       "code_sandbox",
		Size:         164,
		NeedsSandbox: true,
		RowWise:      true,
		Key:          newRowKey(func(v []string) bool { return isIdent(v[4]) }, "task_id", "prompt", "canonical_solution", "test", "entry_point"),
		Load: func(ctx context.Context, l Loader, params map[string]any) (*Set, error) {
			timeout, err := humanevalTimeout(params)
			if err != nil {
				return nil, fmt.Errorf("humaneval: %w", err)
			}
			dss, err := load(ctx, l, params, dataset.LoadOptions{}, humanevalSource)
			if err != nil {
				return nil, fmt.Errorf("humaneval: %w", err)
			}
			rows := rowsOf(dss...)
			items := make([]Item, 0, len(rows))
			for i, r := range rows {
				var f [5]string
				for k, name := range []string{"task_id", "prompt", "canonical_solution", "test", "entry_point"} {
					if f[k], err = need(r, i, name); err != nil {
						return nil, fmt.Errorf("humaneval: %w", err)
					}
				}
				if !isIdent(f[4]) {
					return nil, fmt.Errorf("humaneval: %s: field \"entry_point\": want a Python name, got %q", r.where(i), f[4])
				}
				meta := map[string]any{"task_id": f[0], "prompt": f[1], "test": f[3], "entry_point": f[4], "timeout": timeout}
				content := map[string]any{"task_id": f[0], "prompt": f[1], "canonical_solution": f[2], "test": f[3], "entry_point": f[4]}
				items = append(items, r.located(userItem(0, "", humanevalPrompt+f[1], f[2], meta, content)))
			}
			return finish(items, dss...), nil
		},
		// Score has no sandbox: it extracts the completion but cannot run
		// it, so nothing passes. The runtime scores with ScoreEnv.
		Score: func(it *Item, response string) Score {
			code, how := ExtractCode(response, metaString(it, "entry_point"))
			return binary("code_sandbox", false, clip(code, humanevalDetail), map[string]any{
				"extraction": how, "note": "not run: HumanEval is scored by running the program in a sandbox"})
		},
		ScoreEnv: scoreHumanEval,
		Respond:  respondHumanEval,
	}
}

// humanevalTimeout reads params.timeout (seconds), default HumanEvalTimeout.
func humanevalTimeout(params map[string]any) (time.Duration, error) {
	v, ok := params["timeout"]
	if !ok || v == nil {
		return HumanEvalTimeout, nil
	}
	var secs float64
	switch v := v.(type) {
	case float64:
		secs = v
	case int:
		secs = float64(v)
	case int64:
		secs = float64(v)
	default:
		return 0, fmt.Errorf("params.timeout: want seconds (a number), got %T %v", v, v)
	}
	if secs <= 0 || secs > 24*3600 {
		return 0, fmt.Errorf("params.timeout: want seconds in (0, 86400], got %v", secs)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

func scoreHumanEval(ctx context.Context, env *Env, it *Item, response string) Score {
	const method = "code_sandbox"
	entry := metaString(it, "entry_point")
	code, how := ExtractCode(response, entry)
	details := map[string]any{"extraction": how}
	if strings.TrimSpace(code) == "" {
		// Nothing to run; the runtime records an empty or unparseable
		// response as such (Extracted is empty).
		details["failure_kind"] = KindNoCode
		return binary(method, false, "", details)
	}
	extracted := clip(code, humanevalDetail)
	program, mode := HumanEvalProgram(metaString(it, "prompt"), code, metaString(it, "test"), entry)
	details["assembly"] = mode
	timeout, _ := it.Meta["timeout"].(time.Duration)
	if timeout <= 0 {
		timeout = HumanEvalTimeout
	}
	return runPython(ctx, env, method, program, timeout, extracted, details)
}

// runPython runs a Python program in env's sandbox under timeout: it
// passes when it exits 0 within the sandbox's limits. details gains what
// the run says (exit code, duration, limits, stderr's tail, the kind of
// failure); a sandbox that cannot run it is a sandbox_error.
func runPython(ctx context.Context, env *Env, method, program string, timeout time.Duration, extracted string, details map[string]any) Score {
	if env == nil || env.Sandbox == nil {
		details["sandbox_error"] = "no sandbox: set the benchmark's sandbox in the recipe"
		s := binary(method, false, extracted, details)
		s.Failure = failure.SandboxError
		return s
	}
	res, err := env.Sandbox.Run(ctx, sandbox.Job{
		// -S: no `site` module, so the standard library only (what
		// NeMo's python:3.12-slim image offers HumanEval) and none of
		// the host installation's .pth hooks, which run at every start
		// (a pyenv one importing certifi costs 75 ms a program, which
		// cut the throughput to a quarter on the development machine).
		// The price: exit() and quit(), which site defines, are
		// undefined (sys.exit works).
		Command: []string{"python3", "-S", "-"},
		Stdin:   []byte(program),
		// No host variable (no secret) gets in; the engine adds PATH and
		// LANG for its python3. A fixed hash seed makes set and
		// dict-of-str orders, and so the verdict, the same on every run.
		Env: map[string]string{
			"PYTHONHASHSEED":          "0",
			"PYTHONDONTWRITEBYTECODE": "1",
			"PYTHONIOENCODING":        "utf-8",
		},
		Timeout: timeout,
	})
	if err != nil {
		details["sandbox_error"] = fmt.Sprintf("sandbox %s: %v", env.Sandbox.Name(), err)
		s := binary(method, false, extracted, details)
		s.Failure = failure.SandboxError
		return s
	}
	details["exit_code"] = res.ExitCode
	details["duration_ms"] = res.Duration.Milliseconds()
	if res.Signal != "" {
		details["signal"] = res.Signal
	}
	if res.Limit != sandbox.LimitNone {
		details["limit"] = string(res.Limit)
	}
	if res.Truncated {
		details["output_truncated"] = true
	}
	if len(res.Stderr) > 0 {
		details["stderr_tail"] = tail(string(res.Stderr), humanevalDetail)
	}
	pass := res.ExitCode == 0 && res.Signal == "" && res.Limit == sandbox.LimitNone
	if !pass {
		kind, exc := FailureKind(res)
		details["failure_kind"] = kind
		if exc != "" {
			details["exception"] = exc
		}
	}
	return binary(method, pass, extracted, details)
}

// FailureKind classifies a program that did not pass: the limit the
// sandbox reports first, else the exception of Python's last traceback on
// stderr (its name is returned too), else a crash.
func FailureKind(res *sandbox.Result) (kind, exception string) {
	switch res.Limit {
	case sandbox.LimitTimeout, sandbox.LimitCPU:
		return KindTimeout, ""
	case sandbox.LimitMemory:
		return KindMemory, ""
	case sandbox.LimitProcesses:
		return KindProcesses, ""
	case sandbox.LimitOutput:
		return KindOutput, ""
	case sandbox.LimitFileSize:
		return KindFileSize, ""
	}
	name, msg := pyException(string(res.Stderr))
	switch name {
	case "SyntaxError", "IndentationError", "TabError":
		return KindSyntaxError, name
	case "AssertionError":
		return KindAssertion, name
	case "MemoryError":
		return KindMemory, name
	case "BlockingIOError", "OSError":
		// fork() under the process limit fails with EAGAIN.
		if strings.Contains(msg, "Resource temporarily unavailable") {
			return KindProcesses, name
		}
	}
	return KindCrash, name
}

// excLineRE matches the last line of a Python traceback: the exception's
// (possibly dotted) name at column 0, then ": message" or nothing.
var excLineRE = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?::(.*))?$`)

// pyException finds the exception Python reported on stderr: the first
// unindented name line after the last "Traceback" header (with chained
// exceptions, the last traceback is the one that ended the program). A
// SyntaxError in the program itself has no header; its lines are then
// read from the top.
func pyException(stderr string) (name, msg string) {
	lines := strings.Split(stderr, "\n")
	start := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "Traceback (most recent call last):") {
			start = i + 1
		}
	}
	for _, l := range lines[start:] {
		l = strings.TrimRight(l, "\r")
		if l == "" || l[0] == ' ' || l[0] == '\t' {
			continue
		}
		if m := excLineRE.FindStringSubmatch(l); m != nil {
			return m[1], strings.TrimSpace(m[2])
		}
	}
	return "", ""
}

// fenceRE matches one closed Markdown code fence: its language tag and its
// content. NeMo's pattern, ```(?:python)?\s*\n(.+?)``` (DOTALL, first
// match), reads only an empty or "python" tag; a ```py block there is
// skipped and the text between its closing fence and the next one is taken
// as code. This one reads every tag so that ```py and ```python3 blocks
// count as Python and other languages can be passed over.
var fenceRE = regexp.MustCompile("(?s)```[ \t]*([A-Za-z0-9_+.#-]*)[^\n`]*\n(.*?)```")

// openFenceRE matches a fence that is never closed (the response was cut
// off, or the model forgot): its content runs to the end.
var openFenceRE = regexp.MustCompile("(?s)```[ \t]*([A-Za-z0-9_+.#-]*)[^\n`]*\n(.*)$")

func isPythonTag(tag string) bool {
	switch strings.ToLower(tag) {
	case "", "python", "python3", "py", "py3":
		return true
	}
	return false
}

// ExtractCode takes the completion out of a response (how says which rule
// applied):
//
//   - "fence": the content of a closed ``` block. Among several, blocks
//     tagged python, python3, py, py3 or untagged count before others;
//     of those, the first that defines the entry point wins, else the
//     first.
//   - "open_fence": no closed block but an opening fence: what follows it.
//   - "raw": no fence at all: the whole response (NeMo's fallback).
func ExtractCode(response, entry string) (code, how string) {
	response = strings.ReplaceAll(response, "\r\n", "\n")
	type block struct {
		code string
		py   bool
	}
	var blocks []block
	end := 0
	for _, m := range fenceRE.FindAllStringSubmatchIndex(response, -1) {
		blocks = append(blocks, block{response[m[4]:m[5]], isPythonTag(response[m[2]:m[3]])})
		end = m[1]
	}
	if len(blocks) == 0 {
		if m := openFenceRE.FindStringSubmatch(response[end:]); m != nil {
			return m[2], "open_fence"
		}
		return response, "raw"
	}
	pick := func(py bool) (string, bool) {
		first := -1
		for i, b := range blocks {
			if b.py != py {
				continue
			}
			if _, ok := definesFunc(b.code, entry); ok {
				return b.code, true
			}
			if first < 0 {
				first = i
			}
		}
		if first < 0 {
			return "", false
		}
		return blocks[first].code, true
	}
	if c, ok := pick(true); ok {
		return c, "fence"
	}
	c, _ := pick(false)
	return c, "fence"
}

// definesFunc finds the line "def <name>(" in code and returns its offset
// and whether it is there.
func definesFunc(code, name string) (int, bool) {
	if name == "" {
		return 0, false
	}
	off := 0
	for _, line := range strings.SplitAfter(code, "\n") {
		s := strings.TrimLeft(line, " \t")
		if rest, ok := strings.CutPrefix(s, "def"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			rest = strings.TrimLeft(rest, " \t")
			if rest, ok = strings.CutPrefix(rest, name); ok && strings.HasPrefix(strings.TrimLeft(rest, " \t"), "(") {
				return off, true
			}
		}
		off += len(line)
	}
	return 0, false
}

// HumanEvalProgram assembles the program that tests a completion; mode
// says how:
//
//   - "function": the completion defines the entry point itself (the model
//     repeated the function). Appending it to the prompt would nest it in
//     the prompt's unfinished def, so the program is the prompt up to its
//     own def of the entry point (imports, helper functions) followed by
//     the completion, dedented as a whole.
//   - "body": the completion is the function's body and follows the prompt
//     (NeMo's assembly), its indentation repaired first (fixBodyIndent).
//
// Either is followed by "\n" + test + "\ncheck(<entry_point>)\n".
func HumanEvalProgram(prompt, completion, test, entry string) (program, mode string) {
	completion = strings.ReplaceAll(completion, "\r\n", "\n")
	tailText := "\n" + test + "\ncheck(" + entry + ")\n"
	if d := dedent(completion); startsDef(d, entry) {
		header := "" // a prompt without the def (custom data) gives nothing
		if i, ok := definesFunc(prompt, entry); ok {
			header = prompt[:i]
		}
		return header + d + tailText, "function"
	}
	return prompt + fixBodyIndent(completion) + tailText, "body"
}

// startsDef says code defines entry at column 0.
func startsDef(code, entry string) bool {
	i, ok := definesFunc(code, entry)
	return ok && code[i] == 'd'
}

// fixBodyIndent repairs a function body whose first statement lost its
// indentation; a body already indented is returned unchanged. Comment and
// blank lines do not count (Python ignores their indentation).
//
//   - every statement at column 0 (the body was written dedented): each
//     line is indented by four spaces;
//   - only the first statement at column 0 (the response was stripped of
//     leading whitespace): it gets the indentation of the shallowest
//     statement after it; except when it opens a block (ends with ':') and
//     nothing after the block's first line is shallower, where both
//     readings are the same one block and indenting every line by four
//     spaces is valid for either;
//   - a single statement at column 0: indented by four spaces.
func fixBodyIndent(body string) string {
	lines := strings.Split(body, "\n")
	var stmts []int
	for i, l := range lines {
		s := strings.TrimLeft(l, " \t")
		if s != "" && s[0] != '#' {
			stmts = append(stmts, i)
		}
	}
	if len(stmts) == 0 || indentOf(lines[stmts[0]]) != "" {
		return body
	}
	all := func() string {
		for i, l := range lines {
			if strings.TrimSpace(l) != "" {
				lines[i] = "    " + l
			}
		}
		return strings.Join(lines, "\n")
	}
	if len(stmts) == 1 {
		return all()
	}
	shallow := indentOf(lines[stmts[1]])
	for _, i := range stmts[2:] {
		if in := indentOf(lines[i]); len(in) < len(shallow) {
			shallow = in
		}
	}
	switch {
	case shallow == "":
		return all()
	case opensBlock(lines[stmts[0]]) && len(indentOf(lines[stmts[1]])) <= len(shallow):
		return all()
	}
	lines[stmts[0]] = shallow + lines[stmts[0]]
	return strings.Join(lines, "\n")
}

func indentOf(line string) string {
	return line[:len(line)-len(strings.TrimLeft(line, " \t"))]
}

// opensBlock says a line ends with ':' (before a trailing comment).
func opensBlock(line string) bool {
	s := strings.TrimRight(line, " \t")
	if strings.HasSuffix(s, ":") {
		return true
	}
	if i := strings.LastIndex(s, "#"); i >= 0 {
		return strings.HasSuffix(strings.TrimRight(s[:i], " \t"), ":")
	}
	return false
}

// dedent removes the leading whitespace all non-blank lines share (Python's
// textwrap.dedent, for space-or-tab prefixes).
func dedent(code string) string {
	lines := strings.Split(code, "\n")
	prefix, first := "", true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		in := indentOf(l)
		if first {
			prefix, first = in, false
			continue
		}
		for !strings.HasPrefix(in, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if prefix == "" {
		return code
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, prefix)
		if strings.TrimSpace(lines[i]) == "" {
			lines[i] = strings.TrimLeft(lines[i], " \t")
		}
	}
	return strings.Join(lines, "\n")
}

// respondHumanEval writes the canonical solution (correct) or the same
// function with its body replaced by `pass` (wrong), in one of the shapes
// models answer in: the body alone in a ```python fence or raw, or the
// whole function in a fence after a sentence.
func respondHumanEval(it *Item, correct bool, rng *rand.Rand) string {
	rng = rngOr(rng)
	body := it.Expected
	if !correct {
		body = "    pass\n"
	}
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	prompt, entry := metaString(it, "prompt"), metaString(it, "entry_point")
	fn := body
	if i, ok := definesFunc(prompt, entry); ok {
		fn = prompt[i:] + body
	}
	switch rng.IntN(4) {
	case 0:
		return "```python\n" + body + "```\n"
	case 1:
		return body
	case 2:
		return "Here is the complete function:\n\n```python\n" + fn + "```\n"
	default:
		return "```python3\n" + fn + "```\nIt follows the docstring."
	}
}

func metaString(it *Item, key string) string {
	s, _ := it.Meta[key].(string)
	return s
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func isIdent(s string) bool { return identRE.MatchString(s) }

// clip returns at most n bytes of s's head, cut at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// tail returns at most n bytes of s's end, cut at a rune boundary.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
