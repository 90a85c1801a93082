package compiler

import (
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"

	"github.com/nel-eval/nel/runtime/shellquote"
)

// The launcher's export section configures its exporters, and
// execution.auto_export names those it runs once the evaluation is done.
// Exporting is no part of nel's job (its hashes and its script are the
// evaluation's): nel export does it to a finished run. So each exporter
// becomes a warning that gives the nel export command to run after the
// job, and names the settings nel export does not take; an exporter nel
// has not got is refused where auto_export names it (the run would end
// without the export the config asks for), noted where only export
// configures it.

// exportFlags are the launcher exporter settings nel export takes, as
// its flags (wandb's project is --experiment).
var exportFlags = map[string]string{"tracking_uri": "--tracking-uri", "experiment_name": "--experiment", "project": "--experiment", "entity": "--entity"}

// nelExporters are the destinations nel export has of the launcher's.
var nelExporters = []string{"mlflow", "wandb"}

// export reads execution.auto_export and the export section.
func (t *v1) export() {
	auto := t.autoExport()
	ex, ok := t.get("export").(*ast.StructLit)
	if x := t.get("export"); x != nil && !ok {
		t.refuse(x, []any{"export"}, "expected a mapping of exporters (mlflow, wandb)")
	}
	for _, dest := range auto {
		if ex == nil || fieldOf(ex, dest.name) == nil {
			t.exportNote(dest.name, dest.x, []any{"execution", "auto_export"}, obj(), true)
		}
	}
	if ex == nil {
		return
	}
	for f := range fields(ex) {
		name := labelOf(f)
		isAuto := slices.ContainsFunc(auto, func(d autoDest) bool { return d.name == name })
		if !slices.Contains(nelExporters, name) {
			if !isAuto {
				t.warn(f, []any{"export", name}, "nel export has no %s exporter (it writes inspect, mlflow and wandb): this section is not used", name)
			}
			continue
		}
		t.exportNote(name, f, []any{"export", name}, structOr(f.Value), isAuto)
	}
}

// autoDest is one auto_export destination and where it is written.
type autoDest struct {
	name string
	x    ast.Node
}

// autoExport is execution.auto_export's destinations: a list, or a
// mapping with destinations, as the launcher takes both. One nel export
// has not got is refused.
func (t *v1) autoExport() []autoDest {
	x := t.get("execution.auto_export")
	if st, ok := x.(*ast.StructLit); ok {
		t.known(st, []any{"execution", "auto_export"}, "destinations")
		x = getIn(st, "destinations")
	}
	list, ok := x.(*ast.ListLit)
	if !ok {
		if x != nil {
			t.refuse(x, []any{"execution", "auto_export"}, "expected a list of destinations (mlflow, wandb) or {destinations: [...]}")
		}
		return nil
	}
	var out []autoDest
	for i, e := range list.Elts {
		name, _ := stringOf(e)
		if !slices.Contains(nelExporters, name) {
			t.refuse(e, []any{"execution", "auto_export", "destinations", i}, "not supported: auto_export to %q (nel export writes inspect, mlflow and wandb)", name)
			continue
		}
		out = append(out, autoDest{name, e})
	}
	return out
}

// exportNote warns with the nel export command for one exporter's
// settings st, and the settings it does not take.
func (t *v1) exportNote(dest string, at ast.Node, path []any, st *ast.StructLit, auto bool) {
	words := []string{"nel", "export", t.str("execution.output_dir"), "--dest", dest}
	var dropped []string
	for f := range fields(st) {
		name := labelOf(f)
		flag, ok := exportFlags[name]
		s, isString := stringOf(f.Value)
		switch {
		case isNull(f.Value):
		case ok && isString:
			words = append(words, flag, s)
		default:
			dropped = append(dropped, name)
		}
	}
	when := "the launcher's export command does this"
	if auto {
		when = "the launcher does this after the evaluation (auto_export); nel's job does not"
	}
	msg := when + ": once the job is done, run " + shellquote.Join(words)
	if len(dropped) > 0 {
		msg += " (nel export does not take " + strings.Join(dropped, ", ") + ": it logs its own fixed set of metrics, tags and artifacts)"
	}
	t.warn(at, path, "%s", msg)
}
