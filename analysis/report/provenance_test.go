package report

import (
	"testing"

	"github.com/nel-eval/nel/analysis/report/internal/reporttest"
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/provenance"
)

// The provenance section shows the servers, hosts and build the shards
// recorded, and the Markdown escapes what a server says of itself.
func TestMarkdownProvenanceRecords(t *testing.T) {
	b := reporttest.Suite()[0]
	b.Provenance.Build = &provenance.Build{NelVersion: "v0.4.0", Revision: "89abcdef01234567"}
	b.Provenance.Hosts = []provenance.Host{{Hostname: "n1", GPUs: []string{"NVIDIA H100 80GB HBM3"}}}
	b.Provenance.Serving = []provenance.Serving{{Service: "llm", Role: "model", Engine: "vllm", Model: "meta/llama-3.1-8b-instruct",
		ServerVersion: "0.6.3|x", Fingerprint: "sha256:0011223344556677"}}
	md := renderString(t, []*metrics.Bundle{b}, Markdown)
	mustContain(t, "markdown", md,
		"| nel build | `v0.4.0 (rev 89abcdef0123)` |",
		"| Hosts | `1 · GPUs 1× NVIDIA H100 80GB HBM3` |",
		"| Server llm | `vllm · meta/llama-3.1-8b-instruct · version 0.6.3\\|x · fingerprint 001122334455` |")
}
