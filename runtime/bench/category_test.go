package bench

import "testing"

// Every built-in benchmark has its model-card category (results carry it
// as nel.benchmark_category; reports show it).
func TestCategories(t *testing.T) {
	want := map[string]string{
		"gsm8k": "Mathematics", "math500": "Mathematics", "mgsm": "Multilingual math",
		"mmlu": "Knowledge", "mmlu_pro": "Knowledge", "gpqa": "Science", "triviaqa": "Knowledge",
		"simpleqa": "Factuality", "drop": "Reading comprehension", "humaneval": "Coding",
		"ifeval": "Instruction following", "xstest": "Safety",
	}
	for _, name := range Names() {
		b, _ := Lookup(name)
		if b.Category == "" {
			t.Errorf("built-in benchmark %s has no Category", name)
		}
		if w, ok := want[name]; ok && b.Category != w {
			t.Errorf("%s: Category %q, want %q", name, b.Category, w)
		}
	}
	for name := range want {
		if _, ok := Lookup(name); !ok {
			t.Errorf("%s is not a built-in benchmark", name)
		}
	}
}

// Each Size nel list shows is the item count of the real published data
// (../shared/datasets holds unchanged copies), loaded as nel-run loads
// it; the benchmarks without a local copy have either a count written
// from their dataset card (gpqa's diamond subset) or none (0).
func TestSizes(t *testing.T) {
	dir := sharedDatasets(t)
	paths := map[string]string{
		"gsm8k": "gsm8k/test.jsonl", "humaneval": "humaneval/HumanEval.jsonl.gz",
		"ifeval": "ifeval/input_data.jsonl", "math500": "math500/test.jsonl", "mgsm": "mgsm",
		"mmlu": "mmlu/test", "mmlu_pro": "mmlu_pro/test.jsonl",
		"simpleqa": "simpleqa/simple_qa_test_set.csv", "xstest": "xstest/xstest_prompts.csv",
	}
	for name, path := range paths {
		b := mustLookup(t, name)
		s := loadSet(t, newLoader(dir), name, map[string]any{"data_path": path})
		if b.Size != len(s.Items) {
			t.Errorf("%s: Size %d, but %s holds %d items", name, b.Size, path, len(s.Items))
		}
	}
	for _, name := range Names() {
		if _, ok := paths[name]; ok {
			continue
		}
		if b := mustLookup(t, name); name != "gpqa" && b.Size != 0 {
			t.Errorf("%s: Size %d with no local copy to check it against; 0 says unknown", name, b.Size)
		}
	}
}
