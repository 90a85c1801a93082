package shard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/journal"
	"github.com/nel-eval/nel/runtime/model"
)

// What a shard does when its endpoint fails (DESIGN §6.8: fail fast, never
// burn a dataset on a dead endpoint):
//
//   - before the first sample, checkEndpoint probes it: unreachable, or the
//     key refused, is an error within seconds;
//   - while samples run, health keeps the endpoint's recent record. When
//     BreakerThreshold samples in a row, or BreakerRate of the last
//     BreakerWindow, failed as if it were down, the breaker trips: nothing
//     new is sent, the endpoint is probed with backoff, and when it answers
//     the samples that failed during the outage are sent again (once each).
//     When it does not answer for RecoverFor, or trips maxTrips times, the
//     shard stops without recording those samples;
//   - ClientErrorThreshold samples in a row failing with the same
//     deterministic client error (a wrong key, an unknown model, a request
//     the server rejects) stop the shard with what the server said, before
//     the rest of the data is spent on it.

// maxTrips is how many outages a shard rides out before it gives up on an
// endpoint that keeps failing: one that answers its probe and fails every
// request would otherwise pause and resume forever.
const maxTrips = 3

// breakerKind is what a finished sample says about the endpoint.
type breakerKind int

const (
	sampleOK     breakerKind = iota // answered (whatever the score)
	sampleDown                      // failed as if the endpoint were down
	sampleClient                    // a deterministic client error
)

// deterministicStatus are the HTTP statuses a retry cannot change.
var deterministicStatus = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
	http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnprocessableEntity}

func classifyForBreaker(rec *sampleRecord) breakerKind {
	switch failure.Category(rec.Row.ErrorCategory) {
	case failure.ServerError, failure.RateLimit, failure.Timeout:
		return sampleDown
	case failure.APIError:
		if slices.Contains(deterministicStatus, rec.Status) {
			return sampleClient
		}
	}
	return sampleOK
}

// errClientStreak reports that the client-error streak reached its limit.
var errClientStreak = errors.New("client error streak")

// health is the endpoint's recent record, guarded by the runner's mu.
type health struct {
	streak       int    // samples in a row that failed as if it were down
	window       []bool // the last BreakerWindow finished samples: down or not
	pos, down    int
	clientStatus int // the status of the current client-error streak
	clientStreak int
	tripped      bool
	trips        int
	requeue      []pendingStart
	requeued     map[journal.Key]bool // sent again once already
}

// observe adds a finished sample to the record and trips the breaker when
// the endpoint looks down; it returns errClientStreak when the same
// deterministic client error has now failed ClientErrorThreshold samples in
// a row.
func (h *health) observe(kind breakerKind, status int, o Options) error {
	if len(h.window) != o.BreakerWindow {
		h.window, h.pos, h.down = make([]bool, o.BreakerWindow), 0, 0
	}
	if h.window[h.pos%len(h.window)] {
		h.down--
	}
	isDown := kind == sampleDown
	h.window[h.pos%len(h.window)] = isDown
	h.pos++
	if isDown {
		h.down++
		h.streak++
	} else {
		h.streak = 0
	}
	if kind != sampleClient {
		h.clientStreak, h.clientStatus = 0, 0
	}
	switch kind {
	case sampleDown:
		full := h.pos >= len(h.window)
		if h.streak >= o.BreakerThreshold || full && float64(h.down) >= o.BreakerRate*float64(len(h.window)) {
			h.tripped = true
		}
	case sampleClient:
		if status == h.clientStatus {
			h.clientStreak++
		} else {
			h.clientStatus, h.clientStreak = status, 1
		}
		if h.clientStreak >= o.ClientErrorThreshold {
			return errClientStreak
		}
	}
	return nil
}

func (r *runner) tripped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.health.tripped
}

func (r *runner) popRequeue() (pendingStart, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.health.requeue) == 0 {
		return pendingStart{}, false
	}
	p := r.health.requeue[0]
	r.health.requeue = r.health.requeue[1:]
	return p, true
}

func (r *runner) hasRequeue() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.health.requeue) > 0
}

// checkEndpoint probes the solver's endpoint before any sample is sent.
func (r *runner) checkEndpoint(ctx context.Context, client *model.Client) error {
	res, err := client.Probe(ctx)
	switch {
	case errors.Is(err, model.ErrUnauthorized):
		return fmt.Errorf("benchmark %s: service %s: %w; %s", r.b.Key, r.svc.Name, err, r.keyHint())
	case err != nil:
		return fmt.Errorf("benchmark %s: service %s: %w; nothing was run", r.b.Key, r.svc.Name, err)
	}
	r.offered = res.Models
	if !res.Offers(r.svc.Model) {
		r.log.Warn("the server does not list the model the recipe asks for; requests may be refused",
			"service", r.svc.Name, "model", r.svc.Model, "served", strings.Join(res.Models, ", "))
	}
	return nil
}

// keyHint says where the API key came from, by name, never its value.
func (r *runner) keyHint() string {
	if ref := r.svc.APIKey; ref != nil {
		return fmt.Sprintf("the key is $%s's value: check that it is set to a key this endpoint accepts", ref.Name)
	}
	return fmt.Sprintf("service %s sends no key: set its api_key to ${VAR}, the variable holding the key", r.svc.Name)
}

// clientErrorStop is the error that stops the shard when the same
// deterministic client error failed ClientErrorThreshold samples in a row.
func (r *runner) clientErrorStop(rec *sampleRecord) error {
	what := "the server rejects the requests"
	switch rec.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		what = "the server refuses the credentials; " + r.keyHint()
	case http.StatusNotFound:
		what = fmt.Sprintf("the server does not know model %q or the path", r.svc.Model)
		if len(r.offered) > 0 {
			what += fmt.Sprintf("; it offers: %s", strings.Join(r.offered, ", "))
		}
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		what = "the server rejects the request as malformed (check the generation parameters and protocol)"
	}
	return fmt.Errorf("%d samples in a row failed with HTTP %d: %s (last: %s). Those samples were not recorded; fix the cause and run the shard again",
		r.o.ClientErrorThreshold, rec.Status, what, rec.Traj.Error)
}

// recover is what the dispatcher does while the breaker is tripped: it
// sends nothing and probes the endpoint with backoff. When the endpoint
// answers, the samples that failed during the outage are queued to run
// again (each once) and sending resumes; when it does not answer within
// RecoverFor, or has tripped maxTrips times, the shard stops.
func (r *runner) recover(ctx context.Context, client *model.Client) error {
	r.mu.Lock()
	r.health.trips++
	trips, last, streak := r.health.trips, lastDownText(r.down), r.health.streak
	r.mu.Unlock()
	giveUp := func(why string) error {
		return fmt.Errorf("%w: %s (last failure: %s); service %s %s. Those samples were not recorded and will run again when you re-run this shard",
			ErrBreaker, r.breakerWhat(streak), last, r.svc.Name, why)
	}
	if trips > maxTrips {
		return giveUp(fmt.Sprintf("kept failing after %d outages", maxTrips))
	}
	r.log.Warn("endpoint failing: sending nothing and probing it", "service", r.svc.Name, "why", r.breakerWhat(streak), "last", last)
	deadline := time.Now().Add(r.o.RecoverFor)
	wait := time.Second
	for {
		res, err := client.Probe(ctx)
		if err == nil && res.Status/100 != 5 {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, model.ErrUnauthorized) {
			return fmt.Errorf("benchmark %s: service %s: %w; %s", r.b.Key, r.svc.Name, err, r.keyHint())
		}
		if time.Now().Add(wait).After(deadline) {
			return giveUp(fmt.Sprintf("did not answer a probe for %v", r.o.RecoverFor))
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
		wait = min(2*wait, 30*time.Second)
	}
	r.mu.Lock()
	h := &r.health
	if h.requeued == nil {
		h.requeued = map[journal.Key]bool{}
	}
	var kept []*pendingSample
	n := 0
	for _, p := range r.down {
		if !h.requeued[p.start.key] {
			h.requeued[p.start.key] = true
			h.requeue = append(h.requeue, pendingStart{p.start.key, p.start.attempt + 1})
			n++
			continue
		}
		kept = append(kept, p)
	}
	r.down = kept
	h.tripped, h.streak = false, 0
	h.window, h.pos, h.down = nil, 0, 0
	r.mu.Unlock()
	r.log.Info("endpoint answers again: resuming", "service", r.svc.Name, "resent", n)
	return nil
}

// breakerWhat says why the breaker tripped.
func (r *runner) breakerWhat(streak int) string {
	if streak >= r.o.BreakerThreshold {
		return fmt.Sprintf("%d samples in a row failed", streak)
	}
	return fmt.Sprintf("at least %.0f%% of the last %d samples failed", 100*r.o.BreakerRate, r.o.BreakerWindow)
}

// lastDownText is the error of the most recent down failure held back.
func lastDownText(down []*pendingSample) string {
	if len(down) == 0 {
		return "none held back"
	}
	last := down[len(down)-1].rec
	return last.Row.ErrorCategory + ": " + last.Traj.Error
}
