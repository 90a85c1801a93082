// Package merge joins the Parquet shards of a plan's benchmarks into one
// results.parquet and trajectories.parquet per benchmark (and turns.parquet
// for an agentic one), after checking that the shards form exactly one
// complete, consistent run.
//
// results.parquet is sorted by dataset index, item id, repeat.
// trajectories.parquet is the shards' trajectories files concatenated
// without re-encoding (their row groups copied byte for byte): its rows are
// in shard order, each shard's in dataset index, item id, repeat order, so
// it is not globally sorted; join or sort on (item_id, repeat) to line it
// up with results.parquet. turns.parquet is concatenated the same way.
package merge

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/provenance"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// ErrIncomplete is wrapped by Merge's error when shards are still missing.
var ErrIncomplete = errors.New("shards missing")

// Options configures Merge.
type Options struct {
	Plan *plan.Plan
	// OutDir is the output root; "" means Plan.OutputDir.
	OutDir string
	// Benchmarks limits the merge to these keys; nil means all.
	Benchmarks []string
	Logger     *slog.Logger
}

// Summary is one merged benchmark: its results file and its bundle.
type Summary struct {
	Path   string // results.parquet
	Bundle *metrics.Bundle
}

// Merge merges every benchmark of the plan whose shards are all present.
// It returns an error wrapping ErrIncomplete (after merging the complete
// ones) when some benchmark still misses shards.
func Merge(o Options) ([]Summary, error) {
	if o.OutDir == "" {
		o.OutDir = o.Plan.OutputDir
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var sums []Summary
	var missing []string
	for i := range o.Plan.Benchmarks {
		b := &o.Plan.Benchmarks[i]
		if o.Benchmarks != nil && !slices.Contains(o.Benchmarks, b.Key) {
			continue
		}
		s, err := mergeBenchmark(o, b)
		if errors.Is(err, ErrIncomplete) {
			missing = append(missing, err.Error())
			continue
		}
		if err != nil {
			return sums, err
		}
		sums = append(sums, *s)
	}
	if len(missing) > 0 {
		return sums, &incompleteError{strings.Join(missing, "; ")}
	}
	return sums, nil
}

type incompleteError struct{ msg string }

func (e *incompleteError) Error() string { return e.msg }
func (e *incompleteError) Unwrap() error { return ErrIncomplete }

type shardFile struct {
	i    int
	path string
	meta map[string]string
	n    int // rows, from the footer
	// sorted is set when the rows are in merged order (checkShards).
	sorted bool
}

func mergeBenchmark(o Options, b *plan.Benchmark) (*Summary, error) {
	n := max(o.Plan.Shards, 1)
	dir := rundir.Dir(o.OutDir).Benchmark(b.Dir)
	files, err := shardFiles(b, dir, n)
	if err != nil {
		return nil, err
	}
	selected, repeats, err := readFooters(o.Plan, b, files, n)
	if err != nil {
		return nil, err
	}
	meta := mergedMeta(o.Logger, files, n)

	// The trajectories (the bulk of the bytes) are not decoded: their row
	// groups are copied into trajectories.parquet while the results are
	// checked, merged and written, in shard order (each shard in its own
	// order: dataset index, item id, repeat). Neither file appears unless
	// every check and read has passed, and trajectories.parquet appears
	// first.
	total := 0
	for _, f := range files {
		total += f.n
	}
	defer limitMemory(total)()
	trajPath := dir.Trajectories()
	checked := newVerdict()
	trajDone := newVerdict()
	go func() {
		srcs := make([]string, len(files))
		for i, f := range files {
			srcs[i] = rundir.Shard(f.path).Trajectories()
		}
		_, err := results.ConcatGated(trajPath, srcs, meta, checked.wait)
		trajDone.set(err)
	}()
	turnsDone, turnSrcs, err := concatTurns(b.Key, dir, files, meta, checked.wait)
	if err == nil {
		err = checkShards(b.Key, files, n, selected, repeats)
	}
	var p *pass
	if err == nil {
		if p, err = startPass(files, total, turnSrcs); err != nil {
			err = fmt.Errorf("benchmark %s: %w", b.Key, err)
		}
	}
	if err != nil {
		checked.set(err)
		trajDone.wait() // the half-written copies are removed
		if turnsDone != nil {
			turnsDone.wait()
		}
		return nil, err
	}
	defer p.close()
	out := dir.Results()
	written := make(chan error, 1)
	// results.parquet, the benchmark's completion mark, appears last.
	gate := func() error {
		if err := trajDone.wait(); err != nil {
			return err
		}
		return turnsDone.wait()
	}
	go func() { written <- results.WriteRowsFrom(out, total, p.fill, meta, gate) }()
	// Once every row has been through the statistics: the error texts of
	// the failure exemplars, from the trajectories' key and error columns.
	var errTexts map[metrics.RowKey]string
	select {
	case err = <-p.done:
	case err = <-written: // the writer failed before reading every row
	}
	if err == nil {
		err = p.strayTurn()
	}
	if err == nil {
		errTexts, err = errorTexts(files, n, p.acc.ExemplarKeys())
	}
	if err != nil {
		err = fmt.Errorf("benchmark %s: %w", b.Key, err)
		checked.set(err)
		<-written // refused by its gate: trajDone fails with err
		return nil, err
	}
	checked.set(nil)

	// metrics: the bundle, from the statistics gathered while the rows
	// were merged and the error texts of the exemplars, written beside
	// results.parquet once both Parquet files are in place.
	bundle := p.acc.Bundle(metrics.Input{Meta: meta, Benchmark: b, Errors: errTexts})
	if err := <-written; err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", b.Key, err)
	}
	if err := metrics.WriteFile(dir.Bundle(), bundle); err != nil {
		return nil, fmt.Errorf("benchmark %s: %w", b.Key, err)
	}
	o.Logger.Info("merged", "benchmark", b.Key, "shards", n, "rows", total, "file", out)
	return &Summary{Path: out, Bundle: bundle}, nil
}

// concatTurns starts concatenating the shards' turns files into the
// benchmark's turns.parquet, gated like trajectories.parquet, when the
// shards have them (an agentic benchmark's); the verdict it returns says
// when that file is in place (at once, nil, when there is none), and the
// shards' turns files it reads. Some
// shards with turns and some without is refused: they were run by
// different solvers, or a turns file was lost.
func concatTurns(key string, dir rundir.Bench, files []*shardFile, meta map[string]string, gate func() error) (*verdict, []string, error) {
	done := newVerdict()
	var srcs, absent []string
	for _, f := range files {
		p := rundir.Shard(f.path).Turns()
		if _, err := os.Stat(p); err != nil {
			absent = append(absent, p)
			continue
		}
		srcs = append(srcs, p)
	}
	switch {
	case len(srcs) == 0:
		done.set(nil)
		return done, nil, nil
	case len(absent) > 0:
		return nil, nil, fmt.Errorf("benchmark %s: %d of %d shards have turns, %s has none: delete the shard to run it again",
			key, len(srcs), len(files), absent[0])
	}
	go func() {
		_, err := results.ConcatGated(dir.Turns(), srcs, meta, gate)
		done.set(err)
	}()
	return done, srcs, nil
}

// shardFiles returns the n shard files of b under dir, in shard order; an
// incompleteError names those not finished.
func shardFiles(b *plan.Benchmark, dir rundir.Bench, n int) ([]*shardFile, error) {
	// One listing of the folder, not a stat per shard: each of N array
	// tasks runs merge --if-complete at its end, and N stats each would
	// be N² metadata operations on a shared filesystem, under the lock.
	entries, err := os.ReadDir(dir.Shards())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("benchmark %s: %w", b.Key, err)
	}
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		present[e.Name()] = true
	}
	var absent []string
	var files []*shardFile
	for i := range n {
		p := string(dir.Shard(i, n))
		if !present[filepath.Base(p)] {
			absent = append(absent, strconv.Itoa(i))
			continue
		}
		files = append(files, &shardFile{i: i, path: p})
	}
	if len(absent) > 0 {
		return nil, &incompleteError{fmt.Sprintf("benchmark %s: %d of %d shards not finished (shard %s, under %s)", b.Key, len(absent), n, abbreviate(absent, 10), dir.Shards())}
	}
	return files, nil
}

// readFooters reads each shard's metadata into files and checks that every
// shard comes from plan p, is the shard its name says, and agrees with the
// others on what was run. It returns how many items were selected and how
// many times each was run.
func readFooters(p *plan.Plan, b *plan.Benchmark, files []*shardFile, n int) (selected, repeats int, err error) {
	// Not on their provenance (results.MetaProvenance): hosts differ, and
	// servers may, which the bundle's notes then say.
	agree := []string{results.MetaRecipeHash, results.MetaDataset, results.MetaSelected, results.MetaRepeats, results.MetaModel}
	var first *shardFile
	for _, f := range files {
		// The footer only: the rows are read later, all shards at once.
		meta, nrows, err := results.ReadMeta(f.path)
		if err != nil {
			return 0, 0, fmt.Errorf("benchmark %s: %w", b.Key, err)
		}
		f.meta, f.n = meta, int(nrows)
		if got := meta[results.MetaPlanHash]; got != p.PlanHash {
			return 0, 0, fmt.Errorf("benchmark %s: %s was written by plan %s, not this plan (%s): it is a leftover of another run; delete it and re-run that shard", b.Key, f.path, got, p.PlanHash)
		}
		if got, want := meta[results.MetaShard], fmt.Sprintf("%d/%d", f.i, n); got != want {
			return 0, 0, fmt.Errorf("benchmark %s: %s says it is shard %s, expected %s", b.Key, f.path, got, want)
		}
		if got := meta[results.MetaBenchmark]; got != b.Key {
			return 0, 0, fmt.Errorf("benchmark %s: %s holds benchmark %q", b.Key, f.path, got)
		}
		if first == nil {
			first = f
			continue
		}
		for _, k := range agree {
			if meta[k] != first.meta[k] {
				return 0, 0, fmt.Errorf("benchmark %s: shards disagree on %s: %s has %q, %s has %q (were they run against different data or models?)", b.Key, k, first.path, first.meta[k], f.path, meta[k])
			}
		}
	}
	selected, err1 := strconv.Atoi(first.meta[results.MetaSelected])
	repeats, err2 := strconv.Atoi(first.meta[results.MetaRepeats])
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("benchmark %s: %s lacks the %s/%s metadata nel-run writes", b.Key, first.path, results.MetaSelected, results.MetaRepeats)
	}
	return selected, repeats, nil
}

// mergedMeta is the merged files' metadata: the first shard's, as merged
// n shards, spanning from the first start to the last end, simulated if
// any shard was, with the shards' provenance joined.
func mergedMeta(log *slog.Logger, files []*shardFile, n int) map[string]string {
	meta := map[string]string{}
	for k, v := range files[0].meta {
		meta[k] = v
	}
	meta[results.MetaShard] = fmt.Sprintf("merged/%d", n)
	for _, f := range files {
		meta[results.MetaStartedAt] = minStr(meta[results.MetaStartedAt], f.meta[results.MetaStartedAt])
		meta[results.MetaEndedAt] = max(meta[results.MetaEndedAt], f.meta[results.MetaEndedAt])
		if f.meta[results.MetaSimulated] == "true" {
			meta[results.MetaSimulated] = "true"
		}
	}
	if prov := joinProvenance(log, files); prov != "" {
		meta[results.MetaProvenance] = prov
	} else {
		delete(meta, results.MetaProvenance)
	}
	return meta
}

// joinProvenance is the merged file's results.MetaProvenance: the JSON
// array of the shards' distinct records; "" when no shard has one (files
// of an older nel-run). A record that does not parse is left out with a
// warning: provenance describes the results, it does not make them wrong.
func joinProvenance(log *slog.Logger, files []*shardFile) string {
	var recs []provenance.Record
	for _, f := range files {
		rs, err := provenance.Parse(f.meta[results.MetaProvenance])
		if err != nil {
			log.Warn("a shard's provenance does not parse; it is left out of the merged file", "file", f.path, "err", err)
			continue
		}
		recs = append(recs, rs...)
	}
	if len(recs) == 0 {
		return ""
	}
	s, err := provenance.Join(recs)
	if err != nil {
		log.Warn("the shards' provenance could not be joined", "err", err)
		return ""
	}
	return s
}

// Headline is the one-line result of a benchmark, e.g.
//
//	gsm8k  pass@1 0.8120 (1069/1317 correct), 95% CI 0.7909–0.8331 · 1319 items × 1 repeat · 2 infra failures (timeout 2), not scored
//
// The counts are of the scored samples; infrastructure failures (never
// scored) and model errors (scored as wrong) are each said with their
// classes. An INVALID benchmark's line starts with INVALID, says its
// infrastructure failure rate against max_error_rate, and shows no score.
func (s Summary) Headline() string {
	bd := s.Bundle
	v := bd.Validity
	var b strings.Builder
	metric := strings.ReplaceAll(bd.Headline.Metric, "_", " ")
	if v.Invalid {
		fmt.Fprintf(&b, "INVALID %s  %s not reported: %s", bd.Benchmark, metric, v.Reason)
	} else {
		fmt.Fprintf(&b, "%s  %s", bd.Benchmark, metric)
		if val := bd.Headline.Value; val == nil {
			b.WriteString(" n/a")
		} else {
			fmt.Fprintf(&b, " %.4f", *val)
			if bd.Correct != nil {
				fmt.Fprintf(&b, " (%d/%d correct)", *bd.Correct, bd.ScoredSamples)
			}
		}
		if ci := bd.Headline.CLT; ci != nil {
			fmt.Fprintf(&b, ", %.0f%% CI %.4f–%.4f", 100*ci.Level, ci.Lo, ci.Hi)
		}
	}
	if h := bd.Harness; h != nil && h.AggregateOnly {
		fmt.Fprintf(&b, " · aggregate-only: %s wrote no per-item results, so there is no interval", h.Kind)
		return b.String()
	}
	fmt.Fprintf(&b, " · %d items × %d %s", bd.Items, bd.Repeats, plural(bd.Repeats, "repeat", "repeats"))
	if bd.ScoredItems < bd.Items && !v.Invalid {
		fmt.Fprintf(&b, " (%d items scored)", bd.ScoredItems)
	}
	if v.InfraErrors > 0 && !v.Invalid {
		fmt.Fprintf(&b, " · %d infra %s (%s), not scored", v.InfraErrors, plural(v.InfraErrors, "failure", "failures"), metrics.ClassCounts(v.Classes))
	}
	if f := bd.Failures; f.Failed > 0 {
		fmt.Fprintf(&b, " · %d model %s (%s), scored as wrong", f.Failed, plural(f.Failed, "error", "errors"), metrics.ClassCounts(f.Categories))
	}
	if bd.Provenance.Simulated {
		b.WriteString(" · SIMULATED endpoint")
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func minStr(a, b string) string {
	if a == "" || (b != "" && b < a) {
		return b
	}
	return a
}

func abbreviate(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(", … (%d more)", len(xs)-n)
}
