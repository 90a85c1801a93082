package view

import (
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/provenance"
)

func TestProvenanceRowsWithRecords(t *testing.T) {
	b := &metrics.Bundle{Provenance: metrics.Provenance{
		Model: "llama-8b", NelVersion: "v0.5.0",
		Build: &provenance.Build{NelVersion: "v0.5.0", GoVersion: "go1.26.0", Revision: "0123456789abcdef0123", Modified: true},
		Hosts: []provenance.Host{
			{Hostname: "n1", GPUs: []string{"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"}},
			{Hostname: "n2", GPUs: []string{"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"}},
		},
		Serving: []provenance.Serving{
			{Service: "llm", Role: "model", Engine: "vllm", Model: "llama-8b", Image: "vllm/vllm-openai:v0.6.3",
				TP: 2, PP: 1, DP: 1, NumNodes: 1, ServerVersion: "0.6.3",
				Models:      []provenance.ServedModel{{ID: "llama-8b", Root: "/models/Meta-Llama-3.1-8B-Instruct"}},
				Fingerprint: "sha256:feedfacecafe0123456789"},
			{Service: "grader", Role: "judge", Engine: "api", Model: "gpt-4o", ProbeError: "GET https://x/v1/models: HTTP 401"},
		},
	}}
	got := map[string]string{}
	for _, r := range ProvenanceRows(b) {
		got[r[0]] = r[1]
	}
	want := map[string]string{
		"nel build":             "v0.5.0 (rev 0123456789ab, modified, go1.26.0)",
		"Hosts":                 "2 · GPUs 4× NVIDIA H100 80GB HBM3",
		"Server llm":            "vllm · llama-8b · root /models/Meta-Llama-3.1-8B-Instruct · version 0.6.3 · fingerprint feedfacecafe · image vllm/vllm-openai:v0.6.3 · TP 2 · PP 1 · DP 1 · nodes 1",
		"Server grader (judge)": "api · gpt-4o · fingerprint n/a · probe failed: GET https://x/v1/models: HTTP 401",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s:\n got %q\nwant %q", k, got[k], v)
		}
	}
	// An old bundle shows none of these rows.
	for _, r := range ProvenanceRows(&metrics.Bundle{}) {
		if r[0] == "nel build" || r[0] == "Hosts" || strings.HasPrefix(r[0], "Server ") {
			t.Errorf("row %q for a bundle without records", r[0])
		}
	}
}
