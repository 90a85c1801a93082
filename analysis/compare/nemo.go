package compare

import (
	"fmt"

	"github.com/nel-eval/nel/analysis/nemorun"
)

// fromNeMo wraps a NeMo Evaluator run's benchmark as a Run.
func fromNeMo(n *nemorun.Run) *Run {
	return &Run{Name: n.Name, Path: n.Path, Bundle: n.Bundle, Rows: n.Rows, Meta: n.Meta, Source: nemorun.Source}
}

// resolveNeMo reads a NeMo Evaluator run as a Side: one benchmark is
// single mode, several a run directory.
func resolveNeMo(path string) (*Side, error) {
	runs, err := nemorun.Read(path)
	if err != nil {
		return nil, refuse("%v", err)
	}
	s := &Side{Path: path, Multi: len(runs) > 1}
	for _, n := range runs {
		s.Runs = append(s.Runs, fromNeMo(n))
	}
	return s, nil
}

// AlignSources makes the item ids of each pair comparable when one side
// is a NeMo Evaluator run: NeMo knows items by dataset index, nel by
// content id (nemorun.Pair maps and checks). Two NeMo runs pair by
// problem_idx, as NeMo Evaluator itself pairs them. When the mapping
// cannot be trusted nothing is paired: the NeMo side's rows are set
// aside and the pair's Unpaired says why, so that compare gives an
// unpaired comparison of the two headlines and gate judges the pair on
// the bundles alone, both labelled.
func AlignSources(pairs []Pair) []Pair {
	out := make([]Pair, len(pairs))
	for i, p := range pairs {
		out[i] = p
		b, c := p.Base, p.Candidate
		for _, r := range []*Run{b, c} {
			if r.IsNeMo() {
				out[i].Notes = append(out[i].Notes, fmt.Sprintf("%s is a %s run: its recipe hash (%s) is NeMo's config_hash, not a nel recipe hash, and it records no benchmark hash", r.Path, nemorun.Source, orNone(r.RecipeHash())))
			}
		}
		if b.IsNeMo() == c.IsNeMo() {
			if b.IsNeMo() {
				b.PairedBy = "NeMo Evaluator problem_idx on both sides (as NeMo Evaluator pairs)"
			}
			continue
		}
		nemo, nel := b, c
		if c.IsNeMo() {
			nemo, nel = c, b
		}
		if len(nemo.Rows) == 0 || len(nel.Rows) == 0 {
			continue // nothing to pair: Compare and gate say so
		}
		rows, how, err := nemorun.Pair(nemo.Rows, nel.Rows)
		if err != nil {
			out[i].Unpaired = err.Error()
			out[i].Notes = append(out[i].Notes, fmt.Sprintf("NOT PAIRED item by item: %v", err))
		}
		aligned := *nemo
		aligned.Rows, aligned.PairedBy = rows, how
		if nemo == b {
			out[i].Base = &aligned
		} else {
			out[i].Candidate = &aligned
		}
	}
	return out
}
