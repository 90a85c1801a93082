package compiler

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// translate turns CUE's evaluation errors into one Error per wrong field,
// each saying what was expected and what was found.
//
// CUE reports a failed disjunction (a union, or a field with a default) as
// one error per alternative; listing them all buries the point. Errors are
// grouped by path (groupErrors) and summarised (groupMessages): unknown
// fields first, then missing ones, then value mismatches with every
// alternative the schema allowed.
func (l *Loader) translate(files fileSet, err error, data cue.Value, overrides []Override) Errors {
	gs := groupErrors(files, err, data)
	site := errorSite{files: files, data: data, overrides: overrides}
	var out Errors
	for _, key := range gs.order {
		out = append(out, l.groupMessages(gs, gs.byPath[key], site)...)
	}
	out = append(out, l.unreportedFields(site, out)...)
	if len(out) == 0 {
		out = Errors{{File: files.main(), Msg: err.Error()}}
	}
	return out.sorted().truncated()
}

// errGroup is what CUE said about one path of the recipe.
type errGroup struct {
	sels     []cue.Selector
	path     string
	pos      token.Pos
	unknown  bool
	missing  []string // names of required fields that are absent
	expected []string
	other    []string
}

// errGroups are the groups of one evaluation, by path, in the order CUE
// first reported each path.
type errGroups struct {
	files  fileSet
	order  []string
	byPath map[string]*errGroup
}

// groupErrors sorts err's errors into groups by path, noting for each what
// kind of mistake CUE reported there.
func groupErrors(files fileSet, err error, data cue.Value) *errGroups {
	gs := &errGroups{files: files, byPath: map[string]*errGroup{}}
	for _, e := range cueerrors.Errors(err) {
		gs.classify(e, data)
	}
	return gs
}

// get returns the group of e's path, made on first use, with the first
// position in the user's file that CUE gives for it.
func (gs *errGroups) get(e cueerrors.Error) *errGroup {
	sels := selectorsOf(e.Path())
	key := displayPath(sels)
	g, ok := gs.byPath[key]
	if !ok {
		g = &errGroup{sels: sels, path: key}
		gs.byPath[key] = g
		gs.order = append(gs.order, key)
	}
	for _, p := range e.InputPositions() {
		if gs.files.has(p.Filename()) && !g.pos.IsValid() {
			g.pos = p
		}
	}
	// Errors in the user's own CUE (an undefined reference) carry no
	// input positions, only their own.
	if p := e.Position(); !g.pos.IsValid() && gs.files.has(p.Filename()) {
		g.pos = p
	}
	return g
}

// classify records e in its group by what its message says.
func (gs *errGroups) classify(e cueerrors.Error, data cue.Value) {
	format, args := e.Msg()
	switch {
	case strings.HasSuffix(format, "errors in empty disjunction:"):
		gs.get(e) // the per-alternative errors follow
	case strings.HasPrefix(format, "field not allowed"):
		gs.get(e).unknown = true
	case format == "required field missing: %s" && len(args) == 1:
		g := gs.get(e)
		g.missing = append(g.missing, fmt.Sprint(args[0]))
	case format == "field is required but not present":
		g := gs.get(e)
		g.missing = append(g.missing, "")
	case strings.HasPrefix(format, "undefined field"):
		// #XTypes[x.type] with an unknown type: the type error says it.
		g := gs.get(e)
		g.other = append(g.other, "")
	case strings.HasPrefix(format, "conflicting values %s and %s") && len(args) >= 2:
		gs.get(e).conflict(data, fmt.Sprint(args[0]), fmt.Sprint(args[1]))
	case format == "invalid value %v (out of bound %s)" && len(args) == 2:
		g := gs.get(e)
		g.expected = append(g.expected, fmt.Sprint(args[1]))
	case format == "invalid value %s (does not satisfy %s)" && len(args) == 2:
		g := gs.get(e)
		g.expected = append(g.expected, fmt.Sprint(args[1]))
	case strings.HasPrefix(format, "incomplete value"):
		g := gs.get(e)
		if found := formatFound(data, g.sels); found != "" && found != "a mapping" && found != "a list" {
			// The user wrote a constraint (>5, string) where a
			// value is needed.
			g.other = append(g.other, "expected a concrete value, found "+found)
			return
		}
		g.missing = append(g.missing, "")
	case format == "incompatible list lengths (%d and %d)" && len(args) == 2:
		gs.get(e).listLengths(data, format, args)
	default:
		g := gs.get(e)
		g.other = append(g.other, fmt.Sprintf(format, args...))
	}
}

// conflict records CUE's "conflicting values a and b": the one of them
// the recipe does not hold is what the schema expected.
func (g *errGroup) conflict(data cue.Value, a, b string) {
	if data.LookupPath(cue.MakePath(g.sels...)).Err() != nil {
		// The recipe contradicts itself (a YAML key written twice,
		// or CUE's 1 & 2): there is no schema alternative to name.
		g.other = append(g.other, fmt.Sprintf("found two different values, %s and %s (is the field set twice?)", b, a))
		return
	}
	found := userReadings(data, g.sels)
	switch {
	case slices.Contains(found, a):
		g.expected = append(g.expected, b)
	case slices.Contains(found, b):
		g.expected = append(g.expected, a)
	default:
		g.expected = append(g.expected, a, b)
	}
}

// userReadings are the values the recipe offers at sels, as CUE prints
// them: one, or, for a ${VAR} offered as text or number (textOrTyped),
// both readings.
func userReadings(data cue.Value, sels []cue.Selector) []string {
	v := data.LookupPath(cue.MakePath(sels...))
	out := []string{formatFound(data, sels)}
	if op, args := v.Expr(); op == cue.OrOp {
		for _, a := range args {
			out = append(out, fmt.Sprint(a))
		}
	}
	return out
}

// listLengths records CUE's "incompatible list lengths": an open list with
// a minimum length ([X, ...X]) given fewer entries; a closed-list mismatch
// between the user's own values keeps CUE's wording.
func (g *errGroup) listLengths(data cue.Value, format string, args []any) {
	a, b := fmt.Sprint(args[0]), fmt.Sprint(args[1])
	if data.LookupPath(cue.MakePath(g.sels...)).Err() != nil {
		g.other = append(g.other, fmt.Sprintf(format, args...)) // two lists in the user's CUE
		return
	}
	// One length is the user's list, the other the schema's
	// minimum ([X, ...X]) or a fixed-length alternative.
	have, _ := strconv.Atoi(listLen(data, g.sels))
	x, _ := strconv.Atoi(a)
	y, _ := strconv.Atoi(b)
	if have == x && y > x || have == y && x > y {
		least := strconv.Itoa(max(x, y))
		g.other = append(g.other, fmt.Sprintf("expected at least %s %s, found %d", least, plural(least, "entry", "entries"), have))
		return
	}
	// A fixed-length alternative, such as the default
	// ["markdown"], that a longer list does not fit: the
	// alternative that applies says what is wrong.
	g.other = append(g.other, "")
}

// hasChild reports whether some group's path is below path.
func (gs *errGroups) hasChild(path string) bool {
	for _, k := range gs.order {
		if len(k) > len(path) && strings.HasPrefix(k, path) && (k[len(path)] == '.' || k[len(path)] == '[') {
			return true
		}
	}
	return false
}

// errorSite is where the errors of one evaluation point to: the recipe
// file, or the -O override that wrote the value.
type errorSite struct {
	files     fileSet
	data      cue.Value
	overrides []Override
}

// at returns the Error msg about the field at sels (path), in g.
func (s errorSite) at(g *errGroup, path string, sels []cue.Selector, msg string) Error {
	// A value an -O override wrote is the override's fault: the file
	// position nearest to it (its parent's) would send the user looking
	// for a field that is not in the file.
	if o, ok := overrideFor(s.overrides, sels); ok {
		return Error{File: "-O " + o.Text, Path: path, Msg: msg}
	}
	pos := g.pos
	if !pos.IsValid() {
		pos = posOf(s.files, s.data, sels)
	}
	return Error{File: s.files.of(pos), Line: pos.Line(), Column: pos.Column(), Path: path, Msg: msg}
}

// groupMessages summarises one group as the errors the user sees: none
// when another group says the same thing better.
func (l *Loader) groupMessages(gs *errGroups, g *errGroup, s errorSite) []Error {
	switch {
	case len(g.expected) > 0 && gs.hasChild(g.path) && !g.unknown && len(g.missing) == 0:
		// A union whose chosen alternative has a wrong field also fails
		// as a whole; the inner error is the one that says what to fix.
		return nil
	case g.unknown:
		return []Error{l.unknownFieldError(gs, g, s)}
	case len(g.missing) > 0:
		var out []Error
		for _, m := range dedupe(g.missing) {
			if m == "" {
				out = append(out, s.at(g, g.path, g.sels, "missing required field"))
				continue
			}
			sels := append(slices.Clone(g.sels), cue.Str(m))
			out = append(out, s.at(g, displayPath(sels), sels, "missing required field"))
		}
		return out
	case len(g.expected) > 0:
		exp := l.describeExpected(g.sels, dedupe(g.expected))
		var msg string
		if len(exp) == 1 {
			msg = "expected " + exp[0]
		} else {
			msg = "expected one of " + strings.Join(exp, ", ")
		}
		if found := formatFound(s.data, g.sels); found != "" {
			msg += ", found " + found + didYouMean(found, exp)
		}
		return []Error{s.at(g, g.path, g.sels, msg)}
	}
	var msgs []string
	for _, m := range g.other {
		if m != "" {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) == 0 {
		// Only the lookup of an unknown type failed; its type field
		// has its own error unless it is the only one.
		if _, typed := gs.byPath[displayPath(append(slices.Clone(g.sels), cue.Str("type")))]; typed {
			return nil
		}
		// A disjunction that failed because of an entry inside
		// it (output.report: ["pdf"]): the entry's error says it.
		if gs.hasChild(g.path) {
			return nil
		}
		msgs = []string{"invalid value"}
	}
	return []Error{s.at(g, g.path, g.sels, strings.Join(dedupe(msgs), "; "))}
}

// unknownFieldError is the error of a group CUE reported as a field the
// schema does not allow.
func (l *Loader) unknownFieldError(gs *errGroups, g *errGroup, s errorSite) Error {
	uni := l.recipe.Unify(s.data)
	isUnknown := func(sels []cue.Selector) bool {
		u, ok := gs.byPath[displayPath(sels)]
		return ok && u.unknown
	}
	// When the recipe has other errors too, CUE may report the fields
	// inside an unknown section instead of the section itself
	// (clustr.type for clustr). Only the top level can be asked: below
	// it, unions hide what is allowed.
	if len(g.sels) > 1 && g.sels[0].IsString() && !l.recipe.Allows(g.sels[0]) {
		sels := g.sels[:1]
		g.pos = posOf(s.files, s.data, sels)
		return s.at(g, displayPath(sels), sels, unknownFieldMsg(uni, sels, isUnknown))
	}
	return s.at(g, g.path, g.sels, unknownFieldMsg(uni, g.sels, isUnknown))
}

// unreportedFields returns an error for each unknown top-level field that
// out does not name: with other errors in the recipe, CUE may leave one
// (clustr: 1) unreported.
func (l *Loader) unreportedFields(s errorSite, out Errors) Errors {
	it, err := s.data.Fields()
	if err != nil {
		return nil
	}
	var more Errors
	for it.Next() {
		sel := it.Selector()
		path := displayPath([]cue.Selector{sel})
		if !sel.IsString() || l.recipe.Allows(sel) || slices.ContainsFunc(out, func(e Error) bool { return e.Path == path }) {
			continue
		}
		sels := []cue.Selector{sel}
		e := Error{File: s.files.main(), Path: path, Msg: unknownFieldMsg(l.recipe, sels, func([]cue.Selector) bool { return false })}
		if o, ok := overrideFor(s.overrides, sels); ok {
			e.File = "-O " + o.Text
		} else if p := posOf(s.files, s.data, sels); p.IsValid() {
			e.File, e.Line, e.Column = p.Filename(), p.Line(), p.Column()
		}
		more = append(more, e)
	}
	return more
}

// selectorsOf maps an error path such as ["#Recipe" "benchmarks" "0" "name"]
// to selectors on the user's data (the #Recipe root dropped).
func selectorsOf(path []string) []cue.Selector {
	if len(path) > 0 && path[0] == "#Recipe" {
		path = path[1:]
	}
	sels := make([]cue.Selector, 0, len(path))
	for _, p := range path {
		if i, err := strconv.Atoi(p); err == nil && i >= 0 {
			sels = append(sels, cue.Index(i))
			continue
		}
		if uq, err := strconv.Unquote(p); err == nil {
			p = uq
		}
		sels = append(sels, cue.Str(p))
	}
	return sels
}

// displayPath writes selectors the way users address fields:
// benchmarks[2].solver.service.
func displayPath(sels []cue.Selector) string {
	var b strings.Builder
	for _, s := range sels {
		if s.Type() == cue.IndexLabel {
			fmt.Fprintf(&b, "[%d]", s.Index())
			continue
		}
		name := s.Unquoted()
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		if isPlainKey(name) {
			b.WriteString(name)
		} else {
			b.WriteString(strconv.Quote(name))
		}
	}
	return b.String()
}

func isPlainKey(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// formatFound prints the user's value at sels, briefly; "" if there is none.
func formatFound(data cue.Value, sels []cue.Selector) string {
	v := data.LookupPath(cue.MakePath(sels...))
	if !v.Exists() {
		return ""
	}
	// A ${VAR} expanded to "5" is offered as text or number (textOrTyped):
	// what the user wrote is the text.
	if d, ok := v.Default(); ok {
		v = d
	}
	switch v.IncompleteKind() {
	case cue.StructKind:
		return "a mapping"
	case cue.ListKind:
		return "a list"
	}
	s := fmt.Sprint(v)
	if len(s) > 80 {
		s = s[:77] + "…"
	}
	return s
}

// unknownFieldMsg names the unknown field and, when one is close, the field
// the user probably meant. unknown reports the user's other unknown fields,
// which are no alternative to suggest.
func unknownFieldMsg(v cue.Value, sels []cue.Selector, unknown func([]cue.Selector) bool) string {
	if len(sels) == 0 || !sels[len(sels)-1].IsString() {
		return "unknown field"
	}
	name := sels[len(sels)-1].Unquoted()
	parent := v.LookupPath(cue.MakePath(sels[:len(sels)-1]...))
	var known []string
	if it, err := parent.Fields(cue.Optional(true)); err == nil {
		for it.Next() {
			sel := it.Selector()
			if f := sel.Unquoted(); f != name && !unknown(append(slices.Clone(sels[:len(sels)-1]), sel)) {
				known = append(known, f)
			}
		}
	}
	msg := fmt.Sprintf("unknown field %q", name)
	if best := closest(name, known); best != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", best)
	}
	if len(known) > 0 && len(known) <= 30 {
		slices.Sort(known)
		return msg + "; expected one of: " + strings.Join(known, ", ")
	}
	return msg
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// describeExpected makes the alternatives CUE reports readable: a union's
// type field lists every type the schema knows, an alternative subsumed by
// another one (a default such as 1 beside >=1) is dropped, and regular
// expressions are said in words where the schema uses well-known ones.
func (l *Loader) describeExpected(sels []cue.Selector, exp []string) []string {
	if types := l.unionTypes(sels); types != nil {
		return types
	}
	vals := make([]cue.Value, len(exp))
	for i, x := range exp {
		vals[i] = l.ctx.CompileString(x)
	}
	var out []string
	for i, x := range exp {
		redundant := false
		for j := range exp {
			if i != j && vals[i].Err() == nil && vals[j].Err() == nil && vals[j].Subsume(vals[i]) == nil && vals[i].Subsume(vals[j]) != nil {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, describeConstraint(x))
		}
	}
	return out
}

// unionTypes lists the values a union's `type` may take, from the schema.
func (l *Loader) unionTypes(sels []cue.Selector) []string {
	n := len(sels)
	if n < 2 || !sels[n-1].IsString() {
		return nil
	}
	if key := sels[n-1].Unquoted(); key != "type" && key != "name" {
		return nil
	}
	path := make([]string, n-1)
	for i, s := range sels[:n-1] {
		if s.Type() == cue.IndexLabel {
			path[i] = "[]"
		} else {
			path[i] = s.Unquoted()
		}
	}
	var def string
	switch {
	case sels[n-1].Unquoted() == "name":
		// An interceptor's discriminator is its name (NeMo's key).
		if len(path) != 5 || path[0] != "services" || path[2] != "proxy" || path[3] != "interceptors" {
			return nil
		}
		def = "#InterceptorTypes"
	case len(path) == 2 && path[0] == "services":
		def = "#ServiceTypes"
	case len(path) == 2 && path[0] == "sandboxes", len(path) == 3 && path[0] == "benchmarks" && path[2] == "sandbox":
		def = "#SandboxTypes"
	case len(path) == 3 && path[0] == "benchmarks" && path[2] == "solver":
		def = "#SolverTypes"
	case len(path) == 5 && path[0] == "benchmarks" && path[3] == "metrics":
		def = "#MetricTypes"
	case len(path) == 1 && path[0] == "cluster":
		def = "#ClusterTypes"
	default:
		return nil
	}
	it, err := l.schema.LookupPath(cue.ParsePath(def)).Fields()
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		out = append(out, strconv.Quote(it.Selector().Unquoted()))
	}
	return out
}

// describeConstraint says a schema constraint in words when it is one of
// the regular expressions the schema uses, and leaves it as CUE otherwise.
func describeConstraint(x string) string {
	switch {
	case strings.Contains(x, `\\$\\{[A-Za-z_]`):
		return "a ${VAR} reference to an environment variable (secrets are passed by name, never written in a recipe)"
	case strings.HasPrefix(x, `=~"^[A-Za-z_][A-Za-z0-9_]*$"`):
		return "an environment variable name (letters, digits and _, not starting with a digit)"
	case strings.HasPrefix(x, `=~"^https?://"`):
		return "an http:// or https:// URL"
	case strings.HasPrefix(x, `=~"^/"`):
		return "a path starting with /"
	case strings.HasPrefix(x, `=~"^[0-9]+(\\.[0-9]+)?[kKmMgGtT]`):
		return "a size such as 512m or 4g"
	case strings.HasPrefix(x, "=~"):
		return "a string matching " + x[2:]
	case strings.HasPrefix(x, "{"):
		return "a mapping" // a schema definition's body says nothing to a user
	case strings.HasPrefix(x, "["):
		return "a list"
	}
	return x
}

// listLen is the number of entries of the list at sels in the user's data,
// in decimal, or "" when there is no list there.
func listLen(data cue.Value, sels []cue.Selector) string {
	n, err := data.LookupPath(cue.MakePath(sels...)).Len().Int64()
	if err != nil {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

func plural(n, one, many string) string {
	if n == "1" {
		return one
	}
	return many
}

// didYouMean names the string among the expected values closest to a
// string found (a misspelt scorer or type name), "" when none is close or
// what was found is no string.
func didYouMean(found string, expected []string) string {
	f, err := strconv.Unquote(found)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range expected {
		if n, err := strconv.Unquote(e); err == nil {
			names = append(names, n)
		}
	}
	if best := closest(f, names); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}
