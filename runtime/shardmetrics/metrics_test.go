package shardmetrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/shard"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// stubTransport answers with status, or fails when status is 0, after
// advancing the clock by took.
type stubTransport struct {
	clock  *time.Time
	took   time.Duration
	status int
}

func (s *stubTransport) RoundTrip(*http.Request) (*http.Response, error) {
	*s.clock = s.clock.Add(s.took)
	if s.status == 0 {
		return nil, errors.New("connection reset")
	}
	return &http.Response{StatusCode: s.status, Body: http.NoBody}, nil
}

// record sends one request through m's transport taking took.
func record(t *testing.T, m *Metrics, clock *time.Time, took time.Duration, status int) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "http://model/v1/chat/completions", nil)
	resp, err := m.Wrap(&stubTransport{clock: clock, took: took, status: status}).RoundTrip(req)
	if (err == nil) != (status != 0) {
		t.Fatalf("RoundTrip: %v", err)
	}
	if resp != nil {
		resp.Body.Close()
	}
}

// TestText: the exposition of a shard with three requests, written out by
// hand from the format's rules (cumulative buckets, +Inf = count).
func TestText(t *testing.T) {
	m := New()
	clock := time.Unix(0, 0)
	m.now = func() time.Time { return clock }
	m.Update(shard.Progress{Benchmark: `gsm"8k`, Shard: 1, Total: 10, Done: 3, Failed: 1, Resumed: 2})
	record(t, m, &clock, 300*time.Millisecond, 200) // le 0.5
	record(t, m, &clock, 2*time.Second, 200)        // le 2.5
	record(t, m, &clock, 700*time.Second, 0)        // beyond 600: +Inf only
	var b strings.Builder
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	want := `# HELP nel_shard_samples Samples in the shard (items × repeats).
# TYPE nel_shard_samples gauge
nel_shard_samples{benchmark="gsm\"8k",shard="1"} 10
# HELP nel_shard_samples_done_total Samples of the shard finished, resumed ones included.
# TYPE nel_shard_samples_done_total counter
nel_shard_samples_done_total{benchmark="gsm\"8k",shard="1"} 3
# HELP nel_shard_samples_failed_total Finished samples with an error category (model_error or infra_error).
# TYPE nel_shard_samples_failed_total counter
nel_shard_samples_failed_total{benchmark="gsm\"8k",shard="1"} 1
# HELP nel_shard_samples_resumed_total Samples read back from the journal rather than run.
# TYPE nel_shard_samples_resumed_total counter
nel_shard_samples_resumed_total{benchmark="gsm\"8k",shard="1"} 2
# HELP nel_model_requests_in_flight Model requests sent and not yet answered.
# TYPE nel_model_requests_in_flight gauge
nel_model_requests_in_flight 0
# HELP nel_model_requests_total Model requests by HTTP status code ("error": no response).
# TYPE nel_model_requests_total counter
nel_model_requests_total{code="200"} 2
nel_model_requests_total{code="error"} 1
# HELP nel_model_request_duration_seconds Time from a model request to its response's headers.
# TYPE nel_model_request_duration_seconds histogram
nel_model_request_duration_seconds_bucket{le="0.1"} 0
nel_model_request_duration_seconds_bucket{le="0.25"} 0
nel_model_request_duration_seconds_bucket{le="0.5"} 1
nel_model_request_duration_seconds_bucket{le="1"} 1
nel_model_request_duration_seconds_bucket{le="2.5"} 2
nel_model_request_duration_seconds_bucket{le="5"} 2
nel_model_request_duration_seconds_bucket{le="10"} 2
nel_model_request_duration_seconds_bucket{le="30"} 2
nel_model_request_duration_seconds_bucket{le="60"} 2
nel_model_request_duration_seconds_bucket{le="120"} 2
nel_model_request_duration_seconds_bucket{le="300"} 2
nel_model_request_duration_seconds_bucket{le="600"} 2
nel_model_request_duration_seconds_bucket{le="+Inf"} 3
nel_model_request_duration_seconds_sum 702.3
nel_model_request_duration_seconds_count 3
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	// Prometheus' own parser reads it back.
	fams := parse(t, b.String())
	h := fams["nel_model_request_duration_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 702.3 {
		t.Errorf("parsed histogram: count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	if l := fams["nel_shard_samples"].GetMetric()[0].GetLabel(); l[0].GetValue() != `gsm"8k` {
		t.Errorf("parsed benchmark label %q", l[0].GetValue())
	}
}

func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus' parser: %v\n%s", err, text)
	}
	return fams
}

// TestInFlight: a request counts while it is out, and not after.
func TestInFlight(t *testing.T) {
	m := New()
	release := make(chan struct{})
	inside := make(chan struct{})
	rt := m.Wrap(roundTripFunc(func(*http.Request) (*http.Response, error) {
		close(inside)
		<-release
		return &http.Response{StatusCode: 429, Body: http.NoBody}, nil
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := rt.RoundTrip(httptest.NewRequest(http.MethodPost, "http://model/v1", nil))
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-inside
	if v := gauge(t, m, "nel_model_requests_in_flight"); v != 1 {
		t.Errorf("in flight during the request: %v, want 1", v)
	}
	close(release)
	<-done
	if v := gauge(t, m, "nel_model_requests_in_flight"); v != 0 {
		t.Errorf("in flight after: %v, want 0", v)
	}
	var b strings.Builder
	m.WriteTo(&b)
	if !strings.Contains(b.String(), "\nnel_model_requests_total{code=\"429\"} 1\n") {
		t.Errorf("no 429 counted:\n%s", b.String())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func gauge(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	var b strings.Builder
	m.WriteTo(&b)
	return parse(t, b.String())[name].GetMetric()[0].GetGauge().GetValue()
}

// TestServe: GET /metrics over HTTP with the format's content type; other
// methods are refused.
func TestServe(t *testing.T) {
	m := New()
	m.Update(shard.Progress{Benchmark: "gsm8k", Total: 4, Done: 2})
	addr, stop, err := Serve(t.Context(), "127.0.0.1:0", m, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	fams, err := func() (map[string]*dto.MetricFamily, error) {
		p := expfmt.NewTextParser(model.LegacyValidation)
		return p.TextToMetricFamilies(resp.Body)
	}()
	if err != nil {
		t.Fatal(err)
	}
	if v := fams["nel_shard_samples_done_total"].GetMetric()[0].GetCounter().GetValue(); v != 2 {
		t.Errorf("done %v, want 2", v)
	}
	post, err := http.Post("http://"+addr+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", post.StatusCode)
	}
}
