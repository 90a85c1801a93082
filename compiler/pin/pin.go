// Package pin resolves what a recipe leaves floating into its lock (nel
// lock): every benchmark's datasets to the revision and sha256 nel-run will
// load, every container image to its registry digest. Package compiler
// reads and applies a lock; this package makes one, reaching the network
// (the Hugging Face Hub, container registries) as the compiler never does.
package pin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/compiler/registry"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/gitrev"
	"github.com/nel-eval/nel/runtime/provenance"
)

// Resolve pins s's datasets and images and returns the lock, saying each
// pin on w. s must be loaded without its lock (Loader.IgnoreLock), so that
// the lock it had is replaced, not applied.
func Resolve(ctx context.Context, s *compiler.Source, nelVersion string, w io.Writer) (*compiler.Lock, error) {
	lk := &compiler.Lock{LockVersion: compiler.LockVersion, NelVersion: nelVersion, Datasets: []compiler.LockedBenchmark{}, Images: []compiler.LockedImage{}}
	if err := lockDatasets(ctx, s, lk, w); err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := lockImages(ctx, s, lk, log, w); err != nil {
		return nil, err
	}
	return lk, nil
}

// Floating says an image reference names no fixed content: a registry
// image with no digest whose tag is "latest" (written or implied). It is
// compiler.CheckLocked's test for nel compile --locked and nel run --locked.
func Floating(ref string) bool {
	r, err := registry.Parse(ref)
	return err == nil && !r.IsPath() && r.Floating()
}

// recordingLoader loads through a dataset.Loader and keeps what it loaded.
type recordingLoader struct {
	l   *dataset.Loader
	mu  sync.Mutex
	got []*dataset.Dataset
}

func (r *recordingLoader) Load(ctx context.Context, spec string, opts dataset.LoadOptions) (*dataset.Dataset, error) {
	ds, err := r.l.Load(ctx, spec, opts)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.got = append(r.got, ds)
	r.mu.Unlock()
	return ds, nil
}

// lockDatasets loads every benchmark's data the way nel-run will and
// records each spec it read.
func lockDatasets(ctx context.Context, s *compiler.Source, lk *compiler.Lock, w io.Writer) error {
	for i, b := range s.Recipe.Benchmarks {
		key := compiler.BenchmarkKey(s.Recipe, i)
		if url, rev, ok := compiler.GitTasks(s, i); ok {
			if err := lockCommit(ctx, s, i, key, url, rev, lk, w); err != nil {
				return err
			}
			continue
		}
		if what, ok := compiler.UnloadedData(s, i); ok {
			in, err := compiler.BenchmarkInputs(s, i)
			if err != nil {
				return err
			}
			lk.Datasets = append(lk.Datasets, compiler.LockedBenchmark{Benchmark: key, Inputs: in})
			fmt.Fprintf(w, "nel: %s: %s\n", key, what)
			continue
		}
		def, ok, err := compiler.Definition(s, i)
		if err != nil {
			return exitcode.Usagef("lock: benchmarks[%d]: %w", i, err)
		}
		if !ok {
			return exitcode.Usagef("lock: benchmarks[%d]: %s is not a built-in benchmark", i, b.Name)
		}
		rec := &recordingLoader{l: dataset.NewLoader(dataset.OptionsFromEnv(s.Dir))}
		if _, err := def.Load(ctx, rec, b.Params); err != nil {
			return fmt.Errorf("lock: benchmarks[%d] (%s): %w", i, key, err)
		}
		in, err := compiler.BenchmarkInputs(s, i)
		if err != nil {
			return err
		}
		pins := dataset.PinsOf(rec.got)
		lk.Datasets = append(lk.Datasets, compiler.LockedBenchmark{Benchmark: key, Inputs: in, Sources: pins})
		for _, p := range pins {
			at := ""
			if p.Revision != "" {
				at = " @ " + p.Revision
			}
			fmt.Fprintf(w, "nel: %s: %s%s → %s (%d files)\n", key, p.Spec, at, p.Digest, len(p.Files))
		}
	}
	return nil
}

// lockImages pins every image to its registry digest (or a squashfs
// path to its file's sha256).
func lockImages(ctx context.Context, s *compiler.Source, lk *compiler.Lock, log *slog.Logger, w io.Writer) error {
	client := &registry.Client{Logger: log}
	for _, f := range compiler.ImageFields(s.Recipe) {
		ref, err := registry.Parse(f.Ref)
		if err != nil {
			return exitcode.Usagef("lock: %s: %w", f.Field, err)
		}
		im := compiler.LockedImage{Field: f.Field, Ref: f.Ref}
		if ref.IsPath() {
			p := ref.Path
			if !filepath.IsAbs(p) {
				p = filepath.Join(s.Dir, p)
			}
			sum, err := provenance.FileSHA256(p)
			if err != nil {
				// The image lives on the compute nodes' file system: the lock
				// records that it could not pin it (compile --locked refuses).
				fmt.Fprintf(w, "nel: %s: %s is not readable here (%v): not pinned\n", f.Field, f.Ref, err)
			}
			im.Digest, im.Pinned = sum, f.Ref
		} else {
			d, err := client.Resolve(ctx, ref)
			if err != nil {
				return fmt.Errorf("lock: %s: %w", f.Field, err)
			}
			im.Digest, im.Pinned = d, ref.Pinned(d)
		}
		if im.Digest != "" {
			fmt.Fprintf(w, "nel: %s: %s → %s\n", f.Field, f.Ref, im.Pinned)
		}
		lk.Images = append(lk.Images, im)
	}
	return nil
}

// lockCommit pins benchmark i's tasks, built from the git repository at
// url on the node, to a commit: the recipe's own (rev), or the default
// branch's head now, which is what NeMo Evaluator's clone reads.
func lockCommit(ctx context.Context, s *compiler.Source, i int, key, url, rev string, lk *compiler.Lock, w io.Writer) error {
	if rev == "" {
		head, err := gitrev.Head(ctx, url)
		if err != nil {
			return fmt.Errorf("lock: benchmarks[%d] (%s): %w", i, key, err)
		}
		rev = head
	}
	in, err := compiler.BenchmarkInputs(s, i)
	if err != nil {
		return err
	}
	lk.Datasets = append(lk.Datasets, compiler.LockedBenchmark{Benchmark: key, Inputs: in, Revision: rev})
	fmt.Fprintf(w, "nel: %s: %s @ %s (its tasks, converted on the node)\n", key, gitrev.Redact(url), rev)
	return nil
}
