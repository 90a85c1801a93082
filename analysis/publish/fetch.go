package publish

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"github.com/nel-eval/nel/analysis/store"
	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/exitcode"
)

// FetchOptions say which recipe to fetch from where (nel fetch).
type FetchOptions struct {
	Hash     string   // sha256:<hex>, or the hex digits alone
	Store    string   // a directory or an http(s) URL
	Dest     string   // "" for ./<first 12 hex digits>
	DataDirs []string // folders holding copies of the recipe's local data (--data)
	Results  bool     // also fetch a published run into Dest/published/
	RunID    string   // with Results: the run ("" for the newest)
	TokenEnv string
	// NelVersion is this nel's, named when a recipe hashes differently.
	NelVersion string
}

// Fetch fetches a published recipe, verified, into o.Dest/recipe/ (and
// with o.Results its newest or o.RunID's run into o.Dest/published/), and
// says what landed where on stdout.
func Fetch(ctx context.Context, o FetchOptions, stdout, stderr io.Writer) error {
	hash, hex, err := ParseHash(o.Hash)
	if err != nil {
		return err
	}
	dest := o.Dest
	if dest == "" {
		dest = hex[:12]
	}
	st, err := store.Open(o.Store, store.Options{TokenEnv: o.TokenEnv})
	if err != nil {
		return exitcode.New(exitcode.Usage, fmt.Errorf("fetch: %w", err))
	}
	s, _, err := FetchVerified(ctx, st, hash, dest, Verify{DataDirs: o.DataDirs, NelVersion: o.NelVersion}, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: recipe %s (verified)\n", s.Path, hash)
	if o.Results {
		m, err := store.FetchResults(ctx, st, hash, o.RunID, filepath.Join(dest, "published"))
		if err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		fmt.Fprintf(stdout, "%s: run %s (%d files verified)\n", filepath.Join(dest, "published"), m.RunID, len(m.Files))
	}
	return nil
}

// ParseHash reads a recipe hash as a user types it (sha256:<hex> or the
// hex alone) and returns it in both forms; a malformed one is invalid
// input.
func ParseHash(arg string) (hash, hex string, err error) {
	hex, err = store.ParseHash(arg)
	if err != nil {
		return "", "", exitcode.New(exitcode.Usage, err)
	}
	return "sha256:" + hex, hex, nil
}

// Verify adjusts FetchVerified.
type Verify struct {
	DataDirs []string            // where else to look for local data, by digest
	Extra    []compiler.Override // applied after the published overrides (reproduce's output.dir)
	// NelVersion is this nel's, named when a recipe hashes differently.
	NelVersion string
}

var scoringVersionRE = regexp.MustCompile(`"nel_scoring_version":"([^"]*)"`)

// FetchVerified fetches the recipe hash from st into dest and loads it as
// it was published (its lock beside it, its overrides, its local data
// found by digest — here, under v.DataDirs or in the store's copy — then
// v.Extra), and refuses it unless it hashes to hash.
func FetchVerified(ctx context.Context, st store.Store, hash, dest string, v Verify, stderr io.Writer) (*compiler.Source, *store.Manifest, error) {
	m, err := store.FetchRecipe(ctx, st, hash, dest)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch: %w", err)
	}
	if m.Recipe == "" {
		return nil, nil, fmt.Errorf("fetch: %s's manifest names no recipe file", hash)
	}
	path := filepath.Join(dest, filepath.FromSlash(m.Recipe))
	moved, err := locateData(m, dest, filepath.Dir(path), v.DataDirs, stderr)
	if err != nil {
		return nil, nil, exitcode.New(exitcode.Usage, fmt.Errorf("fetch: %w", err))
	}
	if err := placeLock(dest, path); err != nil {
		return nil, nil, err
	}
	var ovs []compiler.Override
	for _, t := range m.Overrides {
		o, err := compiler.ParseOverride(t)
		if err != nil {
			return nil, nil, fmt.Errorf("fetch: the manifest's override %q: %w", t, err)
		}
		ovs = append(ovs, o)
	}
	s, err := load(path, append(append(ovs, moved...), v.Extra...))
	if err != nil {
		return nil, nil, fmt.Errorf("fetch: the published recipe does not load with this nel: %w", err)
	}
	h, _, err := compiler.ComputeHashes(s)
	if err != nil {
		return nil, nil, err
	}
	if h.Recipe != hash {
		return nil, nil, hashMismatch(hash, h.Recipe, dest, m, v.NelVersion)
	}
	return s, m, nil
}

// placeLock puts the lock, which travels as lock.json, beside the recipe
// at path, where every command finds it.
func placeLock(dest, path string) error {
	lk := filepath.Join(dest, "lock.json")
	if !fileExists(lk) {
		return nil
	}
	b, err := os.ReadFile(lk)
	if err != nil {
		return err
	}
	return os.WriteFile(compiler.LockPath(path), b, 0o644)
}

// hashMismatch explains a fetched recipe that hashes to got, not hash.
// The usual cause is a nel that scores differently: it says so.
func hashMismatch(hash, got, dest string, m *store.Manifest, nelVersion string) error {
	if c, err := os.ReadFile(filepath.Join(dest, "canonical.json")); err == nil {
		if sm := scoringVersionRE.FindSubmatch(c); sm != nil && string(sm[1]) != compiler.ScoringVersion {
			return fmt.Errorf("fetch: %s was published with nel scoring version %s; this nel (%s) scores with version %s, so its hash differs (%s): reproduce it with a nel of scoring version %s (the manifest says nel %s)",
				hash, sm[1], nelVersion, compiler.ScoringVersion, got, sm[1], m.NelVersion)
		}
	}
	return fmt.Errorf("fetch: the recipe fetched for %s hashes to %s: the store's recipe is not the published one (refused)", hash, got)
}
