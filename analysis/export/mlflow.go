package export

import (
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/rundir"
)

// DefaultExperiment is the MLflow experiment a run goes to unless told.
const DefaultExperiment = "nel"

// mlflowRun is what one nel run becomes in MLflow: one MLflow run holding
// every benchmark, its metrics named <benchmark>/<metric>.
type mlflowRun struct {
	// exportID names the nel run (its plans' hashes): the file store's run
	// id, and the tag a tracking server's run is found again by.
	exportID string
	name     string
	start    int64 // ms since the epoch
	end      int64
	status   string // FINISHED, or FAILED when a benchmark is INVALID
	metrics  []kv[float64]
	params   []kv[string]
	tags     []kv[string]
	// artifacts maps an artifact path (gsm8k/results.parquet) to the file.
	artifacts []kv[string]
}

type kv[V any] struct {
	key string
	val V
}

// Tag keys nel sets on its MLflow runs.
const (
	tagExportID   = "nel.export_id"
	tagRecipeHash = "nel.recipe_hash"
	tagPlanHash   = "nel.plan_hash"
	tagRunName    = "mlflow.runName"
	tagSource     = "mlflow.source.name"
)

// mlflowRunOf gathers what an MLflow (or W&B) run says of a nel run; key
// names a nel metric in the destination (metricKey for MLflow).
func mlflowRunOf(run *runData, key func(string) string) mlflowRun {
	var plans, recipes []string
	m := mlflowRun{name: filepath.Base(mustAbs(run.dir)), status: "FINISHED"}
	for _, b := range run.benches {
		bu, p := b.bundle, b.bundle.Provenance
		plans, recipes = appendNew(plans, p.PlanHash), appendNew(recipes, p.RecipeHash)
		m.start, m.end = minTime(m.start, p.StartedAt), max(m.end, millis(p.EndedAt))
		pre := bu.Benchmark + "/"
		m.metrics = append(m.metrics, kv[float64]{pre + "n_items", float64(bu.ScoredItems)},
			kv[float64]{pre + "infra_error_rate", bu.Validity.Rate})
		if bu.Validity.Invalid {
			// No score for an INVALID benchmark, as in nel's reports.
			m.status = "FAILED"
			m.tags = append(m.tags, kv[string]{"nel.invalid." + bu.Benchmark, clip(bu.Validity.Reason, 5000)})
		} else {
			for _, s := range bu.Metrics {
				if s.Value == nil {
					continue
				}
				m.metrics = append(m.metrics, kv[float64]{pre + key(s.Metric), *s.Value})
				if s.Metric == bu.Headline.Metric && s.CLT != nil {
					m.metrics = append(m.metrics, kv[float64]{pre + "ci_low", s.CLT.Lo}, kv[float64]{pre + "ci_high", s.CLT.Hi})
				}
			}
		}
		m.params = append(m.params, kv[string]{pre + "repeats", strconv.Itoa(bu.Repeats)},
			kv[string]{pre + "dataset_digest", p.DatasetDigest}, kv[string]{pre + "benchmark_hash", p.BenchmarkHash})
		if !slices.ContainsFunc(m.params, func(x kv[string]) bool { return x.key == "model" }) {
			m.params = append(m.params, kv[string]{"model", p.Model}, kv[string]{"nel_version", p.NelVersion},
				kv[string]{"scoring_version", p.ScoringVersion})
		}
		for _, f := range []string{b.dir.Bundle(), b.dir.Results()} {
			if _, err := os.Stat(f); err == nil {
				m.artifacts = append(m.artifacts, kv[string]{bu.Benchmark + "/" + filepath.Base(f), f})
			}
		}
	}
	m.exportID = id(32, plans...)
	m.tags = append(m.tags, kv[string]{tagExportID, m.exportID}, kv[string]{tagRecipeHash, strings.Join(recipes, ",")},
		kv[string]{tagPlanHash, strings.Join(plans, ",")}, kv[string]{tagRunName, m.name}, kv[string]{tagSource, "nel"})
	for _, ext := range []string{"md", "html", "json", "csv", "tex"} {
		if f := rundir.Dir(run.dir).Report(ext); fileExists(f) {
			m.artifacts = append(m.artifacts, kv[string]{filepath.Base(f), f})
		}
	}
	return m
}

// invalidKeyChars are the characters MLflow refuses in a metric, param
// or tag key (it allows letters, digits, _ - . space and /).
var invalidKeyChars = regexp.MustCompile(`[^/\w.\- ]`)

// metricKey turns a nel metric name into an MLflow key: pass@1 becomes
// pass_at_1 (MLflow refuses @; NeMo Evaluator's exporter names it so too),
// scorer:exact_match scorer_exact_match.
func metricKey(metric string) string {
	return invalidKeyChars.ReplaceAllString(strings.ReplaceAll(metric, "pass@", "pass_at_"), "_")
}

// writeMLflowStore writes the run as an MLflow file store under
// o.Out/mlruns: what `mlflow ui --backend-store-uri o.Out/mlruns` shows.
func writeMLflowStore(run *runData, o Options) ([]string, error) {
	m := mlflowRunOf(run, metricKey)
	exp := experimentName(o)
	root, err := filepath.Abs(filepath.Join(o.Out, "mlruns"))
	if err != nil {
		return nil, err
	}
	expID := numericID(exp)
	expDir := filepath.Join(root, expID)
	runDir := filepath.Join(expDir, m.exportID)
	// Both metas are rewritten whole each time, so a second export leaves
	// the same files; the metric files are too (one line each).
	if err := os.RemoveAll(runDir); err != nil {
		return nil, fmt.Errorf("replace the earlier export: %w", err)
	}
	files := map[string]string{
		filepath.Join(expDir, "meta.yaml"): yamlMap(
			"artifact_location", quote("file://"+expDir), "creation_time", itoa(m.start),
			"experiment_id", quote(expID), "last_update_time", itoa(m.end), "lifecycle_stage", "active",
			"name", quote(exp)),
		filepath.Join(runDir, "meta.yaml"): yamlMap(
			"artifact_uri", quote("file://"+filepath.Join(runDir, "artifacts")), "end_time", itoa(m.end),
			"entry_point_name", "''", "experiment_id", quote(expID), "lifecycle_stage", "active",
			"run_id", m.exportID, "run_name", quote(m.name), "run_uuid", m.exportID, "source_name", "''",
			"source_type", "4", "source_version", "''", "start_time", itoa(m.start),
			"status", strconv.Itoa(runStatus[m.status]), "tags", "[]", "user_id", quote(user())),
	}
	for _, x := range m.metrics {
		files[filepath.Join(runDir, "metrics", x.key)] = fmt.Sprintf("%d %s 0\n", m.end, strconv.FormatFloat(x.val, 'g', -1, 64))
	}
	for _, x := range m.params {
		files[filepath.Join(runDir, "params", x.key)] = x.val
	}
	for _, x := range m.tags {
		files[filepath.Join(runDir, "tags", x.key)] = x.val
	}
	for path, text := range files {
		if err := writeFile(path, []byte(text)); err != nil {
			return nil, err
		}
	}
	for _, a := range m.artifacts {
		if err := copyFile(a.val, filepath.Join(runDir, "artifacts", a.key)); err != nil {
			return nil, err
		}
	}
	// Said as the caller named the folder, not as the absolute paths the
	// metas must hold.
	return []string{filepath.Join(o.Out, "mlruns", expID, m.exportID)}, nil
}

// runStatus is MLflow's RunStatus enum, as the file store writes it.
var runStatus = map[string]int{"RUNNING": 1, "SCHEDULED": 2, "FINISHED": 3, "FAILED": 4, "KILLED": 5}

func experimentName(o Options) string {
	if o.Experiment != "" {
		return o.Experiment
	}
	return DefaultExperiment
}

// numericID is an experiment id derived from its name: decimal, as the
// ids MLflow itself gives, so that every MLflow version lists it.
func numericID(name string) string {
	n, _ := new(big.Int).SetString(id(15, "mlflow experiment", name), 16)
	return n.String()
}

// yamlMap writes key: value lines, values already YAML.
func yamlMap(kvs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kvs); i += 2 {
		fmt.Fprintf(&b, "%s: %s\n", kvs[i], kvs[i+1])
	}
	return b.String()
}

// quote is a YAML single-quoted scalar.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func user() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "nel"
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("read %s: %w", from, err)
	}
	return writeFile(to, data)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func mustAbs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func appendNew(xs []string, x string) []string {
	if x == "" || slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

// millis reads an RFC 3339 time as milliseconds since the epoch (0 when
// unreadable: the bundle then had no time).
func millis(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

func minTime(cur int64, s string) int64 {
	t := millis(s)
	if cur == 0 || (t != 0 && t < cur) {
		return t
	}
	return cur
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
