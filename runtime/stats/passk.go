package stats

import (
	"fmt"
	"math"
)

// checkPassK panics unless 1 ≤ k ≤ n and 0 ≤ c ≤ n.
func checkPassK(name string, n, c, k int) {
	if k < 1 || k > n || c < 0 || c > n {
		panic(fmt.Sprintf("stats: %s(n=%d, c=%d, k=%d): need 1 ≤ k ≤ n and 0 ≤ c ≤ n", name, n, c, k))
	}
}

// PassAtK returns the unbiased pass@k estimate (Chen et al. 2021) for a
// problem with n samples of which c are correct: the probability that at
// least one of k samples drawn without replacement is correct,
// 1 − C(n−c, k)/C(n, k). It uses the product form
// 1 − Π_{i=n−c+1}^{n} (1 − k/i), which never forms the binomial
// coefficients (they overflow for n in the hundreds), and returns 1 exactly
// when n − c < k (every draw of k contains a correct sample).
//
// It requires 1 ≤ k ≤ n and 0 ≤ c ≤ n and panics otherwise: the caller
// checks that a problem has at least k samples (NeMo: an error).
func PassAtK(n, c, k int) float64 {
	checkPassK("PassAtK", n, c, k)
	if n-c < k {
		return 1
	}
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - float64(k)/float64(i)
	}
	return 1 - prod
}

// PassHatK returns pass^k = C(c, k)/C(n, k) (τ-bench; Inspect pass_k): the
// probability that all k samples drawn without replacement are correct. It
// uses the product Π_{i=0}^{k−1} (c−i)/(n−i), which stays in [0, 1] and
// never overflows, and is 0 when c < k. Preconditions as PassAtK.
func PassHatK(n, c, k int) float64 {
	checkPassK("PassHatK", n, c, k)
	if c < k {
		return 0
	}
	prod := 1.0
	for i := 0; i < k; i++ {
		prod *= float64(c-i) / float64(n-i)
	}
	return prod
}

// PassAtKTrials is the number of independent Bernoulli(θ) trials whose
// mean has the variance that PassAtK's estimate over one item's n samples
// has when the item's success probability q is fixed and
// θ = 1 − (1−q)^k: θ(1−θ)/Var. The estimate is a U-statistic of order k
// with kernel 1 − Π(1−x) over k-subsets, so Hoeffding's (1948)
// decomposition gives its variance exactly,
//
//	Var = Σ_{c=1}^{k} C(k,c)·C(n−k,k−c)/C(n,k) · σ_c²,
//	σ_c² = u^{2−c/k} − u²,  u = 1 − θ = (1−q)^k,
//
// σ_c² being the variance of the kernel given c of its k samples:
// (1−q)^{k−c} times an indicator that those c all failed. It is 1 at k = n
// (one 0/1 value), n at k = 1, and lies between the n/k disjoint k-sample
// blocks and C(n,k): the estimate uses every k-subset, not only disjoint
// ones. u² + Var is convex in u, so by Jensen items whose q differ
// (with the same mean θ) only add variance: θ(1−θ)/PassAtKTrials is the
// least variance an item's estimate can have, and an effective sample
// size estimated from data cannot honestly exceed it (docs/statistics.md,
// "pass@k"). Requires 1 ≤ k ≤ n and θ in (0, 1).
func PassAtKTrials(n, k int, theta float64) float64 {
	checkPassK("PassAtKTrials", n, 0, k)
	if !(theta > 0 && theta < 1) {
		panic(fmt.Sprintf("stats: PassAtKTrials(%d, %d, %v): need θ in (0, 1)", n, k, theta))
	}
	switch k {
	case n:
		return 1
	case 1:
		return float64(n)
	}
	// Var/u = Σ w_c (u^{1−c/k} − u), and θ(1−θ)/u = 1 − u: the ratio
	// without u keeps its precision as u → 0.
	u := 1 - theta
	lnk := lchoose(n, k)
	sum := 0.0
	for c := max(1, 2*k-n); c <= k; c++ {
		w := math.Exp(lchoose(k, c) + lchoose(n-k, k-c) - lnk)
		sum += w * (math.Pow(u, 1-float64(c)/float64(k)) - u)
	}
	return (1 - u) / sum
}

// lchoose is log C(n, k) for 0 ≤ k ≤ n.
func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}
