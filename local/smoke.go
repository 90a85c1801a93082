package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// SmokeOptions adjust Smoke.
type SmokeOptions struct {
	Samples    int    // per benchmark
	NelVersion string // recorded as by Run
	// OutDir keeps the smoke run's files; "" runs in a temporary folder
	// removed afterwards.
	OutDir  string
	Verbose bool
}

// Loader loads the recipe under test with extra overrides after the
// user's, and returns its text when it is no file (quick mode).
type Loader func(extra []compiler.Override) (*compiler.Source, []byte, error)

// Smoke is nel validate --samples: before a cluster allocation is spent,
// it runs Samples items of every benchmark of the recipe through the
// same path as nel run (probe, requests, scoring, merge) and says what a
// full run would hit: a dead endpoint or a refused key (Run's probe, in
// seconds), a path or protocol the server does not serve, answers the
// scorer cannot read or that max_tokens cuts off, and how long a full
// run would take at the latency seen. It returns an error (exit 1) when
// the samples show a problem.
func Smoke(ctx context.Context, load Loader, o SmokeOptions, stdout, stderr io.Writer) error {
	full, _, err := load(nil)
	if err != nil {
		return err
	}
	ests := estimates(ctx, full)
	out := o.OutDir
	if entries, _ := os.ReadDir(out); out != "" && len(entries) > 0 {
		// A run there would resume: its finished samples would not be
		// sent again, and the smoke test would test nothing.
		return exitcode.Usagef("validate: -o %s is not empty; the samples need a folder of their own", out)
	}
	if out == "" {
		if out, err = os.MkdirTemp("", "nel-validate-"); err != nil {
			return fmt.Errorf("validate: %w", err)
		}
		defer os.RemoveAll(out)
	}
	extra := []compiler.Override{
		{Text: "cluster.shards=1", Path: []string{"cluster", "shards"}, Value: int64(1)},
		compiler.OutputDirFlag("-o "+out, out),
	}
	for i := range full.Recipe.Benchmarks {
		idx := strconv.Itoa(i)
		extra = append(extra,
			compiler.Override{Text: fmt.Sprintf("benchmarks.%d.max_problems=%d", i, o.Samples), Path: []string{"benchmarks", idx, "max_problems"}, Value: int64(o.Samples)},
			compiler.Override{Text: fmt.Sprintf("benchmarks.%d.repeats=1", i), Path: []string{"benchmarks", idx, "repeats"}, Value: int64(1)})
	}
	s, text, err := load(extra)
	if err != nil {
		return err
	}
	p, err := PlanOf(s, o.NelVersion)
	if err != nil {
		return err
	}
	// The headlines of a handful of samples mean nothing; the diagnosis
	// below says what they showed.
	fmt.Fprintf(stdout, "validate: %d sample(s) of each benchmark of %s, run as nel run runs them\n", o.Samples, s.Path)
	_, err = Run(ctx, s, Options{NelVersion: o.NelVersion, Verbose: o.Verbose, Title: "smoke test", RecipeText: text, Quiet: true}, io.Discard, stderr)
	var failed *ShardsFailed
	switch {
	case errors.As(err, &failed):
		// Run has said why (the probe's verdict, the breaker's); its
		// advice to run the same command again is not this command's.
		return exitcode.New(exitcode.Failure, errors.New("validate: the samples did not run (the cause is above), and a full run would stop the same way"))
	case err != nil:
		return err
	}
	problems, warnings := 0, 0
	for i, b := range p.Benchmarks {
		bd := rundir.Dir(p.OutputDir).Benchmark(b.Dir)
		rows, _, err := results.ReadRows(bd.Results())
		if err != nil {
			return fmt.Errorf("validate: %w", err)
		}
		trajs, _, err := results.ReadTrajectories(bd.Trajectories())
		if err != nil {
			return fmt.Errorf("validate: %w", err)
		}
		d := diagnose(rows, trajs, b.Solver.Generation.MaxTokens, serviceOf(p, b.Solver.Service))
		d.estimate = ests[i]
		d.write(stdout, b.Key)
		problems, warnings = problems+len(d.problems), warnings+len(d.warnings)
	}
	switch {
	case problems == 0 && warnings == 0:
		fmt.Fprintln(stdout, "validate: ok: the samples show nothing a full run would hit")
		return nil
	case problems == 0:
		fmt.Fprintf(stdout, "validate: ok, with %d warning(s) above: nothing that would stop a full run, but look at what it would measure\n", warnings)
		return nil
	}
	return exitcode.New(exitcode.Failure, fmt.Errorf("validate: %d problem(s) in %d sample(s) per benchmark that a full run would hit; fix them before spending an allocation", problems, o.Samples))
}

// serviceOf is p's service called name.
func serviceOf(p *plan.Plan, name string) plan.Service {
	for _, sv := range p.Services {
		if sv.Name == name {
			return sv
		}
	}
	return plan.Service{Name: name}
}

// PlanOf is the plan Run builds for s: for where its results are (nel
// validate --samples) and what nel serve serves.
func PlanOf(s *compiler.Source, nelVersion string) (*plan.Plan, error) {
	h, _, err := compiler.ComputeHashes(s)
	if err != nil {
		return nil, err
	}
	return compiler.BuildPlan(s, h, nelVersion)
}

// estimate is what a full run of one benchmark asks: items (0 when not
// known without downloading the data) × repeats, max_concurrent requests
// in flight per shard.
type estimate struct {
	items, repeats, concurrent, shards int
}

// estimates sizes every benchmark of the recipe as it would fully run:
// the built-in size of the default data, or the count of local data.
func estimates(ctx context.Context, s *compiler.Source) []estimate {
	shards := 1
	if n := s.Recipe.Cluster.Shards; n != nil {
		shards = *n
	}
	var out []estimate
	for _, b := range s.Recipe.Benchmarks {
		e := estimate{repeats: b.Repeats, concurrent: b.MaxConcurrent, shards: shards}
		if def, ok := bench.Lookup(b.Name); ok {
			e.items = def.Size
			if spec, set, _ := bench.DataPath(b.Params); set {
				e.items = 0
				if dataset.IsLocal(spec) {
					l := dataset.NewLoader(dataset.Options{BaseDir: s.Dir, Offline: true})
					if set, err := def.Load(ctx, l, b.Params); err == nil {
						e.items = len(set.Items)
					}
				}
			}
		}
		if b.MaxProblems != nil && e.items > 0 {
			e.items = min(e.items, *b.MaxProblems)
		}
		out = append(out, e)
	}
	return out
}

// diagnosis is what one benchmark's samples showed.
type diagnosis struct {
	lines     []string // one per sample, NeMo validate's PASS/FAIL lines
	correct   int
	n         int
	problems  []string // what a full run would hit
	warnings  []string
	latencies []float64 // ms, of the samples that got an answer
	estimate  estimate
}

// diagnose reads the smoke run's rows (and the responses in its
// trajectories, for examples) of one benchmark.
func diagnose(rows []results.Row, trajs []results.Trajectory, maxTokens *int64, svc plan.Service) *diagnosis {
	resp := map[string]string{}
	for _, t := range trajs {
		resp[t.ItemID+"/"+strconv.FormatInt(t.Repeat, 10)] = t.Response
	}
	slices.SortFunc(rows, func(a, b results.Row) int { return int(a.ItemIdx - b.ItemIdx) })
	d := &diagnosis{n: len(rows)}
	byCategory := map[string][]results.Row{}
	for _, r := range rows {
		status := "FAIL"
		if r.Correct != nil && *r.Correct {
			status = "PASS"
			d.correct++
		}
		line := fmt.Sprintf("[%s] item %d: expected %s, got %s", status, r.ItemIdx, clip(r.Expected, 40), clip(r.Extracted, 40))
		if r.Outcome != string(failure.InfraError) {
			d.latencies = append(d.latencies, r.LatencyMS)
			line += fmt.Sprintf(" (%.0f ms, %d tokens, finish %s)", r.LatencyMS, r.CompletionTokens, orNone(r.FinishReason))
		}
		if r.ErrorCategory != "" {
			msg := r.ErrorMessage
			if !strings.HasPrefix(msg, r.ErrorCategory) {
				msg = r.ErrorCategory + ": " + msg
			}
			line += " · " + msg
			byCategory[r.ErrorCategory] = append(byCategory[r.ErrorCategory], r)
		}
		d.lines = append(d.lines, line)
	}
	for _, c := range failure.All {
		bad := byCategory[string(c)]
		if len(bad) == 0 {
			continue
		}
		msg, problem := explain(c, bad, len(rows), maxTokens, svc)
		ex := bad[0]
		if r, ok := resp[ex.ItemID+"/"+strconv.FormatInt(ex.Repeat, 10)]; ok && c.Outcome() == failure.ModelError {
			msg += fmt.Sprintf("; e.g. item %d answered %s", ex.ItemIdx, clip(r, 160))
		} else if ex.ErrorMessage != "" {
			msg += fmt.Sprintf("; e.g. item %d: %s", ex.ItemIdx, ex.ErrorMessage)
		}
		if problem {
			d.problems = append(d.problems, msg)
		} else {
			d.warnings = append(d.warnings, msg)
		}
	}
	if d.correct == 0 && len(d.latencies) > 0 && len(d.problems) == 0 {
		d.warnings = append(d.warnings, "no answer was correct: check that the model answers in the form the scorer reads (the got values above)")
	}
	return d
}

// explain says what n samples failing with category c mean for a full
// run, and whether it is a problem (a full run would be INVALID or
// measure nothing) or a warning.
func explain(c failure.Category, bad []results.Row, n int, maxTokens *int64, svc plan.Service) (string, bool) {
	k := len(bad)
	share := fmt.Sprintf("%d of %d samples", k, n)
	switch c {
	case failure.FormatError:
		return share + " gave an answer with nothing the scorer could extract: the model does not answer in the benchmark's format (a system prompt, or another prompt template, may fix it)", k == n
	case failure.Truncated:
		limit := "the server's default max_tokens"
		if maxTokens != nil {
			limit = fmt.Sprintf("max_tokens %d", *maxTokens)
		}
		return share + " were cut off at " + limit + " (finish_reason length): raise generation.max_tokens (--max-tokens)", k == n
	case failure.EmptyResponse, failure.Refusal, failure.ContextLength, failure.TurnBudget, failure.RepeatedCall:
		return share + " ended in " + string(c), k == n
	}
	msg := share + " failed for infrastructure reasons (" + string(c) + "); a full run would be INVALID past its max_error_rate"
	if strings.Contains(bad[0].ErrorMessage, "404") {
		msg += fmt.Sprintf("; HTTP 404: the server has no POST %s, or no model %q: check the url and the protocol "+
			"(a completions-only server needs protocol completions, a URL ending in /completions; few servers besides OpenAI's have /responses)",
			endpointOf(svc), svc.Model)
	}
	return msg, true
}

// write prints the diagnosis of benchmark key.
func (d *diagnosis) write(w io.Writer, key string) {
	fmt.Fprintf(w, "%s: %d/%d correct\n", key, d.correct, d.n)
	for _, l := range d.lines[:min(len(d.lines), 20)] {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if len(d.lines) > 20 {
		fmt.Fprintf(w, "  … and %d more samples\n", len(d.lines)-20)
	}
	if len(d.latencies) > 0 {
		lat := slices.Sorted(slices.Values(d.latencies))
		med := time.Duration(lat[len(lat)/2] * float64(time.Millisecond))
		fmt.Fprintf(w, "  latency per request: median %s, max %s\n", roundMS(med), roundMS(time.Duration(lat[len(lat)-1]*float64(time.Millisecond))))
		fmt.Fprintf(w, "  full run: %s\n", d.estimate.text(med))
	}
	for _, p := range d.problems {
		fmt.Fprintf(w, "  problem: %s\n", p)
	}
	for _, x := range d.warnings {
		fmt.Fprintf(w, "  warning: %s\n", x)
	}
}

// text is a rough full-run time at median latency med: requests in
// waves of max_concurrent per shard, all shards at once, the endpoint
// keeping its latency under that load (it rarely does: a lower bound).
func (e estimate) text(med time.Duration) string {
	if e.items == 0 {
		return fmt.Sprintf("the item count is not known without the data; every 1000 items × %d repeat(s) take about %s at %d in flight per shard × %d shard(s)",
			e.repeats, waves(1000*e.repeats, e.concurrent*e.shards, med), e.concurrent, e.shards)
	}
	reqs := e.items * e.repeats
	return fmt.Sprintf("%d items × %d repeat(s) = %d requests, about %s at %d in flight per shard × %d shard(s), if the endpoint keeps this latency under that load",
		e.items, e.repeats, reqs, waves(reqs, e.concurrent*e.shards, med), e.concurrent, e.shards)
}

func waves(requests, inFlight int, med time.Duration) time.Duration {
	n := (requests + inFlight - 1) / max(inFlight, 1)
	return (time.Duration(n) * med).Round(time.Second)
}

// clip quotes s on one line, cut to n runes.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = "…" + string(r[len(r)-n:])
	}
	return strconv.Quote(s)
}

// endpointOf is the URL svc's requests go to: its base URL (the url
// without an endpoint path, as nel-run takes it) and its protocol's path.
func endpointOf(svc plan.Service) string {
	base := plan.BaseURL(svc.URL)
	switch svc.Protocol {
	case "completions":
		return base + "/completions"
	case "responses":
		return base + "/responses"
	}
	return base + "/chat/completions"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// roundMS is d to the millisecond; under half a millisecond it is "0ms"
// (Duration's own "0s" reads as a different unit from its neighbours).
func roundMS(d time.Duration) string {
	if r := d.Round(time.Millisecond); r > 0 {
		return r.String()
	}
	return "0ms"
}
