package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/plan"
)

// writeFiles writes name → text under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func loadRecipeFile(t *testing.T, path string) (*Source, Hashes) {
	t.Helper()
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.LoadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := ComputeHashes(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, h
}

const dataRecipe = `
services: m: {type: "api", url: "http://h/v1", model: "org/m"}
services: j: {type: "api", url: "http://j/v1", model: "org/judge"}
benchmarks: [{
	name: "gsm8k"
	params: data_path: "DATA"
	solver: {type: "simple", service: "m"}
	scoring: {primary: "judged", metrics: [{type: "judge", name: "judged", service: "j", rubric_file: "RUBRIC"}]}
}]
`

// TestLocalFilesByContent: two machines, each with the recipe beside its
// data at another absolute path (one relative, one absolute, the rubric in
// another folder): the recipe and benchmark hashes agree, the plan hashes
// do not; one changed byte of the data or the rubric changes the hashes.
// The plan pins the local data to the digest the hashes covered.
func TestLocalFilesByContent(t *testing.T) {
	const data = `{"question":"1+1?","answer":"#### 2"}` + "\n"
	const rubric = "Grade {{response}} against {{reference}}. Score: 0 or 1."
	a, b := t.TempDir(), t.TempDir()
	writeFiles(t, a, map[string]string{"q.jsonl": data, "rubric.txt": rubric})
	writeFiles(t, b, map[string]string{"deep/er/q.jsonl": data, "judges/rubric.txt": rubric})
	r := strings.NewReplacer("DATA", "q.jsonl", "RUBRIC", "rubric.txt")
	writeFiles(t, a, map[string]string{"r.cue": r.Replace(dataRecipe)})
	r = strings.NewReplacer("DATA", filepath.Join(b, "deep/er/q.jsonl"), "RUBRIC", filepath.Join(b, "judges/rubric.txt"))
	writeFiles(t, b, map[string]string{"r.cue": r.Replace(dataRecipe)})

	sa, ha := loadRecipeFile(t, filepath.Join(a, "r.cue"))
	_, hb := loadRecipeFile(t, filepath.Join(b, "r.cue"))
	if ha.Recipe != hb.Recipe || ha.Benchmarks["gsm8k"] != hb.Benchmarks["gsm8k"] {
		t.Errorf("the same data at two paths: recipe %s / %s, benchmark %s / %s", ha.Recipe, hb.Recipe, ha.Benchmarks["gsm8k"], hb.Benchmarks["gsm8k"])
	}
	if ha.Plan == hb.Plan {
		t.Error("the data's path is deployment: the plan hashes should differ")
	}

	want, err := dataset.LocalDigest(a, "q.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]LocalFile{}
	for _, f := range sa.LocalFiles() {
		got[f.Field] = f
	}
	if f := got["benchmarks[0].params.data_path"]; len(got) != 2 || f.Spec != "q.jsonl" || f.Digest != want.Digest ||
		got["benchmarks[0].scoring.metrics[0].rubric_file"].Spec != "rubric.txt" {
		t.Errorf("LocalFiles = %+v", sa.LocalFiles())
	}
	p, err := BuildPlan(sa, ha, "test")
	if err != nil {
		t.Fatal(err)
	}
	if pins := p.Benchmarks[0].LocalData; len(pins) != 1 || pins[0].Spec != "q.jsonl" || pins[0].Digest != want.Digest {
		t.Errorf("plan local_data = %+v, expected q.jsonl at %s", pins, want.Digest)
	}

	for _, f := range []string{"deep/er/q.jsonl", "judges/rubric.txt"} {
		t.Run("one byte of "+f, func(t *testing.T) {
			old, err := os.ReadFile(filepath.Join(b, f))
			if err != nil {
				t.Fatal(err)
			}
			changed := strings.Replace(string(old), "1", "7", 1)
			writeFiles(t, b, map[string]string{f: changed})
			defer writeFiles(t, b, map[string]string{f: string(old)})
			_, h := loadRecipeFile(t, filepath.Join(b, "r.cue"))
			if h.Recipe == ha.Recipe || h.Benchmarks["gsm8k"] == ha.Benchmarks["gsm8k"] {
				t.Errorf("one changed byte kept the hashes")
			}
		})
	}
}

// TestLocalDataUnreadable: without the data there is no honest hash: the
// recipe is refused at the field, with what the file system said.
func TestLocalDataUnreadable(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"r.cue": `services: m: {type: "api", url: "http://h/v1", model: "org/m"}
benchmarks: [{name: "gsm8k", params: data_path: "nope.jsonl", solver: {type: "simple", service: "m"}}]
`})
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.LoadFile(filepath.Join(dir, "r.cue"), nil)
	want := filepath.Join(dir, "r.cue") + `:2:49: benchmarks[0].params.data_path: dataset "nope.jsonl" cannot be read (stat ` + filepath.Join(dir, "nope.jsonl") + `: no such file or directory): local data is read when the recipe is loaded, since the hashes cover its content`
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nexpected %s", err, want)
	}
}

// TestLockedDataMoved: a lock pins content; the same content at another
// path is still what was locked (same hash), and the plan's pin follows it
// to where the recipe now names it.
func TestLockedDataMoved(t *testing.T) {
	plain, err := loadLocked(t, lockRecipe, nil)
	if err != nil {
		t.Fatal(err)
	}
	lk := testLock(t, plain)
	lk.Datasets[0].Sources = []plan.DataPin{{Spec: "data.jsonl", Digest: plain.LocalFiles()[0].Digest, Files: plain.LocalFiles()[0].Files}}
	at, err := loadLocked(t, lockRecipe, lk)
	if err != nil {
		t.Fatal(err)
	}
	h0, _, err := ComputeHashes(at)
	if err != nil {
		t.Fatal(err)
	}

	moved := strings.Replace(lockRecipe, `"data.jsonl"`, `"elsewhere/data.jsonl"`, 1)
	dir := t.TempDir()
	b, err := lk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(at.Path), "data.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"r.cue": moved, "r.lock.json": string(b), "elsewhere/data.jsonl": string(data)})
	s, h := loadRecipeFile(t, filepath.Join(dir, "r.cue"))
	if h.Recipe != h0.Recipe || h.Benchmarks["gsm8k"] != h0.Benchmarks["gsm8k"] {
		t.Errorf("moved data changed the locked hashes: %s → %s", h0.Recipe, h.Recipe)
	}
	p, err := BuildPlan(s, h, "test")
	if err != nil {
		t.Fatal(err)
	}
	if pins := p.Benchmarks[0].Data; len(pins) != 1 || pins[0].Spec != "elsewhere/data.jsonl" {
		t.Errorf("plan data pins = %+v, expected the lock's pin at elsewhere/data.jsonl", pins)
	}

	// Other content is a stale lock: under another path, said generally;
	// under the path locked, at the field.
	writeFiles(t, dir, map[string]string{"elsewhere/data.jsonl": strings.Replace(string(data), "1", "2", 1)})
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.LoadFile(filepath.Join(dir, "r.cue"), nil); err == nil || !strings.Contains(err.Error(), "benchmarks[0]: benchmark gsm8k's name, params, fewshot or local data changed since the lock") {
		t.Errorf("changed data under a lock: %v", err)
	}
	writeFiles(t, dir, map[string]string{"r.cue": lockRecipe, "data.jsonl": strings.Replace(string(data), "1", "2", 1)})
	_, err = l.LoadFile(filepath.Join(dir, "r.cue"), nil)
	if want := `r.cue:7:21: benchmarks[0].params.data_path: the content of "data.jsonl" (sha256:`; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ") is not what the lock "+filepath.Join(dir, "r.lock.json")+" pinned ("+plain.LocalFiles()[0].Digest+"): restore it, or run nel lock") {
		t.Errorf("changed data under a lock, at its locked path: %v", err)
	}
}
