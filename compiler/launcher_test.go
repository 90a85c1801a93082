package compiler

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The registry nel carries is the launcher's at main-legacy eb3ddf2a: 421
// tasks, each in a harness whose image is pinned by a digest.
func TestLauncherRegistry(t *testing.T) {
	reg, err := loadRegistry()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	digest := regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	for _, ts := range reg.byName {
		for _, task := range ts {
			n++
			if !strings.HasPrefix(task.Image, "nvcr.io/nvidia/eval-factory/") || !digest.MatchString(task.Digest) {
				t.Errorf("%s.%s: image %q digest %q", task.Harness, task.Name, task.Image, task.Digest)
			}
		}
	}
	if n != 421 {
		t.Errorf("%d tasks, want the launcher's 421", n)
	}
	// ns_mmlu_pro as the Nano recipe runs it: NeMo-Skills, chat.
	task, err := reg.lookup("ns_mmlu_pro")
	if err != nil || task.Harness != "nemo_skills" || task.Image != "nvcr.io/nvidia/eval-factory/nemo-skills:26.03" || !slices.Equal(task.Endpoints, []string{"chat"}) {
		t.Errorf("ns_mmlu_pro: %+v, %v", task, err)
	}
	if task.Native == nil || task.Native.Benchmark != "mmlu_pro" {
		t.Errorf("ns_mmlu_pro has no native mmlu_pro: %+v", task.Native)
	}
	// A name two harnesses share needs its harness; with it, it resolves.
	if _, err := reg.lookup("mmlu_pro"); err == nil || !strings.Contains(err.Error(), "simple_evals.mmlu_pro") {
		t.Errorf("mmlu_pro: %v", err)
	}
	if task, err := reg.lookup("simple_evals.mmlu_pro"); err != nil || task.Harness != "simple_evals" {
		t.Errorf("simple_evals.mmlu_pro: %+v, %v", task, err)
	}
	// Every native equivalent names a task the registry has.
	for key := range nativeTasks {
		if _, err := reg.lookup(key); err != nil {
			t.Errorf("nativeTasks[%s]: %v", key, err)
		}
	}
}

func TestSplitWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"--max-model-len 8192  --enforce-eager", []string{"--max-model-len", "8192", "--enforce-eager"}},
		{`--chat-template '{{ a b }}' --x="y z"`, []string{"--chat-template", "{{ a b }}", "--x=y z"}},
		{`--empty ''`, []string{"--empty", ""}},
		// Backslashes as sh reads them (checked against dash: set -- WORDS; printf '<%s>' "$@").
		{`--chat-template a\ b --x="q\"uote" '\n'`, []string{"--chat-template", "a b", `--x=q"uote`, `\n`}},
		{`"a\b" "\$x" c\` + "\n" + `d`, []string{`a\b`, `$x`, "cd"}},
		{"--a \\\n --b", []string{"--a", "--b"}},
	} {
		got, err := splitWords(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := splitWords(`--x 'open`); err == nil {
		t.Error("an unterminated quote is an error")
	}
	if _, err := splitWords(`--x \`); err == nil {
		t.Error("a backslash at the end is an error")
	}
}
