package reproduce

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/analysis/compare"
	"github.com/nel-eval/nel/runtime/metrics"
	prov "github.com/nel-eval/nel/runtime/provenance"
	"github.com/nel-eval/nel/runtime/results"
)

// Difference is one provenance field the two runs disagree on.
type Difference struct {
	Benchmark string `json:"benchmark"`
	Field     string `json:"field"`
	Published string `json:"published"`
	New       string `json:"new"`
	// Methodology is set for the fields that say what was measured
	// (benchmark hash, dataset digest, scoring version, model id,
	// simulated endpoint): a difference there makes the benchmark not
	// comparable, hence DIFFERENT whatever its statistics. The others are
	// infrastructure, listed to be read.
	Methodology bool `json:"methodology"`
}

// Text is the difference as a reason: "serving engine: vllm 0.6.3 → vllm 0.7.1".
func (d Difference) Text() string {
	s := fmt.Sprintf("%s: %s → %s", d.Field, orNone(d.Published), orNone(d.New))
	if d.Methodology {
		s += " (methodology: not comparable)"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
}

// field is one provenance value of both runs.
type field struct {
	name     string
	pub, new string
	// methodology fields decide the verdict when both runs record them.
	methodology bool
}

// diffProvenance lists what differs between two runs of one benchmark,
// and notes on what could not be compared.
func diffProvenance(bench string, pub, nw *compare.Run) (diffs []Difference, notes []string) {
	simulated := func(r *compare.Run) string {
		if r.Simulated() {
			return "simulated endpoint"
		}
		if r.Bundle == nil && r.Meta[results.MetaSimulated] == "" {
			return ""
		}
		return "real endpoint"
	}
	fields := []field{
		{name: "recipe hash", pub: pub.RecipeHash(), new: nw.RecipeHash()},
		{name: "benchmark hash", pub: pub.BenchmarkHash(), new: nw.BenchmarkHash(), methodology: true},
		{name: "dataset digest", pub: pub.DatasetDigest(), new: nw.DatasetDigest(), methodology: true},
		{name: "scoring version", pub: pub.ScoringVersion(), new: nw.ScoringVersion(), methodology: true},
		{name: "model", pub: pub.Model(), new: nw.Model(), methodology: true},
		// Answers from nel's simulated endpoint are not the model's: one
		// run simulated and the other not is not a reproduction.
		{name: "answers from", pub: simulated(pub), new: simulated(nw), methodology: true},
		{name: "nel version", pub: nelVersion(pub), new: nelVersion(nw)},
	}
	pp, np := provOf(pub), provOf(nw)
	switch {
	case pp.Build != nil && np.Build != nil:
		fields = append(fields, field{name: "nel build revision", pub: revision(pp.Build), new: revision(np.Build)})
	case pp.Build != nil || np.Build != nil:
		notes = append(notes, missing("build", pp.Build == nil))
	}
	switch {
	case len(pp.Hosts) > 0 && len(np.Hosts) > 0:
		fields = append(fields,
			field{name: "GPU types", pub: gpuTypes(pp.Hosts), new: gpuTypes(np.Hosts)},
			field{name: "host count", pub: strconv.Itoa(len(pp.Hosts)), new: strconv.Itoa(len(np.Hosts))})
	case len(pp.Hosts) > 0 || len(np.Hosts) > 0:
		notes = append(notes, missing("host", len(pp.Hosts) == 0))
	}
	switch {
	case len(pp.Serving) > 0 && len(np.Serving) > 0:
		fields = append(fields, servingFields(pp.Serving, np.Serving)...)
	case len(pp.Serving) > 0 || len(np.Serving) > 0:
		notes = append(notes, missing("serving", len(pp.Serving) == 0))
	}

	for _, f := range fields {
		if f.pub == f.new {
			continue
		}
		d := Difference{Benchmark: bench, Field: f.name, Published: f.pub, New: f.new}
		// A methodology value recorded on one side only cannot be
		// checked; it is listed, and does not decide the verdict.
		d.Methodology = f.methodology && f.pub != "" && f.new != ""
		diffs = append(diffs, d)
		if f.methodology && !d.Methodology {
			side := "published"
			if f.new == "" {
				side = "new"
			}
			notes = append(notes, fmt.Sprintf("%s is not recorded in the %s run: not checked", f.name, side))
		}
	}
	return diffs, notes
}

func missing(what string, pubMissing bool) string {
	side, other := "published", "new"
	if !pubMissing {
		side, other = "new", "published"
	}
	return fmt.Sprintf("the %s run records no %s provenance (made by an older nel?), the %s run does: %s not compared", side, what, other, what)
}

func provOf(r *compare.Run) metrics.Provenance {
	if r.Bundle == nil {
		return metrics.Provenance{}
	}
	return r.Bundle.Provenance
}

func nelVersion(r *compare.Run) string {
	if r.Bundle != nil && r.Bundle.Provenance.NelVersion != "" {
		return r.Bundle.Provenance.NelVersion
	}
	return r.Meta[results.MetaNelVersion]
}

func revision(b *prov.Build) string {
	s := b.Revision
	if s != "" && b.Modified {
		s += " (modified)"
	}
	return s
}

func gpuTypes(hosts []prov.Host) string {
	var all []string
	for _, h := range hosts {
		all = append(all, h.GPUs...)
	}
	slices.Sort(all)
	return strings.Join(slices.Compact(all), ", ")
}

// servingFields compares the services by name. A service whose shards saw
// several servers has each value listed, sorted and distinct.
func servingFields(pub, nw []prov.Serving) []field {
	names := map[string]bool{}
	for _, s := range append(slices.Clone(pub), nw...) {
		names[s.Service] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	var out []field
	for _, name := range sorted {
		label := func(f string) string {
			if len(sorted) > 1 {
				return fmt.Sprintf("%s (%s)", f, name)
			}
			return f
		}
		ps, ns := byService(pub, name), byService(nw, name)
		get := func(ss []prov.Serving, f func(prov.Serving) []string) string {
			var vs []string
			for _, s := range ss {
				vs = append(vs, f(s)...)
			}
			slices.Sort(vs)
			return strings.Join(slices.Compact(vs), ", ")
		}
		one := func(f func(prov.Serving) string) func(prov.Serving) []string {
			return func(s prov.Serving) []string {
				if v := f(s); v != "" {
					return []string{v}
				}
				return nil
			}
		}
		// Engine and version read together: "vllm 0.6.3 → vllm 0.7.1".
		engine := one(func(s prov.Serving) string { return strings.TrimSpace(s.Engine + " " + s.ServerVersion) })
		roots := func(s prov.Serving) []string {
			var rs []string
			for _, m := range s.Models {
				if m.Root != "" {
					rs = append(rs, m.Root)
				}
			}
			return rs
		}
		out = append(out,
			field{name: label("serving engine"), pub: get(ps, engine), new: get(ns, engine)},
			field{name: label("served model root"), pub: get(ps, roots), new: get(ns, roots)},
			field{name: label("serving fingerprint"), pub: get(ps, one(func(s prov.Serving) string { return s.Fingerprint })), new: get(ns, one(func(s prov.Serving) string { return s.Fingerprint }))},
			field{name: label("image"), pub: get(ps, one(func(s prov.Serving) string { return s.Image })), new: get(ns, one(func(s prov.Serving) string { return s.Image }))},
		)
	}
	return out
}

func byService(ss []prov.Serving, name string) []prov.Serving {
	var out []prov.Serving
	for _, s := range ss {
		if s.Service == name {
			out = append(out, s)
		}
	}
	return out
}
