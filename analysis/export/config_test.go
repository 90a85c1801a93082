package export

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := LoadConfig(write("ok.yaml", "tracking_uri: http://mlflow:5000\nexperiment_name: evals\n"))
	if err != nil || c.TrackingURI != "http://mlflow:5000" || c.ExperimentName != "evals" {
		t.Fatalf("config %+v, %v", c, err)
	}
	// JSON is YAML; flags win over the file.
	c, err = LoadConfig(write("ok.json", `{"experiment_name": "from-file", "format": "eval"}`))
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Experiment: "from-flag"}
	c.Apply(&o)
	if o.Experiment != "from-flag" || o.Format != "eval" {
		t.Errorf("applied: %+v", o)
	}
	var set Config
	if err := set.Set("tracking_uri", "http://x:5000"); err != nil || set.TrackingURI != "http://x:5000" {
		t.Errorf("Set: %+v, %v", set, err)
	}
	if err := set.Set("emit_traces", "true"); err == nil || !strings.HasPrefix(err.Error(), "emit_traces: not supported: nel sends no MLflow traces") {
		t.Errorf("Set of a refused key: %v", err)
	}
	for name, tc := range map[string]struct{ text, want string }{
		"unknown.yaml": {"experiment_name: x\ntracking_url: http://x\n", "unknown.yaml:2:1: tracking_url: unknown exporter setting"},
		"refused.yaml": {"  skip_existing: true\n", "refused.yaml:1:3: skip_existing: not supported: nel's export is idempotent"},
		"type.yaml":    {"experiment_name: [a, b]\n", "type.yaml:1:18: experiment_name: want a string"},
		"list.yaml":    {"- a\n", "list.yaml:1:1: want a mapping"},
	} {
		_, err := LoadConfig(write(name, tc.text))
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tc.want)) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}
