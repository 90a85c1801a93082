package gymenv

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/failure"
)

func TestParse(t *testing.T) {
	for _, c := range []struct{ name, base, err string }{
		{"gym://localhost:9090", "http://localhost:9090", ""},
		{"gym://10.0.0.7:8000/", "http://10.0.0.7:8000", ""},
		{"gym://localhost:9090?protocol=evaluator", "http://localhost:9090", ""},                      // NeMo's default, said
		{"gym://gsm8k", "", "want gym://HOST:PORT"},                                                   // NeMo's gym://NAME
		{"gym://cmd:python my_server.py", "", "has no address before it runs"},                        // the plan's service has it
		{"gym://cmd:", "", "wants a command"},                                                         // nothing to start
		{"gym://module:app.server", "", "nel-run runs no Python"},                                     // a Python module
		{"gym://localhost:8000?protocol=native", "", "protocol=native is Gym's native protocol"},      // not nel's wire format
		{"gym://localhost:8000?protocol=evaluator&data=/d.jsonl", "", "data=PATH"},                    // items from a file
		{"gym://localhost:8000?port=1", "", `query parameter "port=1": NeMo reads protocol and data`}, // not NeMo's: refused, not ignored
		{"gym://h:1/path", "", "want gym://HOST:PORT"},
		{"lm-eval://x", "", "not a gym:// benchmark"},
	} {
		cl, err := Parse(c.name)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && cl.Endpoint() != c.base:
			t.Errorf("%s: endpoint %s, want %s", c.name, cl.Endpoint(), c.base)
		}
	}
	// The command of gym://cmd: is everything after "cmd:" up to a query.
	n, err := ParseName("gym://cmd:nel-run serve --port $PORT?protocol=evaluator")
	if err != nil || n.Cmd != "nel-run serve --port $PORT" || n.Addr != "" {
		t.Errorf("gym://cmd: read as %+v, %v", n, err)
	}
}

// TestScoreRetriesThenFails: a 5xx is asked again; a 400 is not, and
// ends as a scorer_error (infrastructure), not a wrong answer.
func TestScoreRetriesThenFails(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch {
		case n > 10:
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"detail": "verify: idx=99 out of range"}`))
		case n == 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.Write([]byte(`{"reward": 1, "correct": true, "extracted_answer": "6"}`))
		}
	}))
	defer srv.Close()
	c, err := Parse("gym://" + strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.score(context.Background(), &bench.Item{Expected: "6"}, "The answer is 6")
	if s.Failure != failure.None || s.Reward != 1 || !s.Binary || !s.Correct || s.Extracted != "6" || calls.Load() != 2 {
		t.Errorf("after a 503: %+v in %d calls; want reward 1, correct, in 2 calls", s, calls.Load())
	}
	calls.Store(10)
	s = c.score(context.Background(), &bench.Item{Expected: "6"}, "x")
	if s.Failure != failure.ScorerError || calls.Load() != 11 || !strings.Contains(s.Details["scorer_error"].(string), "400 Bad Request: verify: idx=99 out of range") {
		t.Errorf("a 400: %+v in %d calls; want one call, a scorer_error with the server's detail", s, calls.Load()-10)
	}
}
