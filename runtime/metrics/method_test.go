package metrics_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
)

// The names are a published format (eval.json, exports, earlier bundles):
// each constant keeps its name, and the vocabulary lists each once. A
// constant given another value fails here, not in a bundle reader.
func TestMethodNames(t *testing.T) {
	// A slice, not a map literal: a map's duplicate constant keys would
	// not compile, while two constants with one value would.
	pairs := []struct {
		m    metrics.Method
		name string
	}{
		{metrics.MethodT, "t"}, {metrics.MethodCLTClustered, "clt_clustered"},
		{metrics.MethodWilsonEnds, "wilson_ends"}, {metrics.MethodJeffreysEffective, "jeffreys_effective"},
		{metrics.MethodJeffreysBetaBinomial, "jeffreys_betabinomial"}, {metrics.MethodKornGraubardClustered, "korn_graubard_clustered"},
		{metrics.MethodJeffreysRatio, "jeffreys_ratio"}, {metrics.MethodCLTRatio, "clt_ratio"},
		{metrics.MethodBootstrapPercentile, "bootstrap_percentile"}, {metrics.MethodBootstrapClusterExpanded, "bootstrap_cluster_expanded"},
		{metrics.MethodCLT, "clt"}, {metrics.MethodWilson, "wilson"}, {metrics.MethodWilsonEffective, "wilson_effective"},
		{metrics.MethodKornGraubard, "korn_graubard"}, {metrics.MethodWilsonClustered, "wilson_clustered"},
		{metrics.MethodWilsonRatio, "wilson_ratio"}, {metrics.MethodBootstrapCluster, "bootstrap_cluster"},
	}
	published := map[metrics.Method]string{}
	for _, p := range pairs {
		if string(p.m) != p.name {
			t.Errorf("constant for %q is %q", p.name, p.m)
		}
		published[p.m] = p.name
	}
	if len(published) != len(pairs) {
		t.Fatalf("%d distinct constants, want %d: two share a name", len(published), len(pairs))
	}
	all := metrics.Methods()
	if len(all) != len(published) {
		t.Errorf("Methods() has %d names, want %d: %v", len(all), len(published), all)
	}
	for _, m := range all {
		if _, ok := published[m]; !ok {
			t.Errorf("Methods() lists %q, which is no published name", m)
		}
		if !m.Known() || m.Description() == "" {
			t.Errorf("%q: known %v, description %q", m, m.Known(), m.Description())
		}
	}
	if m := metrics.Method("wilson_someday"); m.Known() || m.Description() != "" || m.Card() != metrics.CardNamed ||
		m.MOVER() != metrics.MOVERStated || m.Family() != 0 || m.OneValuePerItem() {
		t.Errorf("a name of a later nel: known %v, %q, card %d, mover %d, family %d", m.Known(), m.Description(), m.Card(), m.MOVER(), m.Family())
	}
}

// The properties decisions read, against the name lists each decision
// compared before the vocabulary (passAt, compare's MOVER-J, the model
// card and report cells, coverage's reference intervals): moving a name
// from one list to another is a change of behaviour, and shows here.
func TestMethodProperties(t *testing.T) {
	names := func(keep func(metrics.Method) bool) []string {
		var out []string
		for _, m := range metrics.Methods() {
			if keep(m) {
				out = append(out, string(m))
			}
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		what string
		keep func(metrics.Method) bool
		want []string
	}{
		{"one 0/1 value per item (pass@k at k = repeats keeps Wilson's)", metrics.Method.OneValuePerItem,
			[]string{"wilson", "wilson_ends"}},
		{"MOVER takes Jeffreys' limits", func(m metrics.Method) bool { return m.MOVER() == metrics.MOVERJeffreys },
			[]string{"jeffreys_effective", "wilson", "wilson_ends"}},
		{"a card's plain interval over items", func(m metrics.Method) bool { return m.Card() == metrics.CardPlain },
			[]string{"clt", "jeffreys_betabinomial", "jeffreys_effective", "korn_graubard", "t", "wilson", "wilson_effective", "wilson_ends"}},
		{"clustered", metrics.Method.Clustered,
			[]string{"clt_clustered", "korn_graubard_clustered", "wilson_clustered"}},
		{"Jeffreys' family (coverage's Clopper–Pearson reference)", func(m metrics.Method) bool { return m.Family() == metrics.FamilyJeffreys },
			[]string{"jeffreys_betabinomial", "jeffreys_effective", "jeffreys_ratio"}},
		{"Clopper–Pearson's family (coverage's Jeffreys reference)", func(m metrics.Method) bool { return m.Family() == metrics.FamilyClopperPearson },
			[]string{"korn_graubard", "korn_graubard_clustered"}},
	} {
		if got := names(c.keep); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, got, c.want)
		}
	}
}

// methodMeta is meta for passKRows' 4 repeats: pass@2 and pass@4.
var methodMeta = func() map[string]string {
	m := maps.Clone(meta)
	m[results.MetaRepeats] = "4"
	return m
}()

// methodScenarios are Compute's inputs that between them reach every way
// nel computes an interval; want is each metric's (CLT, bootstrap)
// method as docs/statistics.md gives the rules.
func methodScenarios() []struct {
	name string
	rows []results.Row
	want map[string][2]metrics.Method
} {
	oneRepeat := []results.Row{row("a", 0, 0, 1, ""), row("b", 1, 0, 0, ""), row("c", 2, 0, 1, ""), row("d", 3, 0, 1, "")}
	scores := []results.Row{row("a", 0, 0, 0.25, "x"), row("b", 1, 0, 0.5, "x"), row("c", 2, 0, 0.75, "y"), row("d", 3, 0, 1, "y")}
	unclustered := slices.Clone(scores)
	for i := range unclustered {
		unclustered[i].Category = ""
	}
	ratio := func(num, den []float64) []results.Row {
		rows := slices.Clone(oneRepeat)
		for i := range rows {
			rows[i].Scores = map[string]float64{"inst/num": num[i], "inst/den": den[i]}
		}
		return rows
	}
	const (
		wilson, jeffreys, betaBin = metrics.MethodWilsonEnds, metrics.MethodJeffreysEffective, metrics.MethodJeffreysBetaBinomial
		kgCl, boot, bootCl        = metrics.MethodKornGraubardClustered, metrics.MethodBootstrapPercentile, metrics.MethodBootstrapClusterExpanded
	)
	return []struct {
		name string
		rows []results.Row
		want map[string][2]metrics.Method
	}{
		{"one repeat", oneRepeat, map[string][2]metrics.Method{"pass@1": {wilson, boot}}},
		{"repeats", passKRows([]int{4, 3, 2, 1, 0, 4}, nil), map[string][2]metrics.Method{
			"pass@1": {jeffreys, boot}, "pass@2": {betaBin, boot}, "pass@4": {wilson, boot}}},
		{"clusters", passKRows([]int{4, 3, 2, 1, 0, 4}, []string{"x", "x", "y", "y", "z", "z"}), map[string][2]metrics.Method{
			"pass@1": {kgCl, bootCl}, "pass@2": {kgCl, bootCl}, "pass@4": {kgCl, bootCl}}},
		{"scores", unclustered, map[string][2]metrics.Method{"mean_reward": {metrics.MethodT, boot}}},
		{"clustered scores", scores, map[string][2]metrics.Method{"mean_reward": {metrics.MethodCLTClustered, bootCl}}},
		{"ratio in [0, den]", ratio([]float64{1, 0, 2, 3}, []float64{2, 1, 2, 4}), map[string][2]metrics.Method{
			"pass@1": {wilson, boot}, "inst": {metrics.MethodJeffreysRatio, boot}}},
		{"ratio past den", ratio([]float64{1, 0, 5, 3}, []float64{2, 1, 2, 4}), map[string][2]metrics.Method{
			"pass@1": {wilson, boot}, "inst": {metrics.MethodCLTRatio, boot}}},
	}
}

// Every method Compute reports is in the vocabulary, with a description
// and every property a decision reads; between them the scenarios reach
// every method nel writes. pass@k at k = repeats keeps Wilson's interval
// on the items (passAt's decision, which a renamed name once broke).
func TestComputeMethodsInVocabulary(t *testing.T) {
	seen := map[metrics.Method]bool{}
	for _, sc := range methodScenarios() {
		b := metrics.Compute(metrics.Input{Rows: sc.rows, Meta: methodMeta, Resamples: 100})
		// A category's score has its metric's name and no clusters: it
		// is checked, and not taken for the metric's.
		scores := append([]metrics.Score{b.Headline}, b.Metrics...)
		overall := len(scores)
		for _, c := range b.Categories {
			scores = append(scores, c.Score)
		}
		got := map[string][2]metrics.Method{}
		for i, s := range scores {
			for _, iv := range []*metrics.Interval{s.CLT, s.Bootstrap} {
				if iv == nil {
					continue
				}
				seen[iv.Method] = true
				m := iv.Method
				if !m.Known() || !m.Written() || m.Description() == "" || m.Card() == 0 || m.MOVER() == 0 || m.Family() == 0 {
					t.Errorf("%s: %s's %q: known %v, written %v, description %q, card %d, mover %d, family %d",
						sc.name, s.Metric, m, m.Known(), m.Written(), m.Description(), m.Card(), m.MOVER(), m.Family())
				}
			}
			if i < overall && s.CLT != nil && s.Bootstrap != nil {
				got[s.Metric] = [2]metrics.Method{s.CLT.Method, s.Bootstrap.Method}
			}
		}
		for metric, want := range sc.want {
			if got[metric] != want {
				t.Errorf("%s: %s's methods %v, want %v", sc.name, metric, got[metric], want)
			}
		}
	}
	var written []metrics.Method
	for _, m := range metrics.Methods() {
		if m.Written() {
			written = append(written, m)
		}
	}
	if reached := slices.Sorted(maps.Keys(seen)); len(reached) != len(written) {
		t.Errorf("the scenarios reach %v; nel writes %v", reached, written)
	}
}
