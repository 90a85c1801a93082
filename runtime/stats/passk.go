package stats

import "fmt"

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
