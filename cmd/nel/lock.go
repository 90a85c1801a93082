package main

import (
	"fmt"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/compiler/pin"
	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/spf13/cobra"
)

const lockHelp = `Resolves everything a recipe leaves floating and writes it to a lock file
beside the recipe (suite.cue → suite.lock.json):

  - every benchmark's datasets, as the benchmark reads them: hf:// specs at
    the Hub commit they resolve to now, and every file's sha256; a
    harbor:// benchmark's tasks by their content; terminal-bench-v1's
    (and -hard's) repository at its default branch's head (git ls-remote)
    where params.git_revision names no commit (a gym:// environment
    serves its own items: the lock says it cannot pin them);
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

type lockOptions struct {
	overrides overrides
	output    string
	file      string
}

func newLockCmd(e *env) *cobra.Command {
	o := &lockOptions{}
	c := &cobra.Command{
		Use:   "lock [-O path=value]... FILE",
		Short: "pin datasets (revision + sha256) and images (registry digest) in FILE's lock",
		Long:  lockHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(e, c, "lock: expected exactly one recipe")
			}
			o.file = args[0]
			return o.run(c, e)
		},
	}
	addOverrides(c.Flags(), &o.overrides, "override a field before validation")
	c.Flags().StringVarP(&o.output, "output", "o", "", "write the lock to `FILE` instead of beside the recipe")
	return c
}

func (o *lockOptions) run(c *cobra.Command, e *env) error {
	l, err := compiler.NewLoader()
	if err != nil {
		return err
	}
	l.IgnoreLock = true // the lock is what is being made
	s, err := l.LoadFile(o.file, o.overrides)
	if err != nil {
		return err
	}
	lk, err := pin.Resolve(c.Context(), s, version, e.stderr)
	if err != nil {
		return err
	}
	b, err := lk.Marshal()
	if err != nil {
		return err
	}
	path := o.output
	if path == "" {
		path = compiler.LockPath(o.file)
	}
	if err := atomicfile.WriteFile(path, b); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if o.output != "" {
		fmt.Fprintf(e.stdout, "%s: written\n", path)
		return nil
	}
	// The hash the recipe has now, through the lock as every other
	// command will apply it.
	if err := s.ApplyLock(lk, path); err != nil {
		return fmt.Errorf("lock: the lock just written does not apply: %w", err)
	}
	h, _, err := compiler.ComputeHashes(s)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s: locked (recipe %s)\n", path, h.Recipe)
	return nil
}
