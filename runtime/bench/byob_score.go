package bench

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/score"
)

// BYOBScorers lists the built-in scorers a BYOB benchmark may name.
func BYOBScorers() []string {
	return []string{"exact_match", "contains", "regex", "numeric_match", "math_equiv",
		"multiple_choice", "ifeval", "code_execution", "judge", "json_schema"}
}

// Defaults of a BYOB scorer's time limits.
const (
	// BYOBCodeTimeout bounds one code_execution program (NeMo's
	// code_sandbox limit, as HumanEval's).
	BYOBCodeTimeout = HumanEvalTimeout
	// BYOBCommandTimeout bounds one run of a scorer command.
	BYOBCommandTimeout = 60 * time.Second
)

// byobScorer is a BYOB benchmark's scorer, its settings parsed.
type byobScorer struct {
	spec    plan.BYOBScorer
	re      *regexp.Regexp // regex
	test    *Template      // code_execution
	schema  *jsonSchema    // json_schema
	timeout time.Duration  // code_execution, command
	dir     string         // where a command runs
	hide    []string       // variables a command does not inherit
}

func newBYOBScorer(spec plan.BYOBScorer) (*byobScorer, error) {
	s := &byobScorer{spec: spec}
	if len(spec.Command) > 0 {
		if spec.Name != "" {
			return nil, fmt.Errorf("name %q and command both set: a scorer is one or the other", spec.Name)
		}
		if spec.Pattern != "" || spec.Letters != "" || spec.Test != "" || spec.Schema != "" {
			return nil, fmt.Errorf("a command scorer takes command and timeout only")
		}
		s.timeout = seconds(spec.Timeout, BYOBCommandTimeout)
		return s, nil
	}
	if err := unusedSettings(spec); err != nil {
		return nil, err
	}
	var err error
	switch spec.Name {
	case "exact_match", "contains", "numeric_match", "math_equiv", "multiple_choice", "ifeval", "judge":
	case "regex":
		if spec.Pattern == "" {
			return nil, fmt.Errorf("regex needs a pattern")
		}
		if s.re, err = score.CompilePy(spec.Pattern); err != nil {
			return nil, fmt.Errorf("pattern: %w", err)
		}
	case "code_execution":
		if spec.Test == "" {
			return nil, fmt.Errorf("code_execution needs test: the code that checks the model's code (a template over the record's fields)")
		}
		if s.test, err = ParseTemplate(spec.Test); err != nil {
			return nil, fmt.Errorf("test: %w", err)
		}
		s.timeout = seconds(spec.Timeout, BYOBCodeTimeout)
	case "json_schema":
		if s.schema, err = compileSchema(spec.Schema); err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
	default:
		return nil, fmt.Errorf("no scorer %q (scorers: %s; or command: [...])", spec.Name, strings.Join(BYOBScorers(), ", "))
	}
	return s, nil
}

// CheckBYOBScorer says what is wrong with a BYOB scorer's settings, if
// anything: what nel-run would refuse when it builds the benchmark.
func CheckBYOBScorer(spec plan.BYOBScorer) error {
	_, err := newBYOBScorer(spec)
	return err
}

// unusedSettings refuses a setting the named scorer does not read (a
// pattern on exact_match): it would be silently ignored.
func unusedSettings(spec plan.BYOBScorer) error {
	uses := map[string][]string{
		"regex": {"pattern"}, "multiple_choice": {"letters"},
		"code_execution": {"test", "timeout"}, "json_schema": {"schema"},
	}
	set := []struct {
		name string
		on   bool
	}{
		{"pattern", spec.Pattern != ""}, {"letters", spec.Letters != ""}, {"test", spec.Test != ""},
		{"schema", spec.Schema != ""}, {"timeout", spec.Timeout != 0},
	}
	for _, s := range set {
		if s.on && !slices.Contains(uses[spec.Name], s.name) {
			return fmt.Errorf("%s does not read %s (it is a setting of %s)", spec.Name, s.name, settingOf(uses, s.name))
		}
	}
	return nil
}

// settingOf lists the scorers that read setting.
func settingOf(uses map[string][]string, setting string) string {
	var out []string
	for _, name := range BYOBScorers() {
		if slices.Contains(uses[name], setting) {
			out = append(out, name)
		}
	}
	return strings.Join(out, ", ")
}

func seconds(secs float64, def time.Duration) time.Duration {
	if secs <= 0 {
		return def
	}
	return time.Duration(secs * float64(time.Second))
}

// method names the scorer in rows' scoring details.
func (s *byobScorer) method() string {
	if len(s.spec.Command) > 0 {
		return "command"
	}
	return s.spec.Name
}

func (s *byobScorer) needsSandbox() bool { return s.spec.Name == "code_execution" }

// meta is what the scorer needs of a record beyond the gold answer: the
// record itself (a command sees it), code_execution's test program,
// ifeval's instructions.
func (s *byobScorer) meta(r row, i int, prompt string) (map[string]any, error) {
	meta := map[string]any{"row": jsonSafe(r.rec)} // JSON for a command
	switch s.spec.Name {
	case "code_execution":
		test, err := s.test.Render(r.rec)
		if err != nil {
			return nil, fmt.Errorf("byob.scorer.test: %w", err)
		}
		meta["test"] = test
	case "ifeval":
		ids, kwargs, err := ifevalInstructions(r, i, prompt)
		if err != nil {
			return nil, fmt.Errorf("byob.scorer ifeval: %w", err)
		}
		meta["instruction_id_list"], meta["kwargs"] = ids, kwargs
	}
	return meta, nil
}

// score scores what needs no environment; a scorer that does (a sandbox,
// a command, a judge) says so here without a verdict.
func (s *byobScorer) score(it *Item, response string) Score {
	name := s.method()
	switch name {
	case "exact_match":
		r := score.ExactMatch(response, it.Expected)
		return binary(name, r.Correct, r.Extracted, nil)
	case "contains":
		// The normalised gold answer appears in the normalised response.
		ok := strings.Contains(score.Normalize(response), score.Normalize(it.Expected))
		return binary(name, ok, truncate(score.PyStrip(response), 200), nil)
	case "regex":
		return s.regex(response, it.Expected)
	case "numeric_match":
		r := score.NumericMatch(response, it.Expected)
		return binary(name, r.Correct, r.Extracted, nil)
	case "math_equiv":
		return mathEquiv(response, it.Expected)
	case "multiple_choice":
		r := score.MCQRobust(response, it.Expected, strings.ToUpper(s.spec.Letters))
		return binary(name, r.Correct, r.Extracted, nil)
	case "ifeval":
		return ifevalScore(it, response)
	case "json_schema":
		return s.schema.score(response)
	case "judge":
		// The benchmark's first judge metric gives the reward (the
		// runtime asks it; see runtime/shard's judgeMetrics).
		return Score{Method: name, NeedsJudge: true, Extracted: truncate(response, 500), Details: map[string]any{"needs_judge": true}}
	}
	// code_execution and command need their environment (scoreEnv).
	return binary(name, false, truncate(score.PyStrip(response), 200), map[string]any{"note": "not run: scored by " + name + " at run time"})
}

// regex takes group 1 of the pattern's first match (the whole match when
// the pattern has no group) and compares it with the gold answer, both
// normalised as exact_match does. No match is wrong and extracts nothing.
func (s *byobScorer) regex(response, expected string) Score {
	m := s.re.FindStringSubmatch(response)
	details := map[string]any{"pattern": s.spec.Pattern}
	if m == nil {
		return binary("regex", false, "", details)
	}
	ex := m[0]
	if len(m) > 1 {
		ex = m[1]
	}
	ex = score.PyStrip(ex)
	return binary("regex", score.Normalize(ex) == score.Normalize(expected), ex, details)
}

// scoreEnv is the scorer that needs the runtime's environment, or nil.
func (s *byobScorer) scoreEnv() func(ctx context.Context, env *Env, it *Item, response string) Score {
	switch {
	case len(s.spec.Command) > 0:
		return s.runCommand
	case s.spec.Name == "code_execution":
		return s.execute
	}
	return nil
}

// execute runs the model's code followed by the record's test code in the
// benchmark's sandbox: it passes when the program exits 0.
func (s *byobScorer) execute(ctx context.Context, env *Env, it *Item, response string) Score {
	const method = "code_execution"
	code, how := ExtractCode(response, "")
	details := map[string]any{"extraction": how}
	if strings.TrimSpace(code) == "" {
		details["failure_kind"] = KindNoCode
		return binary(method, false, "", details)
	}
	test, _ := it.Meta["test"].(string)
	program := code + "\n" + test + "\n"
	return runPython(ctx, env, method, program, s.timeout, clip(code, humanevalDetail), details)
}
