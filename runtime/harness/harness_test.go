package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadLMEvalMMLU(t *testing.T) {
	o, err := Read(LMEval, "testdata/lmeval-mmlu")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Samples) != 3 || o.AggregateOnly() {
		t.Fatalf("%d samples (aggregate-only %v), want 3", len(o.Samples), o.AggregateOnly())
	}
	// By task then doc: abstract_algebra doc 0 (answer B, said " B"), doc
	// 1 (answer C, said "A"), anatomy doc 0 (answer A, said "A").
	want := map[string]struct {
		idx       int64
		reward    float64
		extracted string
		expected  string
	}{
		"mmlu_abstract_algebra_generative/0": {0, 1, "B", "B"},
		"mmlu_abstract_algebra_generative/1": {1, 0, "A", "C"},
		"mmlu_anatomy_generative/0":          {0, 1, "A", "A"},
	}
	for _, s := range o.Samples {
		key := s.Task + "/" + string(rune('0'+s.ItemIdx))
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected sample %s", key)
			continue
		}
		if s.Reward != w.reward || s.Correct == nil || *s.Correct != (w.reward == 1) || s.Extracted != w.extracted || s.Expected != w.expected {
			t.Errorf("%s: reward %v correct %v extracted %q expected %q, want %v %q %q", key, s.Reward, s.Correct, s.Extracted, s.Expected, w.reward, w.extracted, w.expected)
		}
		if !strings.HasPrefix(s.ItemID, s.Task+"/") || len(s.ItemID) != len(s.Task)+1+64 {
			t.Errorf("%s: item id %q, want task/<doc_hash>", key, s.ItemID)
		}
		if !strings.HasSuffix(s.Prompt, "\nAnswer:") || s.Response == "" {
			t.Errorf("%s: prompt %q response %q", key, s.Prompt, s.Response)
		}
		if s.Scores["exact_match,get_response"] != w.reward {
			t.Errorf("%s: scores %v", key, s.Scores)
		}
	}
	if got := o.Aggregate["mmlu_generative/exact_match,get_response"]; got != 0.6667 {
		t.Errorf("group aggregate %v, want 0.6667", got)
	}
	for k := range o.Aggregate {
		if strings.Contains(k, "stderr") {
			t.Errorf("aggregate %s: standard errors are not scores", k)
		}
	}
	if len(o.Files) != 3 {
		t.Errorf("files %v, want the two samples files and results", o.Files)
	}
}

// TestReadLMEvalFilters: a task with two filters logs each document once
// per filter; the first filter is the verdict, both are scores.
func TestReadLMEvalFilters(t *testing.T) {
	o, err := ReadLMEval("testdata/lmeval-gsm8k")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Samples) != 1 {
		t.Fatalf("%d samples, want one per document", len(o.Samples))
	}
	s := o.Samples[0]
	if s.Reward != 0 || s.Extracted != "[invalid]" {
		t.Errorf("reward %v extracted %q, want strict-match's 0 and [invalid]", s.Reward, s.Extracted)
	}
	if s.Scores["exact_match,strict-match"] != 0 || s.Scores["exact_match,flexible-extract"] != 1 {
		t.Errorf("scores %v", s.Scores)
	}
	if !strings.HasSuffix(s.Expected, "#### 18") {
		t.Errorf("expected %q, want gsm8k's answer text", s.Expected)
	}
}

// TestReadLMEvalTwoRuns: two runs' files in one folder are refused, not
// mixed.
func TestReadLMEvalTwoRuns(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "testdata/lmeval-gsm8k", dir)
	src := filepath.Join(dir, "m", "samples_gsm8k_2026-11-25T10-11-12.345678.jsonl")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m", "samples_gsm8k_2026-11-26T10-11-12.345678.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLMEval(dir); err == nil || !strings.Contains(err.Error(), "more than one lm_eval run") {
		t.Errorf("err = %v, want two runs refused", err)
	}
}

// TestReadSkillsSeeds: the seeds' files are the repeats; a greedy
// output.jsonl beside them is not mixed in.
func TestReadSkillsSeeds(t *testing.T) {
	o, err := Read(Skills, "testdata/skills-math")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Samples) != 4 {
		t.Fatalf("%d samples, want 2 items × 2 seeds", len(o.Samples))
	}
	// Sorted by item id, then repeat. rs0 got 106.json wrong (4 - 20i
	// for 220), rs1 right; both got 235.json (44) right.
	want := []struct {
		id     string
		repeat int64
		reward float64
		pred   string
	}{
		{"math/train/number_theory/106.json", 0, 0, "4 - 20i"},
		{"math/train/number_theory/106.json", 1, 1, "220"},
		{"math/train/prealgebra/235.json", 0, 1, "44"},
		{"math/train/prealgebra/235.json", 1, 1, "44"},
	}
	for i, w := range want {
		s := o.Samples[i]
		if s.ItemID != w.id || s.Repeat != w.repeat || s.Reward != w.reward || s.Extracted != w.pred {
			t.Errorf("sample %d: %s r%d reward %v pred %q, want %+v", i, s.ItemID, s.Repeat, s.Reward, s.Extracted, w)
		}
	}
	if o.Samples[0].Expected != "220" || o.Samples[0].Task != "math" {
		t.Errorf("expected %q task %q", o.Samples[0].Expected, o.Samples[0].Task)
	}
	if got := o.Aggregate["math/pass@1[avg-of-2]/symbolic_correct"]; got != 75 {
		t.Errorf("aggregate %v, want 75", got)
	}
}

func TestReadEvalFactoryWithSamples(t *testing.T) {
	o, err := Read(Container, "testdata/evalfactory-ifeval")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Samples) != 2 {
		t.Fatalf("%d samples, want 2", len(o.Samples))
	}
	// Item 1000 followed every instruction (strict and loose); item 1001
	// only loosely: the strict verdict is the reward.
	for _, s := range o.Samples {
		strict, loose := s.Scores["strict_eval.follow_all_instructions"], s.Scores["loose_eval.follow_all_instructions"]
		if s.Reward != strict || loose != 1 {
			t.Errorf("%s: reward %v strict %v loose %v", s.ItemID, s.Reward, strict, loose)
		}
	}
	if o.Samples[0].Reward+o.Samples[1].Reward != 1 {
		t.Errorf("rewards %v, %v: want one of the two", o.Samples[0].Reward, o.Samples[1].Reward)
	}
	if got := o.Aggregate["ifeval/pass@1/prompt_strict_accuracy"]; got != 50 {
		t.Errorf("aggregate %v, want 50", got)
	}
}

func TestReadEvalFactoryAggregateOnly(t *testing.T) {
	o, err := Read(Container, "testdata/evalfactory-aggregate")
	if err != nil {
		t.Fatal(err)
	}
	if !o.AggregateOnly() || len(o.Samples) != 0 {
		t.Fatalf("%d samples, want aggregate-only", len(o.Samples))
	}
	if o.Primary != "mmlu/score/macro" || o.Aggregate["mmlu/score/micro"] != 0.8123 || o.Aggregate["mmlu/score/macro"] != 0.8011 {
		t.Errorf("primary %q aggregates %v", o.Primary, o.Aggregate)
	}
}

func TestReadErrors(t *testing.T) {
	empty := t.TempDir()
	for _, kind := range []string{LMEval, Skills, Container} {
		if _, err := Read(kind, empty); err == nil || !strings.Contains(err.Error(), empty) {
			t.Errorf("%s on an empty folder: err = %v, want one naming the folder", kind, err)
		}
	}
	if _, err := Read("nope", empty); err == nil {
		t.Error("unknown harness accepted")
	}
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "eval-results", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "eval-results", "x", "output.jsonl"), []byte("{\"generation\": \"hi\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSkills(bad); err == nil || !strings.Contains(err.Error(), "output.jsonl:1: no verdict field") {
		t.Errorf("err = %v, want the unevaluated record named by file and line", err)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.Type()&os.ModeSymlink != 0 { // VLMEvalKit links its files beside its run
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, filepath.Join(dst, rel))
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
