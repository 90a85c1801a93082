// Package shardmetrics is a running shard's live counters, served in
// Prometheus' text exposition format on /metrics (nel-run shard
// --metrics-addr) so that a cluster's Prometheus and Grafana can watch a
// long evaluation: samples done and failed, model requests in flight and
// their latency.
//
// The format is written here rather than through the Prometheus client
// library, which would add megabytes to nel-run for a few lines of text.
package shardmetrics

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nel-eval/nel/runtime/shard"
)

// Buckets are the upper bounds, in seconds, of the request latency
// histogram: an LLM request takes from a fraction of a second (a cached or
// short answer) to minutes (a long reasoning trace).
var Buckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Metrics holds one shard's counters. Its methods are safe for concurrent
// use; the zero value is not: use New.
type Metrics struct {
	mu       sync.Mutex
	progress shard.Progress
	inFlight int
	requests map[string]uint64 // by status code, "error" for no response
	counts   []uint64          // per bucket, not cumulative; the last is +Inf
	sum      float64
	now      func() time.Time
}

// New returns the counters of a shard that has not started.
func New() *Metrics {
	return &Metrics{requests: map[string]uint64{}, counts: make([]uint64, len(Buckets)+1), now: time.Now}
}

// Update records a shard's progress (shard.Options.Progress).
func (m *Metrics) Update(p shard.Progress) {
	m.mu.Lock()
	m.progress = p
	m.mu.Unlock()
}

// Wrap returns rt counting its requests: in flight while RoundTrip runs,
// then by status code, with the time to the response's headers (for a
// non-streamed answer, the generation) in the histogram.
func (m *Metrics) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &countingTransport{base: rt, m: m}
}

type countingTransport struct {
	base http.RoundTripper
	m    *Metrics
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	m := t.m
	m.mu.Lock()
	m.inFlight++
	m.mu.Unlock()
	start := m.now()
	resp, err := t.base.RoundTrip(req)
	took := m.now().Sub(start).Seconds()
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	m.mu.Lock()
	m.inFlight--
	m.requests[code]++
	m.counts[bucketOf(took)]++
	m.sum += took
	m.mu.Unlock()
	return resp, err
}

// CloseIdleConnections passes through, so that the model client can still
// close the connections of the transport under this one.
func (t *countingTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func bucketOf(seconds float64) int {
	for i, le := range Buckets {
		if seconds <= le {
			return i
		}
	}
	return len(Buckets)
}

// WriteTo writes the counters in the text exposition format (version
// 0.0.4): HELP and TYPE before each family, label values escaped.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	m.mu.Lock()
	p, inFlight, sum := m.progress, m.inFlight, m.sum
	counts := append([]uint64(nil), m.counts...)
	requests := maps.Clone(m.requests)
	m.mu.Unlock()
	codes := slices.Sorted(maps.Keys(requests))
	var b strings.Builder
	shardLabels := fmt.Sprintf(`benchmark="%s",shard="%d"`, escapeLabel(p.Benchmark), p.Shard)
	family(&b, "nel_shard_samples", "gauge", "Samples in the shard (items × repeats).")
	fmt.Fprintf(&b, "nel_shard_samples{%s} %d\n", shardLabels, p.Total)
	family(&b, "nel_shard_samples_done_total", "counter", "Samples of the shard finished, resumed ones included.")
	fmt.Fprintf(&b, "nel_shard_samples_done_total{%s} %d\n", shardLabels, p.Done)
	family(&b, "nel_shard_samples_failed_total", "counter", "Finished samples with an error category (model_error or infra_error).")
	fmt.Fprintf(&b, "nel_shard_samples_failed_total{%s} %d\n", shardLabels, p.Failed)
	family(&b, "nel_shard_samples_resumed_total", "counter", "Samples read back from the journal rather than run.")
	fmt.Fprintf(&b, "nel_shard_samples_resumed_total{%s} %d\n", shardLabels, p.Resumed)
	family(&b, "nel_model_requests_in_flight", "gauge", "Model requests sent and not yet answered.")
	fmt.Fprintf(&b, "nel_model_requests_in_flight %d\n", inFlight)
	family(&b, "nel_model_requests_total", "counter", `Model requests by HTTP status code ("error": no response).`)
	for _, c := range codes {
		fmt.Fprintf(&b, "nel_model_requests_total{code=\"%s\"} %d\n", escapeLabel(c), requests[c])
	}
	writeHistogram(&b, counts, sum)
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

func writeHistogram(b *strings.Builder, counts []uint64, sum float64) {
	const name = "nel_model_request_duration_seconds"
	family(b, name, "histogram", "Time from a model request to its response's headers.")
	var cum uint64
	for i, le := range Buckets {
		cum += counts[i]
		fmt.Fprintf(b, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(le, 'g', -1, 64), cum)
	}
	cum += counts[len(Buckets)]
	fmt.Fprintf(b, "%s_bucket{le=\"+Inf\"} %d\n", name, cum)
	fmt.Fprintf(b, "%s_sum %s\n", name, strconv.FormatFloat(sum, 'g', -1, 64))
	fmt.Fprintf(b, "%s_count %d\n", name, cum)
}

func family(b *strings.Builder, name, typ, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
}

// escapeLabel and escapeHelp escape as the format requires: a label value
// its backslashes, double quotes and newlines; a HELP text its
// backslashes and newlines.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

// ServeHTTP answers GET /metrics (any path the mux routes here).
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if r.Method == http.MethodGet {
		_, _ = m.WriteTo(w)
	}
}
