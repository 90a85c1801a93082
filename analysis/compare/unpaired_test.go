package compare

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/stats"
)

// The unpaired verdict turns on where the interval on the delta lies
// against −max_drop (0.05 here).
func TestDecideUnpaired(t *testing.T) {
	for _, tt := range []struct {
		lo, hi float64
		want   string
		reason string
	}{
		{-0.20, -0.06, Block, "lies below −max-drop 0.05"},
		{-0.04, 0.10, Pass, "lies above −max-drop 0.05"},
		{-0.05, 0.10, Pass, "lies above"},
		{-0.07, 0.02, Inconclusive, "straddles −max-drop 0.05"},
	} {
		md := MetricDelta{Metric: "pass@1", Baseline: 0.5, Candidate: 0.5, CI: &DeltaCI{Level: 0.95, Lo: tt.lo, Hi: tt.hi}}
		got, reasons := decideUnpaired(md, 0.05)
		if got != tt.want || !strings.Contains(strings.Join(reasons, " "), tt.reason) {
			t.Errorf("CI [%g, %g]: %s %q, want %s with %q", tt.lo, tt.hi, got, reasons, tt.want, tt.reason)
		}
	}
	if got, _ := decideUnpaired(MetricDelta{Metric: "pass@1"}, 0.05); got != Inconclusive {
		t.Errorf("no interval: %s, want INCONCLUSIVE", got)
	}
}

// Every interval method a headline can have gets a MOVER behaviour:
// Jeffreys' limits on the effective sample size for the proportions over
// independent items or repeats (the names MOVER-J took before the
// vocabulary), the stated limits for every other, a later nel's unknown
// name included.
func TestUnpairedMOVERByMethod(t *testing.T) {
	jeffreys := []string{"wilson_ends", "wilson", "jeffreys_effective"}
	md := MetricDelta{Metric: "pass@1", Baseline: 0.7, Candidate: 0.8, Delta: 0.1}
	for _, m := range append(metrics.Methods(), "wilson_someday") {
		b := &metrics.Interval{Method: m, Level: 0.95, Lo: 0.6, Hi: 0.78, EffectiveN: 50}
		c := &metrics.Interval{Method: m, Level: 0.95, Lo: 0.7, Hi: 0.87, EffectiveN: 50}
		ci := unpairedCI(md, b, c, 0.95)
		bl, bh := b.Lo, b.Hi
		cl, ch := c.Lo, c.Hi
		want := DeltaUnpairedMOVER
		if slices.Contains(jeffreys, string(m)) {
			want = DeltaUnpairedMOVERJeffreys
			bl, bh = stats.Jeffreys(0.7, 50, 0.95)
			cl, ch = stats.Jeffreys(0.8, 50, 0.95)
		}
		lo, hi := 0.1-math.Hypot(0.8-cl, bh-0.7), 0.1+math.Hypot(ch-0.8, 0.7-bl)
		if ci == nil || ci.Method != want || math.Abs(ci.Lo-lo) > 1e-12 || math.Abs(ci.Hi-hi) > 1e-12 {
			t.Errorf("%s: %+v, want %s [%.6f, %.6f]", m, ci, want, lo, hi)
		}
	}
}
