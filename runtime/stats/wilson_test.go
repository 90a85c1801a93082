package stats

import (
	"math"
	"testing"
)

func TestWilson(t *testing.T) {
	// At p̂ = 1 the interval is [n/(n+c²), 1]: solve (1−p)² = c²p(1−p)/n.
	lo, hi := Wilson(1, 50, 1.96)
	if want := 50 / (50 + 1.96*1.96); !near(lo, want, 1e-14, 0) || hi != 1 {
		t.Errorf("Wilson(1, 50, 1.96) = [%v, %v], want [%v, 1]", lo, hi, want)
	}
	lo, hi = Wilson(0, 50, 1.96)
	if want := 1.96 * 1.96 / (50 + 1.96*1.96); lo != 0 || !near(hi, want, 1e-14, 0) {
		t.Errorf("Wilson(0, 50, 1.96) = [%v, %v], want [0, %v]", lo, hi, want)
	}
	// Both ends solve the score equation (p̂ − p)² = c²·p(1−p)/n.
	for _, c := range []struct{ p, n, crit float64 }{{0.3, 20, 1.96}, {0.98, 100, 2.0}, {0.5, 7.5, 2.36}} {
		lo, hi := Wilson(c.p, c.n, c.crit)
		for _, x := range []float64{lo, hi} {
			lhs, rhs := (c.p-x)*(c.p-x), c.crit*c.crit*x*(1-x)/c.n
			if math.Abs(lhs-rhs) > 1e-12 {
				t.Errorf("Wilson(%v, %v, %v) end %v: (p̂−p)² = %v, c²p(1−p)/n = %v", c.p, c.n, c.crit, x, lhs, rhs)
			}
		}
		if !(lo < c.p && c.p < hi) {
			t.Errorf("Wilson(%v, %v, %v) = [%v, %v] misses p̂", c.p, c.n, c.crit, lo, hi)
		}
	}
	mustPanic(t, "n = 0", func() { Wilson(0.5, 0, 1.96) })
	mustPanic(t, "p̂ > 1", func() { Wilson(1.5, 10, 1.96) })
}

func TestEffectiveN(t *testing.T) {
	// Independent Bernoulli trials: SE² = p̂(1−p̂)/n gives n back.
	if got := EffectiveN(0.3, math.Sqrt(0.21/80), math.Inf(1), 80); !near(got, 80, 1e-12, 0) {
		t.Errorf("EffectiveN = %v, want 80", got)
	}
	// Capped at the trials observed; the items when SE is 0.
	if got := EffectiveN(0.3, 0.001, 500, 100); got != 500 {
		t.Errorf("capped EffectiveN = %v, want 500", got)
	}
	if got := EffectiveN(1, 0, 400, 100); got != 100 {
		t.Errorf("EffectiveN at p̂ = 1 = %v, want 100 items", got)
	}
}

func TestClusterBootstrap(t *testing.T) {
	// 20 equal clusters of 10 items, each cluster all right or all
	// wrong: resampling clusters is resampling 20 values, so the interval
	// is the item bootstrap of the 20 cluster means (to Monte-Carlo
	// error), about √10 times as wide as treating the 200 items as
	// independent (the design effect of clusters of 10 identical items).
	var xs, means []float64
	var cl []int
	for g := range 20 {
		v := float64(g % 2)
		if g%5 == 0 {
			v = 1
		}
		means = append(means, v)
		for range 10 {
			xs = append(xs, v)
			cl = append(cl, g)
		}
	}
	lo, hi := ClusterBootstrap(xs, cl, 4000, 7, 0.95)
	wlo, whi := Bootstrap(means, 4000, 7, 0.95)
	if math.Abs(lo-wlo) > 0.03 || math.Abs(hi-whi) > 0.03 {
		t.Errorf("cluster bootstrap [%v, %v], bootstrap of the cluster means [%v, %v]", lo, hi, wlo, whi)
	}
	ilo, ihi := Bootstrap(xs, 4000, 7, 0.95)
	if (hi - lo) < 2.5*(ihi-ilo) {
		t.Errorf("cluster bootstrap [%v, %v] not much wider than the item bootstrap [%v, %v]", lo, hi, ilo, ihi)
	}
	// One cluster: the item bootstrap.
	one := make([]int, len(xs))
	if a, b := ClusterBootstrap(xs, one, 500, 3, 0.9); a != func() float64 { l, _ := Bootstrap(xs, 500, 3, 0.9); return l }() || b < a {
		t.Errorf("one cluster: [%v, %v]", a, b)
	}
}
