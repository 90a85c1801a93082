// Package mergetest writes realistic, complete shard sets for merge's tests
// and benchmarks: a compiled plan plus, per shard, the results and
// trajectories Parquet files nel-run shard would have written. Only tests
// import it; it is no part of the nel binaries.
package mergetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/shard"
)

// Options sizes a fixture. Zero values take the defaults noted.
type Options struct {
	Items   int // selected items (default 250,000)
	Repeats int // repeats per item (default 4)
	Shards  int // shards (default 16)
	// TextBytes is the approximate size of one trajectory's text
	// (request + response), default 1,000.
	TextBytes int
	// FailRate is the share of failed samples (default 0.05).
	FailRate float64
}

func (o *Options) defaults() {
	if o.Items == 0 {
		o.Items = 250_000
	}
	if o.Repeats == 0 {
		o.Repeats = 4
	}
	if o.Shards == 0 {
		o.Shards = 16
	}
	if o.TextBytes == 0 {
		o.TextBytes = 1000
	}
	if o.FailRate == 0 {
		o.FailRate = 0.05
	}
}

// Benchmark is the fixture's benchmark key and folder.
const Benchmark = "gsm8k"

// Write writes a complete run under dir: the plan at
// dir/.nel/plan-<id>.json (returned with its path) and every shard of
// benchmark gsm8k under dir/gsm8k/shards, as `nel-run merge dir` expects.
// Shards are written in parallel, one per CPU.
func Write(dir string, o Options) (*plan.Plan, string, error) {
	o.defaults()
	p := &plan.Plan{
		PlanVersion: plan.Version, NelVersion: "bench", ScoringVersion: "1",
		RecipeHash: "sha256:" + strings.Repeat("ab", 32), PlanHash: "sha256:" + strings.Repeat("cd", 32),
		OutputDir: dir, Shards: o.Shards,
		Services: []plan.Service{{Name: "sim", Type: "api", Protocol: "chat_completions", Model: "nel-sim", URL: "http://127.0.0.1:1/v1"}},
		Benchmarks: []plan.Benchmark{{
			Key: Benchmark, Name: Benchmark, Dir: Benchmark, Hash: "sha256:" + strings.Repeat("ef", 32),
			Solver:  plan.Solver{Type: "simple", Service: "sim"},
			Repeats: o.Repeats, MaxConcurrent: 64, Timeout: 120, MaxErrorRate: plan.DefaultMaxErrorRate,
		}},
	}
	planPath := rundir.Dir(dir).Plan(p.PlanHash)
	if err := os.MkdirAll(filepath.Dir(planPath), 0o755); err != nil {
		return nil, "", err
	}
	pj, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(planPath, pj, 0o644); err != nil {
		return nil, "", err
	}
	bdir := rundir.Dir(dir).Benchmark(Benchmark)
	if err := os.MkdirAll(bdir.Shards(), 0o755); err != nil {
		return nil, "", err
	}

	// Items by shard, each shard's in dataset order.
	ids := make([]string, o.Items)
	byShard := make([][]int, o.Shards)
	for i := range ids {
		sum := sha256.Sum256([]byte("item " + strconv.Itoa(i)))
		ids[i] = hex.EncodeToString(sum[:8])
		s := shard.Of(ids[i], o.Shards)
		byShard[s] = append(byShard[s], i)
	}
	text := corpus(32 << 20)

	var wg sync.WaitGroup
	errs := make([]error, o.Shards)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for s := range o.Shards {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[s] = writeShard(bdir, p, o, s, byShard[s], ids, text)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, "", err
		}
	}
	return p, planPath, nil
}

var (
	categories = []string{"arithmetic", "algebra", "geometry", "rates", "fractions", "percentages"}
	failures   = []struct{ category, text string }{
		{"timeout", "request timed out after 120s (attempt %d)"},
		{"http_5xx", "HTTP 503 from endpoint: upstream overloaded, retry budget exhausted after %d attempts"},
		{"format_error", "no final answer found: the response has no '#### <number>' line (%d candidates)"},
		{"truncated", "finish_reason length: the response hit max_tokens (%d tokens) before an answer"},
	}
)

func writeShard(bdir rundir.Bench, p *plan.Plan, o Options, s int, items []int, ids []string, text string) error {
	rng := rand.New(rand.NewPCG(uint64(s), 42))
	n := len(items) * o.Repeats
	// items are in dataset order, so rows come out in nel-run shard's
	// order: dataset index, item id, repeat.
	rows := make([]results.Row, 0, n)
	trajs := make([]results.Trajectory, 0, n)
	yes, no := true, false
	for _, i := range items {
		answer := strconv.Itoa(i%9973 + 7)
		cat := categories[i%len(categories)]
		for r := range o.Repeats {
			row := results.Row{
				RecipeHash: p.RecipeHash, Benchmark: Benchmark, ItemID: ids[i], ItemIdx: int64(i), Repeat: int64(r),
				Category: cat, Expected: answer, FinishReason: "stop",
				PromptTokens: int64(80 + rng.IntN(200)), CompletionTokens: int64(50 + rng.IntN(400)),
				LatencyMS: 200 + rng.ExpFloat64()*800, Attempts: 1,
				Seed: int64(rng.Uint32() >> 1),
			}
			t := results.Trajectory{
				RecipeHash: p.RecipeHash, Benchmark: Benchmark, ItemID: ids[i], ItemIdx: int64(i), Repeat: int64(r),
				Model: "nel-sim", LatencyMS: row.LatencyMS,
			}
			reqLen := o.TextBytes * 3 / 10
			respLen := o.TextBytes - reqLen
			t.Request = `[{"role":"user","content":"` + slice(text, rng, reqLen) + `"}]`
			switch {
			case rng.Float64() < o.FailRate:
				f := failures[rng.IntN(len(failures))]
				row.ErrorCategory = f.category
				row.Correct = &no
				row.Attempts = int64(1 + rng.IntN(3))
				t.Error = fmt.Sprintf(f.text, 1+rng.IntN(4))
				t.Retries = row.Attempts - 1
				if f.category == "truncated" || f.category == "format_error" {
					t.Response = slice(text, rng, respLen)
				}
				if f.category == "truncated" {
					row.FinishReason = "length"
				}
			case rng.Float64() < 0.8:
				row.Reward, row.Correct, row.Extracted = 1, &yes, answer
				t.Response = slice(text, rng, respLen) + "\n#### " + answer
			default:
				row.Correct, row.Extracted = &no, strconv.Itoa(rng.IntN(10000))
				t.Response = slice(text, rng, respLen) + "\n#### " + row.Extracted
			}
			// As nel-run shard writes it: the outcome the category implies.
			row.Outcome = string(failure.Category(row.ErrorCategory).Outcome())
			t.ScoringDetails = `{"extracted":"` + row.Extracted + `","expected":"` + answer + `","method":"last_number"}`
			rows = append(rows, row)
			trajs = append(trajs, t)
		}
	}
	meta := map[string]string{
		results.MetaRecipeHash:    p.RecipeHash,
		results.MetaPlanHash:      p.PlanHash,
		results.MetaBenchmarkHash: p.Benchmarks[0].Hash,
		results.MetaBenchmark:     Benchmark,
		results.MetaNelVersion:    "bench",
		results.MetaScoring:       p.ScoringVersion,
		results.MetaDataset:       "sha256:" + strings.Repeat("12", 32),
		results.MetaModel:         "nel-sim",
		results.MetaSimulated:     "true",
		results.MetaShard:         fmt.Sprintf("%d/%d", s, o.Shards),
		results.MetaStartedAt:     fmt.Sprintf("2026-01-01T00:%02d:00Z", s%60),
		results.MetaEndedAt:       fmt.Sprintf("2026-01-01T01:%02d:00Z", s%60),
		results.MetaSelected:      strconv.Itoa(o.Items),
		results.MetaRepeats:       strconv.Itoa(o.Repeats),
	}
	path := bdir.Shard(s, o.Shards)
	if err := results.WriteTrajectories(path.Trajectories(), trajs, meta); err != nil {
		return err
	}
	return results.WriteRows(string(path), rows, meta)
}

// corpus returns n bytes of English-like text (words of a fixed
// vocabulary, Zipf-distributed) that compresses about as well as model
// output; trajectories are slices of it, so that generating 1 GB of text
// allocates nothing per row.
func corpus(n int) string {
	rng := rand.New(rand.NewPCG(7, 7))
	vocab := make([]string, 4000)
	const letters = "etaoinshrdlcumwfgypbvkjxqz"
	for i := range vocab {
		l := 2 + rng.IntN(8)
		var w strings.Builder
		for range l {
			w.WriteByte(letters[min(int(rng.ExpFloat64()*6), len(letters)-1)])
		}
		vocab[i] = w.String()
	}
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		b.WriteString(vocab[zipf.Uint64()])
		switch rng.IntN(16) {
		case 0:
			b.WriteString(". ")
		case 1:
			b.WriteString(", ")
		case 2:
			b.WriteString(" " + strconv.Itoa(rng.IntN(1000)) + " ")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func slice(text string, rng *rand.Rand, n int) string {
	off := rng.IntN(len(text) - n)
	return text[off : off+n]
}
