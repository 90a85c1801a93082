package export

import (
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/nel-eval/nel/runtime/rundir"
)

// Config is an exporter's settings file (nel export --config FILE), YAML
// or JSON, with NeMo Evaluator's key names: the same file a NeMo user
// passes to their `nel export`. Flags win over it.
type Config struct {
	TrackingURI    string // tracking_uri
	ExperimentName string // experiment_name
	OutputDir      string // output_dir
	Format         string // format (inspect: json or eval)
	Project        string // project (W&B's name for experiment_name)
	Entity         string // entity (W&B)
}

// fixedArtifacts is what the MLflow export uploads, said in a refusal.
const fixedArtifacts = "each benchmark's " + rundir.BundleFile + " and " + rundir.ResultsFile + " and the run's reports"

// refusedKeys are NeMo Evaluator exporter settings nel does not do, each
// with the reason; a file that sets one is refused rather than half-obeyed.
var refusedKeys = map[string]string{
	"log_config_params":           "nel logs the plan's hashes and each benchmark's repeats, digest and hash as params, not the flattened config",
	"log_config_params_max_depth": "nel does not flatten the config into params",
	"skip_existing":               "nel's export is idempotent: an exported run is found again by its nel.export_id tag and never logged twice",
	"run_name":                    "the MLflow run is named after the run folder",
	"description":                 "nel sets no run description",
	"tags":                        "nel sets its own tags (recipe and plan hashes, export id) and no others",
	"extra_metadata":              "nel sets its own tags and params and no others",
	"copy_artifacts":              "nel always uploads " + fixedArtifacts,
	"only_required":               "nel uploads a fixed set of artifacts: " + fixedArtifacts,
	"copy_logs":                   "nel uploads no logs",
	"exclude_patterns":            "nel uploads a fixed set of artifacts: " + fixedArtifacts,
	"emit_traces":                 "nel sends no MLflow traces; export to inspect for per-sample transcripts",
	"emit_traces_max_samples":     "nel sends no MLflow traces",
	"emit_traces_content_max":     "nel sends no MLflow traces",
}

// LoadConfig reads path. Errors name the file, line, column and key.
func LoadConfig(path string) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("read export config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return c, nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return c, fmt.Errorf("%s:%d:%d: want a mapping of exporter settings (tracking_uri, experiment_name, output_dir, format)", path, m.Line, m.Column)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
			if _, ok := c.field(k.Value); ok {
				return c, fmt.Errorf("%s:%d:%d: %s: want a string", path, v.Line, v.Column, k.Value)
			}
		}
		if err := c.Set(k.Value, v.Value); err != nil {
			return c, fmt.Errorf("%s:%d:%d: %w", path, k.Line, k.Column, err)
		}
	}
	return c, nil
}

func (c *Config) field(key string) (*string, bool) {
	fields := map[string]*string{"tracking_uri": &c.TrackingURI, "experiment_name": &c.ExperimentName, "output_dir": &c.OutputDir,
		"format": &c.Format, "project": &c.Project, "entity": &c.Entity}
	dst, ok := fields[key]
	return dst, ok
}

// Set sets one setting by NeMo Evaluator's key: a line of --config, or
// an --override key=value.
func (c *Config) Set(key, value string) error {
	dst, ok := c.field(key)
	switch {
	case refusedKeys[key] != "":
		return fmt.Errorf("%s: not supported: %s", key, refusedKeys[key])
	case !ok:
		return fmt.Errorf("%s: unknown exporter setting (nel knows tracking_uri, experiment_name, project, entity, output_dir, format)", key)
	}
	*dst = value
	return nil
}

// Apply fills o's unset fields from c.
func (c Config) Apply(o *Options) {
	set := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	set(&o.TrackingURI, c.TrackingURI)
	set(&o.Experiment, c.ExperimentName)
	set(&o.Experiment, c.Project)
	set(&o.Entity, c.Entity)
	set(&o.Out, c.OutputDir)
	set(&o.Format, c.Format)
}
