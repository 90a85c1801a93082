//go:build linux

package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nel-eval/nel/internal/datagen"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// What one shard of many pays for its dataset (docs/scaling.md, m_d and
// c_d): shard 0 of 1,000 of a 1,000,000-item local JSONL dataset runs its
// ~1,000 samples. It streams the file, keeping only its own items, so its
// peak RSS grows with the dataset only by a set of 64-bit content ids
// (about 130 MB in all; 2 GB when every shard held every item). Its CPU
// still grows with it, but little: a record the shard does not keep is
// read only as far as gsm8k's key fields (question, answer) and hashed.
// The endpoint is an in-process stub answering every request at once, so
// the figures are the dataset's and the shard's, not a model's.
//
// Metrics: peak-RSS-MB (the nel-run shard process's ru_maxrss, in 10^6
// bytes), cpu-s (its user + system CPU), s/op (its wall time) and rows
// (the samples the shard ran). The dataset is written once, outside the
// timing. NEL_BENCH_CPUPROFILE=FILE profiles the shard (its --cpuprofile).
func BenchmarkShardDataset1M(b *testing.B) { benchShardDataset(b, "jsonl") }

// The same dataset as one JSON array (data.json), read an element at a
// time.
func BenchmarkShardDataset1MJSON(b *testing.B) { benchShardDataset(b, "json") }

// The same dataset as Parquet (data.parquet, row groups of 50,000 rows),
// read a row group at a time.
func BenchmarkShardDataset1MParquet(b *testing.B) { benchShardDataset(b, "parquet") }

func benchShardDataset(b *testing.B, format string) {
	if testing.Short() {
		b.Skip("writes an 86 MB dataset and reads all of it")
	}
	const items, shards = 1_000_000, 1000
	bin := buildNelRun(b)
	dir := b.TempDir()
	dataPath := filepath.Join(dir, "data."+format)
	// Row groups of 50,000 rows (Parquet).
	if err := datagen.Write(dataPath, format, items, 50_000); err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(stubCompletion))
	b.Cleanup(srv.Close)
	p := &plan.Plan{
		PlanVersion: plan.Version, NelVersion: "bench", ScoringVersion: "1",
		RecipeHash: "sha256:r", PlanHash: "sha256:d", Shards: shards,
		Services: []plan.Service{{Name: "stub", Type: "api", Protocol: "chat_completions", Model: "stub", URL: srv.URL + "/v1"}},
		Benchmarks: []plan.Benchmark{{
			Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Hash: "sha256:b",
			Solver:  plan.Solver{Type: "simple", Service: "stub"},
			Repeats: 1, MaxConcurrent: 64, Timeout: 120,
			Params: map[string]any{"data_path": dataPath},
		}},
	}
	out := filepath.Join(dir, "out")
	p.OutputDir = out
	planPath := writePlanFile(b, p)
	bench := rundir.Dir(out).Benchmark("gsm8k")
	var cpu float64
	var peak int64 // KiB
	var rows int
	for b.Loop() {
		b.StopTimer()
		// A complete shard is left alone: each run starts from none.
		if err := os.RemoveAll(string(bench)); err != nil {
			b.Fatal(err)
		}
		args := []string{"shard", "--plan", planPath, "--benchmark", "gsm8k", "--shard", "0", "--of", fmt.Sprint(shards)}
		if prof := os.Getenv("NEL_BENCH_CPUPROFILE"); prof != "" {
			args = append(args, "--cpuprofile", prof)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "NEL_RUN_LOG=warn")
		b.StartTimer()
		c := runMeasured(b, cmd)
		b.StopTimer()
		cpu += c.cpu.Seconds()
		peak = max(peak, c.peakKiB)
		got, _, err := results.ReadRows(string(bench.Shard(0, shards)))
		if err != nil {
			b.Fatal(err)
		}
		// Items go to shards by a hash of their content: about 1,000 each.
		if len(got) < items/shards/2 || len(got) > items/shards*2 {
			b.Fatalf("shard 0 of %d ran %d samples, want about %d", shards, len(got), items/shards)
		}
		rows = len(got)
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)*1024/1e6, "peak-RSS-MB")
	b.ReportMetric(cpu/float64(b.N), "cpu-s")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/op")
	b.ReportMetric(float64(rows), "rows")
}

// stubCompletion answers a chat completion at once with the same message;
// anything else (the probe's GET /models) is a 404, which the probe takes
// as a server without that route.
func stubCompletion(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"id":"c","object":"chat.completion","model":"stub","choices":[{"index":0,"message":{"role":"assistant","content":"The answer is 0."},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}}`)
}
