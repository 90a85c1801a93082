package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
)

const lockRecipe = `
services: m: {type: "api", url: "http://h/v1", model: "org/m"}
services: v: {type: "vllm", model: "org/v", image: "nvcr.io#nvidia/vllm:25.01", port: 8000, node_pool: "gpu"}
sandboxes: sb: {type: "slurm", image: "reg.io/sb:1", node_pool: "cpu"}
benchmarks: [{
	name: "gsm8k"
	params: data_path: "data.jsonl"
	solver: {type: "simple", service: "m"}
}, {
	name: "humaneval"
	sandbox: "sb"
	solver: {type: "simple", service: "v"}
}]
cluster: {
	type: "slurm"
	walltime: "01:00:00"
	node_pools: gpu: {partition: "g", nodes: 1, ntasks_per_node: 1, gres: "gpu:1"}
	node_pools: cpu: {partition: "c", nodes: 1, ntasks_per_node: 1}
}
output: dir: "out"
`

// testLock is a lock that matches lockRecipe.
func testLock(t *testing.T, s *Source) *Lock {
	t.Helper()
	lk := &Lock{LockVersion: LockVersion, NelVersion: "v1"}
	for i := range s.Recipe.Benchmarks {
		in, err := BenchmarkInputs(s, i)
		if err != nil {
			t.Fatal(err)
		}
		lk.Datasets = append(lk.Datasets, LockedBenchmark{Benchmark: BenchmarkKey(s.Recipe, i), Inputs: in,
			Sources: []plan.DataPin{{Spec: "spec" + s.Recipe.Benchmarks[i].Name, Digest: "sha256:d" + s.Recipe.Benchmarks[i].Name}}})
	}
	for _, f := range ImageFields(s.Recipe) {
		lk.Images = append(lk.Images, LockedImage{Field: f.Field, Ref: f.Ref, Digest: "sha256:" + strings.Repeat("a", 64), Pinned: f.Ref + "@pinned"})
	}
	return lk
}

// loadLocked writes recipe (and lk, when not nil) into a directory and
// loads it as every command does.
func loadLocked(t *testing.T, recipe string, lk *Lock) (*Source, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "r.cue")
	if err := os.WriteFile(path, []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	// The recipe's local data: the compiler digests it.
	if err := os.WriteFile(filepath.Join(dir, "data.jsonl"), []byte(`{"question":"q","answer":"#### 1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if lk != nil {
		b, err := lk.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "r.lock.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	return l.LoadFile(path, nil)
}

func TestLockPath(t *testing.T) {
	for in, want := range map[string]string{
		"suite.cue": "suite.lock.json", "a/b.yaml": "a/b.lock.json", "x.json": "x.lock.json", "noext": "noext.lock.json",
	} {
		if got := LockPath(in); got != want {
			t.Errorf("LockPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLockImageFields(t *testing.T) {
	s, err := loadLocked(t, lockRecipe, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "services.v.image=nvcr.io#nvidia/vllm:25.01 sandboxes.sb.image=reg.io/sb:1"
	if got := imageFieldRefs(s); got != want {
		t.Errorf("ImageFields = %q, want %q", got, want)
	}
}

// TestLockHash: the lock is covered by the recipe hash, its data pins by
// the benchmark hash, and a recipe without a lock hashes as it always did.
func TestLockHash(t *testing.T) {
	plain, err := loadLocked(t, lockRecipe, nil)
	if err != nil {
		t.Fatal(err)
	}
	h0, _, err := ComputeHashes(plain)
	if err != nil {
		t.Fatal(err)
	}
	lk := testLock(t, plain)
	hashes := func(lk *Lock) Hashes {
		t.Helper()
		s, err := loadLocked(t, lockRecipe, lk)
		if err != nil {
			t.Fatal(err)
		}
		h, _, err := ComputeHashes(s)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h1 := hashes(lk)
	if h1.Recipe == h0.Recipe || h1.Benchmarks["gsm8k"] == h0.Benchmarks["gsm8k"] {
		t.Fatalf("a lock must change the recipe hash and the benchmark hashes: %v / %v", h0, h1)
	}
	if hashes(lk).Recipe != h1.Recipe {
		t.Fatal("the same lock must give the same hash")
	}

	// Another dataset digest: gsm8k's benchmark hash and the recipe hash
	// change, humaneval's stays.
	lk2 := testLock(t, plain)
	lk2.Datasets[0].Sources[0].Digest = "sha256:other"
	h2 := hashes(lk2)
	if h2.Recipe == h1.Recipe || h2.Benchmarks["gsm8k"] == h1.Benchmarks["gsm8k"] {
		t.Error("a dataset digest must be covered by the recipe and benchmark hash")
	}
	if h2.Benchmarks["humaneval"] != h1.Benchmarks["humaneval"] {
		t.Error("gsm8k's data must not change humaneval's benchmark hash")
	}

	// Another digest for the model server's image: the recipe hash (it
	// covers the whole lock), not the benchmark hashes (engine is not
	// methodology of a benchmark).
	lk3 := testLock(t, plain)
	lk3.Images[0].Digest = "sha256:" + strings.Repeat("b", 64)
	h3 := hashes(lk3)
	if h3.Recipe == h1.Recipe {
		t.Error("an image digest must be covered by the recipe hash")
	}
	if h3.Benchmarks["humaneval"] != h1.Benchmarks["humaneval"] {
		t.Error("the model server's image must not change a benchmark hash")
	}

	// The sandbox's pinned image is methodology (how code runs): it
	// changes humaneval's benchmark hash.
	lk4 := testLock(t, plain)
	lk4.Images[1].Pinned = "reg.io/sb@sha256:" + strings.Repeat("c", 64)
	lk4.Images[1].Digest = "sha256:" + strings.Repeat("c", 64)
	h4 := hashes(lk4)
	if h4.Benchmarks["humaneval"] == h1.Benchmarks["humaneval"] {
		t.Error("a sandbox image digest must change its benchmark's hash")
	}
}

// TestLockPins: a matching lock pins the recipe's images and the plan's data.
func TestLockPins(t *testing.T) {
	plain, err := loadLocked(t, lockRecipe, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := loadLocked(t, lockRecipe, testLock(t, plain))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Recipe.Services["v"].Image; got != "nvcr.io#nvidia/vllm:25.01@pinned" {
		t.Errorf("service image = %q, want the lock's pinned reference", got)
	}
	if got := s.Recipe.Sandboxes["sb"].Image; got != "reg.io/sb:1@pinned" {
		t.Errorf("sandbox image = %q", got)
	}
	p := mustPlan(t, s)
	if len(p.Benchmarks[0].Data) != 1 || p.Benchmarks[0].Data[0].Spec != "specgsm8k" || p.Benchmarks[0].Data[0].Digest != "sha256:dgsm8k" {
		t.Errorf("plan data = %+v", p.Benchmarks[0].Data)
	}
}

// TestLockDisagrees: every way a lock can disagree with its recipe is an
// error naming the field and the lock, never a silent re-resolution.
func TestLockDisagrees(t *testing.T) {
	plain, err := loadLocked(t, lockRecipe, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		recipe string
		edit   func(*Lock)
		want   string
	}{
		{"params changed", strings.Replace(lockRecipe, `data_path: "data.jsonl"`, `{data_path: "data.jsonl", split: "train"}`, 1), nil,
			`r.cue:5:14: benchmarks[0]: benchmark gsm8k's name, params, fewshot or local data changed since the lock`},
		{"image changed", strings.Replace(lockRecipe, "reg.io/sb:1", "reg.io/sb:2", 1), nil,
			`sandboxes.sb.image: "reg.io/sb:2", but the lock`},
		{"benchmark missing from the lock", lockRecipe, func(lk *Lock) { lk.Datasets = lk.Datasets[:1] },
			"benchmarks[1]: benchmark humaneval is not in the lock"},
		{"extra benchmark in the lock", lockRecipe, func(lk *Lock) {
			lk.Datasets = append(lk.Datasets, LockedBenchmark{Benchmark: "mmlu", Inputs: "x", Sources: []plan.DataPin{{Spec: "s"}}})
		}, "r.lock.json: datasets.mmlu: locked, but the recipe has no such benchmark"},
		{"image missing from the lock", lockRecipe, func(lk *Lock) { lk.Images = lk.Images[1:] },
			`services.v.image: "nvcr.io#nvidia/vllm:25.01" is not in the lock`},
		{"extra image in the lock", lockRecipe, func(lk *Lock) {
			lk.Images = append(lk.Images, LockedImage{Field: "cluster.eval_image", Ref: "x"})
		}, "r.lock.json: cluster.eval_image: locked, but the recipe has no such image"},
		{"another lock version", lockRecipe, func(lk *Lock) { lk.LockVersion = 99 }, "lock format 99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lk := testLock(t, plain)
			if tc.edit != nil {
				tc.edit(lk)
			}
			_, err := loadLocked(t, tc.recipe, lk)
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n%v\nwant it to contain %q", err, tc.want)
			}
			if _, ok := err.(Errors); !ok {
				t.Errorf("error is %T, want compiler.Errors (exit 2)", err)
			}
		})
	}
}

func TestCheckLocked(t *testing.T) {
	floating := func(ref string) bool { return strings.HasSuffix(ref, ":latest") }
	recipe := strings.Replace(lockRecipe, "reg.io/sb:1", "reg.io/sb:latest", 1)
	s, err := loadLocked(t, recipe, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := CheckLocked(s, floating)
	text := errs.Error()
	for _, want := range []string{
		`sandboxes.sb.image: "reg.io/sb:latest" is a floating tag and the recipe has no lock`,
		`services.v.image: "nvcr.io#nvidia/vllm:25.01" is not locked`,
		"benchmarks[0]: benchmark gsm8k's dataset is not locked",
		"benchmarks[1]: benchmark humaneval's dataset is not locked",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("CheckLocked:\n%s\nwant %q", text, want)
		}
	}
	for _, e := range errs {
		if e.Line == 0 {
			t.Errorf("%v: no line", e)
		}
	}

	locked, err := loadLocked(t, recipe, testLock(t, s))
	if err != nil {
		t.Fatal(err)
	}
	if errs := CheckLocked(locked, floating); len(errs) != 0 {
		t.Errorf("a fully locked recipe: %v", errs)
	}
	lk := testLock(t, s)
	lk.Images[0].Digest = "" // a squashfs path that was not readable
	locked, err = loadLocked(t, recipe, lk)
	if err != nil {
		t.Fatal(err)
	}
	if errs := CheckLocked(locked, floating); len(errs) != 1 || !strings.Contains(errs.Error(), "has no digest in the lock") {
		t.Errorf("an image without digest: %v", errs)
	}
}

// An ecs_fargate sandbox's nel_run_image is an image like its image: nel
// lock pins both, named or inline, and the plan's tasks copy nel-run from
// the pinned one.
func TestLockNelRunImage(t *testing.T) {
	const recipe = `
services: m: {type: "api", url: "http://h/v1", model: "org/m"}
sandboxes: f: {type: "ecs_fargate", cluster: "c", subnets: ["s"], image: "python:3.12-slim", nel_run_image: "reg.io/nel:1"}
benchmarks: [{
	name: "humaneval"
	sandbox: "f"
	solver: {type: "simple", service: "m"}
}, {
	name: "humaneval"
	sandbox: {type: "ecs_fargate", cluster: "c", subnets: ["s"], image: "python:3.12", nel_run_image: "reg.io/nel:2"}
	solver: {type: "simple", service: "m"}
}]
output: dir: "out"
`
	s, err := loadLocked(t, recipe, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "sandboxes.f.image=python:3.12-slim sandboxes.f.nel_run_image=reg.io/nel:1 " +
		"benchmarks[1].sandbox.image=python:3.12 benchmarks[1].sandbox.nel_run_image=reg.io/nel:2"
	if got := imageFieldRefs(s); got != want {
		t.Errorf("ImageFields = %q, want %q", got, want)
	}
	locked, err := loadLocked(t, recipe, testLock(t, s))
	if err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, locked)
	if a, b := p.Benchmarks[0].Sandbox.ECS.NelRunImage, p.Benchmarks[1].Sandbox.ECS.NelRunImage; a != "reg.io/nel:1@pinned" || b != "reg.io/nel:2@pinned" {
		t.Errorf("plan nel_run_image %q, %q; want the lock's pins", a, b)
	}
}

// imageFieldRefs is ImageFields as "field=ref" words.
func imageFieldRefs(s *Source) string {
	var out []string
	for _, f := range ImageFields(s.Recipe) {
		out = append(out, f.Field+"="+f.Ref)
	}
	return strings.Join(out, " ")
}
