package metrics

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/plan"
	prov "github.com/nel-eval/nel/runtime/provenance"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/stats"
)

// Input is what Compute needs.
type Input struct {
	// Rows are the merged rows, sorted by item (item_idx, item_id), then
	// repeat, as merge writes them.
	Rows []results.Row
	// Meta is the merged results file's key-value metadata.
	Meta map[string]string
	// Benchmark is the plan's benchmark; nil when unknown.
	Benchmark *plan.Benchmark
	// Errors holds the error text of failed samples (from the
	// trajectories), for the failure exemplars; may be nil.
	Errors map[RowKey]string
	// Turns are an agentic benchmark's turns (turns.parquet, the
	// AuditColumns suffice) for the trajectory audit; nil for others.
	Turns []results.Turn
	// Resamples, Seed and Level configure the intervals; zero values mean
	// 10,000, 42 and 0.95.
	Resamples int
	Seed      uint64
	Level     float64
}

// item is one item's scored rows, as Compute groups them.
type item struct {
	id       string
	idx      int64
	category string
	rewards  []float64
	correct  int // rewards > 0, as pass@k counts them
	scores   map[string][]float64
}

// Scored reports whether a row counts in the statistics: its outcome is
// scored or model_error (an unusable answer, scored as wrong). An
// infra_error, or an outcome this nel does not know, is never scored. A
// row without an outcome (built in memory by an older writer) has the one
// its error_category implies, as results.ReadRows gives it.
func Scored(r *results.Row) bool {
	o := failure.Outcome(r.Outcome)
	if o == "" {
		o = failure.Category(r.ErrorCategory).Outcome()
	}
	return o == failure.Scored || o == failure.ModelError
}

// Compute builds the bundle of one benchmark from its merged rows. Every
// statistic but the runtime ones is computed over the scored rows only
// (Scored): an infrastructure failure is not a wrong answer.
func Compute(in Input) *Bundle {
	acc := NewAccumulator(in.Turns, len(in.Rows))
	for i := range in.Rows {
		acc.Add(&in.Rows[i])
	}
	return acc.Bundle(in)
}

// Bundle is the bundle of the rows added, as Compute's of in; in.Rows and
// in.Turns are not read (the Accumulator has had them).
func (a *Accumulator) Bundle(in Input) *Bundle {
	if in.Resamples <= 0 {
		in.Resamples = stats.DefaultResamples
	}
	if in.Seed == 0 {
		in.Seed = stats.DefaultSeed
	}
	if in.Level <= 0 || in.Level >= 1 {
		in.Level = 0.95
	}
	pv, pvNotes := provenance(in.Meta)
	b := &Bundle{
		BundleVersion: BundleVersion,
		Benchmark:     in.Meta[results.MetaBenchmark],
		Provenance:    pv,
		Samples:       a.rows,
		Agent:         a.agent,
	}
	a.addRewards()
	b.Name = strings.SplitN(b.Benchmark, "#", 2)[0]
	b.Category = in.Meta[results.MetaCategory]
	maxRate, from := plan.DefaultMaxErrorRate, "default"
	if in.Benchmark != nil {
		b.Benchmark, b.Name = in.Benchmark.Key, in.Benchmark.Name
		b.Repeats = in.Benchmark.Repeats
		b.Methodology = methodology(in.Benchmark)
		maxRate, from = in.Benchmark.MaxErrorRate, "plan"
	}
	if r, err := strconv.Atoi(in.Meta[results.MetaRepeats]); err == nil && b.Repeats == 0 {
		b.Repeats = r
	}
	items := a.items
	b.Items, b.ScoredItems = a.distinct, len(items)
	b.ScoredSamples = a.scored
	b.Binary = a.rows > 0 && !a.nonBinary
	if b.Binary {
		correct := a.correct
		b.Correct = &correct
	}
	if b.Repeats == 0 {
		for _, it := range items {
			b.Repeats = max(b.Repeats, len(it.rewards))
		}
	}
	a.scores(b, in, items)
	b.Runtime = a.rt.finish(b.Provenance)
	b.Validity = Validity{Samples: a.rows, MaxErrorRate: maxRate, MaxErrorRateFrom: from}
	b.Validity.InfraErrors, b.Validity.Classes = a.infra.finish(in.Errors, a.rows)
	b.Validity.judge()
	f := Failures{Samples: b.ScoredSamples}
	f.Failed, f.Categories = a.model.finish(in.Errors, b.ScoredSamples)
	f.Rate = share(f.Failed, b.ScoredSamples)
	b.Failures = f
	b.Notes = append(notes(b), pvNotes...)
	harnessOf(b, in.Meta)
	return b
}

// scores sets b's headline, metrics, variance and categories from the
// items' aggregates.
func (a *Accumulator) scores(b *Bundle, in Input, items []*item) {
	c := &computer{in: in, items: items}
	c.clusters()
	headline := "mean_reward"
	if b.Binary {
		headline = "pass@1"
	}
	means := make([]float64, len(items))
	for i, it := range items {
		means[i] = stats.Mean(it.rewards)
	}
	c.binary = b.Binary
	b.Headline = c.score(headline, means, c.cluster, c.trials(b.ScoredSamples))
	b.Metrics = append(b.Metrics, b.Headline)
	if b.Binary {
		for _, k := range passKs(b.Repeats) {
			b.Metrics = append(b.Metrics, c.passAt(k))
		}
	}
	names, ratios := scorerNames(items)
	for _, name := range names {
		if ratios[name] {
			b.Metrics = append(b.Metrics, c.ratio(name))
			continue
		}
		var vals []float64
		var cl []int
		trials, binary := 0, true
		for i, it := range items {
			if vs := it.scores[name]; len(vs) > 0 {
				vals = append(vals, stats.Mean(vs))
				trials += len(vs)
				binary = binary && allBinary(vs)
				if c.cluster != nil {
					cl = append(cl, c.cluster[i])
				}
			}
		}
		var limit float64
		if binary {
			limit = float64(trials)
		}
		b.Metrics = append(b.Metrics, c.score(name, vals, cl, limit))
	}
	b.Metrics = append(b.Metrics, c.derived()...)
	b.Variance = c.variance(b.Headline)
	b.Categories = c.categories(headline, means)
}

type computer struct {
	in    Input
	items []*item
	// binary is set when every scored reward is 0 or 1.
	binary bool
	// cluster[i] is item i's cluster (its category) when every item has
	// one and there are at least two; nil otherwise.
	cluster  []int
	nCluster int
}

func (c *computer) clusters() {
	ids := map[string]int{}
	cl := make([]int, len(c.items))
	for i, it := range c.items {
		if it.category == "" {
			return
		}
		id, ok := ids[it.category]
		if !ok {
			id = len(ids)
			ids[it.category] = id
		}
		cl[i] = id
	}
	if len(ids) >= 2 {
		c.cluster, c.nCluster = cl, len(ids)
	}
}

// score is a metric over per-item values, with both intervals. trials is
// 0 for a metric of general values; for one of binary rewards (pass@1,
// pass@k, a 0/1 scorer) it is the number of 0/1 outcomes behind vals
// (+Inf when there is no such count), which caps the Wilson interval's
// effective sample size. docs/statistics.md says why each interval, and
// what coverage it has.
func (c *computer) score(metric string, vals []float64, cluster []int, trials float64) Score {
	s := Score{Metric: metric, N: len(vals)}
	if len(vals) == 0 {
		return s
	}
	mean, se, _, _ := stats.CLT(vals, c.in.Level)
	s.Value = &mean
	if len(vals) < 2 {
		return s
	}
	// Student's t on the item means (n−1 df), or with the clustered
	// standard error on G−1 df: z under-covers with few items (93% at 50)
	// or few clusters.
	ci := &Interval{Method: MethodT, Level: c.in.Level, SE: se, DF: len(vals) - 1}
	if cluster != nil {
		if cse, g := stats.ClusteredSE(vals, cluster); g >= 2 {
			ci = &Interval{Method: MethodCLTClustered, Level: c.in.Level, SE: cse, Clusters: g, DF: g - 1}
		}
	}
	q := stats.TQuantile((1+c.in.Level)/2, float64(ci.DF))
	ci.Lo, ci.Hi = mean-q*ci.SE, mean+q*ci.SE
	switch {
	case trials > 0 && ci.Clusters == 0 && trials == float64(len(vals)) && allBinary(vals):
		// One binary value per item: independent Bernoulli trials, and
		// Wilson's score interval on n with z (with the exact one-sided
		// bound at 0 and n right and Jeffreys' at 1 and n−1), which keeps
		// its coverage near 0 and 1 where mean ± t·SE collapses (to
		// [1, 1] when every item is right). Its variance is p(1−p), not
		// estimated, so z. ("wilson" in older bundles: Brown, Cai &
		// DasGupta's Poisson bounds within 2–3 counts of an end.)
		ci.Method, ci.DF, ci.EffectiveN = MethodWilsonEnds, 0, float64(len(vals))
		x := int(math.Round(mean * float64(len(vals))))
		ci.Lo, ci.Hi = stats.WilsonCounts(x, len(vals), c.in.Level)
	case trials > 0:
		// Repeats or clusters make the trials correlated: Korn &
		// Graubard's (1998) effective sample size p̂(1−p̂)/SE², adjusted
		// for the variance estimate's df. Over items, Jeffreys' interval
		// on it: Clopper–Pearson's covered 99% near 1 with 30–50 items.
		// Over clusters Clopper–Pearson's: with 10–30 clusters the
		// clustered SE is skewed near the ends, and Jeffreys' covered
		// 93.3–93.9% at 0.95 (Wilson's 93.5%) where Clopper–Pearson's
		// held 94.7–96.5%.
		ci.EffectiveN = stats.EffectiveN(mean, ci.SE, trials, len(vals))
		if ci.Clusters > 0 {
			ci.Lo, ci.Hi = stats.KornGraubard(mean, ci.EffectiveN, q, c.in.Level)
			ci.Method = MethodKornGraubardClustered
		} else {
			ci.Lo, ci.Hi = stats.KornGraubardJeffreys(mean, ci.EffectiveN, q, c.in.Level)
			ci.Method = MethodJeffreysEffective
		}
	}
	// A t interval can reach past the scale (0.99 ± 0.02 on a score);
	// scores that live in [0, 1] keep their interval there.
	if unitInterval(vals) {
		ci.Lo, ci.Hi = max(ci.Lo, 0), min(ci.Hi, 1)
	}
	s.CLT = ci
	s.Bootstrap = c.bootstrap(vals, cluster, ci.Clusters)
	return s
}

// bootstrap is the percentile bootstrap of the mean of vals: over whole
// clusters when the items fall in g ≥ 2 clusters (items of one category
// are correlated, and resampling them one by one under-covers), expanded
// for few clusters, else (g = 0: no clusters, or one) NeMo Evaluator's
// over items.
func (c *computer) bootstrap(vals []float64, cluster []int, g int) *Interval {
	iv := &Interval{Method: MethodBootstrapPercentile, Level: c.in.Level, Resamples: c.in.Resamples, Seed: c.in.Seed, Parity: true}
	if g == 0 {
		iv.Lo, iv.Hi = stats.Bootstrap(vals, c.in.Resamples, c.in.Seed, c.in.Level)
		return iv
	}
	// Few clusters: read the percentiles at Hesterberg's expanded level
	// (the t(G−1) width the clustered analytic interval has); the plain
	// percentile ends covered 87–94% at 10–30 clusters.
	iv.Method = MethodBootstrapClusterExpanded
	iv.Lo, iv.Hi = stats.ClusterBootstrap(vals, cluster, c.in.Resamples, c.in.Seed, stats.ExpandedLevel(c.in.Level, g))
	return iv
}

// trials is score's trials argument for a reward metric over n samples:
// n for binary rewards, 0 otherwise.
func (c *computer) trials(n int) float64 {
	if !c.binary {
		return 0
	}
	return float64(n)
}

// allBinary reports whether every value is 0 or 1.
func allBinary(vs []float64) bool {
	for _, v := range vs {
		if v != 0 && v != 1 {
			return false
		}
	}
	return true
}

func unitInterval(vals []float64) bool {
	for _, v := range vals {
		if v < 0 || v > 1 {
			return false
		}
	}
	return true
}

// passKs are the k of pass@k beyond 1: 2, 4, 8, … ≤ repeats, and repeats.
func passKs(repeats int) []int {
	var ks []int
	for k := 2; k <= repeats; k *= 2 {
		ks = append(ks, k)
	}
	if repeats > 1 && !slices.Contains(ks, repeats) {
		ks = append(ks, repeats)
	}
	return ks
}

// passAt is pass@k over the items with at least k scored samples. The
// unbiased estimator 1 − C(n−c, k)/C(n, k) is per item, with the item's
// own n; for n < k it is undefined (no k draws without replacement exist),
// and extrapolating pass@n up to k would be a guess, so such an item (one
// that lost repeats to infrastructure failures) is left out of pass@k:
// Score.N says over how many items it is, and a note says how many were
// left out. This assumes that which samples failed for infrastructure
// reasons does not depend on how hard the item is.
func (c *computer) passAt(k int) Score {
	var vals []float64
	var cl, ns, cs []int
	for i, it := range c.items {
		if len(it.rewards) < k {
			continue
		}
		vals = append(vals, stats.PassAtK(len(it.rewards), it.correct, k))
		ns, cs = append(ns, len(it.rewards)), append(cs, it.correct)
		if c.cluster != nil {
			cl = append(cl, c.cluster[i])
		}
	}
	blocks, samples := 0, 0
	for _, n := range ns {
		blocks, samples = blocks+n/k, samples+n
	}
	// Over clusters the effective size stays capped at the disjoint
	// k-sample blocks the items hold: the Beta-binomial below models items,
	// not the clusters whose spread the clustered SE carries
	// (docs/statistics.md). At k = n each item holds one 0/1 value, and
	// score gives Wilson's interval on the items.
	s := c.score(fmt.Sprintf("pass@%d", k), vals, cl, float64(blocks))
	if ci := s.CLT; ci != nil && ci.Clusters == 0 && !ci.Method.OneValuePerItem() {
		c.passAtBetaBinomial(ci, *s.Value, ns, cs, k, samples)
	}
	return s
}

// passAtBetaBinomial sets pass@k's interval over items with repeats
// (k < n): Jeffreys' on the effective size from the larger of two
// variances of the items' mean, the items' sample SE and that of a
// Beta-binomial fitted to their counts (stats.BetaBinomial), capped at the
// samples. Near 1 the per-item estimates are mostly 1 and their sample SE
// is skewed low (a run that draws few weak items has a higher p̂ and a
// smaller SE); the model's variance is not, as it uses the counts that
// pass@k's values throw away (3 and 4 of 4 both give pass@2 = 1). The
// larger of the two keeps each a guard on the other: the model on the
// sample SE's skew, the sample SE on a model whose spread is wrong for
// the items at hand (docs/statistics.md, "pass@k": items of other shapes
// than the Beta).
func (c *computer) passAtBetaBinomial(ci *Interval, v float64, ns, cs []int, k, samples int) {
	ci.Method = MethodJeffreysBetaBinomial
	ci.EffectiveN = stats.EffectiveN(v, ci.SE, float64(samples), len(ns))
	if v > 0 && v < 1 {
		model := stats.FitBetaBinomial(ns, cs).PassAtKModelTrials(ns, k)
		if model > 0 {
			ci.EffectiveN = min(ci.EffectiveN, model)
		}
	}
	q := stats.TQuantile((1+c.in.Level)/2, float64(ci.DF))
	ci.Lo, ci.Hi = stats.KornGraubardJeffreys(v, ci.EffectiveN, q, c.in.Level)
}

// Row scores named NAME/num and NAME/den form a ratio metric NAME (see
// bench.Score.Scores).
const (
	ratioNum = "/num"
	ratioDen = "/den"
)

// scorerNames lists the extra metrics of the rows' scores, sorted; a
// NAME/num and NAME/den pair is listed once as NAME, with ratio[NAME] set.
func scorerNames(items []*item) (names []string, ratio map[string]bool) {
	set := map[string]bool{}
	for _, it := range items {
		for name := range it.scores {
			set[name] = true
		}
	}
	ratio = map[string]bool{}
	for name := range set {
		if base, ok := strings.CutSuffix(name, ratioNum); ok && set[base+ratioDen] {
			ratio[base] = true
		}
	}
	for name := range set {
		base, _ := strings.CutSuffix(name, ratioNum)
		base, _ = strings.CutSuffix(base, ratioDen)
		if ratio[base] {
			name = base
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, ratio
}

// ratio is the pooled metric Σnum/Σden with items as the units (an item's
// repeats are summed into it): the delta-method normal interval and the
// seeded percentile bootstrap over items. Category clusters are not used
// (the delta method here assumes independent items).
func (c *computer) ratio(name string) Score {
	var num, den []float64
	for _, it := range c.items {
		ns, ds := it.scores[name+ratioNum], it.scores[name+ratioDen]
		if len(ds) == 0 {
			continue
		}
		var n, d float64
		for _, v := range ns {
			n += v
		}
		for _, v := range ds {
			d += v
		}
		num, den = append(num, n), append(den, d)
	}
	s := Score{Metric: name, N: len(num)}
	r := stats.Ratio(num, den)
	if len(num) == 0 || math.IsNaN(r) {
		return s
	}
	s.Value = &r
	if len(num) < 2 {
		return s
	}
	// The delta method's SE with Student's t at m−1 df over the m items,
	// as the item means' interval (z under-covers with few items).
	_, se, _, _ := stats.RatioCLT(num, den, c.in.Level)
	q := stats.TQuantile((1+c.in.Level)/2, float64(len(num)-1))
	s.CLT = &Interval{Method: MethodCLTRatio, Level: c.in.Level, Lo: r - q*se, Hi: r + q*se, SE: se, DF: len(num) - 1}
	unit := true
	total := 0.0
	for i := range num {
		unit = unit && num[i] >= 0 && num[i] <= den[i]
		total += den[i]
	}
	if unit {
		// A share of instructions followed is a proportion whose trials
		// come in clusters (an item's instructions): the ratio estimator
		// of cluster sampling, for which Korn & Graubard's (1998)
		// interval on the effective sample size holds near 0 and 1 where
		// r ± t·SE covered 85–90% (n = 30–100 items at 0.95 in nel's
		// suite); the trials are the instructions. Jeffreys' interval on
		// it, as over items: Clopper–Pearson's covered 96–99%.
		s.CLT.Method = MethodJeffreysRatio
		s.CLT.EffectiveN = stats.EffectiveN(r, se, total, len(num))
		s.CLT.Lo, s.CLT.Hi = stats.KornGraubardJeffreys(r, s.CLT.EffectiveN, q, c.in.Level)
	}
	blo, bhi := stats.BootstrapRatio(num, den, c.in.Resamples, c.in.Seed, c.in.Level)
	s.Bootstrap = &Interval{Method: MethodBootstrapPercentile, Level: c.in.Level, Lo: blo, Hi: bhi, Resamples: c.in.Resamples, Seed: c.in.Seed, Parity: true}
	return s
}

// variance decomposes the headline's variance; nil without two items.
func (c *computer) variance(h Score) *Variance {
	if len(c.items) < 2 || h.CLT == nil {
		return nil
	}
	per := make([][]float64, len(c.items))
	var invK float64
	for i, it := range c.items {
		per[i] = it.rewards
		invK += 1 / float64(len(it.rewards))
	}
	// Items may have different numbers of scored repeats (infrastructure
	// failures are left out): the SE is taken at their harmonic mean,
	// rounded down, as Decompose weighs the within-item variance.
	k := max(1, int(float64(len(c.items))/invK))
	between, within, ok := stats.Decompose(per)
	const itemCost, alpha, power = 1.0, 0.05, 0.8
	v := &Variance{
		Between: between, Within: within, WithinEstimated: ok,
		SE:       stats.SEFromDecomposition(between, within, len(c.items), k),
		ItemCost: itemCost, Alpha: alpha, Power: power,
		// Against an independent run of the same design the difference
		// has twice the variance of one run's score.
		MDE: stats.MDE(math.Sqrt2*h.CLT.SE, alpha, power),
	}
	v.OptimalRepeats = 1
	if ok {
		v.OptimalRepeats = stats.OptimalRepeats(between, within, itemCost)
	}
	return v
}

// categories scores the headline per category (nil with fewer than two
// categories: the headline already is that).
func (c *computer) categories(metric string, means []float64) []Category {
	byCat := map[string][]float64{}
	samples := map[string]int{}
	for i, it := range c.items {
		if it.category != "" {
			byCat[it.category] = append(byCat[it.category], means[i])
			samples[it.category] += len(it.rewards)
		}
	}
	if len(byCat) < 2 {
		return nil
	}
	names := make([]string, 0, len(byCat))
	for name := range byCat {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]Category, 0, len(names))
	for _, name := range names {
		out = append(out, Category{Name: name, Score: c.score(metric, byCat[name], nil, c.trials(samples[name]))})
	}
	return out
}

// provenance reads the bundle's provenance from the results file's
// metadata, and the notes that what it found calls for.
func provenance(meta map[string]string) (Provenance, []string) {
	p := Provenance{
		RecipeHash:     meta[results.MetaRecipeHash],
		PlanHash:       meta[results.MetaPlanHash],
		BenchmarkHash:  meta[results.MetaBenchmarkHash],
		NelVersion:     meta[results.MetaNelVersion],
		ScoringVersion: meta[results.MetaScoring],
		DatasetDigest:  meta[results.MetaDataset],
		Model:          meta[results.MetaModel],
		Simulated:      meta[results.MetaSimulated] == "true",
		StartedAt:      meta[results.MetaStartedAt],
		EndedAt:        meta[results.MetaEndedAt],
	}
	// "merged/N" after merge, "i/N" for a single shard.
	if _, n, ok := strings.Cut(meta[results.MetaShard], "/"); ok {
		p.Shards, _ = strconv.Atoi(n)
	}
	recs, err := prov.Parse(meta[results.MetaProvenance])
	if err != nil {
		return p, []string{fmt.Sprintf("the results file's provenance record does not parse (%v): build, hosts and servers are unknown", err)}
	}
	return p, joinRecords(&p, recs)
}

// joinRecords fills p's Build, Hosts and Serving from the shards' records
// (one record for a shard's file, the distinct ones for a merged file).
func joinRecords(p *Provenance, recs []prov.Record) []string {
	if len(recs) == 0 {
		return nil
	}
	var ns []string
	builds := map[prov.Build]bool{}
	for _, r := range recs {
		if p.Build == nil {
			b := r.Build
			p.Build = &b
		}
		builds[r.Build] = true
	}
	if len(builds) > 1 {
		ns = append(ns, fmt.Sprintf("the shards ran %d different nel-run builds: compare provenance.build of the shards' files", len(builds)))
	}

	hostSeen := map[string]bool{}
	for _, r := range recs {
		k, _ := json.Marshal(r.Host)
		if !hostSeen[string(k)] {
			hostSeen[string(k)] = true
			p.Hosts = append(p.Hosts, r.Host)
		}
	}
	slices.SortStableFunc(p.Hosts, func(a, b prov.Host) int { return cmp.Compare(a.Hostname, b.Hostname) })

	// Services in the order the records list them (solver, then judges);
	// within a service, fingerprints in the order first seen.
	type key struct{ service, fingerprint string }
	seen := map[key]bool{}
	var order []string
	bySvc := map[string][]prov.Serving{}
	for _, r := range recs {
		for _, s := range r.Serving {
			k := key{s.Service, s.Fingerprint}
			if seen[k] {
				continue
			}
			seen[k] = true
			if _, ok := bySvc[s.Service]; !ok {
				order = append(order, s.Service)
			}
			bySvc[s.Service] = append(bySvc[s.Service], s)
		}
	}
	for _, name := range order {
		ss := bySvc[name]
		p.Serving = append(p.Serving, ss...)
		if len(ss) > 1 {
			ns = append(ns, fmt.Sprintf("service %s answered with %d different server fingerprints across shards", name, len(ss)))
		}
	}
	return ns
}

// methodology is the plan's benchmark without what only says where and how
// fast it ran.
func methodology(b *plan.Benchmark) map[string]any {
	data, err := json.Marshal(b)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	for _, k := range []string{"key", "dir", "hash", "max_concurrent"} {
		delete(m, k)
	}
	return m
}

// finish is the Runtime of the rows added: computed from every row,
// never from shard summaries.
func (ra *runtimeAcc) finish(p Provenance) Runtime {
	rt := ra.rt
	rt.LatencyMS = percentiles(ra.lat)
	if decode := ra.decode; len(decode) > 0 {
		slices.Sort(decode)
		rt.DecodeTokensPerSecondP50 = stats.Percentile(decode, 50)
	}
	start, err1 := time.Parse(time.RFC3339Nano, p.StartedAt)
	end, err2 := time.Parse(time.RFC3339Nano, p.EndedAt)
	if err1 == nil && err2 == nil && end.After(start) {
		rt.WallSeconds = end.Sub(start).Seconds()
		rt.SamplesPerSecond = float64(len(ra.lat)) / rt.WallSeconds
		rt.TokensPerSecond = float64(rt.CompletionTokens) / rt.WallSeconds
	}
	return rt
}

// histogramBuckets is how many buckets the latency histogram has; the last
// one also holds everything beyond it.
const histogramBuckets = 40

// percentiles sorts xs in place.
func percentiles(xs []float64) Percentiles {
	var p Percentiles
	if len(xs) == 0 {
		return p
	}
	slices.Sort(xs)
	p.P50 = stats.Percentile(xs, 50)
	p.P90 = stats.Percentile(xs, 90)
	p.P99 = stats.Percentile(xs, 99)
	p.Mean = stats.Mean(xs)
	p.Max = xs[len(xs)-1]
	// Buckets of a round width covering up to the 99th percentile.
	if top := p.P99; top > 0 {
		p.BucketMS = niceWidth(top / (histogramBuckets - 1))
		p.Histogram = make([]int, histogramBuckets)
		for _, x := range xs {
			i := int(x / p.BucketMS)
			p.Histogram[min(max(i, 0), histogramBuckets-1)]++
		}
	}
	return p
}

// niceWidth rounds w up to 1, 2 or 5 times a power of ten.
func niceWidth(w float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(w)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= w {
			return m * e
		}
	}
	return 10 * e
}

// ValidityOf is the validity of rows read without their plan (a
// results.parquet with no eval.json beside it): against the default
// max_error_rate, with exemplars from the rows' error messages.
func ValidityOf(rows []results.Row) Validity {
	infra := classAcc{outcome: string(failure.InfraError)}
	for i := range rows {
		if !Scored(&rows[i]) {
			infra.add(&rows[i])
		}
	}
	v := Validity{Samples: len(rows), MaxErrorRate: plan.DefaultMaxErrorRate, MaxErrorRateFrom: "default"}
	v.InfraErrors, v.Classes = infra.finish(nil, len(rows))
	v.judge()
	return v
}

// judge sets v's Rate from its counts, and Invalid and Reason from the
// rate and the limit: INVALID strictly above max_error_rate (at exactly
// the limit the benchmark is valid).
func (v *Validity) judge() {
	v.Rate = share(v.InfraErrors, v.Samples)
	v.Invalid = v.Rate > v.MaxErrorRate
	v.Reason = ""
	if v.Invalid {
		v.Reason = fmt.Sprintf("%d of %d samples (%s) failed for infrastructure reasons (%s), more than max_error_rate %s",
			v.InfraErrors, v.Samples, Percent(v.Rate), ClassCounts(v.Classes), Percent(v.MaxErrorRate))
	}
}

// ClassCounts is "server_error 2, timeout 1": each class with its count,
// in the order given.
func ClassCounts(cs []FailureCategory) string {
	parts := make([]string, len(cs))
	for i, fc := range cs {
		parts[i] = fmt.Sprintf("%s %d", fc.Category, fc.Count)
	}
	return strings.Join(parts, ", ")
}

// Percent formats a share as a percentage to at most two decimals,
// without trailing zeros ("6%", "5.04%", "33.33%"): a rate just above a
// limit never prints as the limit, as one fixed decimal would make it.
func Percent(x float64) string {
	return strconv.FormatFloat(math.Round(x*1e4)/100, 'f', -1, 64) + "%"
}

const noRowsNote = "no rows: nothing was evaluated, so there is no score"

func notes(b *Bundle) []string {
	var ns []string
	if b.Provenance.Simulated {
		ns = append(ns, "answers came from nel's simulated endpoint, not a model: the scores test the pipeline, not a model")
	}
	v, f := b.Validity, b.Failures
	switch {
	case b.Samples == 0:
		ns = append(ns, noRowsNote)
	case v.Invalid:
		ns = append(ns, "INVALID: "+v.Reason+": the numbers do not measure the model; fix the cause and run it again")
	case v.InfraErrors == b.Samples:
		ns = append(ns, fmt.Sprintf("every sample failed for infrastructure reasons (%s): nothing was scored", ClassCounts(v.Classes)))
	case v.InfraErrors > 0:
		ns = append(ns, fmt.Sprintf("%d infrastructure %s (%s) not scored: the statistics are over the other %d samples, of %d items",
			v.InfraErrors, plural(v.InfraErrors, "failure", "failures"), ClassCounts(v.Classes), b.ScoredSamples, b.ScoredItems))
	}
	switch {
	case f.Samples == 0:
	case f.Failed == f.Samples:
		ns = append(ns, fmt.Sprintf("every scored sample is a model error (%s), scored as wrong: the score measures the failures, not the model's knowledge", ClassCounts(f.Categories)))
	case f.Rate >= 0.1:
		ns = append(ns, fmt.Sprintf("%.1f%% of the scored samples are model errors, scored as wrong: see the failure analysis before trusting the score", 100*f.Rate))
	}
	var short []string
	for _, m := range b.Metrics[1:] {
		if strings.HasPrefix(m.Metric, "pass@") && m.N < b.ScoredItems {
			short = append(short, fmt.Sprintf("%s over %d", m.Metric, m.N))
		}
	}
	if len(short) > 0 {
		ns = append(ns, fmt.Sprintf("pass@k is over the items with at least k scored samples (an item that lost repeats to infrastructure failures has fewer): %s of the %d scored items",
			strings.Join(short, ", "), b.ScoredItems))
	}
	if b.ScoredItems == 1 {
		ns = append(ns, "one item: no interval can be computed")
	}
	return ns
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
