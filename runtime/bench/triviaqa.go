package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/score"
)

const triviaqaPrompt = "Answer with a short factual answer.\n\nQuestion: %s\nAnswer:"

func triviaqa() *Benchmark {
	const src = "hf://mandarjoshi/trivia_qa?config=rc.nocontext&split=validation"
	return &Benchmark{
		Name:     "triviaqa",
		Category: "Knowledge",
		Source:   src,
		Scorer:   "exact_match",
		RowWise:  true,
		Load: func(ctx context.Context, l Loader, params map[string]any) (*Set, error) {
			dss, err := load(ctx, l, params, dataset.LoadOptions{}, src)
			if err != nil {
				return nil, fmt.Errorf("triviaqa: %w", err)
			}
			rows := rowsOf(dss...)
			items := make([]Item, 0, len(rows))
			for i, r := range rows {
				q, err := need(r, i, "question")
				if err != nil {
					return nil, fmt.Errorf("triviaqa: %w", err)
				}
				av, _, _ := field(r.rec, "answer")
				a, ok := av.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("triviaqa: %s: field \"answer\": want an object with value/aliases, got %T", r.where(i), av)
				}
				value := text(a["value"])
				aliases, _ := list(a["aliases"])
				normalized, _ := list(a["normalized_aliases"])
				// NeMo: {value} | set(aliases) | set(normalized_aliases) - {""}.
				// Python's "-" binds tighter than "|", so "" is dropped from
				// the normalized aliases only.
				set := map[string]bool{value: true}
				for _, s := range aliases {
					set[s] = true
				}
				for _, s := range normalized {
					if s != "" {
						set[s] = true
					}
				}
				all := make([]string, 0, len(set))
				for s := range set {
					all = append(all, s)
				}
				slices.Sort(all)
				content := map[string]any{"question": q, "answer": value, "aliases": anyList(all)}
				if v, _, ok := field(r.rec, "question_id"); ok {
					content["question_id"] = text(v)
				}
				items = append(items, r.located(userItem(0, "", fmt.Sprintf(triviaqaPrompt, q), value,
					map[string]any{"correct_answers": all}, content)))
			}
			return finish(items, dss...), nil
		},
		Score: func(it *Item, response string) Score {
			first := score.PyStrip(strings.SplitN(score.PyStrip(response), "\n", 2)[0])
			pred := score.Normalize(first)
			aliases, ok := score.Strings(it.Meta["correct_answers"])
			if !ok {
				aliases = []string{it.Expected}
			}
			correct := false
			for _, a := range aliases {
				if score.Normalize(a) == pred {
					correct = true
					break
				}
			}
			return binary("exact_match", correct, first, map[string]any{"aliases": len(aliases), "line": "first"})
		},
		Respond: func(it *Item, correct bool, rng *rand.Rand) string {
			rng = rngOr(rng)
			if correct {
				return it.Expected + "\n\nThis is the commonly accepted answer to the question."
			}
			aliases, _ := score.Strings(it.Meta["correct_answers"])
			cands := []string{"I am not sure", "Unknown", "None of the above", "Mount Everest", "Napoleon Bonaparte"}
			start := rng.IntN(len(cands))
			for k := range cands {
				c := cands[(start+k)%len(cands)]
				if !slices.ContainsFunc(aliases, func(a string) bool { return score.Normalize(a) == score.Normalize(c) }) {
					return c + "\n\nThat is my best recollection."
				}
			}
			return "Not " + it.Expected
		},
	}
}
