package stats

import (
	"fmt"
	"math"
	"slices"
)

// McNemar returns the one-sided exact McNemar p-value that regressions
// (b: pairs right before and wrong after) outnumber improvements (c):
// BinomGreater(b, b+c, ½), as NeMo's binomtest(b, b+c, 0.5,
// alternative="greater"). With no discordant pair there is no evidence
// either way and it returns 1. b and c must be ≥ 0.
func McNemar(b, c int) float64 {
	return signTest("McNemar", b, c)
}

// SignTest returns the one-sided sign-test p-value that positive
// differences outnumber negative ones: BinomGreater(pos, pos+neg, ½). The
// caller drops ties. With no non-tied pair it returns 1. pos and neg must
// be ≥ 0.
func SignTest(pos, neg int) float64 {
	return signTest("SignTest", pos, neg)
}

func signTest(name string, pos, neg int) float64 {
	if pos < 0 || neg < 0 {
		panic(fmt.Sprintf("stats: %s(%d, %d): negative count", name, pos, neg))
	}
	if pos+neg == 0 {
		return 1
	}
	return BinomGreater(pos, pos+neg, 0.5)
}

// Holm returns the Holm–Bonferroni adjusted p-values of ps, in the order
// of ps: with p₍₁₎ ≤ … ≤ p₍ₘ₎, the adjusted p₍ᵢ₎ is
// min(1, max_{j≤i} (m−j+1)·p₍ⱼ₎). Rejecting where the adjusted value is
// below α controls the family-wise error rate at α (the gate tests several
// benchmarks at once). ps must be in [0, 1].
func Holm(ps []float64) []float64 {
	m := len(ps)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	// Stable, so tied p-values keep a deterministic order (their adjusted
	// values are equal anyway).
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case ps[a] < ps[b]:
			return -1
		case ps[a] > ps[b]:
			return 1
		}
		return 0
	})
	adj := make([]float64, m)
	running := 0.0
	for rank, i := range order {
		// The running maximum makes the step-down monotone.
		running = math.Max(running, float64(m-rank)*ps[i])
		adj[i] = math.Min(1, running)
	}
	return adj
}
