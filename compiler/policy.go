package compiler

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/nel-eval/nel/analysis/gate"
	schema "github.com/nel-eval/nel/cue"
)

// MaxPolicyBytes bounds a gate policy file.
const MaxPolicyBytes = 1 << 20

// LoadPolicyFile reads a gate policy (NeMo Evaluator's `version: 1`
// format) written in YAML (.yaml, .yml), JSON (.json) or CUE (.cue) and
// validates it against cue/policy.cue's closed #Policy: unknown keys,
// wrong types and out-of-range values are Errors naming
// file:line:col and the field's path. Then the cross-field rule NeMo
// applies: every gated (non-advisory) benchmark listed must resolve to a
// metric the gate pairs per item: mean_reward, pass@1, or (beyond NeMo)
// scorer:<name>.
func LoadPolicyFile(path string) (*gate.Policy, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	if fi.IsDir() {
		return nil, Errors{{File: path, Msg: "is a directory, expected a policy file (.yaml, .yml, .json or .cue)"}}
	}
	if fi.Size() > MaxPolicyBytes {
		return nil, Errors{{File: path, Msg: fmt.Sprintf("policy is %d bytes, more than the %d a policy may have", fi.Size(), MaxPolicyBytes)}}
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy: %w", err)
	}
	return LoadPolicy(path, src)
}

// LoadPolicy validates policy source text; path names it in errors and
// decides the format by its extension.
func LoadPolicy(path string, src []byte) (p *gate.Policy, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, Errors{{File: path, Msg: fmt.Sprintf("cannot read policy (parser failure: %v)", r)}}
		}
	}()
	format, err := formatOf(path)
	if err != nil {
		return nil, Errors{{File: path, Msg: "unknown policy format: expected a .yaml, .yml, .json or .cue file"}}
	}
	if !utf8.Valid(src) || bytes.IndexByte(src, 0) >= 0 {
		return nil, Errors{{File: path, Line: 1, Column: 1, Msg: "not a text file: expected UTF-8 " + format}}
	}
	if len(bytes.TrimSpace(src)) == 0 {
		return nil, Errors{{File: path, Msg: "policy is empty: expected version: 1 and benchmarks"}}
	}
	l, err := newPolicyLoader()
	if err != nil {
		return nil, err
	}
	data, err := l.parsePlain(path, format, src)
	if err != nil {
		return nil, err
	}
	if err := data.Err(); err != nil {
		return nil, policyErrors(l.translate(fileSet{path}, err, data, nil))
	}
	if k := data.IncompleteKind(); k == cue.TopKind {
		return nil, Errors{{File: path, Msg: "policy is empty: expected version: 1 and benchmarks"}}
	} else if k != cue.StructKind {
		return nil, Errors{{File: path, Line: 1, Column: 1, Msg: fmt.Sprintf("expected a mapping with version and benchmarks, found %v", k)}}
	}
	v := l.recipe.Unify(data)
	if err := v.Validate(cue.Concrete(true), cue.Final(), cue.All()); err != nil {
		return nil, policyErrors(withUnknown(l.translate(fileSet{path}, err, data, nil), l, path, data))
	}
	p = &gate.Policy{Path: path}
	if err := v.Decode(p); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	var errs Errors
	bad := p.Check()
	names := make([]string, 0, len(bad))
	for name := range bad {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sels := []cue.Selector{cue.Str("benchmarks"), cue.Str(name)}
		if p.Benchmarks[name].Metric != nil {
			sels = append(sels, cue.Str("metric"))
		}
		pos := posOf(fileSet{path}, data, sels)
		errs = append(errs, Error{File: path, Line: pos.Line(), Column: pos.Column(), Path: displayPath(sels), Msg: bad[name]})
	}
	if len(errs) > 0 {
		return nil, errs.sorted().truncated()
	}
	return p, nil
}

// newPolicyLoader is a Loader whose root definition is #Policy: the
// recipe loader's parsing and error translation, for policies.
func newPolicyLoader() (*Loader, error) {
	ctx := cuecontext.New()
	// #Policy embedded at the root: error paths then start at the
	// policy's own fields (benchmarks.gsm8k.tier), as the recipe
	// loader's do once it drops #Recipe.
	s := ctx.CompileString(schema.PolicySource+"\n#Policy\n", cue.Filename(schema.PolicyFilename))
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("compile embedded policy schema: %w", err)
	}
	return &Loader{ctx: ctx, schema: s, recipe: s}, nil
}

// policyErrors words the recipe loader's messages for a policy.
func policyErrors(es Errors) Errors {
	for i := range es {
		es[i].Msg = strings.ReplaceAll(es[i].Msg, "services and benchmarks", "version and benchmarks")
	}
	return es
}

// withUnknown adds the unknown keys CUE leaves unreported when a policy
// has other errors too (it reports closedness only once values unify).
func withUnknown(es Errors, l *Loader, path string, data cue.Value) Errors {
	check := func(sels []cue.Selector, schemaPath cue.Path) {
		parent := data.LookupPath(cue.MakePath(sels...))
		it, err := parent.Fields()
		if err != nil {
			return
		}
		def := l.schema.LookupPath(schemaPath)
		for it.Next() {
			sel := it.Selector()
			if !sel.IsString() || def.Allows(sel) {
				continue
			}
			fs := append(slices.Clone(sels), sel)
			p := displayPath(fs)
			if slices.ContainsFunc(es, func(e Error) bool { return e.Path == p }) {
				continue
			}
			pos := posOf(fileSet{path}, data, fs)
			es = append(es, Error{File: path, Line: pos.Line(), Column: pos.Column(), Path: p,
				Msg: unknownFieldMsg(def, []cue.Selector{sel}, func([]cue.Selector) bool { return false })})
		}
	}
	check(nil, cue.ParsePath("#Policy"))
	check([]cue.Selector{cue.Str("defaults")}, cue.ParsePath("#GateRule"))
	if it, err := data.LookupPath(cue.ParsePath("benchmarks")).Fields(); err == nil {
		for it.Next() {
			check([]cue.Selector{cue.Str("benchmarks"), it.Selector()}, cue.ParsePath("#GateRule"))
		}
	}
	return es.sorted().truncated()
}
