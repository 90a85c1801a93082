package compiler

import (
	"fmt"
	"maps"
	"slices"

	"cuelang.org/go/cue"

	"github.com/nel-eval/nel/analysis/export"
	"github.com/nel-eval/nel/runtime/shellquote"
)

// output.export names NeMo Evaluator's exporters (mlflow, wandb,
// inspect): its run calls each once the evaluation is done, with the
// settings output.export_config gives under the exporter's name, and its
// SLURM job ends with the export command. Exporting is no part of nel's
// job (the hashes and the script are the evaluation's): nel export does it
// to a finished run. So each exporter is a warning with the nel export
// command to run after the job, its settings as --override, as the v1
// launcher's export section is (launcher_export.go); a setting nel export
// would refuse is refused here, with nel export's reason, rather than left
// for the command to fail on.

// outputExport checks output.export and output.export_config and says
// the nel export command of each exporter.
func (c *ruleChecker) outputExport() {
	var cfgs map[string]map[string]any
	if v := c.s.Value.LookupPath(cue.ParsePath("output.export_config")); v.Exists() {
		if err := v.Decode(&cfgs); err != nil {
			c.at("expected a mapping of each exporter's settings, such as {inspect: {format: eval}}", "output", "export_config")
			return
		}
	}
	for i, dest := range c.r.Output.Export {
		words := []string{"nel", "export", c.r.Output.Dir, "--dest", dest}
		settings := cfgs[dest]
		for _, k := range slices.Sorted(maps.Keys(settings)) {
			v := settings[k]
			var probe export.Config
			if err := probe.Set(k, fmt.Sprint(v)); err != nil {
				c.at(fmt.Sprintf("nel export refuses it: %v", err), "output", "export_config", dest, k)
				continue
			}
			if _, ok := v.(string); !ok {
				c.at("expected a string: nel export takes its settings as text", "output", "export_config", dest, k)
				continue
			}
			words = append(words, "--override", k+"="+v.(string))
		}
		c.warnAt("NeMo Evaluator exports once the evaluation is done; nel's job does not: when it is done, run "+shellquote.Join(words), "output", "export", i)
	}
	for _, dest := range slices.Sorted(maps.Keys(cfgs)) {
		if !slices.Contains(c.r.Output.Export, dest) {
			c.warnAt("not used: output.export does not name "+dest+" (NeMo Evaluator reads the settings of the exporters it names only)", "output", "export_config", dest)
		}
	}
}
