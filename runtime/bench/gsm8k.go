package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/score"
)

const (
	gsm8kPrompt = "Solve the following math problem step by step. " +
		"Put your final numerical answer after 'The answer is'.\n\n" +
		"Problem: "
	// GSM8KPattern is the answer line gsm8k scores (Python syntax).
	GSM8KPattern = `(?i)(?:the answer is|answer\s*:)\s*([^\n]+)`
)

func gsm8k() *Benchmark {
	target := score.MustCompilePy(`####\s*(.+)`)
	return &Benchmark{
		Name:     "gsm8k",
		Category: "Mathematics",
		Source:   "hf://openai/gsm8k?config=main&split=test",
		Scorer:   "answer_line",
		Size:     1319,
		RowWise:  true,
		Key:      newRowKey(nil, "question", "answer"),
		Load: func(ctx context.Context, l Loader, params map[string]any) (*Set, error) {
			dss, err := load(ctx, l, params, dataset.LoadOptions{}, "hf://openai/gsm8k?config=main&split=test")
			if err != nil {
				return nil, fmt.Errorf("gsm8k: %w", err)
			}
			rows := rowsOf(dss...)
			items := make([]Item, 0, len(rows))
			for i, r := range rows {
				q, err := need(r, i, "question")
				if err != nil {
					return nil, fmt.Errorf("gsm8k: %w", err)
				}
				raw, err := need(r, i, "answer")
				if err != nil {
					return nil, fmt.Errorf("gsm8k: %w", err)
				}
				// The target is the text after "####", commas removed;
				// without "####" the whole answer (as in NeMo's _prepare).
				exp := raw
				if m := target.FindStringSubmatch(raw); m != nil {
					exp = strings.ReplaceAll(score.PyStrip(m[1]), ",", "")
				}
				items = append(items, r.located(userItem(0, "", gsm8kPrompt+q, exp, nil,
					map[string]any{"question": q, "answer": raw})))
			}
			return finish(items, dss...), nil
		},
		Score: func(it *Item, response string) Score {
			r := score.AnswerLineWith(response, it.Expected, answerIs)
			return binary("answer_line", r.Correct, r.Extracted, map[string]any{"pattern": GSM8KPattern})
		},
		Respond: func(it *Item, correct bool, rng *rand.Rand) string {
			rng = rngOr(rng)
			ans := it.Expected
			if !correct {
				ans = wrongNumber(it.Expected, rng)
				if score.NormalizeMath(ans) == score.NormalizeMath(it.Expected) {
					ans += "1"
				}
			}
			return reasoning(rng) + "\nAdding up the quantities described gives the total.\nThe answer is " + ans + "."
		},
	}
}

// answerIs finds group 1 of GSM8KPattern's first match in s, as the
// pattern compiled by score.MustCompilePy does (FindStringSubmatch), without
// the regexp engine: leftmost start, then the alternatives in order.
func answerIs(s string) (string, bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] | 0x20 {
		case 't':
			if e, ok := score.MatchFoldAt(s, i, "the answer is"); ok {
				if g, ok := score.RestOfLine(s, e); ok {
					return g, true
				}
			}
		case 'a':
			if e, ok := score.MatchFoldAt(s, i, "answer"); ok {
				if e = score.SkipPySpace(s, e); e < len(s) && s[e] == ':' {
					if g, ok := score.RestOfLine(s, e+1); ok {
						return g, true
					}
				}
			}
		}
	}
	return "", false
}
