package compare

import (
	"strings"
	"testing"
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
