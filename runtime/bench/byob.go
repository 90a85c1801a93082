package bench

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/plan"
)

// BYOBCategory is the model-card category of a BYOB benchmark whose recipe
// gives none.
const BYOBCategory = "Custom"

// BYOB builds the benchmark a recipe declares in its byob section (NeMo
// Evaluator's "bring your own benchmark"): every record of spec.Dataset is
// an item whose user message is spec.Prompt filled from the record, whose
// gold answer is the record's spec.Target field, scored by spec.Scorer.
//
// An item's content (what its ID hashes) is the whole record: the same
// record gets the same ID under any template, as the built-ins' IDs do.
// A scorer command runs in dir, the recipe's directory, so that the paths
// in it are relative to the recipe like every other path a recipe names,
// with nel-run's environment less the variables named in hide (the
// plan's API keys: a scorer reads model output, and needs no key).
func BYOB(name string, spec *plan.BYOB, dir string, hide []string) (*Benchmark, error) {
	prompt, err := ParseTemplate(spec.Prompt)
	if err != nil {
		return nil, fmt.Errorf("%s: byob.prompt: %w", name, err)
	}
	var answer *Template
	if fs := spec.Fewshot; fs != nil {
		if answer, err = ParseTemplate(fs.Answer); err != nil {
			return nil, fmt.Errorf("%s: byob.fewshot.answer: %w", name, err)
		}
		if fs.N < 1 {
			return nil, fmt.Errorf("%s: byob.fewshot.n: want at least 1, got %d", name, fs.N)
		}
	}
	sc, err := newBYOBScorer(spec.Scorer)
	if sc != nil {
		sc.dir, sc.hide = dir, hide
	}
	if err != nil {
		return nil, fmt.Errorf("%s: byob.scorer: %w", name, err)
	}
	cat := spec.Category
	if cat == "" {
		cat = BYOBCategory
	}
	bl := &byobLoader{name: name, spec: spec, prompt: prompt, answer: answer, scorer: sc}
	return &Benchmark{
		Name:         name,
		Category:     cat,
		Source:       spec.Dataset,
		Scorer:       sc.method(),
		Load:         bl.load,
		Score:        sc.score,
		ScoreEnv:     sc.scoreEnv(),
		NeedsSandbox: sc.needsSandbox(),
	}, nil
}

// byobLoader turns a BYOB benchmark's records into items.
type byobLoader struct {
	name   string
	spec   *plan.BYOB
	prompt *Template
	answer *Template // few-shot answers; nil without few-shot
	scorer *byobScorer
}

// load reads the dataset (params are not read: a BYOB benchmark names its
// data in its spec) and builds the items. A record without a field the
// prompt or the target names is an error naming the record, the fields and
// the columns there are.
func (bl *byobLoader) load(ctx context.Context, l Loader, _ map[string]any) (*Set, error) {
	ds, err := l.Load(ctx, bl.spec.Dataset, dataset.LoadOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bl.name, err)
	}
	shots, err := bl.fewshot(ctx, l)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bl.name, err)
	}
	rows := rowsOf(ds)
	items := make([]Item, 0, len(rows))
	for i, r := range rows {
		it, err := bl.item(r, i, shots)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", bl.name, r.origin, err)
		}
		items = append(items, r.located(it))
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: dataset %s has no records", bl.name, bl.spec.Dataset)
	}
	return finish(items, ds), nil
}

// item builds the item of one record.
func (bl *byobLoader) item(r row, i int, shots []Message) (Item, error) {
	user, err := bl.prompt.Render(r.rec)
	if err != nil {
		return Item{}, fmt.Errorf("byob.prompt: %w", err)
	}
	// A task's reward is its verifier's (byob.verifier): it has no
	// reference answer to require.
	if err := MissingFields([]string{bl.spec.Target}, r.rec); err != nil && len(bl.spec.Verifier) == 0 {
		return Item{}, fmt.Errorf("byob.target: %w", err)
	}
	expected := text(r.rec[bl.spec.Target])
	var msgs []Message
	var plain strings.Builder
	if sp := bl.spec.SystemPrompt; sp != nil && *sp != "" {
		msgs = append(msgs, Message{Role: "system", Content: *sp})
		plain.WriteString(*sp + "\n\n")
	}
	msgs = append(msgs, shots...)
	for _, m := range shots {
		// The completions form: each example's prompt and answer on
		// their own lines, a blank line between examples.
		plain.WriteString(m.Content)
		if m.Role == "assistant" {
			plain.WriteString("\n\n")
		} else {
			plain.WriteString("\n")
		}
	}
	msgs = append(msgs, Message{Role: "user", Content: user})
	plain.WriteString(user)
	meta, err := bl.scorer.meta(r, i, user)
	if err != nil {
		return Item{}, err
	}
	return Item{
		Messages: msgs,
		Prompt:   plain.String(),
		Expected: expected,
		Meta:     meta,
		Content:  jsonSafe(r.rec).(map[string]any),
	}, nil
}

// jsonSafe is v with every float that JSON cannot hold (NaN, ±Inf, which
// a Parquet column may) written as Python's str() writes it: an item's
// content must have canonical JSON for its ID.
func jsonSafe(v any) any {
	switch v := v.(type) {
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return pyFloat(v)
		}
	case float32:
		return jsonSafe(float64(v))
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = jsonSafe(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = jsonSafe(x)
		}
		return out
	}
	return v
}

// pyFloat is Python's str() of a non-finite float.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case f > 0:
		return "inf"
	}
	return "-inf"
}

// fewshot reads the first N records of the few-shot dataset as user and
// assistant turns; none without few-shot.
func (bl *byobLoader) fewshot(ctx context.Context, l Loader) ([]Message, error) {
	fs := bl.spec.Fewshot
	if fs == nil {
		return nil, nil
	}
	ds, err := l.Load(ctx, fs.Dataset, dataset.LoadOptions{})
	if err != nil {
		return nil, fmt.Errorf("byob.fewshot: %w", err)
	}
	rows := rowsOf(ds)
	if len(rows) < fs.N {
		return nil, fmt.Errorf("byob.fewshot: %s has %d records, fewer than n: %d", fs.Dataset, len(rows), fs.N)
	}
	var out []Message
	for _, r := range rows[:fs.N] {
		q, err := bl.prompt.Render(r.rec)
		if err != nil {
			return nil, fmt.Errorf("byob.fewshot: %s: byob.prompt: %w", r.origin, err)
		}
		a, err := bl.answer.Render(r.rec)
		if err != nil {
			return nil, fmt.Errorf("byob.fewshot: %s: byob.fewshot.answer: %w", r.origin, err)
		}
		out = append(out, Message{Role: "user", Content: q}, Message{Role: "assistant", Content: a})
	}
	return out, nil
}
