package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/pyrand"
	"github.com/nel-eval/nel/runtime/score"
)

const (
	dropHeader = "You will be asked to read a passage and answer a question. " +
		"Some examples of passages and Q&A are provided below."
	dropFooter = "\nThink step by step, then write a line of the form " +
		"\"Answer: $ANSWER\" at the end of your response.\n"
)

// dropShot is one few-shot example: a train passage and its first span.
type dropShot struct{ context, completion string }

// pySample is CPython 3.11's random.Random.sample(range(n), k): the
// indices it picks, in order.
func pySample(r *pyrand.Rand, n, k int) []int {
	out := make([]int, k)
	setsize := 21 // k <= 5 here; CPython enlarges it only for k > 5
	if k > 5 {
		setsize += 1 << (2 * ceilLog4(k*3))
	}
	if n <= setsize {
		pool := make([]int, n)
		for i := range pool {
			pool[i] = i
		}
		for i := 0; i < k; i++ {
			j := r.RandBelow(n - i)
			out[i] = pool[j]
			pool[j] = pool[n-i-1]
		}
		return out
	}
	selected := make(map[int]bool, k)
	for i := 0; i < k; i++ {
		j := r.RandBelow(n)
		for selected[j] {
			j = r.RandBelow(n)
		}
		selected[j] = true
		out[i] = j
	}
	return out
}

// ceilLog4 is ceil(log(x, 4)) for x >= 1.
func ceilLog4(x int) int {
	e, p := 0, 1
	for p < x {
		p *= 4
		e++
	}
	return e
}

// dropSpans returns answers_spans.spans of a Hub row (or a flat
// "answers" list).
func dropSpans(r row, i int) ([]string, error) {
	if v, _, ok := field(r.rec, "answers_spans"); ok {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: field \"answers_spans\": want an object, got %T", r.where(i), v)
		}
		spans, ok := list(m["spans"])
		if !ok && m["spans"] != nil {
			return nil, fmt.Errorf("%s: field \"answers_spans.spans\": want a list, got %T", r.where(i), m["spans"])
		}
		return spans, nil
	}
	if v, _, ok := field(r.rec, "answers"); ok {
		if spans, ok := list(v); ok {
			return spans, nil
		}
	}
	return nil, fmt.Errorf("%s: missing field \"answers_spans\"", r.where(i))
}

func drop() *Benchmark {
	const (
		src   = "hf://ucinlp/drop?split=validation"
		train = "hf://ucinlp/drop?split=train"
	)
	return &Benchmark{
		Name:      "drop",
		Category:  "Reading comprehension",
		Source:    src,
		Scorer:    "fuzzy_match",
		ExtraData: []string{"train_path"},
		Load: func(ctx context.Context, l Loader, params map[string]any) (*Set, error) {
			dss, err := load(ctx, l, params, dataset.LoadOptions{}, src)
			if err != nil {
				return nil, fmt.Errorf("drop: %w", err)
			}
			// The few-shot pool: params["train_path"], else the Hub train
			// split, except that with a local data_path and no train_path
			// the evaluation data itself serves as the pool (keeps local
			// runs offline; prompts then differ from NeMo's).
			poolDS := dss
			if tp, ok := params["train_path"].(string); ok && tp != "" {
				ds, err := l.Load(ctx, tp, dataset.LoadOptions{})
				if err != nil {
					return nil, fmt.Errorf("drop: load train_path %s: %w", tp, err)
				}
				poolDS = []*dataset.Dataset{ds}
			} else if _, local, _ := DataPath(params); !local {
				ds, err := l.Load(ctx, train, dataset.LoadOptions{})
				if err != nil {
					return nil, fmt.Errorf("drop: load %s: %w", train, err)
				}
				poolDS = []*dataset.Dataset{ds}
			}
			var pool []dropShot
			for i, r := range rowsOf(poolDS...) {
				p, err := need(r, i, "passage")
				if err != nil {
					return nil, fmt.Errorf("drop: few-shot pool: %w", err)
				}
				spans, err := dropSpans(r, i)
				if err != nil {
					return nil, fmt.Errorf("drop: few-shot pool: %w", err)
				}
				c := ""
				if len(spans) > 0 {
					c = spans[0]
				}
				pool = append(pool, dropShot{p, c})
			}
			all := dss
			if len(poolDS) == 1 && len(dss) == 1 && poolDS[0] != dss[0] {
				all = append(all, poolDS[0])
			}
			rows := rowsOf(dss...)
			items := make([]Item, 0, len(rows))
			for i, r := range rows {
				p, err := need(r, i, "passage")
				if err != nil {
					return nil, fmt.Errorf("drop: %w", err)
				}
				q, err := need(r, i, "question")
				if err != nil {
					return nil, fmt.Errorf("drop: %w", err)
				}
				spans, err := dropSpans(r, i)
				if err != nil {
					return nil, fmt.Errorf("drop: %w", err)
				}
				answers := spans
				if len(answers) == 0 {
					answers = []string{""}
				}
				// Random(42 + idx).sample(train, 3), idx the row's index.
				var b strings.Builder
				b.WriteString(dropHeader)
				b.WriteString("\n\n# Examples")
				k := min(3, len(pool))
				for _, j := range pySample(pyrand.New(int64(42+i)), len(pool), k) {
					fmt.Fprintf(&b, "\n---\n%s %s\n", pool[j].context, pool[j].completion)
				}
				b.WriteString("\n# Your Task\n")
				fmt.Fprintf(&b, "\n---\n%s %s", p, q)
				b.WriteString(dropFooter)
				items = append(items, r.located(userItem(0, "", b.String(), answers[0],
					map[string]any{"correct_answers": answers},
					map[string]any{"passage": p, "question": q, "answers": anyList(answers)})))
			}
			return finish(items, all...), nil
		},
		// fuzzy_match over all spans on the WHOLE response (no F1, no
		// answer-line extraction), as NeMo does.
		Score: func(it *Item, response string) Score {
			targets, ok := score.Strings(it.Meta["correct_answers"])
			if !ok {
				targets = []string{it.Expected}
			}
			r := score.FuzzyMatch(response, targets)
			return binary("fuzzy_match", r.Correct, r.Extracted, map[string]any{"targets": len(targets)})
		},
		Respond: func(it *Item, correct bool, rng *rand.Rand) string {
			rng = rngOr(rng)
			if correct {
				return reasoning(rng) + "\nThe passage gives the figures needed.\nAnswer: " + it.Expected
			}
			// A wrong response must contain no span and be contained in
			// none; a target that normalises to "" matches everything, so
			// for such items no wrong response exists.
			targets, _ := score.Strings(it.Meta["correct_answers"])
			for _, c := range []string{"Answer: zebra crossing", "Answer: purple elephant", "Answer: xylophone quartet", "Answer: 987654321"} {
				if resp := "I could not work this out from the passage.\n" + c; !score.FuzzyMatch(resp, targets).Correct {
					return resp
				}
			}
			return "Answer: none"
		},
	}
}
