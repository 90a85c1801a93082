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
