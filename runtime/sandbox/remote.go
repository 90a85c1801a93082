package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nel-eval/nel/runtime/rundir"
)

// A slurm sandbox is a pool of sandbox servers (nel-run sandbox-serve, one
// per node of the sandbox's node pool) that the compiled job script starts
// in its own het-job component. The shards reach them through the remote
// engine below, which learns their addresses from the environment.

// EndpointsEnv is the environment variable through which the compiled job
// script gives the shards the servers of the slurm sandbox name:
// NEL_SANDBOX_<NAME>_ENDPOINTS, NAME upper-cased with every character
// outside [A-Za-z0-9_] replaced by '_' and a '_' before a leading digit, as
// the compiler's templates.EnvName does ("py-exec" →
// NEL_SANDBOX_PY_EXEC_ENDPOINTS). Its value is a comma-separated list of
// host:port.
func EndpointsEnv(name string) string { return poolEnv(name, "_ENDPOINTS") }

// PoolTokenEnv is the environment variable that holds the bearer token of the
// slurm sandbox name's servers, NEL_SANDBOX_<NAME>_TOKEN: the compiled job
// makes one per pool and exports it to the servers (sandbox-serve
// --token-env) and the shards, so that nothing else that reaches a pool's
// port can run commands there.
func PoolTokenEnv(name string) string { return poolEnv(name, "_TOKEN") }

// poolEnv is NEL_SANDBOX_<NAME><suffix>, NAME spelled as EndpointsEnv says.
func poolEnv(name, suffix string) string {
	var b strings.Builder
	b.WriteString("NEL_SANDBOX_")
	if name != "" && '0' <= name[0] && name[0] <= '9' {
		b.WriteByte('_')
	}
	for _, r := range name {
		switch {
		case 'a' <= r && r <= 'z':
			b.WriteRune(r - ('a' - 'A'))
		case 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	b.WriteString(suffix)
	return b.String()
}

// EndpointsFromEnv returns the servers of the slurm sandbox name, read with
// getenv (os.Getenv) from EndpointsEnv(name). It fails when the variable is
// unset or empty (the shard does not run inside the compiled job) or an
// entry is not host:port.
func EndpointsFromEnv(name string, getenv func(string) string) ([]string, error) {
	if name == "" {
		return nil, errors.New("a slurm sandbox must be declared under sandboxes and referred to by name")
	}
	key := EndpointsEnv(name)
	v := getenv(key)
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("sandbox %s: %s is not set: the job script nel compiles starts the sandbox pool and exports it (host:port,host:port,…)", name, key)
	}
	var eps []string
	for e := range strings.SplitSeq(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if err := checkHostPort(e); err != nil {
			return nil, fmt.Errorf("sandbox %s: %s=%q: %w", name, key, v, err)
		}
		eps = append(eps, e)
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("sandbox %s: %s=%q lists no server", name, key, v)
	}
	return eps, nil
}

func checkHostPort(e string) error {
	host, port, err := net.SplitHostPort(e)
	if err != nil {
		return fmt.Errorf("expected host:port, found %q", e)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
		return fmt.Errorf("expected host:port with a port from 1 to 65535, found %q", e)
	}
	return nil
}

// Timings of the remote engine.
const (
	// remoteOpenTimeout bounds the health check at Open. The job script has
	// already waited for every server, so they normally answer at once.
	remoteOpenTimeout = 30 * time.Second
	healthInterval    = 250 * time.Millisecond
	straggler         = 3 * time.Second // see openRemote
	dialTimeout       = 10 * time.Second
	// downFor is how long a server that refused a connection is passed
	// over while others have free slots.
	downFor = 30 * time.Second
)

type endpoint struct {
	addr      string // host:port
	slots     int
	busy      int
	downUntil time.Time
}

// remote is the client of a sandbox pool: it spreads jobs over the pool's
// servers, at most slots jobs on each, to the least loaded one.
type remote struct {
	name   string
	env    map[string]string
	client *http.Client
	log    *slog.Logger
	token  string // the servers' bearer token ("" for a pool compiled without one)

	mu    sync.Mutex
	eps   []*endpoint
	freed chan struct{} // closed (and replaced) when a slot frees
}

// openRemote connects to the sandbox servers of cfg.Endpoints. It waits
// (within remoteOpenTimeout or ctx's deadline) until at least one answers
// its health check, and takes each server's slot count from its answer.
func openRemote(ctx context.Context, cfg Config) (Sandbox, error) {
	name := cfg.Name
	if name == "" {
		name = cfg.Type
	}
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("sandbox %s: no sandbox servers to use: a slurm sandbox runs on the pool the compiled job script starts (%s)", name, EndpointsEnv(cfg.Name))
	}
	r := &remote{
		name:  name,
		env:   cfg.Env,
		token: cfg.Token,
		log:   cfg.Logger.With("sandbox", name),
		client: &http.Client{Transport: &http.Transport{
			Proxy:               nil, // the pool is on the cluster's own network
			DialContext:         (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
		}},
		freed: make(chan struct{}),
	}
	for _, e := range cfg.Endpoints {
		e = strings.TrimPrefix(strings.TrimSpace(e), "http://")
		if err := checkHostPort(e); err != nil {
			return nil, fmt.Errorf("sandbox %s: endpoint: %w", name, err)
		}
		r.eps = append(r.eps, &endpoint{addr: e})
	}

	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, remoteOpenTimeout)
	defer cancel()
	type answer struct {
		h   Health
		err error
	}
	answers := make([]answer, len(r.eps))
	var wg sync.WaitGroup
	var once sync.Once
	for i, ep := range r.eps {
		wg.Go(func() {
			answers[i].h, answers[i].err = r.waitHealthy(hctx, ep.addr)
			if answers[i].err == nil {
				// One server is up: the others get a little longer, not
				// the whole timeout (a dead node must not stall each
				// shard's start).
				once.Do(func() { time.AfterFunc(straggler, cancel) })
			}
		})
	}
	wg.Wait()
	var ok, bad []string
	slots := 0
	for i, a := range answers {
		if a.err == nil {
			ok = append(ok, r.eps[i].addr)
			r.eps[i].slots = a.h.Slots
			slots = max(slots, a.h.Slots)
		} else {
			bad = append(bad, r.eps[i].addr+": "+a.err.Error())
		}
	}
	if len(ok) == 0 {
		return nil, fmt.Errorf("sandbox %s: no server of the sandbox pool answered its health check in %s (did the pool start? its servers log to %s): %s",
			name, time.Since(start).Round(100*time.Millisecond), rundir.Dir("<output>").Logs().Sandbox("*", ""), strings.Join(bad, "; "))
	}
	for i, a := range answers {
		if a.err != nil {
			// Used again once the others are busy or it comes back.
			r.eps[i].slots = slots
			r.eps[i].downUntil = time.Now().Add(downFor)
			r.log.Warn("sandbox server not answering; using the others", "endpoint", r.eps[i].addr, "err", a.err)
		}
	}
	r.log.Info("sandbox pool", "endpoints", strings.Join(ok, ","), "slots_per_server", slots)
	return r, nil
}

// waitHealthy polls a server's /health until it answers 200 with a slot
// count, or ctx ends (then the last problem is the error).
func (r *remote) waitHealthy(ctx context.Context, addr string) (Health, error) {
	var last error
	for {
		h, err := r.health(ctx, addr)
		if err == nil {
			return h, nil
		}
		last = err
		if sleepCtx(ctx, healthInterval) != nil {
			return Health{}, last
		}
	}
}

func (r *remote) health(ctx context.Context, addr string) (Health, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
	if err != nil {
		return Health{}, err
	}
	r.authorize(req)
	resp, err := r.client.Do(req)
	if err != nil {
		return Health{}, transportError(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return Health{}, fmt.Errorf("health: %s", resp.Status)
	}
	var h Health
	if err := json.Unmarshal(b, &h); err != nil || h.Slots < 1 {
		return Health{}, fmt.Errorf("health: not a nel sandbox server (answered %.80q)", b)
	}
	return h, nil
}

// authorize adds the servers' token to a request, if they have one.
func (r *remote) authorize(req *http.Request) {
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
}

// transportError shortens the url.Error of a failed request to its cause.
func transportError(err error) error {
	var ne *net.OpError
	if errors.As(err, &ne) {
		return ne
	}
	return err
}

func (r *remote) Name() string { return r.name }

func (r *remote) Close() error {
	r.client.CloseIdleConnections()
	return nil
}

// connError is a failure to reach a server or get its answer: the job may
// run on another server.
type connError struct{ err error }

func (e *connError) Error() string { return e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

// Run sends the job to the least loaded server with a free slot, waiting
// for one. A server that cannot be reached (or is shutting down) gets the
// job retried once on another server; when that fails too, Run's error
// says which servers failed and how.
func (r *remote) Run(ctx context.Context, job Job) (*Result, error) {
	job.Env = mergeEnv(r.env, job.Env)
	body, err := json.Marshal(toWireJob(job))
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: encode job: %w", r.name, err)
	}
	var res *Result
	_, err = r.onServer(ctx, false, func(ep *endpoint) error {
		var err error
		res, err = r.post(ctx, ep.addr, body)
		return err
	})
	return res, err
}

// onServer runs do on the least loaded server with a free slot, and once
// more on another when that one cannot be reached; it returns the server
// that answered. With keep the slot stays taken after a success (a
// session's, freed by its Close); else it is freed.
func (r *remote) onServer(ctx context.Context, keep bool, do func(ep *endpoint) error) (*endpoint, error) {
	var failed *endpoint
	var errs []string
	for attempt := 0; attempt < 2; attempt++ {
		ep, err := r.acquire(ctx, failed)
		if err != nil {
			return nil, fmt.Errorf("sandbox %s: waiting for a free slot: %w", r.name, err)
		}
		err = do(ep)
		var ce *connError
		unreachable := errors.As(err, &ce) && ctx.Err() == nil
		if err == nil && keep {
			return ep, nil
		}
		r.release(ep, err == nil, unreachable)
		if !unreachable {
			if err != nil {
				return nil, fmt.Errorf("sandbox %s: %s: %w", r.name, ep.addr, err)
			}
			return ep, nil
		}
		errs = append(errs, ep.addr+": "+err.Error())
		r.log.Warn("sandbox server unreachable", "endpoint", ep.addr, "err", err, "retry", attempt == 0)
		failed = ep
	}
	return nil, fmt.Errorf("sandbox %s: no sandbox server reachable: %s", r.name, strings.Join(errs, "; "))
}

func (r *remote) post(ctx context.Context, addr string, body []byte) (*Result, error) {
	var wr wireResult
	if err := r.call(ctx, http.MethodPost, addr, "/run", "", body, &wr); err != nil {
		return nil, err
	}
	return wr.result(), nil
}

func serverMessage(b []byte) string {
	var we wireError
	if json.Unmarshal(b, &we) == nil && we.Error != "" {
		return we.Error
	}
	return fmt.Sprintf("%.200q", b)
}

// acquire takes a slot on the least loaded server (by busy/slots), passing
// over avoid and servers that recently failed while others are free.
func (r *remote) acquire(ctx context.Context, avoid *endpoint) (*endpoint, error) {
	for {
		r.mu.Lock()
		if ep := r.pick(avoid); ep != nil {
			ep.busy++
			r.mu.Unlock()
			return ep, nil
		}
		freed := r.freed
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-freed:
		}
	}
}

// pick chooses among the servers with a free slot: first those up and not
// avoid, then any other. r.mu is held.
func (r *remote) pick(avoid *endpoint) *endpoint {
	now := time.Now()
	var best *endpoint
	bestRank := 0
	for _, ep := range r.eps {
		if ep.busy >= ep.slots {
			continue
		}
		rank := 0
		if ep == avoid {
			rank = 2
		} else if now.Before(ep.downUntil) {
			rank = 1
		}
		// Least loaded: busy/slots, compared without division.
		if best == nil || rank < bestRank || rank == bestRank && ep.busy*best.slots < best.busy*ep.slots {
			best, bestRank = ep, rank
		}
	}
	if best != nil && bestRank == 2 && len(r.eps) > 1 {
		// Only the server that just failed has a free slot: wait for
		// another, unless all the others are down too.
		for _, ep := range r.eps {
			if ep != avoid && !now.Before(ep.downUntil) {
				return nil
			}
		}
	}
	return best
}

// release frees ep's slot and records whether it answered or could not be
// reached.
func (r *remote) release(ep *endpoint, answered, unreachable bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ep.busy--
	switch {
	case unreachable:
		ep.downUntil = time.Now().Add(downFor)
	case answered:
		ep.downUntil = time.Time{}
	}
	close(r.freed)
	r.freed = make(chan struct{})
}
