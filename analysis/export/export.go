// Package export writes a finished run where its users already look: Inspect
// evaluation logs (inspect.go), an MLflow file store or tracking server
// (mlflow.go, mlflowrest.go), a W&B run through W&B's HTTP API (wandb.go). It reads the run folder (eval.json,
// results.parquet, trajectories.parquet) and never writes into it; every id
// it writes derives from the run's plan hash, so exporting twice gives the
// same files and the same runs.
package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
)

// Options says what to export where.
type Options struct {
	// Run is the run folder (a recipe's output.dir).
	Run string
	// Dest is inspect or mlflow.
	Dest string
	// Out is the folder written into (inspect: the logs; mlflow: the file
	// store's mlruns/ goes under it). It must lie outside Run.
	Out string
	// Format is the Inspect log format: json (default) or eval (zip).
	Format string
	// TrackingURI, when http(s)://…, sends the MLflow export to that
	// tracking server's REST API instead of a file store.
	TrackingURI string
	// Experiment is the MLflow experiment's or the W&B project's name
	// (default "nel").
	Experiment string
	// Entity is the W&B entity (default: the API key's user).
	Entity string
	// Token is an MLflow bearer token or a W&B API key, read from the
	// environment by the caller (MLFLOW_TRACKING_TOKEN, WANDB_API_KEY),
	// never from a file or flag.
	Token string
	// Client is the HTTP client of the REST export (default
	// http.DefaultClient).
	Client *http.Client
}

// Dests are the destinations Export knows, for help and errors.
var Dests = []string{"inspect", "mlflow", "wandb"}

// Export writes the run's benchmarks to o.Dest and returns what it wrote:
// files, or the tracking server's run ids.
func Export(ctx context.Context, o Options) ([]string, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	run, err := loadRun(o.Run)
	if err != nil {
		return nil, err
	}
	if o.Out == "" {
		o.Out = "."
	}
	if o.writesFiles() {
		if err := outsideRun(o.Run, o.Out); err != nil {
			return nil, err
		}
	}
	switch o.Dest {
	case "inspect":
		return writeInspect(run, o)
	case "wandb":
		return postWandb(ctx, run, o)
	default:
		if strings.HasPrefix(o.TrackingURI, "http://") || strings.HasPrefix(o.TrackingURI, "https://") {
			return postMLflow(ctx, run, o)
		}
		if o.TrackingURI != "" {
			return nil, fmt.Errorf("--tracking-uri %q: want http(s)://host[:port] of an MLflow server; leave it out to write a file store under -o", o.TrackingURI)
		}
		return writeMLflowStore(run, o)
	}
}

// check refuses a destination nel does not know, and a setting the
// destination has no use for: it would be ignored, and the user expects
// it to count.
func (o Options) check() error {
	if !slices.Contains(Dests, o.Dest) {
		return fmt.Errorf("--dest %q: want one of %s", o.Dest, strings.Join(Dests, ", "))
	}
	unused := []struct {
		set         bool
		name, dests string
	}{
		{o.Format != "" && o.Dest != "inspect", "--format (format)", "inspect"},
		{o.TrackingURI != "" && o.Dest == "inspect", "--tracking-uri (tracking_uri)", "mlflow and wandb"},
		{o.Experiment != "" && o.Dest == "inspect", "--experiment (experiment_name, project)", "mlflow and wandb"},
		{o.Entity != "" && o.Dest != "wandb", "--entity (entity)", "wandb"},
	}
	for _, u := range unused {
		if u.set {
			return fmt.Errorf("--dest %s: %s is for %s only", o.Dest, u.name, u.dests)
		}
	}
	return nil
}

// writesFiles is whether the export writes under o.Out (not to a server).
func (o Options) writesFiles() bool {
	return o.Dest == "inspect" || (o.Dest == "mlflow" && o.TrackingURI == "")
}

// outsideRun refuses an output folder inside the run folder: an export
// never changes what it exports.
func outsideRun(runDir, out string) error {
	r, err1 := filepath.Abs(runDir)
	a, err2 := filepath.Abs(out)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if a == r || strings.HasPrefix(a, r+string(filepath.Separator)) {
		return fmt.Errorf("-o %s: inside the run folder %s, which an export never writes into: pick a folder outside it", out, runDir)
	}
	return nil
}

// runData is a run as the exporters read it: its benchmarks in key order.
type runData struct {
	dir     string
	benches []bench
}

// bench is one benchmark: its bundle, rows and trajectories (rows and
// trajectories sorted alike, by item index, item id and repeat).
type bench struct {
	dir    rundir.Bench
	bundle *metrics.Bundle
	rows   []results.Row
	trajs  map[metrics.RowKey]results.Trajectory
	// turns are an agentic benchmark's turns by sample; nil for others.
	turns map[metrics.RowKey][]results.Turn
}

// loadRun reads every benchmark folder of dir that holds an eval.json.
func loadRun(dir string) (*runData, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", dir, err)
	}
	run := &runData{dir: dir}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		bd := rundir.Dir(dir).Benchmark(e.Name())
		if _, err := os.Stat(bd.Bundle()); err != nil {
			continue
		}
		b, err := loadBench(bd)
		if err != nil {
			return nil, err
		}
		run.benches = append(run.benches, b)
	}
	if len(run.benches) == 0 {
		return nil, fmt.Errorf("no benchmark with %s under %s: run `nel run` or `nel-run merge` first", rundir.BundleFile, dir)
	}
	slices.SortFunc(run.benches, func(a, b bench) int { return strings.Compare(a.bundle.Benchmark, b.bundle.Benchmark) })
	return run, nil
}

func loadBench(bd rundir.Bench) (bench, error) {
	bs, err := metrics.ReadDir(bd.Bundle())
	if err != nil {
		return bench{}, fmt.Errorf("read %s: %w", bd.Bundle(), err)
	}
	b := bench{dir: bd, bundle: bs[0], trajs: map[metrics.RowKey]results.Trajectory{}}
	if b.rows, _, err = results.ReadRows(bd.Results()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return bench{}, fmt.Errorf("read %s: %w", bd.Results(), err)
	}
	trajs, _, err := results.ReadTrajectories(bd.Trajectories())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return bench{}, fmt.Errorf("read %s: %w", bd.Trajectories(), err)
	}
	for _, t := range trajs {
		b.trajs[metrics.RowKey{ItemID: t.ItemID, Repeat: t.Repeat}] = t
	}
	turns, _, err := results.ReadTurns(bd.Turns())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return bench{}, fmt.Errorf("read %s: %w", bd.Turns(), err)
	}
	b.turns = turnsBySample(turns)
	return b, nil
}

// id derives a stable identifier from parts: the same run exports under
// the same ids every time. n is the number of hex digits.
func id(n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])[:n]
}

// headline returns the bundle's headline value, ok false when undefined.
func headline(b *metrics.Bundle) (float64, bool) {
	if b.Headline.Value == nil {
		return 0, false
	}
	return *b.Headline.Value, true
}
