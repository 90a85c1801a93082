package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// startWatched starts cmd and returns the first submatch of re in a line
// of its stderr; the rest of stderr is kept in *rest, complete once read
// is closed (cmd.Wait only after that: it closes the pipe).
func startWatched(t *testing.T, cmd *exec.Cmd, re *regexp.Regexp, rest *strings.Builder) (match string, read chan struct{}) {
	t.Helper()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan string, 1)
	read = make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
			if rest != nil {
				rest.WriteString(sc.Text() + "\n")
			}
		}
	}()
	select {
	case s := <-found:
		return s, read
	case <-time.After(30 * time.Second):
		t.Fatalf("%s printed no line matching %s", cmd.Args, re)
		return "", nil
	}
}

// metricsPlan writes a plan of the problems at dataPath, two repeats,
// against the endpoint at url.
func metricsPlan(t *testing.T, dir, dataPath, url string) string {
	t.Helper()
	p := plan.Plan{
		PlanVersion: plan.Version, NelVersion: "test", ScoringVersion: "3",
		RecipeHash: "sha256:r", PlanHash: "sha256:0123456789abcdef", OutputDir: filepath.Join(dir, "out"), Shards: 1,
		Services: []plan.Service{{Name: "sim", Type: "api", Protocol: "chat_completions", Model: "nel-sim", URL: url}},
		Benchmarks: []plan.Benchmark{{
			Key: "gsm8k", Name: "gsm8k", Dir: "gsm8k", Hash: "sha256:b",
			Solver: plan.Solver{Type: "simple", Service: "sim"}, Repeats: 2, MaxConcurrent: 2, Timeout: 60,
			Params: map[string]any{"data_path": dataPath},
		}},
	}
	return writePlanFile(t, &p)
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape: Prometheus' parser: %v", err)
	}
	return fams
}

func value(f *dto.MetricFamily) float64 {
	m := f.GetMetric()[0]
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}

// TestShardMetrics scrapes /metrics while a real shard runs against nel-run
// sim-server (300 ms a completion): the counters agree with each other and
// with the plan, and the histogram with the simulator's latency.
func TestShardMetrics(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8KData(t, dir, 8)
	sim := nelRun(t, "sim-server", "--addr", "127.0.0.1:0", "--latency", "300ms", "--accuracy", "1", "--benchmark", "gsm8k="+data)
	simURL, _ := startWatched(t, sim, regexp.MustCompile(`listening on (http://\S+/v1)`), nil)
	planPath := metricsPlan(t, dir, data, simURL)
	var shardErr strings.Builder
	run := nelRun(t, "shard", "--plan", planPath, "--benchmark", "gsm8k", "--shard", "0", "--of", "1", "--metrics-addr", "127.0.0.1:0", "--progress", "1s")
	metricsURL, read := startWatched(t, run, regexp.MustCompile(`metrics on (http://\S+/metrics)`), &shardErr)
	var fams map[string]*dto.MetricFamily
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		fams = scrape(t, metricsURL)
		if value(fams["nel_shard_samples_done_total"]) >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("fewer than 4 samples done after 30 s")
		}
	}
	done := value(fams["nel_shard_samples_done_total"])
	if total := value(fams["nel_shard_samples"]); total != 16 {
		t.Errorf("samples %v, want 16 (8 items × 2 repeats)", total)
	}
	if f := value(fams["nel_shard_samples_failed_total"]); f != 0 {
		t.Errorf("failed %v, want 0", f)
	}
	if n := value(fams["nel_model_requests_in_flight"]); n < 0 || n > 2 {
		t.Errorf("in flight %v, want 0 to 2 (max_concurrent)", n)
	}
	var ok200 float64
	for _, m := range fams["nel_model_requests_total"].GetMetric() {
		if m.GetLabel()[0].GetValue() == "200" {
			ok200 = m.GetCounter().GetValue()
		}
	}
	h := fams["nel_model_request_duration_seconds"].GetMetric()[0].GetHistogram()
	// One request per finished sample, and the shard's GET /models probe
	// before the first.
	if ok200 < done+1 || float64(h.GetSampleCount()) != ok200 {
		t.Errorf("200s %v, histogram count %d, done %v: want count = 200s ≥ done + 1", ok200, h.GetSampleCount(), done)
	}
	// The simulator answers the probe at once and each completion after
	// 300 ms: one request in the buckets up to 0.25 s.
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() <= 0.25 && b.GetCumulativeCount() != 1 {
			t.Errorf("%d requests within %v s, want 1 (the probe)", b.GetCumulativeCount(), b.GetUpperBound())
		}
	}
	<-read
	if err := run.Wait(); err != nil {
		t.Fatalf("shard: %v\n%s", err, shardErr.String())
	}
	if !strings.Contains(shardErr.String(), "nel-run shard: wrote ") {
		t.Errorf("shard's stderr:\n%s", shardErr.String())
	}
}

// TestShardMetricsBadAddr: an address nel-run cannot listen on fails the
// shard before it sends anything, naming the address.
func TestShardMetricsBadAddr(t *testing.T) {
	dir := t.TempDir()
	planPath := metricsPlan(t, dir, writeGSM8KData(t, dir, 2), closedURL(t))
	code, _, stderr := execCLI(t, "shard", "--plan", planPath, "--benchmark", "gsm8k", "--shard", "0", "--of", "1", "--metrics-addr", "256.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "nel-run: shard: metrics: listen on 256.0.0.1:1: ") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "gsm8k")); !os.IsNotExist(err) {
		t.Errorf("the shard started: %v", err)
	}
}
