package compare

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/rundir"
)

// Methodology is the check that two runs measured the same thing: their
// benchmark hashes (DESIGN §4) are equal. Different models are expected.
type Methodology struct {
	Same          bool   `json:"same"`
	BaselineHash  string `json:"baseline_benchmark_hash"`
	CandidateHash string `json:"candidate_benchmark_hash"`
	// Differences lists what the two runs' recorded methodologies
	// (eval.json's methodology) disagree on, by dotted path.
	Differences []Difference `json:"differences,omitempty"`
	// Note explains a difference the recorded methodology does not show
	// (scoring version, dataset digest, a missing hash).
	Note string `json:"note,omitempty"`
	// Allowed is set when the user let different methodologies through.
	Allowed bool `json:"allowed,omitempty"`
}

// Difference is one methodology field that differs.
type Difference struct {
	Path      string `json:"path"`
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
}

// CheckMethodology compares two runs' benchmark hashes and, when they
// differ, says what differs.
func CheckMethodology(b, c *Run) Methodology {
	m := Methodology{BaselineHash: b.BenchmarkHash(), CandidateHash: c.BenchmarkHash()}
	if m.BaselineHash == "" || m.CandidateHash == "" {
		// Nothing to refuse on; say so.
		m.Same = true
		m.Note = "a benchmark hash is not recorded (baseline " + orNone(m.BaselineHash) + ", candidate " + orNone(m.CandidateHash) + "): comparability not checked"
		return m
	}
	if m.BaselineHash == m.CandidateHash {
		m.Same = true
		return m
	}
	var bm, cm map[string]any
	if b.Bundle != nil {
		bm = b.Bundle.Methodology
	}
	if c.Bundle != nil {
		cm = c.Bundle.Methodology
	}
	m.Differences = diffMaps(bm, cm)
	var extra []string
	if sb, sc := b.ScoringVersion(), c.ScoringVersion(); sb != sc {
		extra = append(extra, fmt.Sprintf("scoring version %s vs %s", orNone(sb), orNone(sc)))
	}
	if db, dc := b.DatasetDigest(), c.DatasetDigest(); db != dc {
		extra = append(extra, fmt.Sprintf("dataset digest %s vs %s", orNone(db), orNone(dc)))
	}
	switch {
	case bm == nil || cm == nil:
		m.Note = "the benchmark hashes differ; the recorded methodology is not available on both sides (no " + rundir.BundleFile + ")"
	case len(m.Differences) == 0:
		m.Note = "the benchmark hashes differ but the recorded methodology matches"
	}
	if len(extra) > 0 {
		if m.Note != "" {
			m.Note += "; "
		}
		m.Note += strings.Join(extra, "; ")
	} else if len(m.Differences) == 0 {
		m.Note += fmt.Sprintf(" (scoring version %s, dataset digest %s on both sides)", orNone(b.ScoringVersion()), orNone(b.DatasetDigest()))
	}
	return m
}

// Explain says in words why the runs are not comparable.
func (m Methodology) Explain(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: the runs' methodologies differ (benchmark hash %s vs %s)", name, m.BaselineHash, m.CandidateHash)
	for _, d := range m.Differences {
		fmt.Fprintf(&b, "\n  %s: baseline %s, candidate %s", d.Path, d.Baseline, d.Candidate)
	}
	if m.Note != "" {
		fmt.Fprintf(&b, "\n  %s", m.Note)
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// diffMaps lists the leaves of two JSON-like values that differ, by
// dotted path (lists by [i]).
func diffMaps(a, b map[string]any) []Difference {
	var out []Difference
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		xm, xok := x.(map[string]any)
		ym, yok := y.(map[string]any)
		if xok && yok {
			keys := map[string]bool{}
			for k := range xm {
				keys[k] = true
			}
			for k := range ym {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			slices.Sort(sorted)
			for _, k := range sorted {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, xm[k], ym[k])
			}
			return
		}
		xl, xok := x.([]any)
		yl, yok := y.([]any)
		if xok && yok && len(xl) == len(yl) {
			for i := range xl {
				walk(fmt.Sprintf("%s[%d]", path, i), xl[i], yl[i])
			}
			return
		}
		if path == "hash" {
			return // the benchmark hash itself, already shown
		}
		if !reflect.DeepEqual(x, y) {
			out = append(out, Difference{Path: path, Baseline: jsonText(x), Candidate: jsonText(y)})
		}
	}
	if a == nil || b == nil {
		return nil
	}
	walk("", a, b)
	return out
}

func jsonText(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > 120 {
		s = s[:117] + "…"
	}
	return s
}
