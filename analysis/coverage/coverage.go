// Package coverage is nel's Monte-Carlo check of its own intervals and
// paired tests: it simulates benchmark runs with a known true score over
// a grid of cases (items, repeats, correlation within items, clustering,
// true means from 0.5 to 0.99, paired runs with and without an effect),
// puts each through the code that reports on real runs (metrics.Compute
// for eval.json, compare.Compare, gate.Evaluate), and counts how often
// each interval covers the truth and how often each test rejects. The
// seeds are fixed, so a table is reproducible bit for bit.
package coverage

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/nel-eval/nel/runtime/results"
)

// Case is one cell of the grid: how the simulated benchmark and model
// behave.
type Case struct {
	Name    string
	Items   int
	Repeats int
	// Clusters is the number of categories the items fall in, evenly and
	// in turn; 0 leaves items without a category.
	Clusters int
	// ClusterConc is the Beta concentration of the clusters' true means
	// around Mean (smaller: stronger clustering); used when Clusters > 0.
	ClusterConc float64
	// ItemConc is the Beta concentration of each item's success
	// probability around its cluster's mean (smaller: items differ more,
	// so an item's repeats are more alike). 0: every item has the
	// cluster's mean.
	ItemConc float64
	// Shape, when set, draws the items' probabilities from another
	// distribution than the Beta (no clusters; ItemConc unused), so a
	// method that models items as Beta is tried where it is wrong:
	// ShapeTwoPoint or ShapeUniform.
	Shape string
	// Mean is the true score: the expected pass@1 over the population of
	// items the benchmark samples.
	Mean float64
	// Paired cases run a baseline and a candidate on the same items; the
	// candidate's true score is Mean − Effect (each item's probability
	// scaled by 1 − Effect/Mean, which keeps it in [0, 1]).
	Paired bool
	Effect float64
	// Unpaired cases run the candidate on its own draw of items (runs
	// whose items cannot be matched): compare's unpaired interval
	// (MOVER from the two headlines' intervals). Effect as for Paired.
	Unpaired bool
	// Ratio adds a ratio metric "instr" (IFEval's instruction level):
	// each sample carries 1–4 instructions, each followed with the item's
	// probability, as scores instr/num and instr/den; its truth is Mean.
	Ratio bool
	// Local draws each run's Mean uniformly within ±1/Items of the
	// case's (clipped to [0, 1]; Effect fixed): its rows are coverage
	// averaged over that neighbourhood, the local mean on which an
	// interval on a count near its end is judged (docs/statistics.md),
	// estimated by simulation where no exact sum exists (repeats,
	// ratios, two runs). Its name is the fixed case's with LocalSuffix,
	// whose rows of the same methods then count as pointwise.
	Local bool
}

// LocalSuffix ends the name of a Local case.
const LocalSuffix = ", truth ± 1/n"

// Result is one method's record over a case's replicates.
type Result struct {
	Case   string
	Method string
	// Kind is "coverage" (Hits counts intervals that covered the truth)
	// or "rejection" (Hits counts rejections of the null).
	Kind     string
	Hits     int
	Reps     int
	WidthSum float64
	// Exact results are computed from the binomial distribution rather
	// than simulated: their rate and mean width are ExactRate and
	// ExactWidth, and they have no Monte-Carlo error.
	Exact      bool
	ExactRate  float64
	ExactWidth float64
	// Pointwise marks the coverage, at the one true score of the case, of
	// an interval on a binomial count, whose coverage oscillates with the
	// true score (docs/statistics.md): its claim is judged on the
	// coverage averaged over a neighbourhood of the score, the exact row
	// beside it.
	Pointwise bool
}

// Rate is the share of replicates that hit.
func (r Result) Rate() float64 {
	if r.Exact {
		return r.ExactRate
	}
	return float64(r.Hits) / float64(r.Reps)
}

// MCSE is the Monte-Carlo standard error of Rate, √(r(1−r)/reps); 0 for
// an exact result.
func (r Result) MCSE() float64 {
	if r.Exact {
		return 0
	}
	p := r.Rate()
	return math.Sqrt(p * (1 - p) / float64(r.Reps))
}

// MeanWidth is the mean interval width (coverage results).
func (r Result) MeanWidth() float64 {
	if r.Exact {
		return r.ExactWidth
	}
	return r.WidthSum / float64(r.Reps)
}

// Claimed reports whether r is the coverage of an interval nel stands
// behind, the rows the 95% target applies to. Left out: the intervals nel
// reported before ("before"), which the table keeps for reference; the
// literature's reference methods ("reference"), there to compare widths;
// the bootstrap column (ci_bootstrap), NeMo Evaluator's percentile
// bootstrap kept for parity, over items or whole clusters, which the
// report labels as NeMo's and not nel's interval; and pointwise rows of a
// binomial count, judged on their local average.
func (r Result) Claimed() bool {
	return r.Kind == "coverage" && !r.Pointwise && !strings.Contains(r.Method, "before") &&
		!strings.Contains(r.Method, "reference") && !strings.Contains(r.Method, "bootstrap")
}

// Config sets the size of a run.
type Config struct {
	// Reps is the number of simulated runs per case.
	Reps int
	// Resamples is the bootstrap's and the permutation test's (fewer than
	// the product's 10,000: their Monte-Carlo error is small beside the
	// simulation's).
	Resamples int
	Seed      uint64
	// Only, when set, runs only the cases whose name it matches; each
	// keeps its random stream (its place in the grid), so its rows are
	// those of the full run.
	Only *regexp.Regexp
}

// Run simulates every case cfg.Reps times and returns the results in the
// order of the cases, methods in a fixed order within each. Cases run in
// parallel, one per CPU: each has its own random stream, so the results
// do not depend on the order they finish in.
func Run(ctx context.Context, cases []Case, cfg Config) ([]Result, error) {
	for _, c := range cases {
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
	}
	per := make([][]Result, len(cases))
	errs := make([]error, len(cases))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(cases)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ci := range next {
				per[ci], errs[ci] = runCase(ctx, ci, cases[ci], cfg)
			}
		}()
	}
	for ci, c := range cases {
		if cfg.Only == nil || cfg.Only.MatchString(c.Name) {
			next <- ci
		}
	}
	close(next)
	wg.Wait()
	markPointwise(cases, per)
	var out []Result
	for ci, rs := range per {
		if errs[ci] != nil {
			return nil, fmt.Errorf("case %s: %w", cases[ci].Name, errs[ci])
		}
		out = append(out, rs...)
	}
	return out, nil
}

// runCase simulates case number ci; for a binomial case it adds the
// exact coverage of the counts interval (exact.go).
func runCase(ctx context.Context, ci int, c Case, cfg Config) ([]Result, error) {
	acc := newAccumulator(c.Name)
	// One stream per case: adding a case leaves the others' numbers.
	r := rand.New(rand.NewPCG(cfg.Seed, uint64(ci)))
	for range cfg.Reps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rc := c
		if c.Local {
			rc.Mean = localMean(c, r)
		}
		var err error
		switch {
		case c.Paired:
			err = pairedRep(rc, cfg, r, acc)
		case c.Unpaired:
			err = moverRep(rc, cfg, r, acc)
		default:
			err = unpairedRep(rc, cfg, r, acc)
		}
		if err != nil {
			return nil, err
		}
	}
	out := acc.results()
	if c.Local {
		markTwinCounts(c, out)
	}
	if !c.binomial() {
		return out, nil
	}
	method, pointwise, local, err := exactRows(c)
	if err != nil {
		return nil, err
	}
	for i := range out {
		// The simulated row of the counts interval estimates the exact
		// pointwise figure (a check of the harness).
		if out[i].Method == method {
			out[i].Pointwise = true
		}
	}
	return append(out, pointwise, local), nil
}

// localMean draws a Local case's true score for one run: uniform within
// ±1/Items of Mean, clipped to [0, 1] and kept above Effect and below 1
// (a Beta needs a mean inside (0, 1); just below 1 every item is right).
func localMean(c Case, r *rand.Rand) float64 {
	a, b := max(c.Mean-1/float64(c.Items), 0), min(c.Mean+1/float64(c.Items), 1)
	m := a + (b-a)*r.Float64()
	return min(max(m, c.Effect+1e-9, 1e-9), 1-1e-9)
}

// markTwinCounts marks pointwise, in Local case c, the rows of
// pass@Repeats when its fixed case holds one 0/1 value per item for it
// (k > 1 repeats): the twin draws pass@1's truth within ±1/n, which moves
// pass@k's far less (within 0.0004 of 0.9993 at 0.98 with items Beta
// around it, α+β = 4, where its own ±1/n is ±0.01), so the row estimates
// pass@k's pointwise coverage, and the fixed case's exact local mean is
// its judge (Result.Pointwise).
func markTwinCounts(c Case, out []Result) {
	fixed := c
	fixed.Local = false
	if c.Repeats < 2 || !fixed.binomial() {
		return
	}
	prefix := "pass@" + strconv.Itoa(c.Repeats) + " "
	for i := range out {
		if out[i].Kind == "coverage" && strings.HasPrefix(out[i].Method, prefix) {
			out[i].Pointwise = true
		}
	}
}

// markPointwise marks, for each Local case that ran, the coverage rows
// of its fixed case (the name without LocalSuffix) whose method it has:
// their claim is judged on the local mean, as a binomial count's exact
// pointwise rows are (Result.Pointwise).
func markPointwise(cases []Case, per [][]Result) {
	for li, lc := range cases {
		base, ok := strings.CutSuffix(lc.Name, LocalSuffix)
		if !lc.Local || !ok || per[li] == nil {
			continue
		}
		local := map[string]bool{}
		for _, r := range per[li] {
			local[r.Method] = r.Kind == "coverage"
		}
		for ci, c := range cases {
			if c.Name != base {
				continue
			}
			for i, r := range per[ci] {
				if r.Kind == "coverage" && local[r.Method] {
					per[ci][i].Pointwise = true
				}
			}
		}
	}
}

func (c Case) check() error {
	switch {
	case c.Items < 2 || c.Repeats < 1:
		return fmt.Errorf("items %d, repeats %d: need at least 2 items and 1 repeat", c.Items, c.Repeats)
	case !(c.Mean > 0 && c.Mean < 1):
		return fmt.Errorf("mean %v not in (0, 1)", c.Mean)
	case c.Clusters == 1 || c.Clusters > c.Items:
		return fmt.Errorf("%d clusters for %d items", c.Clusters, c.Items)
	case c.Effect < 0 || c.Effect >= c.Mean:
		return fmt.Errorf("effect %v not in [0, mean)", c.Effect)
	case c.Shape != "" && (c.Clusters > 0 || c.Paired || c.Unpaired):
		return fmt.Errorf("shape %s: only for unpaired items without clusters", c.Shape)
	}
	return nil
}

// accumulator gathers one case's results by method, in first-seen order.
type accumulator struct {
	name  string
	order []string
	by    map[string]*Result
}

func newAccumulator(name string) *accumulator {
	return &accumulator{name: name, by: map[string]*Result{}}
}

func (a *accumulator) get(method, kind string) *Result {
	key := kind + "\x00" + method
	r, ok := a.by[key]
	if !ok {
		r = &Result{Case: a.name, Method: method, Kind: kind}
		a.by[key] = r
		a.order = append(a.order, key)
	}
	return r
}

// interval records whether [lo, hi] covers truth.
func (a *accumulator) interval(method string, lo, hi, truth float64) {
	r := a.get(method, "coverage")
	r.Reps++
	if lo <= truth && truth <= hi {
		r.Hits++
	}
	r.WidthSum += hi - lo
}

// rejection records whether a test rejected.
func (a *accumulator) rejection(method string, rejected bool) {
	r := a.get(method, "rejection")
	r.Reps++
	if rejected {
		r.Hits++
	}
}

func (a *accumulator) results() []Result {
	out := make([]Result, len(a.order))
	for i, k := range a.order {
		out[i] = *a.by[k]
	}
	return out
}

// probs draws the items' true success probabilities and their clusters.
func probs(c Case, r *rand.Rand) (p []float64, cluster []int) {
	if c.Shape != "" {
		return shapeProbs(c, r), make([]int, c.Items)
	}
	means := make([]float64, max(c.Clusters, 1))
	for g := range means {
		means[g] = c.Mean
		if c.Clusters > 0 {
			means[g] = betaDraw(r, c.Mean, c.ClusterConc)
		}
	}
	p = make([]float64, c.Items)
	cluster = make([]int, c.Items)
	for i := range p {
		g := 0
		if c.Clusters > 0 {
			g = i % c.Clusters
		}
		cluster[i] = g
		p[i] = means[g]
		if c.ItemConc > 0 {
			p[i] = betaDraw(r, means[g], c.ItemConc)
		}
	}
	return p, cluster
}

// betaDraw draws from the Beta distribution with the given mean and
// concentration (α + β).
func betaDraw(r *rand.Rand, mean, conc float64) float64 {
	return distuv.Beta{Alpha: mean * conc, Beta: (1 - mean) * conc, Src: r}.Rand()
}

// rows simulates one run: each item's repeats are Bernoulli(p[i]).
func rows(c Case, p []float64, cluster []int, r *rand.Rand) []results.Row {
	out := make([]results.Row, 0, c.Items*c.Repeats)
	for i, pi := range p {
		cat := ""
		if c.Clusters > 0 {
			cat = fmt.Sprintf("c%03d", cluster[i])
		}
		for k := range c.Repeats {
			reward := 0.0
			if r.Float64() < pi {
				reward = 1
			}
			row := results.Row{Benchmark: "sim", ItemID: fmt.Sprintf("i%06d", i), ItemIdx: int64(i),
				Repeat: int64(k), Reward: reward, Category: cat, Outcome: "scored", Expected: "1"}
			if c.Ratio {
				row.Scores = instructions(pi, r)
			}
			out = append(out, row)
		}
	}
	return out
}

// instructions are one sample's ratio scores: 1–4 instructions, each
// followed with probability p.
func instructions(p float64, r *rand.Rand) map[string]float64 {
	d := 1 + r.IntN(4)
	n := 0
	for range d {
		if r.Float64() < p {
			n++
		}
	}
	return map[string]float64{RatioMetric + "/num": float64(n), RatioMetric + "/den": float64(d)}
}

// RatioMetric is the ratio metric of Ratio cases.
const RatioMetric = "instr"

// truePassAtK is E[1 − (1−p)^k] for p ~ Beta(mean·conc, (1−mean)·conc):
// 1 − Π_{j<k} (β+j)/(α+β+j), the Beta's moment of (1−p)^k. conc = 0
// means p = mean exactly.
func truePassAtK(mean, conc float64, k int) float64 {
	if conc == 0 {
		return 1 - math.Pow(1-mean, float64(k))
	}
	a, b := mean*conc, (1-mean)*conc
	prod := 1.0
	for j := range k {
		prod *= (b + float64(j)) / (a + b + float64(j))
	}
	return 1 - prod
}

// truePassAtKClustered is pass@k's truth when each cluster's mean μ is
// Beta(mean·cconc, (1−mean)·cconc) and each item's p is Beta around μ
// with concentration iconc: 1 − E_μ[E[(1−p)^k | μ]]. The inner moment is
// Π_{j<k} (iconc·x + j)/(iconc + j) with x = 1 − μ (x^k when iconc = 0),
// a polynomial in x, whose expectation is a sum of the Beta moments
// E[x^m] = Π_{j<m} (β+j)/(α+β+j).
func truePassAtKClustered(mean, cconc, iconc float64, k int) float64 {
	// coef[m] is the coefficient of x^m of the inner moment.
	coef := []float64{1}
	for j := range k {
		next := make([]float64, len(coef)+1)
		for m, a := range coef {
			if iconc == 0 {
				next[m+1] += a
				continue
			}
			next[m+1] += a * iconc / (iconc + float64(j))
			next[m] += a * float64(j) / (iconc + float64(j))
		}
		coef = next
	}
	a, b := mean*cconc, (1-mean)*cconc
	moment, sum := 1.0, 0.0
	for m, cm := range coef {
		sum += cm * moment
		moment *= (b + float64(m)) / (a + b + float64(m))
	}
	return 1 - sum
}
