package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The table nel carries holds the eight values the Nemotron 3 Nano blog
// quotes from the model card (seed 004), each with its source.
func TestReferenceNemotronNano(t *testing.T) {
	refs, err := ReadReference("nemotron-3-nano-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"ns_bfcl_v4": 53.8, "ns_livecodebench": 68.3, "ns_mmlu_pro": 78.3, "ns_gpqa": 73.0,
		"ns_aime2025": 89.1, "ns_scicode": 33.3, "ns_ifbench": 71.5, "ns_hle": 10.6}
	if len(refs) != len(want) {
		t.Fatalf("%d values, want %d", len(refs), len(want))
	}
	for task, v := range want {
		r, ok := referenceFor(refs, "container://nvcr.io/nvidia/eval-factory/nemo-skills:26.03#"+task)
		if !ok || r.Value != v || !strings.Contains(r.Source, "model card") {
			t.Errorf("%s: got %+v, %v; want %v with its source", task, r, ok, v)
		}
	}
	// nel's own benchmark of the same name gets the value; another does not.
	if r, ok := referenceFor(refs, "mmlu_pro"); !ok || r.Value != 78.3 {
		t.Errorf("mmlu_pro: got %+v, %v", r, ok)
	}
	if _, ok := referenceFor(refs, "gsm8k"); ok {
		t.Error("gsm8k has no published value in the table")
	}
}

func TestReadReferenceFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "mine.tsv")
	if err := os.WriteFile(good, []byte("# mine\nGSM8K\tgsm8k\t91.5\tmy card\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refs, err := ReadReference(good)
	if err != nil || len(refs) != 1 || refs[0].Value != 91.5 || refs[0].Source != "my card" {
		t.Fatalf("got %+v, %v", refs, err)
	}
	bad := filepath.Join(dir, "bad.tsv")
	if err := os.WriteFile(bad, []byte("GSM8K\tgsm8k\tninety\tmy card\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReference(bad); err == nil || !strings.Contains(err.Error(), `bad.tsv:1: value "ninety": not a number`) {
		t.Errorf("got %v", err)
	}
}
