package compiler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/plan"
)

// LocalFile is a local file or folder a recipe reads: a benchmark's dataset
// (params.data_path, and the few-shot pools some benchmarks take) or a
// judge's rubric_file. It is read when the recipe is loaded, because the
// hashes cover its content, never its path: the same data at another path
// is the same evaluation. Where it lies is deployment, which the plan hash
// covers through the recipe as written.
type LocalFile struct {
	// Field is where the recipe names it, as -O spells it:
	// benchmarks[0].params.data_path.
	Field string
	// Spec is the path as written; a relative one resolves against the
	// recipe's directory.
	Spec string
	// Digest is the dataset digest nel-run records for it
	// (nel.dataset_digest): sha256 over its files' names and sha256s.
	Digest string
	Files  []plan.DataFile

	bench   int    // the benchmark's index; -1 for a gym service's
	service string // the gym service whose served benchmark reads it
	param   string // the params key (or byobDataKey…); "" for a rubric_file
	path    []any  // where the recipe names it, for errors
}

// LocalFiles lists the local files and folders the recipe reads, in a
// fixed order: rubric files, then datasets.
func (s *Source) LocalFiles() []LocalFile { return slices.Clone(s.local) }

// localData reads every local dataset a benchmark names in its params: its
// digest goes into the hashes in place of the path (dataHashParams). An
// unreadable path is an error at its position: without the content there
// is no honest hash.
func (c *ruleChecker) localData() {
	for i, b := range c.r.Benchmarks {
		for _, param := range bench.DataParams(b.Name) {
			v, ok := b.Params[param]
			if !ok || v == nil {
				continue
			}
			spec, ok := v.(string)
			if !ok || spec == "" {
				c.at(fmt.Sprintf("expected a dataset (a local file or folder, relative to the recipe, or an hf:// spec), found %v", v), "benchmarks", i, "params", param)
				continue
			}
			if dataset.IsLocal(spec) {
				c.localDataset(i, param, spec, "benchmarks", i, "params", param)
			} else if err := dataset.CheckSpec(spec); err != nil {
				c.at(err.Error(), "benchmarks", i, "params", param)
			}
		}
	}
	c.servedData()
}

// servedData reads the local datasets of the benchmarks that gym services
// serve, as localData does a benchmark's: the benchmarks that use such a
// service hash their content (servedMethod), and the served plan entry
// pins it.
func (c *ruleChecker) servedData() {
	for _, name := range sortedKeys(c.r.Services) {
		sv := c.r.Services[name]
		if sv.Type != "gym" || sv.Benchmark == "" {
			continue
		}
		for _, param := range bench.DataParams(sv.Benchmark) {
			spec, ok := sv.Params[param].(string)
			if !ok || spec == "" || !dataset.IsLocal(spec) {
				continue // a remote spec is read on the node, its name hashed
			}
			n := len(c.s.local)
			if c.localDataset(-1, param, spec, "services", name, "params", param) {
				for j := n; j < len(c.s.local); j++ {
					c.s.local[j].service = name
				}
			}
		}
	}
}

// servedParams is gym service name's benchmark params as the hashes see
// them (hashParams).
func (s *Source) servedParams(name string) map[string]any {
	return s.hashParams(s.Recipe.Services[name].Params, func(f LocalFile) bool { return f.service == name })
}

// servedPins are gym service name's local datasets as plan pins.
func (s *Source) servedPins(name string) []plan.DataPin {
	return s.pins(func(f LocalFile) bool { return f.service == name })
}

// localDataset digests one local dataset and checks that its files begin
// as their formats say (dataset.Sniff: the first records, not the whole),
// so that a garbled file is found here rather than on the node. Where the
// recipe's datasets may lie on the compute nodes only (remote paths), one
// that is not here is a warning: nel-run reads it there, unpinned, and the
// hashes cover its path.
func (c *ruleChecker) localDataset(i int, param, spec string, path ...any) bool {
	if c.s.remotePaths || c.r.Cluster.RemotePaths {
		p := spec
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.s.Dir, p)
		}
		if _, err := os.Stat(p); err != nil {
			c.warnAt(fmt.Sprintf("dataset %q is not here (%v); with remote paths it is read on the compute nodes, and the hashes cover its path, not its content", spec, errors.Unwrap(err)), path...)
			return false
		}
	}
	if !c.localFile(i, param, spec, "dataset", path...) {
		return false
	}
	if err := dataset.Sniff(c.s.Dir, spec); err != nil {
		c.at(fmt.Sprintf("the data does not load: %v", err), path...)
		return false
	}
	return true
}

// localFile digests one local file or folder and records it; what names
// the kind of file in the error when it cannot be read.
func (c *ruleChecker) localFile(benchIdx int, param, spec, what string, path ...any) bool {
	d, err := dataset.LocalDigest(c.s.Dir, spec)
	if err != nil {
		// The file system's own words name where it looked (a relative
		// path is joined to the recipe's directory).
		if u := errors.Unwrap(err); u != nil {
			err = u
		}
		c.at(fmt.Sprintf("%s %q cannot be read (%v): local data is read when the recipe is loaded, since the hashes cover its content", what, spec, err), path...)
		return false
	}
	files := make([]plan.DataFile, len(d.Parts))
	for i, p := range d.Parts {
		files[i] = plan.DataFile{Name: p.Name, SHA256: p.SHA256}
	}
	c.s.local = append(c.s.local, LocalFile{Field: displayPath(selectors(path)), Spec: spec, Digest: d.Digest, Files: files, bench: benchIdx, param: param, path: slices.Clone(path)})
	return true
}

// localOf returns benchmark i's local dataset under param, if any.
func (s *Source) localOf(i int, param string) (LocalFile, bool) {
	for _, f := range s.local {
		if f.bench == i && f.param == param {
			return f, true
		}
	}
	return LocalFile{}, false
}

// dataHashParams is benchmark i's params as the hashes see them
// (hashParams).
func dataHashParams(s *Source, i int) map[string]any {
	b := s.Recipe.Benchmarks[i]
	return s.hashParams(withoutGitParams(b), func(f LocalFile) bool { return f.bench == i })
}

// hashParams is params as the hashes see them: each local dataset of
// theirs (the local files that of matches) replaced by its content
// digest; params itself when none is.
func (s *Source) hashParams(params map[string]any, of func(LocalFile) bool) map[string]any {
	var out map[string]any
	for _, f := range s.local {
		if _, named := params[f.param]; !named || !of(f) {
			continue
		}
		if out == nil {
			out = maps.Clone(params)
		}
		out[f.param] = f.Digest
	}
	if out == nil {
		return params
	}
	return out
}

// localPins are benchmark i's local datasets as plan pins: nel-run checks
// that what it reads is the content the hashes covered.
func localPins(s *Source, i int) []plan.DataPin {
	return s.pins(func(f LocalFile) bool { return f.bench == i })
}

// pins are the local datasets (not rubric files) that of matches, as plan
// pins.
func (s *Source) pins(of func(LocalFile) bool) []plan.DataPin {
	var out []plan.DataPin
	for _, f := range s.local {
		if f.param != "" && of(f) {
			out = append(out, plan.DataPin{Spec: f.Spec, Digest: f.Digest, Files: f.Files})
		}
	}
	return out
}

// relocatePins points a lock's local pins at where the same content is
// named now: a lock pins content, and the data may have moved since (a
// recipe fetched onto another machine). A pin whose content the recipe no
// longer names is kept as locked, and nel-run refuses it.
func relocatePins(s *Source, i int, pins []plan.DataPin) []plan.DataPin {
	out := slices.Clone(pins)
	for j, p := range out {
		if !dataset.IsLocal(p.Spec) {
			continue
		}
		for _, f := range s.local {
			if f.bench == i && f.param != "" && f.Digest == p.Digest {
				out[j].Spec = f.Spec
				break
			}
		}
	}
	return out
}

// localDataChanged reports, at its field, each of benchmark i's local
// datasets still named as locked whose content is not the locked content,
// and says whether there was one.
func (c *ruleChecker) localDataChanged(i int, pins []plan.DataPin, lockPath, again string) bool {
	found := false
	for _, p := range pins {
		for _, f := range c.s.local {
			if f.bench == i && f.param != "" && f.Spec == p.Spec && f.Digest != p.Digest {
				c.at(fmt.Sprintf("the content of %q (%s) is not what the lock %s pinned (%s): restore it, or %s", f.Spec, f.Digest, lockPath, p.Digest, again), f.path...)
				found = true
			}
		}
	}
	return found
}

// dataField is where benchmark b names its data, as a rule's path.
func dataField(i int, b *Benchmark) []any {
	if b.BYOB != nil {
		return []any{"benchmarks", i, "byob", "dataset"}
	}
	return []any{"benchmarks", i, "params", "data_path"}
}

// errRemote stops a benchmark's load at its first remote spec: CheckData
// reads local data only.
var errRemote = errors.New("remote data")

type localOnly struct{ l *dataset.Loader }

func (l localOnly) Load(ctx context.Context, spec string, opts dataset.LoadOptions) (*dataset.Dataset, error) {
	if !dataset.IsLocal(spec) {
		return nil, errRemote
	}
	return l.l.Load(ctx, spec, opts)
}

// CheckData loads, as nel-run will, each benchmark whose data is all
// local, and reports at its data_path the items whose content repeats an
// earlier item's, with their lines (warnings: each is evaluated, and
// weighs twice), or why the data does not load (errors). A benchmark that
// reads anything remote is left to nel-run, which warns the same way.
func CheckData(ctx context.Context, s *Source) (warnings, errs Errors) {
	w := &ruleChecker{s: s, r: s.Recipe}
	e := &ruleChecker{s: s, r: s.Recipe}
	l := localOnly{dataset.NewLoader(dataset.Options{BaseDir: s.Dir, Offline: true})}
	for i, b := range s.Recipe.Benchmarks {
		def, ok, err := Definition(s, i)
		if err != nil {
			e.at(err.Error(), "benchmarks", i, "byob")
			continue
		}
		key := "data_path"
		if b.BYOB != nil {
			key = byobDataKey
		}
		if _, local := s.localOf(i, key); !ok || !local {
			continue
		}
		set, err := def.Load(ctx, l, b.Params)
		switch {
		case errors.Is(err, errRemote):
		case err != nil:
			e.at(fmt.Sprintf("the data does not load: %v", err), dataField(i, b)...)
		default:
			if d := bench.DescribeDuplicates(set.Duplicates); d != "" {
				w.at(d, dataField(i, b)...)
			}
		}
	}
	return w.errs, e.errs
}
