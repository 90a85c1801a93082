package coverage

import (
	"fmt"
	"io"
	"strings"
)

// ShortGrid is the few cases `go test` runs: one of each kind (few
// items, a score near 1 with repeats, clusters, a paired null, runs that
// cannot be paired, items that are not Beta-distributed), enough to
// catch a gross error in seconds.
func ShortGrid() []Case {
	return []Case{
		{Name: "n=30 k=1 p=0.9", Items: 30, Repeats: 1, Mean: 0.9},
		{Name: "n=50 k=4 p=0.98 items vary", Items: 50, Repeats: 4, ItemConc: 5, Mean: 0.98},
		{Name: "n=200 k=2 p=0.7 20 clusters", Items: 200, Repeats: 2, Clusters: 20, ClusterConc: 20, ItemConc: 5, Mean: 0.7},
		{Name: "paired n=100 k=1 p=0.7 null", Items: 100, Repeats: 1, ItemConc: 2, Mean: 0.7, Paired: true},
		{Name: "unpaired n=100 k=1 p=0.8 effect 0.02", Items: 100, Repeats: 1, Mean: 0.8, Unpaired: true, Effect: 0.02},
		{Name: "n=400 k=4 p=0.9 items two-point", Items: 400, Repeats: 4, Mean: 0.9, Shape: ShapeTwoPoint},
	}
}

// FullGrid is the grid of `make coverage` and docs/statistics.md.
func FullGrid() []Case {
	var cs []Case
	for _, n := range []int{30, 50, 100, 400} {
		for _, k := range []int{1, 4} {
			for _, m := range []float64{0.5, 0.9, 0.98} {
				c := Case{Name: fmt.Sprintf("n=%d k=%d p=%g", n, k, m), Items: n, Repeats: k, Mean: m}
				if k > 1 {
					// Items differ (Beta with α+β = 4), so an item's
					// repeats are correlated.
					c.ItemConc = 4
					c.Name += " items vary"
				}
				cs = append(cs, c)
			}
		}
	}
	for _, g := range []int{10, 30} {
		for _, k := range []int{1, 4} {
			for _, m := range []float64{0.7, 0.95} {
				cs = append(cs, Case{Name: fmt.Sprintf("n=300 k=%d p=%g %d clusters", k, m, g), Items: 300, Repeats: k,
					Clusters: g, ClusterConc: 20, ItemConc: 4, Mean: m})
			}
		}
	}
	for _, n := range []int{50, 200} {
		for _, k := range []int{1, 4} {
			for _, e := range []float64{0, 0.05} {
				cs = append(cs, Case{Name: fmt.Sprintf("paired n=%d k=%d p=0.8 effect %g", n, k, e), Items: n, Repeats: k,
					ItemConc: 2, Mean: 0.8, Paired: true, Effect: e})
			}
		}
	}
	for _, e := range []float64{0, 0.05} {
		cs = append(cs, Case{Name: fmt.Sprintf("paired n=200 k=1 p=0.8 20 clusters effect %g", e), Items: 200, Repeats: 1,
			Clusters: 20, ClusterConc: 20, ItemConc: 2, Mean: 0.8, Paired: true, Effect: e})
	}
	// Two strong models near the top of the scale.
	for _, e := range []float64{0, 0.03} {
		cs = append(cs, Case{Name: fmt.Sprintf("paired n=100 k=1 p=0.97 effect %g", e), Items: 100, Repeats: 1,
			ItemConc: 2, Mean: 0.97, Paired: true, Effect: e})
	}
	cs = append(cs, edgeCases()...)
	cs = append(cs, localCases(cs)...)
	// Appended after the twins, for the same reason as edgeCases.
	return append(cs, shapeCases()...)
}

// localCases are the Local twins of the cases where an interval on a
// count near its end covers above 96% at the case's one true score, and
// no exact sum gives its local mean: repeats, a ratio over few prompts,
// two runs that cannot be paired.
func localCases(grid []Case) []Case {
	var cs []Case
	for _, c := range grid {
		switch {
		case c.Repeats == 4 && c.Clusters == 0 && !c.Paired && !c.Unpaired && c.Mean >= 0.9,
			c.Ratio && c.Items == 30 && c.Mean == 0.95,
			c.Unpaired && c.Items == 30 && c.Mean == 0.97:
			c.Name += LocalSuffix
			c.Local = true
			cs = append(cs, c)
		}
	}
	return cs
}

// edgeCases are the grid's later cases (appended, so the earlier cases
// keep their random streams and numbers): paired runs at the very top of
// the scale, where runs agree on nearly every item; gate and compare with
// few clusters and repeats; runs that cannot be paired (MOVER).
func edgeCases() []Case {
	var cs []Case
	// Items alike (no ItemConc): discordant pairs are rare, and with
	// none the plain t interval was [0, 0], which misses a true drop.
	for _, n := range []int{50, 300} {
		for _, e := range []float64{0, 0.01} {
			cs = append(cs, Case{Name: fmt.Sprintf("paired n=%d k=1 p=0.99 effect %g", n, e), Items: n, Repeats: 1,
				Mean: 0.99, Paired: true, Effect: e})
		}
	}
	for _, e := range []float64{0, 0.05} {
		cs = append(cs, Case{Name: fmt.Sprintf("paired n=300 k=4 p=0.8 10 clusters effect %g", e), Items: 300, Repeats: 4,
			Clusters: 10, ClusterConc: 20, ItemConc: 2, Mean: 0.8, Paired: true, Effect: e})
	}
	for _, n := range []int{30, 100} {
		for _, m := range []float64{0.8, 0.97} {
			cs = append(cs, Case{Name: fmt.Sprintf("unpaired n=%d k=1 p=%g effect 0.02", n, m), Items: n, Repeats: 1,
				Mean: m, Unpaired: true, Effect: 0.02})
		}
	}
	cs = append(cs, Case{Name: "unpaired n=100 k=4 p=0.9 items vary effect 0", Items: 100, Repeats: 4,
		ItemConc: 4, Mean: 0.9, Unpaired: true})
	// Ratio metrics (clt_ratio), IFEval's instruction level.
	for _, n := range []int{30, 100} {
		for _, m := range []float64{0.8, 0.95} {
			cs = append(cs, Case{Name: fmt.Sprintf("ratio n=%d k=1 p=%g items vary", n, m), Items: n, Repeats: 1,
				ItemConc: 4, Mean: m, Ratio: true})
		}
	}
	return cs
}

// Format writes results as a Markdown table: case, method, coverage or
// rejection rate ± Monte-Carlo SE (in percent; an exact rate to two
// decimals), and the mean width of an interval.
func Format(w io.Writer, rs []Result) error {
	var b strings.Builder
	b.WriteString("| case | method | rate ± MC SE (%) | mean width |\n|---|---|---:|---:|\n")
	for _, r := range rs {
		width := "–"
		what := "covers"
		if r.Kind == "coverage" {
			width = fmt.Sprintf("%.4f", r.MeanWidth())
		} else {
			what = "rejects"
		}
		if r.Exact {
			fmt.Fprintf(&b, "| %s | %s | %s %.2f (exact) | %s |\n", r.Case, r.Method, what, 100*r.Rate(), width)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s %.1f ± %.1f | %s |\n", r.Case, r.Method, what, 100*r.Rate(), 100*r.MCSE(), width)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
