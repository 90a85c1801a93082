package shard_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/shard"
	"github.com/nel-eval/nel/runtime/sim"
)

// noShardFiles fails when the shard left a results file: a shard that
// stopped must not look complete.
func noShardFiles(t *testing.T, out string) {
	t.Helper()
	if _, err := os.Stat(string(rundir.Dir(out).Benchmark("gsm8k").Shard(0, 1))); !os.IsNotExist(err) {
		t.Fatalf("a results file exists after the shard stopped: %v", err)
	}
}

// A port nothing listens on: the shard says so before sending anything,
// naming the URL, within seconds.
func TestDeadEndpointFailsFast(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 60)
	srv := simServer(t, sim.Config{Accuracy: 1}, "gsm8k", data)
	url := srv.URL
	srv.Close() // connection refused from now on
	p := testPlan(url, data, 1, 1, nil, nil)
	out := filepath.Join(dir, "out")
	start := time.Now()
	_, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: out})
	if err == nil || !strings.Contains(err.Error(), url+"/v1: cannot connect") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v, want the URL and connection refused", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a dead endpoint took %s to report", d)
	}
	noShardFiles(t, out)
}

// A server that accepts connections and never answers: the probe gives up
// after model.ProbeTimeout rather than hanging the run.
func TestSilentEndpointFailsFast(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the probe's timeout")
	}
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 10)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	p := testPlan(srv.URL, data, 1, 1, nil, nil)
	start := time.Now()
	_, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: filepath.Join(dir, "out")})
	if err == nil || !strings.Contains(err.Error(), "no answer within 15s") {
		t.Fatalf("err = %v, want no answer within the probe's timeout", err)
	}
	if d := time.Since(start); d > 25*time.Second {
		t.Errorf("a silent endpoint took %s to report", d)
	}
}

// keyServer answers like an OpenAI endpoint that wants the bearer key
// "right": anything else is 401 on every path.
func keyServer(t *testing.T, inner http.Handler) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer right" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`))
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A rejected key: an error naming the variable the key came from, never
// the key, before any sample.
func TestRejectedKeyFailsFast(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 30)
	var chats atomic.Int32
	srv := keyServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { chats.Add(1) }))
	p := testPlan(srv.URL, data, 1, 1, nil, nil)
	p.Services[0].APIKey = &plan.EnvRef{Name: "NEL_TEST_KEY"}
	getenv := func(k string) string {
		if k == "NEL_TEST_KEY" {
			return "sk-wrong-0123456789"
		}
		return ""
	}
	out := filepath.Join(dir, "out")
	start := time.Now()
	_, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: out, Getenv: getenv})
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") || !strings.Contains(err.Error(), "$NEL_TEST_KEY") {
		t.Fatalf("err = %v, want 401 and the variable's name", err)
	}
	if strings.Contains(err.Error(), "sk-wrong") {
		t.Fatalf("the error shows the key: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a rejected key took %s to report", d)
	}
	if n := chats.Load(); n != 0 {
		t.Errorf("%d requests got past the key check", n)
	}
	noShardFiles(t, out)
}

// A model the server does not have: /models works, every completion is
// 404. The shard stops after a few identical failures, saying which models
// the server offers, and records none of them.
func TestUnknownModelStops(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 200)
	var chats atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/models") {
			w.Write([]byte(`{"object":"list","data":[{"id":"meta/llama-3.1-8b-instruct","object":"model"},{"id":"other/model","object":"model"}]}`))
			return
		}
		chats.Add(1)
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":{"message":"The model nel-sim does not exist.","type":"NotFoundError","code":404}}`))
	}))
	defer srv.Close()
	p := testPlan(srv.URL, data, 1, 1, nil, nil)
	p.Benchmarks[0].MaxConcurrent = 2
	out := filepath.Join(dir, "out")
	_, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: out})
	if err == nil || !strings.Contains(err.Error(), "5 samples in a row failed with HTTP 404") ||
		!strings.Contains(err.Error(), "it offers: meta/llama-3.1-8b-instruct, other/model") {
		t.Fatalf("err = %v, want the 404 stop with the models offered", err)
	}
	// 5 to decide, and at most the 2 in flight beside them.
	if n := chats.Load(); n > 5+2 {
		t.Errorf("%d requests were spent on an unknown model", n)
	}
	noShardFiles(t, out)
}

// flaky serves inner, except between the after-th completion request and
// the moment its outage ends, when every path (the model list included)
// answers 503: an endpoint that goes down mid-run.
type flaky struct {
	inner     http.Handler
	after     int32
	chats     atomic.Int32
	outageEnd atomic.Int64 // unix nanos; 0 before the outage starts
	outage    time.Duration
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/chat/completions") && f.chats.Add(1) == f.after {
		f.outageEnd.Store(time.Now().Add(f.outage).UnixNano())
	}
	if end := f.outageEnd.Load(); end != 0 && (f.outage < 0 || time.Now().UnixNano() < end) {
		http.Error(w, `{"error":{"message":"service unavailable"}}`, http.StatusServiceUnavailable)
		return
	}
	f.inner.ServeHTTP(w, r)
}

// An endpoint down for a few seconds mid-run: the breaker stops sending,
// probes, and when the endpoint answers again sends the failed samples a
// second time. Every row is scored; none is a failure.
func TestBreakerPausesAndResends(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 80)
	s := simServer(t, sim.Config{Accuracy: 1}, "gsm8k", data)
	f := &flaky{inner: s.Config.Handler, after: 20, outage: 3 * time.Second}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := testPlan(srv.URL, data, 1, 1, nil, nil)
	p.Benchmarks[0].MaxConcurrent = 4
	p.Benchmarks[0].Timeout = 0.5 // a 503 outlives it: the sample fails fast
	out := filepath.Join(dir, "out")
	res, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: out,
		BreakerThreshold: 4, RecoverFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := results.ReadRows(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 80 {
		t.Fatalf("%d rows", len(rows))
	}
	resent := 0
	for _, r := range rows {
		if r.Outcome != "scored" || r.Reward != 1 {
			t.Errorf("row %s: outcome %s reward %v (%s): the outage's samples should have been sent again", r.ItemID, r.Outcome, r.Reward, r.ErrorMessage)
		}
		if r.Attempts == 2 {
			resent++
		}
	}
	// At least the streak that tripped it (4) was sent twice; no more
	// than the 20 sent before the outage left the 60 after it.
	if resent < 4 || resent > 60 {
		t.Errorf("%d samples were sent twice", resent)
	}
}

// An endpoint that goes down for good: the breaker probes for RecoverFor
// and stops the shard; the failed samples are not recorded, and a run
// against a working endpoint finishes them.
func TestBreakerGivesUp(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 60)
	s := simServer(t, sim.Config{Accuracy: 1}, "gsm8k", data)
	f := &flaky{inner: s.Config.Handler, after: 10, outage: -1}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := testPlan(srv.URL, data, 1, 1, nil, nil)
	p.Benchmarks[0].MaxConcurrent = 2
	p.Benchmarks[0].Timeout = 0.3
	out := filepath.Join(dir, "out")
	start := time.Now()
	_, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: out,
		BreakerThreshold: 5, RecoverFor: 2 * time.Second})
	if !errors.Is(err, shard.ErrBreaker) || !strings.Contains(err.Error(), "did not answer a probe for 2s") {
		t.Fatalf("err = %v, want the breaker giving up", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("giving up took %s", d)
	}
	noShardFiles(t, out)

	// The endpoint comes back: everything runs, nothing is a failure. (A
	// failure that a later success vouched for before the breaker tripped
	// was recorded as infra_error; --resume sends it again.)
	p.Services[0].URL = s.URL + "/v1"
	p.Benchmarks[0].Timeout = 30
	res, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: out, RetryInfra: true})
	if err != nil {
		t.Fatal(err)
	}
	rows, _, _ := results.ReadRows(res.Path)
	for _, r := range rows {
		if r.ErrorCategory != "" || r.Reward != 1 {
			t.Fatalf("row after recovery: %+v", r)
		}
	}
	if len(rows) != 60 {
		t.Fatalf("%d rows", len(rows))
	}
}

// --resume (RetryInfra) on a finished shard: the samples whose
// infrastructure failed run again, with their attempts counted on; the
// scored samples and model errors are kept exactly as they were.
func TestRetryInfraOnFinishedShard(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 40)
	faults, err := sim.ParseFaults("500=0.4")
	if err != nil {
		t.Fatal(err)
	}
	bad := simServer(t, sim.Config{Accuracy: 0.7, Faults: faults}, "gsm8k", data)
	p := testPlan(bad.URL, data, 1, 2, nil, nil)
	p.Benchmarks[0].Timeout = 0.3 // a 500 is not retried within it
	out := filepath.Join(dir, "out")
	opts := shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: out,
		BreakerThreshold: 1000, BreakerWindow: 1000} // ride out the faults
	res, err := shard.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	before, _, err := results.ReadRows(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	infra := 0
	for _, r := range before {
		if r.Outcome == "infra_error" {
			infra++
		}
	}
	if infra == 0 || infra == len(before) {
		t.Fatalf("%d of %d samples failed: the test needs some of each", infra, len(before))
	}

	// Without RetryInfra the shard is complete and stays as it is.
	good := simServer(t, sim.Config{Accuracy: 0.7}, "gsm8k", data)
	p.Services[0].URL = good.URL + "/v1"
	p.Benchmarks[0].Timeout = 30
	if res, err := shard.Run(context.Background(), opts); err != nil || !res.AlreadyComplete {
		t.Fatalf("a complete shard ran again without RetryInfra: %+v, %v", res, err)
	}
	opts.RetryInfra = true
	res, err = shard.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.AlreadyComplete {
		t.Fatal("RetryInfra did not run the infrastructure failures")
	}
	after, _, err := results.ReadRows(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("%d rows after, %d before", len(after), len(before))
	}
	for i, a := range after {
		b := before[i]
		if b.Outcome != "infra_error" {
			if !reflect.DeepEqual(a, b) {
				t.Errorf("a %s sample changed:\nbefore %+v\nafter  %+v", b.Outcome, b, a)
			}
			continue
		}
		if a.Outcome == "infra_error" || a.Attempts != b.Attempts+1 || a.ItemID != b.ItemID || a.Repeat != b.Repeat {
			t.Errorf("an infrastructure failure after RetryInfra: outcome %s attempts %d (was %d)", a.Outcome, a.Attempts, b.Attempts)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "gsm8k", "shards", ".shard-00000-of-00001.journal")); !os.IsNotExist(err) {
		t.Errorf("the journal was left behind: %v", err)
	}
}

// A request that hangs is abandoned after request_timeout and sent again
// within the sample's budget: the sample is scored, its trajectory counts
// the retry.
func TestHungRequestRetried(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 1)
	s := simServer(t, sim.Config{Accuracy: 1}, "gsm8k", data)
	var chats atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") && chats.Add(1) == 1 {
			// The first answer never comes (until the test ends).
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		s.Config.Handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer close(release)
	p := testPlan(srv.URL, data, 1, 1, nil, nil)
	p.Benchmarks[0].Timeout = 20
	p.Benchmarks[0].RequestTimeout = 0.5
	res, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: 0, Of: 1, OutDir: filepath.Join(dir, "out")})
	if err != nil {
		t.Fatal(err)
	}
	rows, _, _ := results.ReadRows(res.Path)
	trajs, _, _ := results.ReadTrajectories(rundir.Shard(res.Path).Trajectories())
	if len(rows) != 1 || rows[0].Outcome != "scored" || rows[0].Reward != 1 || len(trajs) != 1 || trajs[0].Retries != 1 {
		t.Fatalf("rows %+v, trajectories %+v: want one scored sample after one retry", rows, trajs)
	}
	if n := chats.Load(); n != 2 {
		t.Errorf("%d chat requests, want 2 (the hung one and its retry)", n)
	}
}
