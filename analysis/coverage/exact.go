package coverage

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
)

// binomial reports whether, in case c, the metric pass@Repeats holds one
// 0/1 value per item with the same success probability, its truth:
// independent items without clusters, outside paired cases (a ratio
// case's instructions do not change pass@1).
// (With one repeat that is pass@1 even when items vary: each item's one
// reward is Bernoulli with the population mean, marginally.) Its interval
// is then a function of the count x of successes alone, and its coverage
// can be computed exactly, Σₓ P[X = x]·[truth ∈ interval(x)].
func (c Case) binomial() bool {
	return c.Clusters == 0 && !c.Paired && !c.Unpaired && !c.Local
}

// localHalf is the half-width, in true score, of the neighbourhood
// exactRows averages the coverage over: one count's worth, 1/n. A
// binomial interval's coverage jumps each time the true score crosses one
// of its n+1 ends, which lie about 1/n apart: over ±1/n the oscillation
// averages out and the trend stays (Brown, Cai & DasGupta 2002 judge
// intervals on that smooth part; see docs/statistics.md).
func localHalf(n int) float64 { return 1 / float64(n) }

// localPoints is the number of true scores (midpoints) the local average
// is taken over.
const localPoints = 400

// exactRows computes, for a binomial case, the exact coverage of the
// interval metrics.Compute reports for every count x = 0…n of items
// right: at the case's true score (a pointwise row), and averaged over
// true scores within ±1/n of it (clipped to [0, 1]). It returns the
// method the simulated rows of that interval carry, and the two results.
func exactRows(c Case) (method string, pointwise, local Result, err error) {
	metric := "pass@" + strconv.Itoa(c.Repeats)
	truth, ok := c.truth(metric)
	if !ok {
		return "", Result{}, Result{}, fmt.Errorf("exact coverage: no truth for %s", metric)
	}
	lo, hi := make([]float64, c.Items+1), make([]float64, c.Items+1)
	for x := range lo {
		b := metrics.Compute(metrics.Input{Rows: countRows(c, x), Meta: meta(c), Resamples: 20, Level: level})
		s := scoreOf(b, metric)
		if s == nil || s.CLT == nil {
			return "", Result{}, Result{}, fmt.Errorf("exact coverage: no interval for %s at %d of %d", metric, x, c.Items)
		}
		if method == "" {
			method = metric + " " + string(s.CLT.Method)
		} else if method != metric+" "+string(s.CLT.Method) {
			return "", Result{}, Result{}, fmt.Errorf("exact coverage: %s changes method to %s at %d of %d", method, s.CLT.Method, x, c.Items)
		}
		lo[x], hi[x] = s.CLT.Lo, s.CLT.Hi
	}
	pointwise = Result{Case: c.Name, Method: method + " exact", Kind: "coverage", Exact: true, Pointwise: true}
	pointwise.ExactRate, pointwise.ExactWidth = binomialCoverage(truth, lo, hi)
	local = Result{Case: c.Name, Method: method + " exact, mean over truth ± 1/n", Kind: "coverage", Exact: true}
	a, b := math.Max(0, truth-localHalf(c.Items)), math.Min(1, truth+localHalf(c.Items))
	for i := range localPoints {
		r, w := binomialCoverage(a+(b-a)*(float64(i)+0.5)/localPoints, lo, hi)
		local.ExactRate += r / localPoints
		local.ExactWidth += w / localPoints
	}
	return method, pointwise, local, nil
}

// binomialCoverage is the probability that [lo[X], hi[X]] covers p for
// X ~ Binomial(len(lo)−1, p), and the interval's expected width.
func binomialCoverage(p float64, lo, hi []float64) (cover, width float64) {
	d := distuv.Binomial{N: float64(len(lo) - 1), P: p}
	for x := range lo {
		pr := d.Prob(float64(x))
		if lo[x] <= p && p <= hi[x] {
			cover += pr
		}
		width += pr * (hi[x] - lo[x])
	}
	return cover, width
}

// countRows is a run of case c in which the first x items are right on
// every repeat and the rest on none: pass@Repeats is then x/n, one 0/1
// value per item, as in every run of a binomial case with x items right.
func countRows(c Case, x int) []results.Row {
	out := make([]results.Row, 0, c.Items*c.Repeats)
	for i := range c.Items {
		reward := 0.0
		if i < x {
			reward = 1
		}
		for k := range c.Repeats {
			out = append(out, results.Row{Benchmark: "sim", ItemID: fmt.Sprintf("i%06d", i), ItemIdx: int64(i),
				Repeat: int64(k), Reward: reward, Outcome: "scored", Expected: "1"})
		}
	}
	return out
}

// scoreOf is b's score of metric, nil when it has none.
func scoreOf(b *metrics.Bundle, metric string) *metrics.Score {
	for i := range b.Metrics {
		if b.Metrics[i].Metric == metric {
			return &b.Metrics[i]
		}
	}
	return nil
}
