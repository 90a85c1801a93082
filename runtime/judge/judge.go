// Package judge is the LLM-as-judge of a `judge` metric: it sends a rubric
// prompt to the judge's model service, reads a score out of the answer and
// normalises it to [0, 1], and records every call (messages, raw answer,
// parsed score, latency, error) for the sample's trajectory.
//
// Rubrics. An inline `rubric` (or a `rubric_file`, which the compiler
// inlines into the plan) that contains {{response}} is a template: the
// judge's whole user message, with these placeholders replaced:
//
//	{{question}}   the item's prompt (its last user message)
//	{{response}}   the evaluated model's answer
//	{{reference}}  the gold answer ("" when reference_free)
//
// A rubric with none of the placeholders is criteria text (NeMo Evaluator
// configs write rubrics so, e.g. "Be strict about units."): it goes into
// DefaultRubric as a "Criteria" section. A rubric that uses {{question}} or
// {{reference}} but not {{response}} is refused at compile time
// (CheckRubric): the judge would never see the answer. Without a rubric
// the judge gets DefaultRubric, NeMo Evaluator's 1–5 rubric (reference
// §3.3); DefaultSystem is the system message unless the recipe sets
// system_prompt.
//
// Retries. A transport failure (429, 5xx, reset, a request over the
// timeout) is retried by the model client up to max_retries times within
// the metric's timeout, which bounds each judge call. An answer that holds
// no score is asked once more, with the same messages (judges sample; a
// second answer often parses); if that fails too the call fails with
// ErrUnparseable. Both answers are recorded.
package judge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/plan"
)

// DefaultSystem is NeMo Evaluator's judge system message.
const DefaultSystem = "You are a strict evaluation judge. Always respond with valid JSON."

// DefaultRubric is NeMo Evaluator's default 1–5 rubric (reference §3.3):
// the instruction, the response, an optional "Reference answer" section,
// and the reply format {"score": <1-5>, "reasoning": "..."}. The reference
// section is dropped when the item has no gold answer or the metric is
// reference_free.
const DefaultRubric = `Evaluate the following response to the given instruction on a scale of 1 to 5.
{{criteria_section}}
Instruction:
{{question}}

Response:
{{response}}
{{reference_section}}
Scoring rubric:
1 - Completely wrong, irrelevant, or unhelpful.
2 - Mostly wrong, with a few relevant elements.
3 - Partially correct, or correct but incomplete.
4 - Mostly correct, with minor errors or omissions.
5 - Fully correct, complete and helpful.

Respond with a JSON object only: {"score": <1-5>, "reasoning": "..."}`

// referenceSection is DefaultRubric's optional part.
const referenceSection = "\nReference answer:\n{{reference}}\n"

// Placeholders of a rubric template.
const (
	PlaceQuestion  = "{{question}}"
	PlaceResponse  = "{{response}}"
	PlaceReference = "{{reference}}"
)

// Config is one judge metric, as the plan has it.
type Config struct {
	Name string
	// Rubric is the template ("" means DefaultRubric); System the system
	// message ("" means DefaultSystem).
	Rubric, System string
	MaxScore       float64
	Temperature    float64
	MaxTokens      int
	// Timeout bounds one judge call, its transport retries included.
	Timeout    time.Duration
	MaxRetries int
	// ReferenceFree leaves the gold answer out of the prompt.
	ReferenceFree bool
}

// FromMetric is the Config of a plan's judge metric, with NeMo's defaults
// where the plan has zero values (max_score 5, max_tokens 2048, timeout
// 120 s).
func FromMetric(m plan.Metric) Config {
	c := Config{
		Name: m.Name, MaxScore: m.MaxScore, Temperature: m.Temperature, MaxTokens: m.MaxTokens,
		Timeout: time.Duration(m.Timeout * float64(time.Second)), MaxRetries: m.MaxRetries,
		ReferenceFree: m.ReferenceFree,
	}
	if m.Rubric != nil {
		c.Rubric = *m.Rubric
	}
	if m.SystemPrompt != nil {
		c.System = *m.SystemPrompt
	}
	if c.MaxScore <= 0 {
		c.MaxScore = 5
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = 2048
	}
	if c.Timeout <= 0 {
		c.Timeout = 120 * time.Second
	}
	return c
}

// CheckRubric reports what is wrong with a rubric: a template (one that
// uses placeholders) must place the response. The compiler calls it so
// that a bad rubric fails at compile time, not on the cluster.
func CheckRubric(rubric string) error {
	if isTemplate(rubric) && !strings.Contains(rubric, PlaceResponse) {
		return fmt.Errorf("the rubric does not contain %s, where the evaluated answer goes (placeholders: %s, %s, %s)",
			PlaceResponse, PlaceQuestion, PlaceResponse, PlaceReference)
	}
	return nil
}

// isTemplate says a rubric uses placeholders (else it is criteria text).
func isTemplate(rubric string) bool {
	return strings.Contains(rubric, PlaceQuestion) || strings.Contains(rubric, PlaceResponse) || strings.Contains(rubric, PlaceReference)
}

// Completer is the part of the model client a Judge uses.
type Completer interface {
	Complete(ctx context.Context, req model.Request) (*model.Response, error)
}

// Judge asks one judge service. It implements bench.Judge and is safe for
// concurrent use.
type Judge struct {
	cfg Config
	c   Completer
}

var _ bench.Judge = (*Judge)(nil)

// New returns the judge of cfg over the judge service's client c (whose
// MaxRetries should be cfg.MaxRetries).
func New(cfg Config, c Completer) *Judge {
	if cfg.MaxScore <= 0 {
		cfg.MaxScore = 5
	}
	return &Judge{cfg: cfg, c: c}
}

// Config returns the judge's configuration.
func (j *Judge) Config() Config { return j.cfg }

// Prompt builds the judge's messages for one response.
func (j *Judge) Prompt(question, response, reference string) []bench.Message {
	if j.cfg.ReferenceFree {
		reference = ""
	}
	tmpl := j.cfg.Rubric
	if !isTemplate(tmpl) {
		ref, crit := "", ""
		if reference != "" {
			ref = referenceSection
		}
		if c := strings.TrimSpace(tmpl); c != "" {
			crit = "\nCriteria:\n" + c + "\n"
		}
		tmpl = strings.NewReplacer("{{reference_section}}", ref, "{{criteria_section}}", crit).Replace(DefaultRubric)
	}
	// One pass, so that a response containing "{{reference}}" is not
	// expanded in turn.
	user := strings.NewReplacer(PlaceQuestion, question, PlaceResponse, response, PlaceReference, reference).Replace(tmpl)
	sys := j.cfg.System
	if sys == "" {
		sys = DefaultSystem
	}
	return []bench.Message{{Role: "system", Content: sys}, {Role: "user", Content: user}}
}

// Ask sends msgs to the judge (one call, with the metric's sampling
// parameters, timeout and transport retries) and returns its raw answer.
// The call is recorded in ctx's Recorder, if any.
func (j *Judge) Ask(ctx context.Context, msgs []bench.Message) (string, error) {
	raw, _, err := j.ask(ctx, msgs, nil)
	return raw, err
}

func (j *Judge) ask(ctx context.Context, msgs []bench.Message, parse func(*Call, string) error) (string, *Call, error) {
	temp := j.cfg.Temperature
	maxTok := int64(j.cfg.MaxTokens)
	req := model.Request{Generation: plan.Generation{Temperature: &temp}}
	if maxTok > 0 {
		req.Generation.MaxTokens = &maxTok
	}
	for _, m := range msgs {
		req.Messages = append(req.Messages, model.Message{Role: m.Role, Content: m.Content})
	}
	cctx := ctx
	if j.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, j.cfg.Timeout)
		defer cancel()
	}
	call := Call{Judge: j.cfg.Name, Messages: msgs}
	start := time.Now()
	resp, err := j.c.Complete(cctx, req)
	call.LatencyMS = float64(time.Since(start).Microseconds()) / 1000
	if resp != nil {
		call.Raw, call.Attempts = resp.Content, resp.Attempts
	}
	if err == nil && parse != nil {
		err = parse(&call, resp.Content)
	}
	if err != nil {
		call.Error = err.Error()
	}
	record(ctx, call)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("judge %s: no answer within its timeout of %v: %w", j.cfg.Name, j.cfg.Timeout, err)
		} else {
			err = fmt.Errorf("judge %s: %w", j.cfg.Name, err)
		}
		return call.Raw, &call, err
	}
	return resp.Content, &call, nil
}

// Verdict is a judge's parsed score.
type Verdict struct {
	// Score is on the judge's scale; Normalized in [0, 1].
	Score, Normalized float64
	// How names the form the score was read from (see Parse).
	How string
	// Raw is the judge's answer.
	Raw string
}

// Score asks the judge to score response with the metric's rubric and
// parses its answer, asking once more when the first answer holds no score.
func (j *Judge) Score(ctx context.Context, question, response, reference string) (Verdict, error) {
	return j.ScoreMessages(ctx, j.Prompt(question, response, reference))
}

// ScoreMessages is Score with the messages already built.
func (j *Judge) ScoreMessages(ctx context.Context, msgs []bench.Message) (Verdict, error) {
	var v Verdict
	parse := func(c *Call, raw string) error {
		s, n, how, err := Parse(raw, j.cfg.MaxScore)
		if err != nil {
			return err
		}
		c.Score, c.Normalized, c.How = &s, &n, how
		v = Verdict{Score: s, Normalized: n, How: how, Raw: raw}
		return nil
	}
	var err error
	for try := range 2 {
		_, _, err = j.ask(ctx, msgs, parse)
		if err == nil {
			return v, nil
		}
		if try == 0 && !errors.Is(err, ErrUnparseable) {
			break // transport failures were retried by the client already
		}
	}
	return Verdict{}, err
}

// Call is one judge call, as the trajectory's judge_calls column keeps it
// (a JSON array of these).
type Call struct {
	// Judge is the metric's name.
	Judge    string          `json:"judge"`
	Messages []bench.Message `json:"messages"`
	// Raw is the judge's answer ("" when none came).
	Raw string `json:"raw"`
	// Score and Normalized are set when the answer was parsed as a score;
	// How is the form it was read from. (A benchmark that reads the answer
	// itself, like SimpleQA's grade, puts its reading in the scoring
	// details.)
	Score      *float64 `json:"score,omitempty"`
	Normalized *float64 `json:"normalized,omitempty"`
	How        string   `json:"how,omitempty"`
	LatencyMS  float64  `json:"latency_ms"`
	// Attempts counts HTTP requests (transport retries included).
	Attempts int    `json:"attempts,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Recorder collects the judge calls made for one sample.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
}

type recorderKey struct{}

// WithRecorder returns a context whose judge calls are recorded in the
// returned Recorder.
func WithRecorder(ctx context.Context) (context.Context, *Recorder) {
	r := &Recorder{}
	return context.WithValue(ctx, recorderKey{}, r), r
}

func record(ctx context.Context, c Call) {
	if r, ok := ctx.Value(recorderKey{}).(*Recorder); ok {
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
	}
}

// Calls returns the calls recorded so far, in order.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}
