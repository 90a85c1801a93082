package shard_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/merge"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/provenance"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/shard"
	"github.com/nel-eval/nel/runtime/sim"
)

// newSim is simServer, keeping the simulator for its fingerprint.
func newSim(t *testing.T, cfg sim.Config, data string) (*sim.Server, *httptest.Server) {
	t.Helper()
	b, _ := bench.Lookup("gsm8k")
	set, err := b.Load(context.Background(), dataset.NewLoader(dataset.Options{Offline: true}), map[string]any{"data_path": data})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sim.New(cfg, sim.Dataset{Benchmark: b, Items: set.Items})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv
}

// Each shard records the servers it saw; merge keeps the distinct records
// and eval.json says when shards saw different servers. Here shard 0 runs
// against one simulator and shard 1 against another of a different
// accuracy, through the same ${SIM_URL} in the same plan.
func TestProvenanceRecordedAndMerged(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 40)
	simA, srvA := newSim(t, sim.Config{Accuracy: 1, Version: "v7"}, data)
	simB, srvB := newSim(t, sim.Config{Accuracy: 0.5, Version: "v7"}, data)
	p := testPlan("${SIM_URL}", data, 2, 1, nil, nil)
	p.Services[0].APIKey = &plan.EnvRef{Name: "SIM_KEY"}
	out := filepath.Join(dir, "out")
	urls := []string{srvA.URL, srvB.URL}
	for i := range 2 {
		env := map[string]string{"SIM_URL": urls[i], "SIM_KEY": "sk-never-written", "SLURM_JOB_ID": "99"}
		res, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "gsm8k", Shard: i, Of: 2, OutDir: out,
			NelVersion: "test", Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		meta, _, err := results.ReadMeta(res.Path)
		if err != nil {
			t.Fatal(err)
		}
		js := meta[results.MetaProvenance]
		if strings.Contains(js, "sk-never-written") {
			t.Fatalf("shard %d: the API key is in the provenance: %s", i, js)
		}
		var rec provenance.Record
		if err := json.Unmarshal([]byte(js), &rec); err != nil {
			t.Fatalf("shard %d: provenance %q: %v", i, js, err)
		}
		if rec.Version != provenance.Version || rec.Build.NelVersion != "test" || rec.Host.Hostname == "" || rec.Host.SlurmJobID != "99" {
			t.Errorf("shard %d: build/host %+v %+v", i, rec.Build, rec.Host)
		}
		if len(rec.Serving) != 1 {
			t.Fatalf("shard %d: serving %+v, want the solver's", i, rec.Serving)
		}
		s := rec.Serving[0]
		if s.Service != "sim" || s.Role != "model" || s.Engine != "api" || len(s.Models) != 1 || s.Models[0].ID != "nel-sim" || s.Models[0].Root != "nel-sim" {
			t.Errorf("shard %d: serving %+v", i, s)
		}
		if s.ServerVersion != "v7-sim" || s.Headers["server"] != sim.ServerName || s.ProbeError != "" {
			t.Errorf("shard %d: version %q headers %v error %q", i, s.ServerVersion, s.Headers, s.ProbeError)
		}
		want := []*sim.Server{simA, simB}[i].Fingerprint()
		if s.SystemFingerprint != want {
			t.Errorf("shard %d: system_fingerprint %q, want %q", i, s.SystemFingerprint, want)
		}
		if s.Fingerprint != provenance.Fingerprint(&s) {
			t.Errorf("shard %d: fingerprint %s is not that of the record's fields", i, s.Fingerprint)
		}
	}

	sums, err := merge.Merge(merge.Options{Plan: p, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	_, meta, err := results.ReadRows(filepath.Join(out, "gsm8k", "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []provenance.Record
	if err := json.Unmarshal([]byte(meta[results.MetaProvenance]), &recs); err != nil {
		t.Fatalf("merged provenance is not an array: %v", err)
	}
	if len(recs) != 2 || recs[0].Serving[0].SystemFingerprint == recs[1].Serving[0].SystemFingerprint {
		t.Errorf("merged records: %+v, want the two shards' (different servers)", recs)
	}
	pv := sums[0].Bundle.Provenance
	if len(pv.Serving) != 2 || pv.Serving[0].Fingerprint == pv.Serving[1].Fingerprint || len(pv.Hosts) != 1 || pv.Build == nil {
		t.Errorf("bundle provenance: %+v", pv)
	}
	if !strings.Contains(strings.Join(sums[0].Bundle.Notes, "\n"), "service sim answered with 2 different server fingerprints across shards") {
		t.Errorf("notes: %q", sums[0].Bundle.Notes)
	}
}

// Shards that saw the same server merge into one record and no note.
func TestProvenanceSameServer(t *testing.T) {
	dir := t.TempDir()
	data := writeGSM8K(t, dir, 30)
	srv := simServer(t, sim.Config{Accuracy: 1}, "gsm8k", data)
	p := testPlan(srv.URL, data, 3, 1, nil, nil)
	runAll(t, p, filepath.Join(dir, "out"))
	_, meta, err := results.ReadRows(filepath.Join(dir, "out", "gsm8k", "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := provenance.Parse(meta[results.MetaProvenance])
	if err != nil || len(recs) != 1 {
		t.Fatalf("merged provenance of 3 shards on one host against one server: %d records, %v", len(recs), err)
	}
	if s := recs[0].Serving[0]; s.ServerVersion != "dev-sim" || s.Models[0].ID != "nel-sim" {
		t.Errorf("serving %+v", s)
	}
}
