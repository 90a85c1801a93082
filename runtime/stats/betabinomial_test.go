package stats

import (
	"math"
	"testing"
)

// TestFitBetaBinomial checks the moment fit on hand-worked counts.
// c = 4, 4, 3, 1 of 4: p = 12/16 = ¾, item shares 1, 1, ¾, ¼, so
// MSB = 4·(1/16 + 1/16 + 0 + 1/4)/3 = ½, MSW = (0 + 0 + 3·¼ + 1·¾)/12 = ⅛,
// n₀ = 4 and ρ = (½ − ⅛)/(½ + 3·⅛) = 3/7. Unequal sizes, 2 of 2 and 1 of
// 4: p = ½, MSB = 2·¼ + 4·(1/16) = ¾, MSW = ¾/(6 − 2) = 3/16,
// n₀ = 6 − 20/6 = 8/3 and ρ = (¾ − 3/16)/(¾ + (5/3)·(3/16)) = 9/17.
// The degenerate fits: every item all right (no variation: ρ 0), every
// item all right or all wrong (none within items: ρ 1), items alike
// beyond binomial noise (ρ < 0 becomes 0).
func TestFitBetaBinomial(t *testing.T) {
	for _, c := range []struct {
		name      string
		n, c      []int
		mean, rho float64
	}{
		{"hand", []int{4, 4, 4, 4}, []int{4, 4, 3, 1}, 0.75, 3.0 / 7},
		{"unequal", []int{2, 4}, []int{2, 1}, 0.5, 9.0 / 17},
		{"all right", []int{4, 4, 4}, []int{4, 4, 4}, 1, 0},
		{"all or nothing", []int{4, 4, 4}, []int{4, 0, 4}, 2.0 / 3, 1},
		{"alike", []int{4, 4, 4, 4}, []int{2, 2, 2, 2}, 0.5, 0},
	} {
		got := FitBetaBinomial(c.n, c.c)
		if math.Abs(got.Mean-c.mean) > 1e-15 || math.Abs(got.ICC-c.rho) > 1e-15 {
			t.Errorf("%s: FitBetaBinomial = %+v, want mean %v, ICC %v", c.name, got, c.mean, c.rho)
		}
	}
	mustPanic(t, "one item", func() { FitBetaBinomial([]int{4}, []int{2}) })
	mustPanic(t, "c > n", func() { FitBetaBinomial([]int{4, 4}, []int{5, 2}) })
}

// TestBetaBinomialPassAtK checks the model's mean and variance of an
// item's pass@k estimate against brute force: every one of the 2^n
// reward vectors, its probability under the Beta ∫q^c(1−q)^(n−c) as
// rising factorials, and its estimate as the mean of 1 − Π(1 − x) over
// all k-subsets (not PassAtK's product form), for every k ≤ n ≤ 8; and
// at ICC 0 against Hoeffding's variance (PassAtKTrials), at ICC 1
// against one 0/1 value per item.
func TestBetaBinomialPassAtK(t *testing.T) {
	for _, b := range []BetaBinomial{{0.9, 0.2}, {0.5, 0.4}, {0.98, 0.05}, {0.3, 0.9}} {
		s := (1 - b.ICC) / b.ICC
		alpha, beta := b.Mean*s, (1-b.Mean)*s
		for n := 1; n <= 8; n++ {
			for k := 1; k <= n; k++ {
				var m1, m2 float64
				for mask := 0; mask < 1<<n; mask++ {
					c := 0
					for i := range n {
						c += mask >> i & 1
					}
					w := 1.0
					for j := range c {
						w *= alpha + float64(j)
					}
					for j := range n - c {
						w *= beta + float64(j)
					}
					for j := range n {
						w /= alpha + beta + float64(j)
					}
					est := subsetMean(mask, n, k)
					m1, m2 = m1+w*est, m2+w*est*est
				}
				mean, v := b.PassAtK(n, k)
				if math.Abs(mean-m1) > 1e-12 || math.Abs(v-(m2-m1*m1)) > 1e-12 {
					t.Errorf("%+v n=%d k=%d: mean %v var %v, brute force %v, %v", b, n, k, mean, v, m1, m2-m1*m1)
				}
			}
		}
	}
	for _, mu := range []float64{0.5, 0.9} {
		theta := 1 - (1-mu)*(1-mu)
		_, v := BetaBinomial{Mean: mu}.PassAtK(4, 2)
		if want := theta * (1 - theta) / PassAtKTrials(4, 2, theta); math.Abs(v-want) > 1e-12 {
			t.Errorf("ICC 0, q = %v: variance %v, Hoeffding's %v", mu, v, want)
		}
		m, v := BetaBinomial{Mean: mu, ICC: 1}.PassAtK(4, 2)
		if math.Abs(m-mu) > 1e-15 || math.Abs(v-mu*(1-mu)) > 1e-15 {
			t.Errorf("ICC 1, mean %v: %v, %v; want the mean and its Bernoulli variance", mu, m, v)
		}
	}
}

// subsetMean is the mean over the k-subsets of n rewards (bit i of mask
// set: sample i right) of 1 − Π(1 − x): whether any of the k is right.
func subsetMean(mask, n, k int) float64 {
	hits, subsets := 0, 0
	for sub := 0; sub < 1<<n; sub++ {
		size := 0
		for i := range n {
			size += sub >> i & 1
		}
		if size != k {
			continue
		}
		subsets++
		if sub&mask != 0 {
			hits++
		}
	}
	return float64(hits) / float64(subsets)
}

// TestPassAtKModelTrials checks the effective size: at ICC 0 over equal
// items it is the items times Hoeffding's trials per item at the model's
// pass@k, 1 − (1−μ)^k; more spread between items lowers it; items of
// unequal size add up their variances; a model without variance has none.
func TestPassAtKModelTrials(t *testing.T) {
	n := []int{4, 4, 4, 4, 4}
	b := BetaBinomial{Mean: 0.9}
	if got, want := b.PassAtKModelTrials(n, 2), 5*PassAtKTrials(4, 2, 0.99); math.Abs(got-want) > 1e-9*want {
		t.Errorf("ICC 0: %v, want %v", got, want)
	}
	if lo, hi := (BetaBinomial{0.9, 0.3}).PassAtKModelTrials(n, 2), b.PassAtKModelTrials(n, 2); !(lo < hi) {
		t.Errorf("ICC 0.3 gives %v, not below ICC 0's %v", lo, hi)
	}
	m4, v4 := b.PassAtK(4, 2)
	m8, v8 := b.PassAtK(8, 2)
	m := (m4 + m8) / 2
	if got, want := b.PassAtKModelTrials([]int{4, 8}, 2), m*(1-m)*4/(v4+v8); math.Abs(got-want) > 1e-12*want {
		t.Errorf("sizes 4 and 8: %v, want %v", got, want)
	}
	if got := (BetaBinomial{Mean: 1}).PassAtKModelTrials(n, 2); got != 0 {
		t.Errorf("mean 1: %v, want 0", got)
	}
}
