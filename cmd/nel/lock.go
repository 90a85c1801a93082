package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/compiler/registry"
	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/provenance"
)

const lockHelp = `Resolves everything a recipe leaves floating and writes it to a lock file
beside the recipe (suite.cue → suite.lock.json):

  - every benchmark's datasets, as the benchmark reads them: hf:// specs at
    the Hub commit they resolve to now, and every file's sha256;
  - every container image (services.*.image, sandboxes.*.image,
    cluster.eval_image) to the manifest digest its registry serves for the
    tag, through the registry's HTTP API and its token auth (credentials
    from ~/.docker/config.json or enroot's .credentials); a squashfs path
    to its file's sha256;
  - the nel version.

From then on every command that reads the recipe reads the lock too: the
recipe hash covers it, compiled jobs use the pinned images, nel-run loads
each dataset at its locked revision and refuses content with another
sha256, and a lock that no longer matches the recipe is an error (never a
silent re-resolution). nel compile --locked refuses a recipe with anything
unlocked. Run nel lock again after changing the recipe's benchmarks or
images; it replaces the lock.

Datasets are read as nel-run reads them (HF_HOME, HF_TOKEN, HF_ENDPOINT,
HF_HUB_OFFLINE apply). Registries are spoken to over https, except
loopback hosts and those in $NEL_REGISTRY_INSECURE (comma-separated).`

func cmdLock(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var ovs overrides
	fs := newFlags("lock", "[-O path=value]... FILE", lockHelp, stderr)
	fs.Var(&ovs, "O", "override a field before validation: path.to.field=value (repeatable)")
	out := fs.String("o", "", "write the lock to `FILE` instead of beside the recipe")
	files, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		fs.Usage()
		return &exitError{2, errors.New("lock: expected exactly one recipe")}
	}
	l, err := compiler.NewLoader()
	if err != nil {
		return err
	}
	l.IgnoreLock = true
	s, err := l.LoadFile(files[0], ovs)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	lk := &compiler.Lock{LockVersion: compiler.LockVersion, NelVersion: version, Datasets: []compiler.LockedBenchmark{}, Images: []compiler.LockedImage{}}

	if err := lockDatasets(ctx, s, lk, stderr); err != nil {
		return err
	}
	if err := lockImages(ctx, s, lk, log, stderr); err != nil {
		return err
	}
	b, err := lk.Marshal()
	if err != nil {
		return err
	}
	path := *out
	if path == "" {
		path = compiler.LockPath(files[0])
	}
	if err := atomicfile.WriteFile(path, b); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	// The hash the recipe has now, through the lock as every other
	// command will apply it.
	if *out == "" {
		if err := s.ApplyLock(lk, path); err != nil {
			return fmt.Errorf("lock: the lock just written does not apply: %w", err)
		}
		h, _, err := compiler.ComputeHashes(s)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: locked (recipe %s)\n", path, h.Recipe)
		return nil
	}
	fmt.Fprintf(stdout, "%s: written\n", path)
	return nil
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
func lockDatasets(ctx context.Context, s *compiler.Source, lk *compiler.Lock, stderr io.Writer) error {
	for i, b := range s.Recipe.Benchmarks {
		key := compiler.BenchmarkKey(s.Recipe, i)
		def, ok := bench.Lookup(b.Name)
		if !ok {
			return &exitError{2, fmt.Errorf("lock: benchmarks[%d]: %s is not a built-in benchmark", i, b.Name)}
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
			fmt.Fprintf(stderr, "nel: %s: %s%s → %s (%d files)\n", key, p.Spec, at, p.Digest, len(p.Files))
		}
	}
	return nil
}

// lockImages pins every image to its registry digest (or a squashfs
// path to its file's sha256).
func lockImages(ctx context.Context, s *compiler.Source, lk *compiler.Lock, log *slog.Logger, stderr io.Writer) error {
	client := &registry.Client{Logger: log}
	for _, f := range compiler.ImageFields(s.Recipe) {
		ref, err := registry.Parse(f.Ref)
		if err != nil {
			return &exitError{2, fmt.Errorf("lock: %s: %w", f.Field, err)}
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
				fmt.Fprintf(stderr, "nel: %s: %s is not readable here (%v): not pinned\n", f.Field, f.Ref, err)
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
			fmt.Fprintf(stderr, "nel: %s: %s → %s\n", f.Field, f.Ref, im.Pinned)
		}
		lk.Images = append(lk.Images, im)
	}
	return nil
}

// floatingImage says an image reference names no fixed content: a
// registry image with no digest whose tag is "latest" (written or implied).
func floatingImage(ref string) bool {
	r, err := registry.Parse(ref)
	return err == nil && !r.IsPath() && r.Floating()
}
