package metrics_test

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/provenance"
	"github.com/nel-eval/nel/runtime/results"
)

func withProvenance(t *testing.T, v any) map[string]string {
	t.Helper()
	m := maps.Clone(meta)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	m[results.MetaProvenance] = string(b)
	return m
}

// A merged file's records: two hosts, the judge seen alike by both, the
// solver answering with two fingerprints, two builds.
func TestProvenanceFromMergedRecords(t *testing.T) {
	solverA := provenance.Serving{Service: "llm", Role: "model", Model: "m", Engine: "vllm", ServerVersion: "0.6.3", Fingerprint: "sha256:aa"}
	solverB := solverA
	solverB.ServerVersion, solverB.Fingerprint = "0.6.4", "sha256:bb"
	judge := provenance.Serving{Service: "judge", Role: "judge", Model: "j", Engine: "api", Fingerprint: "sha256:jj"}
	recs := []provenance.Record{
		{Version: 1, Build: provenance.Build{NelVersion: "v1", Revision: "abc"}, Host: provenance.Host{Hostname: "node2", GPUs: []string{"H100"}},
			Serving: []provenance.Serving{solverA, judge}},
		{Version: 1, Build: provenance.Build{NelVersion: "v2"}, Host: provenance.Host{Hostname: "node1"},
			Serving: []provenance.Serving{solverB, judge}},
		{Version: 1, Build: provenance.Build{NelVersion: "v1", Revision: "abc"}, Host: provenance.Host{Hostname: "node2", GPUs: []string{"H100"}},
			Serving: []provenance.Serving{solverA, judge}},
	}
	rows := []results.Row{row("a", 0, 0, 1, ""), row("a", 0, 1, 0, ""), row("b", 1, 0, 1, ""), row("b", 1, 1, 1, "")}
	b := metrics.Compute(metrics.Input{Rows: rows, Meta: withProvenance(t, recs), Resamples: 10})
	p := b.Provenance
	if p.Build == nil || p.Build.NelVersion != "v1" || p.Build.Revision != "abc" {
		t.Errorf("Build = %+v, want the first record's", p.Build)
	}
	if len(p.Hosts) != 2 || p.Hosts[0].Hostname != "node1" || p.Hosts[1].Hostname != "node2" {
		t.Errorf("Hosts = %+v, want node1, node2", p.Hosts)
	}
	var got []string
	for _, s := range p.Serving {
		got = append(got, s.Service+"@"+s.Fingerprint)
	}
	if want := "llm@sha256:aa llm@sha256:bb judge@sha256:jj"; strings.Join(got, " ") != want {
		t.Errorf("Serving = %v, want %s", got, want)
	}
	notes := strings.Join(b.Notes, "\n")
	if !strings.Contains(notes, "service llm answered with 2 different server fingerprints across shards") {
		t.Errorf("notes lack the fingerprint note: %q", b.Notes)
	}
	if strings.Contains(notes, "service judge") {
		t.Errorf("a note about the judge, which answered alike: %q", b.Notes)
	}
	if !strings.Contains(notes, "2 different nel-run builds") {
		t.Errorf("notes lack the builds note: %q", b.Notes)
	}
}

// One shard's file holds an object, not an array; an old file nothing.
func TestProvenanceOneShardAndOld(t *testing.T) {
	rec := provenance.Record{Version: 1, Build: provenance.Build{NelVersion: "v1"}, Host: provenance.Host{Hostname: "n"},
		Serving: []provenance.Serving{{Service: "llm", Fingerprint: "sha256:aa"}}}
	rows := []results.Row{row("a", 0, 0, 1, ""), row("b", 1, 0, 0, "")}
	b := metrics.Compute(metrics.Input{Rows: rows, Meta: withProvenance(t, rec), Resamples: 10})
	if b.Provenance.Build == nil || len(b.Provenance.Hosts) != 1 || len(b.Provenance.Serving) != 1 {
		t.Errorf("one record: %+v", b.Provenance)
	}
	for _, n := range b.Notes {
		if strings.Contains(n, "fingerprint") || strings.Contains(n, "build") {
			t.Errorf("note for a single record: %q", n)
		}
	}
	old := metrics.Compute(metrics.Input{Rows: rows, Meta: meta, Resamples: 10})
	if old.Provenance.Build != nil || old.Provenance.Hosts != nil || old.Provenance.Serving != nil {
		t.Errorf("a file without provenance: %+v", old.Provenance)
	}
	js, _ := json.Marshal(old.Provenance)
	if strings.Contains(string(js), `"build"`) || strings.Contains(string(js), `"serving"`) {
		t.Errorf("eval.json of an old file gained keys: %s", js)
	}
}
