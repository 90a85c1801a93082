package shard

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/provenance"
)

// startProvenance learns where the numbers come from: the servers as they
// are when the samples start. The probes (GET /models and /version on a
// client of their own) run beside the first samples rather than before
// them: a shard's start-up is time its whole run takes (issue 23: about
// 40 ms of a 10 s run against a local server, more against a remote one).
// The record comes on the channel.
func (r *runner) startProvenance(ctx context.Context) <-chan *provenance.Record {
	c := make(chan *provenance.Record, 1)
	go func() { c <- r.collectProvenance(ctx) }()
	return c
}

// collectProvenance describes where this shard's numbers come from: the
// nel-run build, this host, and every service the benchmark uses (its
// solver's, then its judges'), each probed for what it says about itself.
// It never fails: what could not be learned is left empty or said in a
// ProbeError. A resumed shard collects anew, on the host it now runs on.
func (r *runner) collectProvenance(ctx context.Context) *provenance.Record {
	rec := &provenance.Record{
		Version: provenance.Version,
		Build:   provenance.CollectBuild(r.o.NelVersion),
		Host:    provenance.CollectHost(r.o.Getenv),
	}
	svcs := []*plan.Service{r.svc}
	roles := []string{"model"}
	for _, m := range r.b.Scoring.Metrics {
		if m.Type != "judge" {
			continue
		}
		svc, ok := r.p.Service(m.Service)
		if !ok || containsService(svcs, svc.Name) {
			continue
		}
		svcs = append(svcs, svc)
		roles = append(roles, "judge")
	}
	// Probes use their own client: the model clients' pools are sized
	// for the samples, and a probe must not wait behind them.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	rec.Serving = make([]provenance.Serving, len(svcs))
	var wg sync.WaitGroup
	for i, svc := range svcs {
		s := &rec.Serving[i]
		*s = serving(svc, roles[i])
		base, key, err := r.endpoint(svc)
		if err != nil {
			s.ProbeError = err.Error() // names the variable, never its value
			s.Fingerprint = provenance.Fingerprint(s)
			continue
		}
		wg.Go(func() {
			provenance.Probe(ctx, hc, base, key, s)
			s.Fingerprint = provenance.Fingerprint(s)
		})
	}
	wg.Wait()
	for _, s := range rec.Serving {
		if s.ProbeError != "" {
			r.log.Warn("could not fingerprint a service; its provenance is incomplete", "service", s.Service, "err", s.ProbeError)
		}
	}
	return rec
}

func containsService(svcs []*plan.Service, name string) bool {
	for _, s := range svcs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// serving is what the plan says of svc's server.
func serving(svc *plan.Service, role string) provenance.Serving {
	s := provenance.Serving{
		Service: svc.Name, Role: role, Model: svc.Model, Engine: svc.Type,
		Image: svc.Image,
	}
	if svc.Managed {
		s.Command = svc.Command
	}
	if p := svc.Parallelism; p != nil {
		s.TP, s.PP, s.DP, s.NumNodes = p.TP, p.PP, p.DP, p.NumNodes
	}
	return s
}

// noteResponse keeps the first system_fingerprint the solver's server
// answered with, for the record written with the results.
func (r *runner) noteResponse(resp *model.Response) {
	if resp != nil && resp.SystemFingerprint != "" && r.sysFingerprint.Load() == nil {
		fp := resp.SystemFingerprint
		r.sysFingerprint.CompareAndSwap(nil, &fp)
	}
}

// provenanceJSON is rec as written into the results files' metadata, with
// the solver's system_fingerprint seen while the samples ran.
func (r *runner) provenanceJSON(rec *provenance.Record) string {
	if fp := r.sysFingerprint.Load(); fp != nil && len(rec.Serving) > 0 {
		s := &rec.Serving[0]
		s.SystemFingerprint = *fp
		s.Fingerprint = provenance.Fingerprint(s)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		// A Record is strings, ints and slices of them: it always marshals.
		panic(err)
	}
	return string(b)
}
