package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/mathans"
	"github.com/nel-eval/nel/runtime/score"
)

const math500Prompt = "Solve the following math problem step by step. The last line of your response " +
	"should be of the form Answer: $ANSWER (without quotes) where $ANSWER is the answer " +
	"to the problem.\n\n"

func math500() *Benchmark {
	const src = "hf://HuggingFaceH4/MATH-500?split=test"
	re := score.MustCompilePy(score.AnswerLinePattern)
	return &Benchmark{
		Name:     "math500",
		Category: "Mathematics",
		Source:   src,
		Scorer:   "math_equiv",
		Size:     500,
		RowWise:  true,
		Load: func(ctx context.Context, l Loader, params map[string]any) (*Set, error) {
			dss, err := load(ctx, l, params, dataset.LoadOptions{}, src)
			if err != nil {
				return nil, fmt.Errorf("math500: %w", err)
			}
			rows := rowsOf(dss...)
			items := make([]Item, 0, len(rows))
			for i, r := range rows {
				p, err := need(r, i, "problem")
				if err != nil {
					return nil, fmt.Errorf("math500: %w", err)
				}
				ans, err := need(r, i, "answer")
				if err != nil {
					return nil, fmt.Errorf("math500: %w", err)
				}
				// HuggingFaceH4/MATH-500 names the category "subject"; other
				// copies of MATH use "type". (NeMo reads only "type", which
				// leaves the category empty on the default source.)
				var cat, level string
				if v, _, ok := field(r.rec, "subject", "type"); ok {
					cat = text(v)
				}
				if v, _, ok := field(r.rec, "level"); ok {
					level = text(v)
				}
				items = append(items, r.located(userItem(0, cat, math500Prompt+p, ans,
					map[string]any{"level": level},
					map[string]any{"problem": p, "answer": ans, "subject": cat, "level": level})))
			}
			return finish(items, dss...), nil
		},
		// The reward is answer equivalence (mathans): the last \boxed{},
		// else the last "Answer:" line (what the prompt asks for), else the
		// last line, compared with the gold answer after LaTeX
		// normalisation and, failing string equality, by value or
		// structure. NeMo scores math500 with answer_line and
		// _normalize_math only (no LaTeX or symbolic equivalence), so
		// "\frac12" against "\frac{1}{2}" is wrong there; its verdict is
		// kept as the extra score "scorer:answer_line" for parity.
		Score: func(it *Item, response string) Score {
			nemo := score.AnswerLine(response, it.Expected, re)
			sc := mathEquiv(response, it.Expected)
			sc.Details["answer_line"] = nemo.Extracted
			sc.Scores = map[string]float64{"scorer:answer_line": 0}
			if nemo.Correct {
				sc.Scores["scorer:answer_line"] = 1
			}
			return sc
		},
		Respond: func(it *Item, correct bool, rng *rand.Rand) string {
			rng = rngOr(rng)
			ans := it.Expected
			if !correct {
				ans = wrongMath(it.Expected, rng)
			}
			// Vary the form the simulated model answers in.
			switch rng.IntN(3) {
			case 0:
				return reasoning(rng) + "\nSimplifying step by step, the final answer is $\\boxed{" + ans + "}$."
			case 1:
				return reasoning(rng) + "\nThus the result is $\\boxed{" + ans + "}$.\nAnswer: " + ans
			}
			return reasoning(rng) + "\nSimplifying the expression step by step leads to the final result.\nAnswer: " + ans
		},
	}
}

// mathEquiv scores response by answer equivalence (mathans): the last
// \boxed{}, else the last "Answer:" line, else the last line, against
// expected.
func mathEquiv(response, expected string) Score {
	ex, how := mathans.Extract(response)
	if how == "" {
		s := score.PyStrip(response)
		ex, how = score.PyStrip(s[strings.LastIndexByte(s, '\n')+1:]), "last_line"
	}
	ok, why := mathans.EquivalentWhy(ex, expected)
	return binary("math_equiv", ok, ex, map[string]any{
		"extraction":          how,
		"normalized":          mathans.Normalize(ex),
		"expected_normalized": mathans.Normalize(expected),
		"reason":              why,
	})
}

// wrongMath returns an answer that is not equivalent to gold: a nearby
// number when gold is one, else the first of a few candidates that differs.
func wrongMath(gold string, rng *rand.Rand) string {
	for _, alt := range []string{wrongNumber(score.NormalizeMath(gold), rng), "0", "1", "-1", "2", "\\frac{1}{7}"} {
		if !mathans.Equivalent(alt, gold) {
			return alt
		}
	}
	return "\\text{none}"
}
