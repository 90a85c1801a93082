package compare

import (
	"slices"
	"testing"

	"github.com/nel-eval/nel/runtime/metrics"
)

// The names are published (compare reports, gate verdicts): each
// constant keeps its name, and the vocabulary lists each once.
func TestDeltaMethodNames(t *testing.T) {
	// A slice, not a map literal: a map's duplicate constant keys would
	// not compile, while two constants with one value would.
	pairs := []struct {
		m    DeltaMethod
		name string
	}{
		{DeltaAdjustedWald, "adjusted_wald"}, {DeltaAdjustedT, "adjusted_t"}, {DeltaClustered, "clt_clustered"},
		{DeltaUnpairedMOVERJeffreys, "unpaired_mover_jeffreys"}, {DeltaUnpairedMOVER, "unpaired_mover"},
		{DeltaUnpairedNormal, "unpaired_normal"}, {DeltaT, "t"},
	}
	published := map[DeltaMethod]string{}
	for _, p := range pairs {
		if string(p.m) != p.name {
			t.Errorf("constant for %q is %q", p.name, p.m)
		}
		published[p.m] = p.name
	}
	if len(published) != len(pairs) {
		t.Fatalf("%d distinct constants, want %d: two share a name", len(published), len(pairs))
	}
	all := DeltaMethods()
	if len(all) != len(published) {
		t.Errorf("DeltaMethods() has %d names, want %d: %v", len(all), len(published), all)
	}
	for _, m := range all {
		if _, ok := published[m]; !ok || !m.Known() {
			t.Errorf("DeltaMethods() lists %q: published %v, known %v", m, ok, m.Known())
		}
	}
	if m := DeltaMethod("paired_someday"); m.Known() || m.Written() || m.Adjusted() || m.ItemsT() {
		t.Errorf("a later nel's name %q has properties", m)
	}
}

// The properties gate reads, against the name lists it compared before
// the vocabulary: NeededItems recomputes the adjusted interval ("adjusted_t",
// "adjusted_wald"), quantile takes t at the items' df ("t", "adjusted_t").
func TestDeltaMethodProperties(t *testing.T) {
	names := func(keep func(DeltaMethod) bool) []string {
		var out []string
		for _, m := range DeltaMethods() {
			if keep(m) {
				out = append(out, string(m))
			}
		}
		slices.Sort(out)
		return out
	}
	if got := names(DeltaMethod.Adjusted); !slices.Equal(got, []string{"adjusted_t", "adjusted_wald"}) {
		t.Errorf("adjusted: %v", got)
	}
	if got := names(DeltaMethod.ItemsT); !slices.Equal(got, []string{"adjusted_t", "t"}) {
		t.Errorf("t at the items' df: %v", got)
	}
}

// Every way compare builds an interval on a difference (paired 0/1 with
// one repeat, paired fractional, clustered; unpaired by MOVER-J, by MOVER
// on the stated limits, normal) writes a method of the vocabulary with a
// label of its own, and between them they reach every method compare
// writes.
func TestDeltaMethodsWritten(t *testing.T) {
	wald := PairedCI([]float64{1, 0, 0, -1, 1, 0}, nil, 0, 0.95, 1)
	adjT := PairedCI([]float64{0.25, 0, -0.5, 0.75, 0}, nil, 0, 0.95, 0.25)
	clustered := PairedCI([]float64{1, 0, 0, -1, 1, 0}, []int{0, 0, 1, 1, 2, 2}, 3, 0.95, 1)
	md := MetricDelta{Metric: "pass@1", Baseline: 0.7, Candidate: 0.8, Delta: 0.1}
	iv := func(m metrics.Method, level float64) *metrics.Interval {
		return &metrics.Interval{Method: m, Level: level, Lo: 0.6, Hi: 0.85, SE: 0.05, EffectiveN: 50}
	}
	moverJ := unpairedCI(md, iv(metrics.MethodWilsonEnds, 0.95), iv(metrics.MethodJeffreysEffective, 0.95), 0.95)
	mover := unpairedCI(md, iv(metrics.MethodT, 0.95), iv(metrics.MethodWilsonEnds, 0.95), 0.95)
	normal := unpairedCI(md, iv(metrics.MethodWilsonEnds, 0.9), iv(metrics.MethodWilsonEnds, 0.9), 0.95)
	want := []DeltaMethod{DeltaAdjustedWald, DeltaAdjustedT, DeltaClustered, DeltaUnpairedMOVERJeffreys, DeltaUnpairedMOVER, DeltaUnpairedNormal}
	labels := map[string]DeltaMethod{}
	for i, ci := range []*DeltaCI{wald, adjT, clustered, moverJ, mover, normal} {
		if ci == nil || ci.Method != want[i] || !ci.Method.Known() || !ci.Method.Written() {
			t.Errorf("interval %d: %+v, want a known, written %s", i, ci, want[i])
			continue
		}
		if other, ok := labels[ci.Label()]; ok {
			t.Errorf("%s and %s share the label %q", other, ci.Method, ci.Label())
		}
		labels[ci.Label()] = ci.Method
	}
	var written []DeltaMethod
	for _, m := range DeltaMethods() {
		if m.Written() {
			written = append(written, m)
		}
	}
	if !slices.Equal(written, want) {
		t.Errorf("compare writes %v; the cases reach %v", written, want)
	}
}
