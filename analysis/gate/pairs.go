package gate

import "github.com/nel-eval/nel/analysis/compare"

// Pairs pairs the benchmarks of a baseline and a candidate for Evaluate,
// by name, and lists those only one side has. Two single benchmarks are
// paired whatever their names (compare.Match).
func Pairs(base, cand *compare.Side) (pairs []compare.Pair, baseOnly, candOnly []string) {
	if !base.Multi && !cand.Multi {
		pairs, _ = compare.Match(base, cand)
		return pairs, nil, nil
	}
	inCand := map[string]bool{}
	for _, r := range cand.Runs {
		inCand[r.Name] = true
	}
	inBase := map[string]bool{}
	for _, r := range base.Runs {
		inBase[r.Name] = true
		if !inCand[r.Name] {
			baseOnly = append(baseOnly, r.Name)
		}
	}
	for _, r := range cand.Runs {
		if !inBase[r.Name] {
			candOnly = append(candOnly, r.Name)
		}
	}
	for _, b := range base.Runs {
		for _, c := range cand.Runs {
			if b.Name == c.Name {
				pairs = append(pairs, compare.Pair{Name: b.Name, Base: b, Candidate: c})
			}
		}
	}
	return pairs, baseOnly, candOnly
}
