package compiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/plan"
)

// LockVersion is the format version of lock files.
const LockVersion = 1

// Lock is a recipe's lock file (`nel lock`): what its floating references
// resolved to when it was locked. The recipe hash covers it, so a locked
// recipe and the same recipe unlocked are different methodologies.
type Lock struct {
	LockVersion int `json:"lock_version"`
	// NelVersion is the nel that wrote the lock.
	NelVersion string `json:"nel_version"`
	// Datasets pins, per benchmark, every dataset spec it reads.
	Datasets []LockedBenchmark `json:"datasets"`
	// Images pins every container image of the recipe.
	Images []LockedImage `json:"images"`
}

// LockedBenchmark is one benchmark's data as locked.
type LockedBenchmark struct {
	// Benchmark is the benchmark's key (gsm8k, gsm8k#2).
	Benchmark string `json:"benchmark"`
	// Inputs is the sha256 of what decides which data a benchmark reads
	// (its name, params and fewshot): when they change, the lock is stale.
	Inputs  string         `json:"inputs"`
	Sources []plan.DataPin `json:"sources"`
	// Revision is, for tasks built from a git repository on the node
	// (terminal-bench-v1…), the commit they are read at: the one
	// params.git_revision names, or the default branch's head when
	// locked.
	Revision string `json:"revision,omitempty"`
}

// LockedImage is one container image as locked.
type LockedImage struct {
	// Field is where the recipe names the image: services.vllm.image.
	Field string `json:"field"`
	// Ref is the reference as the recipe writes it.
	Ref string `json:"ref"`
	// Digest is the registry's manifest digest, or a squashfs file's
	// sha256 for a path image.
	Digest string `json:"digest"`
	// Pinned is the reference the job uses: Ref pinned to Digest (a path
	// image stays its path).
	Pinned string `json:"pinned"`
}

// LockPath is where the lock of the recipe at path lives: beside it, with
// the recipe's extension replaced by .lock.json (suite.cue → suite.lock.json).
func LockPath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".lock.json"
}

// ReadLock reads a lock file.
func ReadLock(path string) (*Lock, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lk Lock
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&lk); err != nil {
		return nil, Errors{{File: path, Msg: fmt.Sprintf("not a nel lock file: %v", err)}}
	}
	if lk.LockVersion != LockVersion {
		return nil, Errors{{File: path, Path: "lock_version", Msg: fmt.Sprintf("lock format %d; this nel reads %d (run nel lock again)", lk.LockVersion, LockVersion)}}
	}
	return &lk, nil
}

// Marshal renders the lock as it is written: indented JSON in a fixed
// order, so that locking the same inputs twice gives the same bytes.
func (lk *Lock) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(lk, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ImageField is one place a recipe names a container image.
type ImageField struct {
	Field string
	Ref   string
	path  []any
	set   func(string) // writes the pinned reference into the Recipe
}

// ImageFields lists the recipe's container images in a fixed order:
// services, then sandboxes, then benchmarks' inline sandboxes, then the
// cluster's eval image, then the balancers of services' instances
// (balancerImageFields), then the harness benchmarks' images it does not
// set (harnessImageFields).
func ImageFields(r *Recipe) []ImageField {
	var out []ImageField
	for _, name := range sortedKeys(r.Services) {
		s := r.Services[name]
		if s.Image != "" {
			out = append(out, ImageField{Field: "services." + name + ".image", Ref: s.Image,
				path: []any{"services", name, "image"}, set: func(v string) { pinCommandImage(s, v); s.Image = v }})
		}
	}
	for _, name := range sortedKeys(r.Sandboxes) {
		sb := r.Sandboxes[name]
		if sb.Image != "" {
			out = append(out, ImageField{Field: "sandboxes." + name + ".image", Ref: sb.Image,
				path: []any{"sandboxes", name, "image"}, set: func(v string) { sb.Image = v }})
		}
		// An ecs_fargate task copies nel-run from this image: pinned, the
		// tasks run the nel-run that was locked.
		if sb.NelRunImage != "" {
			out = append(out, ImageField{Field: "sandboxes." + name + ".nel_run_image", Ref: sb.NelRunImage,
				path: []any{"sandboxes", name, "nel_run_image"}, set: func(v string) { sb.NelRunImage = v }})
		}
	}
	for i, b := range r.Benchmarks {
		if m, ok := b.Sandbox.(map[string]any); ok {
			for _, key := range []string{"image", "nel_run_image"} {
				if img, _ := m[key].(string); img != "" {
					out = append(out, ImageField{Field: fmt.Sprintf("benchmarks[%d].sandbox.%s", i, key), Ref: img,
						path: []any{"benchmarks", i, "sandbox", key}, set: func(v string) { m[key] = v }})
				}
			}
		}
	}
	if r.Cluster.EvalImage != "" {
		out = append(out, ImageField{Field: "cluster.eval_image", Ref: r.Cluster.EvalImage,
			path: []any{"cluster", "eval_image"}, set: func(v string) { r.Cluster.EvalImage = v }})
	}
	out = append(out, balancerImageFields(r)...)
	return append(out, harnessImageFields(r)...)
}

// BenchmarkInputs is the sha256 of what decides which data benchmark i
// reads: its name, params and fewshot count, local datasets by their
// content (data moved elsewhere is still what was locked).
func BenchmarkInputs(s *Source, i int) (string, error) {
	b := s.Recipe.Benchmarks[i]
	in := map[string]any{"name": b.Name, "params": dataHashParams(s, i), "fewshot": b.Fewshot}
	if b.BYOB != nil {
		in["byob"] = byobMethod(s, i)
	}
	// A harbor:// benchmark's tasks are its data: a lock made before they
	// changed is stale.
	if h := harborMethod(s, i); h != nil {
		in["harbor"] = h
	}
	c, err := Canonical(in)
	if err != nil {
		return "", err
	}
	return HashOf(c), nil
}

// applyLock reads the lock beside the recipe, if any, checks that it was
// made for this recipe, and pins the recipe's images to it. Every
// disagreement is an error: a stale lock is never silently re-resolved.
func (s *Source) applyLock() error {
	path := LockPath(s.Path)
	lk, err := ReadLock(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		var errs Errors
		if errors.As(err, &errs) {
			return errs
		}
		return fmt.Errorf("read lock %s: %w", path, err)
	}
	return s.ApplyLock(lk, path)
}

// ApplyLock checks that lk (read from path) was made for this recipe and
// pins the recipe's images and data to it. LoadFile does this with the
// lock beside the recipe; nel publish and reproduce with a copy.
func (s *Source) ApplyLock(lk *Lock, path string) error {
	c := &ruleChecker{s: s, r: s.Recipe}
	again := fmt.Sprintf("run nel lock %s again", s.Path)

	images := map[string]LockedImage{}
	for _, im := range lk.Images {
		images[im.Field] = im
	}
	fields := ImageFields(s.Recipe)
	for _, f := range fields {
		im, ok := images[f.Field]
		switch {
		case !ok:
			c.at(fmt.Sprintf("%q is not in the lock %s (the recipe changed since it was locked): %s", f.Ref, path, again), f.path...)
		case im.Ref != f.Ref:
			c.at(fmt.Sprintf("%q, but the lock %s pinned %q: %s", f.Ref, path, im.Ref, again), f.path...)
		}
	}
	for _, im := range lk.Images {
		if !slices.ContainsFunc(fields, func(f ImageField) bool { return f.Field == im.Field }) {
			c.errs = append(c.errs, Error{File: path, Path: im.Field, Msg: "locked, but the recipe has no such image: " + again})
		}
	}

	data := map[string]LockedBenchmark{}
	for _, d := range lk.Datasets {
		data[d.Benchmark] = d
	}
	pins := make([][]plan.DataPin, len(s.Recipe.Benchmarks))
	for i := range s.Recipe.Benchmarks {
		key := BenchmarkKey(s.Recipe, i)
		d, ok := data[key]
		if !ok {
			c.at(fmt.Sprintf("benchmark %s is not in the lock %s (the recipe changed since it was locked): %s", key, path, again), "benchmarks", i)
			continue
		}
		delete(data, key)
		in, err := BenchmarkInputs(s, i)
		if err != nil {
			return err
		}
		if in != d.Inputs {
			if !c.localDataChanged(i, d.Sources, path, again) {
				c.at(fmt.Sprintf("benchmark %s's name, params, fewshot or local data changed since the lock %s was made, so the data it reads may differ: %s", key, path, again), "benchmarks", i)
			}
			continue
		}
		if t := s.harbor[i]; t.Git != nil {
			c.lockedCommit(i, d, path, again)
			continue
		}
		if _, unloaded := UnloadedData(s, i); len(d.Sources) == 0 && !unloaded {
			c.errs = append(c.errs, Error{File: path, Path: "datasets." + key, Msg: "no dataset sources: " + again})
		}
		pins[i] = relocatePins(s, i, d.Sources)
	}
	for _, key := range slices.Sorted(maps.Keys(data)) {
		c.errs = append(c.errs, Error{File: path, Path: "datasets." + key, Msg: "locked, but the recipe has no such benchmark: " + again})
	}
	if len(c.errs) > 0 {
		return c.errs.sorted().truncated()
	}

	for _, f := range fields {
		f.set(images[f.Field].Pinned)
	}
	s.Lock, s.LockFile, s.dataPins = lk, path, pins
	return nil
}

// CheckLocked refuses what `nel compile --locked` cannot guarantee: no
// lock, a floating image tag, an image or dataset the lock does not pin.
// Each error names the field to lock.
func CheckLocked(s *Source, floating func(ref string) bool) Errors {
	c := &ruleChecker{s: s, r: s.Recipe}
	lockCmd := "nel lock " + s.Path
	if s.Lock == nil {
		for _, f := range ImageFields(s.Recipe) {
			if floating(f.Ref) {
				c.at(fmt.Sprintf("%q is a floating tag and the recipe has no lock: run %s to pin it to a digest", f.Ref, lockCmd), f.path...)
			} else {
				c.at(fmt.Sprintf("%q is not locked (no %s): run %s", f.Ref, LockPath(s.Path), lockCmd), f.path...)
			}
		}
		for i, b := range s.Recipe.Benchmarks {
			c.at(fmt.Sprintf("benchmark %s's dataset is not locked (no %s): run %s to pin its revision and sha256", b.Name, LockPath(s.Path), lockCmd), "benchmarks", i)
		}
		return c.errs.sorted().truncated()
	}
	for _, im := range s.Lock.Images {
		if im.Digest == "" {
			c.errs = append(c.errs, Error{File: s.LockFile, Path: im.Field, Msg: fmt.Sprintf("%q has no digest in the lock (a path that was not readable when locked?): pin it, or run %s where it is readable", im.Ref, lockCmd)})
		}
	}
	return c.errs.sorted().truncated()
}

// lockMethod is the part of a lock the recipe hash covers: every pin, and
// the nel that resolved them.
func lockMethod(lk *Lock) map[string]any {
	if lk == nil {
		return nil
	}
	images := make([]any, len(lk.Images))
	for i, im := range lk.Images {
		images[i] = map[string]any{"field": im.Field, "ref": im.Ref, "digest": im.Digest}
	}
	data := make([]any, len(lk.Datasets))
	for i, d := range lk.Datasets {
		data[i] = map[string]any{"benchmark": d.Benchmark, "sources": pinsMethod(d.Sources)}
		if d.Revision != "" {
			// Only a git-sourced benchmark has the key.
			data[i].(map[string]any)["revision"] = d.Revision
		}
	}
	return map[string]any{"lock_version": lk.LockVersion, "nel_version": lk.NelVersion, "images": images, "datasets": data}
}

// pinsMethod is what a benchmark's hash covers of its pinned data: which
// spec, at which revision, with which content. A local spec is a path, so
// its content alone counts.
func pinsMethod(pins []plan.DataPin) []any {
	out := make([]any, len(pins))
	for i, p := range pins {
		spec := p.Spec
		if dataset.IsLocal(spec) {
			spec = ""
		}
		out[i] = map[string]any{"spec": spec, "revision": p.Revision, "digest": p.Digest}
	}
	return out
}

// UnloadedData says where benchmark i's items come from when nel-run loads
// no dataset for it, for nel lock to say so: a harness (its own data, in
// its image), a harbor:// folder of tasks (read when the recipe loads; its
// content digest is in the hashes already) or a gym:// environment (it
// serves its own items, which nel cannot pin). ok is false for every other
// benchmark.
func UnloadedData(s *Source, i int) (what string, ok bool) {
	if IsHarness(s.Recipe.Benchmarks[i]) {
		return "the harness reads its own data, in its image (pinned below)", true
	}
	if t, isHarbor := s.harbor[i]; isHarbor {
		if t.Digest == "" {
			return fmt.Sprintf("harbor://%s is not in %s: not pinned (nel compile refuses it)", t.Dataset, t.Dir), true
		}
		tasks := "tasks"
		if t.Tasks == 1 {
			tasks = "task"
		}
		return fmt.Sprintf("%d harbor %s in %s → %s (their content, in the recipe hash)", t.Tasks, tasks, t.Dir, t.Digest), true
	}
	if strings.HasPrefix(s.Recipe.Benchmarks[i].Name, "gym://") {
		return "the gym environment serves its own items: not pinned (an image it runs from is pinned below)", true
	}
	return "", false
}
