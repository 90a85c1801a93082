// Package gymserve serves one benchmark of a plan over HTTP as a NeMo Gym
// resource server (nel serve, nel-run serve): GET /health and
// /dataset_size, POST /seed_session and /verify, with nel's scorer for
// the benchmark (runtime/shard's Scorer) giving the reward.
//
// The wire format is NeMo Evaluator's serving app: /verify takes its own
// body ({"response": "text", "expected": "…", "metadata": {…}}) and Gym's
// (a NeMoGymResponse under "response", "expected_answer", and the row's
// other fields), told apart by the "expected" key as NeMo does.
package gymserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/gymenv"
	"github.com/nel-eval/nel/runtime/shard"
)

// Options configure a server.
type Options struct {
	// GymCompat is NeMo's --gym-compat: /health says protocol "gym". Both
	// /verify formats are taken either way, as NeMo takes them.
	GymCompat bool
	// Pool bounds the verdicts computed at once when scoring runs programs
	// or asks a judge (Scorer.Bounded); 0 means 4. Other scorers are plain
	// computation and run on every request's goroutine.
	Pool   int
	Logger *slog.Logger
}

// maxBody bounds a request body: a NeMoGymResponse with a long answer fits
// many times over; a client sending more is broken.
const maxBody = 16 << 20

// Server answers the Gym endpoints for one benchmark.
type Server struct {
	s    *shard.Scorer
	o    Options
	pool chan struct{} // nil: unbounded
}

// New is a server for s.
func New(s *shard.Scorer, o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	srv := &Server{s: s, o: o}
	if s.Bounded() {
		size := o.Pool
		if size <= 0 {
			size = 4
		}
		srv.pool = make(chan struct{}, size)
	}
	return srv
}

// Handler routes the endpoints.
func (srv *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", srv.health)
	mux.HandleFunc("GET /dataset_size", srv.datasetSize)
	mux.HandleFunc("POST /seed_session", srv.seedSession)
	mux.HandleFunc("POST /verify", srv.verify)
	return mux
}

// ListenAndServe serves on addr until ctx ends, then shuts down gracefully:
// requests in flight finish (up to 30 s), new connections are refused.
// ready, when set, is called with the address listened on before the
// first request is answered; its error stops the server.
func (srv *Server) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr) error) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve %s: %w", srv.s.Benchmark(), err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second}
	// ready before serving: whatever it announces (the endpoint file) is
	// there before any request is answered; connections wait in the
	// listener's backlog meanwhile.
	if ready != nil {
		if err := ready(ln.Addr()); err != nil {
			ln.Close()
			return err
		}
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve %s: %w", srv.s.Benchmark(), err)
	case <-ctx.Done():
	}
	srv.o.Logger.Info("shutting down", "benchmark", srv.s.Benchmark())
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("serve %s: shutdown: %w", srv.s.Benchmark(), err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (srv *Server) health(w http.ResponseWriter, _ *http.Request) {
	protocol := "evaluator"
	if srv.o.GymCompat {
		protocol = "gym"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "ok", "benchmark": srv.s.Benchmark(), "dataset_size": srv.s.Len(), "protocol": protocol,
	})
}

func (srv *Server) datasetSize(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]int{"size": srv.s.Len()})
}

// seedSession answers {"idx": i} (an empty body is idx 0, as in NeMo) with
// the item's prompt, messages, expected answer and metadata.
func (srv *Server) seedSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Idx *json.Number `json:"idx"`
	}
	if err := decode(w, r, &body); err != nil {
		badRequest(w, "seed_session: %v", err)
		return
	}
	idx, err := srv.index(body.Idx)
	if err != nil {
		badRequest(w, "seed_session: %v", err)
		return
	}
	it := srv.s.Item(idx)
	writeJSON(w, http.StatusOK, Seed(it, idx))
}

// index checks an idx given as a JSON number: an integer in range.
func (srv *Server) index(n *json.Number) (int, error) {
	if n == nil {
		return 0, nil
	}
	i, err := n.Int64()
	if err != nil {
		return 0, fmt.Errorf("idx: %s is not an integer", n.String())
	}
	if i < 0 || i >= int64(srv.s.Len()) {
		return 0, fmt.Errorf("idx=%d out of range [0, %d)", i, srv.s.Len())
	}
	return int(i), nil
}

// Seed is item it, the idx-th, as /seed_session gives it. Its metadata
// carries idx and item_id besides the scorer's own fields, so a /verify
// that sends the metadata back is scored against the item itself.
func Seed(it *bench.Item, idx int) gymenv.Seeded {
	meta := map[string]any{}
	for k, v := range it.Meta {
		meta[k] = v
	}
	meta["idx"], meta["item_id"] = idx, it.ID
	if it.Category != "" {
		meta["category"] = it.Category
	}
	res := gymenv.Seeded{Prompt: it.Question(), ExpectedAnswer: it.Expected, Metadata: meta, Messages: it.Messages}
	if len(it.Messages) > 0 && it.Messages[0].Role == "system" {
		res.System = &it.Messages[0].Content
	}
	if res.Messages == nil {
		res.Messages = []bench.Message{{Role: "user", Content: it.Prompt}}
	}
	return res
}

func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("the body is not a JSON object: %v", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away: nothing to do
}

// badRequest answers 400 with {"detail": message}, FastAPI's shape (what
// NeMo's server answers and Gym's clients read).
func badRequest(w http.ResponseWriter, format string, args ...any) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"detail": fmt.Sprintf(format, args...)})
}
