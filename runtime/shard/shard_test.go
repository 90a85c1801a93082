package shard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/merge"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/shard"
	"github.com/nel-eval/nel/runtime/sim"
)

// writeGSM8K writes n synthetic GSM8K-shaped items (question, answer ending
// in "#### <number>") and returns the file.
func writeGSM8K(t testing.TB, dir string, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		ans := (i*7919)%5000 - 100 // some negatives
		line, _ := json.Marshal(map[string]string{
			"question": fmt.Sprintf("Question %d: what is %d plus %d?", i, ans-i, i),
			"answer":   fmt.Sprintf("Add them.\n#### %d", ans),
		})
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, "gsm8k.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// simServer serves the items of data through nel's simulated endpoint.
func simServer(t testing.TB, cfg sim.Config, name, data string) *httptest.Server {
	t.Helper()
	b, ok := bench.Lookup(name)
	if !ok {
		t.Fatalf("no benchmark %s", name)
	}
	set, err := b.Load(context.Background(), dataset.NewLoader(dataset.Options{Offline: true}), map[string]any{"data_path": data})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(cfg, sim.Dataset{Benchmark: b, Items: set.Items})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func testPlan(url, data string, shards, repeats int, maxProblems *int, seed *int64) *plan.Plan {
	zero := 0.0
	return &plan.Plan{
		PlanVersion: plan.Version, NelVersion: "test", ScoringVersion: "1",
		RecipeHash: "sha256:recipe", PlanHash: fmt.Sprintf("sha256:plan-%d", shards),
		OutputDir: "unused", Shards: shards,
		Services: []plan.Service{{Name: "sim", Type: "api", Protocol: "chat_completions", Model: "nel-sim", URL: url + "/v1/chat/completions"}},
		Benchmarks: []plan.Benchmark{{
			Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Hash: "sha256:bench",
			Solver:  plan.Solver{Type: "simple", Service: "sim", Generation: plan.Generation{Temperature: &zero}},
			Repeats: repeats, MaxProblems: maxProblems, MaxConcurrent: 16, Timeout: 30, ShuffleSeed: seed,
			Params:  map[string]any{"data_path": data},
			Scoring: plan.Scoring{Metrics: []plan.Metric{{Type: "scorer", Name: "numeric_match"}}},
		}},
	}
}

// runAll runs every shard of p and merges; it returns the merged rows.
func runAll(t testing.TB, p *plan.Plan, out string) []results.Row {
	t.Helper()
	for i := range p.Shards {
		_, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: i, Of: p.Shards, OutDir: out, NelVersion: "test"})
		if err != nil {
			t.Fatalf("shard %d/%d: %v", i, p.Shards, err)
		}
	}
	sums, err := merge.Merge(merge.Options{Plan: p, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 {
		t.Fatalf("summaries: %+v", sums)
	}
	rows, meta, err := results.ReadRows(filepath.Join(out, "gsm8k", "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if meta[results.MetaSimulated] != "true" {
		t.Errorf("merged provenance does not say simulated: %v", meta)
	}
	return rows
}

// normalize drops what may differ between two runs of the same samples.
func normalize(rows []results.Row) []results.Row {
	out := make([]results.Row, len(rows))
	for i, r := range rows {
		r.LatencyMS = 0
		r.Attempts = 0
		out[i] = r
	}
	return out
}

// DESIGN §6.1: 1, 3 and 16 shards of the same run give identical merged rows.
func TestShardInvariance(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 240)
	srv := simServer(t, sim.Config{Accuracy: 0.6, Seed: 7}, "gsm8k", data)
	maxp := 200
	seed := int64(42)

	var base []results.Row
	for _, n := range []int{1, 3, 16} {
		rows := runAll(t, testPlan(srv.URL, data, n, 2, &maxp, &seed), filepath.Join(dir, fmt.Sprint("out", n)))
		if len(rows) != 400 {
			t.Fatalf("%d shards: %d rows, want 200 items × 2 repeats", n, len(rows))
		}
		if n == 1 {
			base = normalize(rows)
			var correct int
			for _, r := range rows {
				if r.Correct != nil && *r.Correct {
					correct++
				}
			}
			// The simulator answers 60% correctly: far from 0 and from all.
			if correct < 180 || correct > 300 {
				t.Errorf("correct = %d of 400 at accuracy 0.6", correct)
			}
			continue
		}
		if got := normalize(rows); !reflect.DeepEqual(got, base) {
			for i := range got {
				if !reflect.DeepEqual(got[i], base[i]) {
					t.Fatalf("%d shards: row %d differs:\n got %+v\nwant %+v", n, i, got[i], base[i])
				}
			}
		}
	}
}

// shuffle_seed and max_problems pick the same subset as NeMo Evaluator:
// random.Random(42).shuffle(list(range(n)))[:max_problems], keeping the
// original dataset index.
func TestSelectionKeepsIndex(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 50)
	srv := simServer(t, sim.Config{Accuracy: 1}, "gsm8k", data)
	maxp := 5
	seed := int64(42)
	rows := runAll(t, testPlan(srv.URL, data, 2, 1, &maxp, &seed), filepath.Join(dir, "out"))
	var idx []int64
	for _, r := range rows {
		idx = append(idx, r.ItemIdx)
		if r.Correct == nil || !*r.Correct || r.Reward != 1 || r.Scores["scorer:numeric_match"] != 1 {
			t.Errorf("row %+v: want correct at accuracy 1", r)
		}
	}
	// python3 -c 'import random; p=list(range(50)); random.Random(42).shuffle(p); print(sorted(p[:5]))'
	want := []int64{4, 11, 19, 23, 25}
	if !reflect.DeepEqual(idx, want) {
		t.Errorf("selected indexes %v, want %v", idx, want)
	}
}

func TestResumeAfterCompletion(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 20)
	srv := simServer(t, sim.Config{Accuracy: 1}, "gsm8k", data)
	p := testPlan(srv.URL, data, 1, 1, nil, nil)
	out := filepath.Join(dir, "out")
	runAll(t, p, out)
	res, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: out})
	if err != nil || !res.AlreadyComplete || res.Rows != 20 {
		t.Fatalf("second run: %+v, %v", res, err)
	}
	// A results file of another plan is never silently overwritten.
	p2 := testPlan(srv.URL, data, 1, 1, nil, nil)
	p2.PlanHash = "sha256:another"
	_, err = shard.Run(context.Background(), shard.Options{Plan: p2, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: out})
	if err == nil || !strings.Contains(err.Error(), "another plan") {
		t.Fatalf("other plan: %v", err)
	}
}

// A model that returns garbage or nothing: every sample ends with its
// failure category inside its budget, the shard completes, and nothing is
// lost or retried by a later run.
func TestGarbageModel(t *testing.T) {
	for _, tc := range []struct {
		fault string
		cat   string
	}{
		{"malformed=1", "api_error"},
		{"empty=1", "empty_response"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			data := writeGSM8K(t, dir, 12)
			faults, err := sim.ParseFaults(tc.fault)
			if err != nil {
				t.Fatal(err)
			}
			srv := simServer(t, sim.Config{Accuracy: 1, Faults: faults}, "gsm8k", data)
			p := testPlan(srv.URL, data, 1, 1, nil, nil)
			// Long enough for one backoff (1 s ± 50%) and a retry.
			p.Benchmarks[0].Timeout = 3
			out := filepath.Join(dir, "out")
			res, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: out})
			if err != nil {
				t.Fatal(err)
			}
			rows, _, err := results.ReadRows(res.Path)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 12 {
				t.Fatalf("%d rows", len(rows))
			}
			for _, r := range rows {
				// An unusable answer is the model's error, scored as
				// wrong; a malformed response is the server's, no verdict.
				var want failure.Outcome
				switch r.Outcome {
				case string(failure.ModelError):
					want = failure.ModelError
					if r.Correct == nil || *r.Correct {
						t.Fatalf("row %+v: a model error is scored as wrong (correct false)", r)
					}
				case string(failure.InfraError):
					want = failure.InfraError
					if r.Correct != nil {
						t.Fatalf("row %+v: an infrastructure failure has no verdict (correct null)", r)
					}
				}
				if r.ErrorCategory != tc.cat || r.Reward != 0 || want != failure.Category(tc.cat).Outcome() || r.ErrorMessage == "" {
					t.Fatalf("row %+v: want %s (%s), reward 0, a message", r, tc.cat, failure.Category(tc.cat).Outcome())
				}
			}
			trajs, _, err := results.ReadTrajectories(rundir.Shard(res.Path).Trajectories())
			if err != nil {
				t.Fatal(err)
			}
			if trajs[0].Error == "" || trajs[0].Retries == 0 {
				t.Errorf("trajectory does not show the error and the retries: %+v", trajs[0])
			}
		})
	}
}

// countingLoader counts the datasets it loads.
type countingLoader struct {
	l bench.Loader
	n atomic.Int32
}

func (c *countingLoader) Load(ctx context.Context, spec string, o dataset.LoadOptions) (*dataset.Dataset, error) {
	c.n.Add(1)
	return c.l.Load(ctx, spec, o)
}

// Shards sharing a DataCache read the data once; the rows are the same as
// with each shard reading its own.
func TestDataCache(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 30)
	srv := simServer(t, sim.Config{Accuracy: 0.5}, "gsm8k", data)
	p := testPlan(srv.URL, data, 3, 1, nil, nil)
	loader := &countingLoader{l: dataset.NewLoader(dataset.Options{Offline: true})}
	var cache shard.DataCache
	var wg sync.WaitGroup
	out := filepath.Join(dir, "cached")
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: i, Of: 3, OutDir: out, Loader: loader, Data: &cache}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := loader.n.Load(); got != 1 {
		t.Errorf("3 shards with one cache loaded the data %d times", got)
	}
	if _, err := merge.Merge(merge.Options{Plan: p, OutDir: out}); err != nil {
		t.Fatal(err)
	}
	cached, _, _ := results.ReadRows(filepath.Join(out, "gsm8k", "results.parquet"))
	plain := runAll(t, p, filepath.Join(dir, "plain"))
	if !reflect.DeepEqual(normalize(cached), normalize(plain)) {
		t.Error("rows differ with a shared data cache")
	}
}

// The first max_concurrent launches are paced at RampRate; with pacing off
// they go out together. Each request reaches the server after it was
// launched, so the k-th arrival cannot come before k paces after the start.
func TestRampPacesFirstWave(t *testing.T) {
	const conc, rate = 20, 50.0 // one launch every 20 ms
	pace := time.Duration(float64(time.Second) / rate)
	arrivals := func(rampRate float64) []time.Duration {
		dir := t.TempDir()
		data := writeGSM8K(t, dir, conc)
		b, _ := bench.Lookup("gsm8k")
		set, err := b.Load(context.Background(), dataset.NewLoader(dataset.Options{Offline: true}), map[string]any{"data_path": data})
		if err != nil {
			t.Fatal(err)
		}
		s, err := sim.New(sim.Config{Accuracy: 1, Latency: 50 * time.Millisecond, Seed: 1}, sim.Dataset{Benchmark: b, Items: set.Items})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var at []time.Duration
		start := time.Now()
		h := s.Handler()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost { // not the provenance probe's GETs
				mu.Lock()
				at = append(at, time.Since(start))
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		}))
		defer srv.Close()
		p := testPlan(srv.URL, data, 1, 1, nil, nil)
		p.Benchmarks[0].MaxConcurrent = conc
		res, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: filepath.Join(dir, "out"), RampRate: rampRate})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows != conc {
			t.Fatalf("%d rows, want %d", res.Rows, conc)
		}
		slices.Sort(at)
		return at
	}
	paced := arrivals(rate)
	for k, a := range paced {
		if a < time.Duration(k)*pace {
			t.Errorf("paced: request %d arrived at %v, before %v", k, a, time.Duration(k)*pace)
		}
	}
	unpaced := arrivals(-1)
	if span := unpaced[conc-1] - unpaced[0]; span >= time.Duration(conc-1)*pace {
		t.Errorf("unpaced: %d requests took %v to arrive, as long as pacing would", conc, span)
	}
}

// A benchmark with fewer items than shards fails every shard before any
// request, naming both counts; with enough items a shard that the hash
// leaves empty still completes (with no rows).
func TestFewerItemsThanShards(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 3)
	s, srv := countingSim(t, data)
	p := testPlan(srv.URL, data, 4, 1, nil, nil)
	for i := range 4 {
		_, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: i, Of: 4, OutDir: filepath.Join(dir, "out")})
		if err == nil || !strings.Contains(err.Error(), "3 items to evaluate, fewer than the 4 shards; compile it with cluster.shards at most 3") {
			t.Fatalf("shard %d: err = %v", i, err)
		}
	}
	if n := s.Stats().Requests; n != 0 {
		t.Fatalf("%d requests sent", n)
	}

	// 5 items in 4 shards by content hash: some shard may get none.
	data5 := writeGSM8K(t, t.TempDir(), 5)
	_, srv5 := countingSim(t, data5)
	rows := runAll(t, testPlan(srv5.URL, data5, 4, 1, nil, nil), filepath.Join(dir, "out5"))
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5", len(rows))
	}
}

func countingSim(t *testing.T, data string) (*sim.Server, *httptest.Server) {
	t.Helper()
	b, _ := bench.Lookup("gsm8k")
	set, err := b.Load(context.Background(), dataset.NewLoader(dataset.Options{Offline: true}), map[string]any{"data_path": data})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(sim.Config{Accuracy: 1}, sim.Dataset{Benchmark: b, Items: set.Items})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv
}
