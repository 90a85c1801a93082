package intercept

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// A chat request and answer of a GSM8K sample, as nel's client sends it
// and an OpenAI-compatible server answers.
const (
	inflightRequest = `{"model":"nel-sim","messages":[{"role":"user","content":"Question 17: Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May? Think step by step and put the final answer after ####."}],"temperature":0,"max_tokens":2048}`
	inflightAnswer  = `{"id":"chatcmpl-17","object":"chat.completion","created":1700000000,"model":"nel-sim","choices":[{"index":0,"message":{"role":"assistant","content":"Natalia sold 48/2 = 24 clips in May. Natalia sold 48+24 = 72 clips altogether in April and May.\n#### 72"},"finish_reason":"stop"}],"usage":{"prompt_tokens":71,"completion_tokens":38,"total_tokens":109}}`
)

// parked is a model endpoint that holds every request until release.
type parked struct {
	arrived sync.WaitGroup
	release chan struct{}
}

func (p *parked) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	p.arrived.Done()
	<-p.release
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(inflightAnswer)), ContentLength: int64(len(inflightAnswer)), Request: r}, nil
}

// inflightBytes is the heap and stack that n requests hold while they wait
// on the endpoint, through rt, per request, beyond the process's before.
func inflightBytes(t *testing.T, n int, rt func(*parked) http.RoundTripper) float64 {
	t.Helper()
	p := &parked{release: make(chan struct{})}
	tr := rt(p)
	before := memInUse()
	p.arrived.Add(n)
	var done sync.WaitGroup
	for i := range n {
		done.Go(func() {
			body := strings.Replace(inflightRequest, "Question 17", fmt.Sprint("Question ", i), 1)
			req, _ := http.NewRequest("POST", "http://model.invalid/v1/chat/completions", bytes.NewReader([]byte(body)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			if !bytes.Contains(b, []byte("#### 72")) {
				t.Errorf("answer %s", b)
			}
		})
	}
	p.arrived.Wait()
	during := memInUse()
	close(p.release)
	done.Wait()
	return float64(during-before) / float64(n)
}

// memInUse is the heap live after a collection, and the goroutines'
// stacks.
func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// A request waiting on the model through the chain NeMo's configs use
// holds little more than one that goes to the model straight: its body as
// read and decoded is garbage by then, only the body sent is kept, and the
// chain's frames on its goroutine's stack are small enough that the stack
// is no larger (see Transport.RoundTrip). Measured over 2,000 parked
// requests, what the chain adds to each: 5.0 KB before (4.1 KB of it a
// stack twice the size), 1.0 KB since.
func TestInflightRetention(t *testing.T) {
	const n = 2000
	c := chainOf(t, "system_message", `{"system_message": "Answer briefly."}`, "reasoning", "{}", "finish_reason", "{}", "response_stats", "{}")
	plain := inflightBytes(t, n, func(p *parked) http.RoundTripper { return p })
	chained := inflightBytes(t, n, func(p *parked) http.RoundTripper { return c.Middleware()(p) })
	t.Logf("per request in flight: %.0f bytes straight, %.0f through the chain (+%.0f)", plain, chained, chained-plain)
	if chained-plain > 2048 {
		t.Errorf("the chain holds %.0f bytes more per request in flight, want at most 2048", chained-plain)
	}
}

// The links that read an answer share one decoding of it; an edit that
// encodes the body again is what the next link reads, and a body a link
// replaced is decoded again.
func TestResponseDecodedOnce(t *testing.T) {
	resp := &Response{Status: 200, Body: []byte(inflightAnswer)}
	first := resp.bodyJSON()
	if first == nil || fmt.Sprintf("%p", first) != fmt.Sprintf("%p", resp.bodyJSON()) {
		t.Fatalf("a second read decoded the body again")
	}
	if err := editResponse(resp, func(_ *Response, body map[string]any) bool {
		body["model"] = "edited"
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if got := resp.bodyJSON()["model"]; got != "edited" || !bytes.Contains(resp.Body, []byte(`"model":"edited"`)) {
		t.Errorf("after an edit: model %v, body %s", got, resp.Body)
	}
	resp.Body = []byte(`{"model":"replaced"}`)
	if got := resp.bodyJSON()["model"]; got != "replaced" {
		t.Errorf("after the body was replaced: model %v, want the new body's", got)
	}
}
