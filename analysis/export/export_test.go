package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/nel-eval/nel/runtime/merge"
	"github.com/nel-eval/nel/runtime/merge/mergetest"
	"github.com/nel-eval/nel/runtime/metrics"
)

// fixtures holds the runs fixtureRun merged, by fail rate, under one
// folder TestMain removes: the tests only read them, and each costs a
// second to write.
var fixtures struct {
	sync.Mutex
	root string
	runs map[float64]fixture
}

type fixture struct {
	dir    string
	bundle *metrics.Bundle
}

func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "nel-export-test-")
	if err != nil {
		panic(err)
	}
	fixtures.root, fixtures.runs = root, map[float64]fixture{}
	code := m.Run()
	os.RemoveAll(root)
	os.Exit(code)
}

// fixtureRun writes and merges a small run (once per failRate): 40 items
// × 2 repeats of gsm8k over 2 shards, failRate of its samples failed (half
// of those for infrastructure reasons).
func fixtureRun(t *testing.T, failRate float64) (string, *metrics.Bundle) {
	t.Helper()
	fixtures.Lock()
	defer fixtures.Unlock()
	if f, ok := fixtures.runs[failRate]; ok {
		return f.dir, f.bundle
	}
	dir := filepath.Join(fixtures.root, fmt.Sprintf("fail-%g", failRate), "run")
	p, _, err := mergetest.Write(dir, mergetest.Options{Items: 40, Repeats: 2, Shards: 2, TextBytes: 120, FailRate: failRate})
	if err != nil {
		t.Fatal(err)
	}
	sums, err := merge.Merge(merge.Options{Plan: p, OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	fixtures.runs[failRate] = fixture{dir, sums[0].Bundle}
	return dir, sums[0].Bundle
}

// treeHash hashes every file's path and bytes under dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	files := readTree(t, dir)
	h := sha256.New()
	for _, name := range sortedKeys(files) {
		h.Write([]byte(name + "\x00"))
		h.Write(files[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestExportNeverWritesTheRunAndIsIdempotent(t *testing.T) {
	run, _ := fixtureRun(t, 0.02)
	before := treeHash(t, run)
	for _, o := range []Options{{Dest: "inspect"}, {Dest: "inspect", Format: "eval"}, {Dest: "mlflow"}} {
		o.Run = run
		out1, out2 := t.TempDir(), t.TempDir()
		o.Out = out1
		if _, err := Export(context.Background(), o); err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		// The second export goes elsewhere: the file store's paths are
		// absolute in its metas, so compare what differs by folder only.
		o.Out = out2
		if _, err := Export(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		a, b := readTree(t, out1), readTree(t, out2)
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("%s: exports wrote %d and %d files", o.Dest, len(a), len(b))
		}
		for name, data := range a {
			if want := strings.ReplaceAll(string(data), out1, out2); want != string(b[name]) {
				t.Errorf("%s %s: the second export differs", o.Dest, name)
			}
		}
		// And once more into the same folder: the same files again.
		o.Out = out1
		if _, err := Export(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if again := readTree(t, out1); len(again) != len(a) {
			t.Errorf("%s: re-export into the same folder left %d files, first %d", o.Dest, len(again), len(a))
		}
	}
	if after := treeHash(t, run); after != before {
		t.Error("the run folder changed during export")
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExportRefusals(t *testing.T) {
	run, _ := fixtureRun(t, 0.02)
	cases := []struct {
		o    Options
		want string
	}{
		{Options{Dest: "wandb", Out: t.TempDir()}, "--dest wandb: no API key: set WANDB_API_KEY"},
		{Options{Dest: "wandb", Out: t.TempDir(), Token: "k", TrackingURI: "wandb.example"}, `--tracking-uri "wandb.example": want the http(s):// URL of a W&B server`},
		{Options{Dest: "tensorboard"}, `--dest "tensorboard": want one of inspect, mlflow, wandb`},
		{Options{Dest: "inspect", Format: "yaml", Out: t.TempDir()}, `--format "yaml": want json or eval`},
		{Options{Dest: "inspect", Out: filepath.Join(run, "exported")}, "inside the run folder"},
		{Options{Dest: "mlflow", TrackingURI: "databricks", Out: t.TempDir()}, `--tracking-uri "databricks": want http(s)://`},
		{Options{Dest: "mlflow", Run: t.TempDir(), Out: t.TempDir()}, "no benchmark with eval.json under"},
		{Options{Dest: "mlflow", Format: "eval"}, "--dest mlflow: --format (format) is for inspect only"},
		{Options{Dest: "inspect", TrackingURI: "http://x"}, "--dest inspect: --tracking-uri (tracking_uri) is for mlflow and wandb only"},
		{Options{Dest: "inspect", Experiment: "x"}, "--dest inspect: --experiment (experiment_name, project) is for mlflow and wandb only"},
		{Options{Dest: "mlflow", Entity: "team"}, "--dest mlflow: --entity (entity) is for wandb only"},
	}
	for _, c := range cases {
		if c.o.Run == "" {
			c.o.Run = run
		}
		_, err := Export(context.Background(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want it to say %q", c.o, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(run, "exported")); err == nil {
		t.Error("a refused export created its folder inside the run")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
