package nemorun

import (
	"fmt"
	"math"
	"strings"

	"github.com/nel-eval/nel/runtime/results"
)

// maxChance is the largest probability, under a random matching of the
// items, that every paired expected answer would agree by chance, that
// still lets Pair trust a mapping by dataset index.
const maxChance = 1e-6

// Pair maps a NeMo run's rows onto a nel run's items so that compare can
// pair them by item_id. NeMo knows an item by its original dataset index
// (problem_idx); nel by a content id, and records the same dataset index as
// item_idx. The index is only the same item when both runs read the same
// data in the same order, so the mapping is checked: every NeMo row whose
// index the nel run has must carry the expected answer the nel item
// carries, and that agreement must be unlikely by chance (answers that
// take few values, like multiple-choice letters, need more items to
// prove anything). A check that fails is an error that says why; nothing
// is paired then, because a wrong pairing gives a confident wrong number.
//
// It returns a copy of nemo whose ItemIDs are the nel items' ids (rows of
// an index the nel run lacks keep their "nemo:<idx>" id and stay
// unpaired), and a line that says how the rows were paired.
func Pair(nemo, nel []results.Row) ([]results.Row, string, error) {
	type item struct{ id, expected string }
	byIdx := map[int64]item{}
	for _, r := range nel {
		if it, ok := byIdx[r.ItemIdx]; ok && it.id != r.ItemID {
			return nil, "", fmt.Errorf("cannot pair with the NeMo Evaluator run: the nel run has two items at dataset index %d (%s and %s), so an index does not name one item", r.ItemIdx, it.id, r.ItemID)
		}
		byIdx[r.ItemIdx] = item{r.ItemID, r.Expected}
	}
	out := make([]results.Row, len(nemo))
	copy(out, nemo)
	var mismatch []string
	nMismatch := 0
	counts := map[string]int{}
	matched := map[int64]bool{}
	for i := range out {
		idx := out[i].ItemIdx
		it, ok := byIdx[idx]
		if !ok {
			continue
		}
		first := !matched[idx] // a repeat of an index counts once
		matched[idx] = true
		want := norm(it.expected)
		if want != norm(out[i].Expected) {
			if first {
				nMismatch++
				if len(mismatch) < 3 {
					mismatch = append(mismatch, fmt.Sprintf("index %d: NeMo expects %q, nel %q", idx, out[i].Expected, it.expected))
				}
			}
			continue
		}
		if first {
			counts[want]++
		}
		out[i].ItemID = it.id
	}
	if nMismatch > 0 {
		return nil, "", fmt.Errorf("cannot pair with the NeMo Evaluator run by dataset index: %d of %d shared indexes expect a different answer (%s): the runs read different data or the same data in another order", nMismatch, len(matched), strings.Join(mismatch, "; "))
	}
	n := len(matched)
	if n == 0 {
		return nil, "", fmt.Errorf("cannot pair with the NeMo Evaluator run: no NeMo problem_idx is an item_idx of the nel run")
	}
	if c := chance(counts, n); c > maxChance {
		return nil, "", fmt.Errorf("cannot pair with the NeMo Evaluator run by dataset index: the %d shared items' expected answers agree, but answers this alike would agree by chance with probability %.2g (> %g), so agreement does not show that an index names the same item in both runs", n, c, maxChance)
	}
	how := fmt.Sprintf("NeMo Evaluator problem_idx paired with nel item_idx (the dataset index); checked: the %d shared items' expected answers all agree", n)
	return out, how, nil
}

// chance is the probability that n items matched at random would all
// agree: the collision probability of the expected answers (Σ share²),
// to the power n.
func chance(counts map[string]int, n int) float64 {
	p := 0.0
	for _, c := range counts {
		s := float64(c) / float64(n)
		p += s * s
	}
	return math.Pow(p, float64(n))
}

// norm is an expected answer as both sides' answers are compared: NeMo
// and nel may write the same gold answer with other surrounding space.
func norm(s string) string { return strings.TrimSpace(s) }
