package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/nel-eval/nel/analysis/export"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/spf13/cobra"
)

const exportHelp = `Exports a finished run (RUN is its output directory, each <benchmark>/
holding eval.json) where its users already look. The run folder is only
read; every id written derives from the run's plan hash, so exporting twice
gives the same files, or finds the same MLflow run again.

Destinations (--dest):
  inspect  one Inspect AI evaluation log per benchmark, DIR/<benchmark>.json
           (--format eval: the zipped .eval log), for Inspect View and
           'inspect log': accuracy is nel's headline, stderr the standard
           error of the item means, ci_low/ci_high nel's interval; one sample
           per item × repeat (epoch = repeat + 1) with its messages (an
           agentic sample's turns and tool calls), answer and score. An INVALID benchmark's log has status error and the
           reason.
  mlflow   without --tracking-uri, an MLflow file store under DIR/mlruns
           (mlflow ui --backend-store-uri DIR/mlruns); with an http(s) URI,
           that tracking server's REST API (a bearer token from
           MLFLOW_TRACKING_TOKEN). One MLflow run for the nel run, metrics
           per benchmark (gsm8k/pass_at_1, gsm8k/ci_low, gsm8k/ci_high,
           gsm8k/n_items: MLflow refuses @ in a name), the recipe and plan
           hashes as tags, eval.json, results.parquet and the reports as
           artifacts. An INVALID benchmark logs no score and marks the run
           FAILED.
  wandb    a W&B run through W&B's HTTP API, as the SDK's online mode sends
           it (no SDK, no offline directory: W&B's offline format is the
           SDK's binary log, which nel does not write): the GraphQL
           upsertBucket mutation with the run's id, the params as config
           and the metrics as the summary (gsm8k/pass@1, gsm8k/ci_low, …),
           then the file stream's final request. WANDB_API_KEY is the key,
           WANDB_BASE_URL or --tracking-uri a server of one's own (default
           https://api.wandb.ai), --experiment the project, --entity the
           entity. No artifacts are uploaded.

--config FILE sets the same things in YAML or JSON, and --override key=value
(repeatable) one at a time, with NeMo Evaluator's keys (tracking_uri, experiment_name, output_dir, format; for W&B project,
entity); flags win over both, --override over the file. A NeMo exporter setting nel
does not do is refused with the reason. (NeMo spells --override -o; in nel -o
is the output folder, and an -o key=value is refused.)

Exit status: 0 success, 1 failure (RUN missing or not merged, a server's
error), 2 usage error (a flag, --config or --override nel does not take).`

func newExportCmd(e *env) *cobra.Command {
	var o export.Options
	var config string
	var overrides []string
	c := &cobra.Command{
		Use:   "export RUN --dest inspect|mlflow|wandb [-o DIR] [--config FILE] [--format json|eval] [--tracking-uri URL] [--experiment NAME] [--entity NAME]",
		Short: "a run as Inspect logs, an MLflow run or a W&B run",
		Long:  exportHelp,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(e, c, "export: expected exactly one run directory")
			}
			if !slices.Contains(export.Dests, o.Dest) {
				return usageError(e, c, "export: --dest %q: want inspect, mlflow or wandb", o.Dest)
			}
			if err := exportSettings(&o, config, overrides); err != nil {
				return exitcode.Usagef("export: %v", err) // invalid input: 2, without the help around it
			}
			o.Run, o.Token = args[0], os.Getenv("MLFLOW_TRACKING_TOKEN")
			if o.Dest == "wandb" {
				o.Token = os.Getenv("WANDB_API_KEY")
				if o.TrackingURI == "" {
					o.TrackingURI = os.Getenv("WANDB_BASE_URL")
				}
			}
			written, err := export.Export(c.Context(), o)
			for _, w := range written {
				fmt.Fprintln(e.stdout, w)
			}
			return err
		},
	}
	f := c.Flags()
	f.StringVarP(&o.Dest, "dest", "d", "", "where to: inspect, mlflow or wandb")
	f.StringVarP(&o.Out, "output-dir", "o", "", "the folder to write into, outside RUN (default .)")
	f.StringVarP(&config, "config", "c", "", "exporter settings, YAML or JSON (NeMo's keys)")
	f.StringArrayVar(&overrides, "override", nil, "a NeMo exporter setting as `key=value` (repeatable; after --config, before the flags)")
	f.StringVar(&o.Format, "format", "", "inspect: json (default) or eval")
	f.StringVar(&o.TrackingURI, "tracking-uri", "", "mlflow: an http(s) tracking server instead of a file store")
	f.StringVar(&o.Experiment, "experiment", "", "mlflow: the experiment's name; wandb: the project's (default "+export.DefaultExperiment+")")
	f.StringVar(&o.Entity, "entity", "", "wandb: the entity (default the API key's user)")
	return c
}

// exportSettings applies --config FILE, then each --override key=value,
// under the flags. NeMo Evaluator spells --override -o, which is nel's
// output folder: an -o that reads key=value is refused, pointing there.
func exportSettings(o *export.Options, config string, overrides []string) error {
	if k, _, ok := strings.Cut(o.Out, "="); ok && !strings.ContainsAny(k, "/.") {
		return fmt.Errorf("-o %s: -o is the output folder in nel (NeMo's -o key=value is --override key=value)", o.Out)
	}
	var cfg export.Config
	if config != "" {
		var err error
		if cfg, err = export.LoadConfig(config); err != nil {
			return err
		}
	}
	for _, kv := range overrides {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--override %q: want key=value", kv)
		}
		if err := cfg.Set(k, v); err != nil {
			return fmt.Errorf("--override %s", err)
		}
	}
	cfg.Apply(o)
	return nil
}
