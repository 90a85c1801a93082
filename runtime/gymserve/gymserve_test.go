package gymserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/gymserve"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/shard"
)

// servePlan is a plan of gsm8k on n items "i+i?" (answer 2i), in file
// order, with numeric_match as an extra scorer.
func servePlan(t testing.TB, n int) *plan.Plan {
	t.Helper()
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "{\"question\": \"%d+%d?\", \"answer\": \"#### %d\"}\n", i, i, 2*i)
	}
	data := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(data, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return &plan.Plan{
		PlanVersion: plan.Version, NelVersion: "test", ScoringVersion: "1",
		RecipeHash: "sha256:recipe", PlanHash: "sha256:plan", OutputDir: t.TempDir(), Shards: 1,
		Services: []plan.Service{{Name: "m", Type: "api", Protocol: "chat_completions", Model: "m", URL: "http://127.0.0.1:9/v1/chat/completions"}},
		Benchmarks: []plan.Benchmark{{
			Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Hash: "sha256:bench",
			Solver:  plan.Solver{Type: "simple", Service: "m"},
			Repeats: 1, MaxConcurrent: 16, Timeout: 30,
			Params:  map[string]any{"data_path": data},
			Scoring: plan.Scoring{Metrics: []plan.Metric{{Type: "scorer", Name: "numeric_match"}}},
		}},
	}
}

func newServer(t testing.TB, n int) *httptest.Server {
	t.Helper()
	s, err := shard.OpenScorer(context.Background(), shard.Options{Plan: servePlan(t, n), Benchmark: "gsm8k"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	srv := httptest.NewServer(gymserve.New(s, gymserve.Options{}).Handler())
	t.Cleanup(srv.Close)
	return srv
}

func post(t testing.TB, url string, body any) (int, map[string]any) {
	code, out, err := tryPost(url, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, out
}

// tryPost is post for a goroutine, which may not call t.Fatal.
func tryPost(url string, body any) (int, map[string]any, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, out, nil
}

// TestVerifyScoresAsTheShard: the verdict has what a run's row has, the
// recipe's extra scorers included (scoring.metrics: numeric_match), so the
// served reward comes from the shard's score path, not a copy of it.
func TestVerifyScoresAsTheShard(t *testing.T) {
	srv := newServer(t, 4)
	for _, c := range []struct {
		response      string
		reward, extra float64
	}{
		{"The answer is 6", 1, 1},
		// gsm8k compares the answer line's text; numeric_match the number.
		{"The answer is 6.0", 0, 1},
		{"The answer is 7", 0, 0},
	} {
		code, out := post(t, srv.URL+"/verify", map[string]any{"response": c.response, "expected": "6", "metadata": map[string]any{"idx": 2}})
		if code != 200 {
			t.Fatalf("%q: status %d: %v", c.response, code, out)
		}
		scores, _ := out["scores"].(map[string]any)
		if out["reward"] != c.reward || scores["scorer:numeric_match"] != c.extra {
			t.Errorf("%q: reward %v, numeric_match %v; want %v, %v", c.response, out["reward"], scores["scorer:numeric_match"], c.reward, c.extra)
		}
	}
}

// TestConcurrentVerify: many verifies at once each get their own verdict.
func TestConcurrentVerify(t *testing.T) {
	srv := newServer(t, 8)
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idx := i % 8
			want := float64(i % 2)
			answer := 2 * (idx + 1)
			if want == 0 {
				answer++
			}
			_, out, err := tryPost(srv.URL+"/verify", map[string]any{"response": fmt.Sprintf("The answer is %d", answer), "metadata": map[string]any{"idx": idx}})
			if err != nil {
				errs <- fmt.Sprintf("request %d: %v", i, err)
				return
			}
			if out["reward"] != want {
				errs <- fmt.Sprintf("request %d (idx %d, answer %d): reward %v, want %v", i, idx, answer, out["reward"], want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// BenchmarkVerify measures /verify calls per second over loopback HTTP.
func BenchmarkVerify(b *testing.B) {
	srv := newServer(b, 8)
	body := []byte(`{"response": "Let me think.\nThe answer is 6", "expected": "6"}`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(srv.URL+"/verify", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			var out struct{ Reward float64 }
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if err != nil || out.Reward != 1 {
				b.Errorf("reward %v, err %v", out.Reward, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "verifies/s")
}

// ListenAndServe answers no request before ready has returned: what ready
// announces (nel-run serve's endpoint file) is there before a client that
// polls /health gets an answer.
func TestReadyBeforeServing(t *testing.T) {
	s, err := shard.OpenScorer(context.Background(), shard.Options{Plan: servePlan(t, 3), Benchmark: "gsm8k"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answeredEarly := make(chan bool, 1)
	done := make(chan error, 1)
	go func() {
		done <- gymserve.New(s, gymserve.Options{}).ListenAndServe(ctx, "127.0.0.1:0", func(a net.Addr) error {
			c := &http.Client{Timeout: 300 * time.Millisecond}
			resp, err := c.Get("http://" + a.String() + "/health")
			if err == nil {
				resp.Body.Close()
			}
			answeredEarly <- err == nil
			return nil
		})
	}()
	if <-answeredEarly {
		t.Error("/health was answered while ready ran")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
