// Package dockerdef converts a Dockerfile of one stage into an Apptainer
// (SingularityCE) definition file that builds the same image from the
// image its FROM names: how the apptainer sandbox builds a Harbor task's
// environment/Dockerfile, where docker build is not there to do it.
//
// The definition file's %post does the Dockerfile's steps in their order:
// each RUN with the Dockerfile's shell, each WORKDIR as a cd (the folder
// made), each ENV and ARG exported, each COPY and ADD as a cp from the
// build context, which %files puts at a staging folder before %post runs
// and %post removes at its end, so that a COPY after a RUN lands after it
// as in Docker. ENV also goes to %environment, for the image's commands
// (HOME aside: a session's is the sandbox's). BuildKit's platform ARGs
// (TARGETARCH…) are the converting machine's. What cannot be converted
// faithfully (several stages, COPY --from, ADD of a URL or an archive,
// ONBUILD, heredocs, a relative COPY destination or WORKDIR before the
// first absolute WORKDIR, whose base is the base image's unknown working
// folder…) is an *Error naming the Dockerfile's line, and so is a FROM
// other than a registry image (oci-archive:, docker-daemon:… would read
// the build host's files or daemon): the pull is always docker://.
//
// The Dockerfile and its build context are untrusted, and the definition
// file's parser starts a section at any line whose first word starts with
// % (%setup runs on the build's host): a control character (a newline
// above all) or a leading % in anything that would reach the text is
// refused at its line, and [Def.Text] checks that its text holds only
// nel's headers, sections and indented lines.
package dockerdef

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/shellquote"
)

// Staging is where %files puts the build context for %post's copies.
const Staging = "/.nel-build-context"

// Def is a converted Dockerfile.
type Def struct {
	// From is the image reference FROM names, its ARGs expanded.
	From string
	// Copies says whether %post copies from the build context (%files
	// must then stage it).
	Copies bool
	// Post and Env are the lines of %post and %environment.
	Post []string
	Env  []string
}

// Error is a Dockerfile line the converter refuses.
type Error struct {
	Line        int
	Instruction string // as written, continuation lines joined
	Msg         string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return "Dockerfile: " + e.Msg
	}
	return fmt.Sprintf("Dockerfile:%d: %s: %s", e.Line, clip(e.Instruction), e.Msg)
}

func clip(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
		s = strconv.Quote(s)
	}
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// variable is an ARG or ENV the Dockerfile set, with its value.
type variable struct {
	env bool
	val word
}

type converter struct {
	ctx     fs.FS
	d       Def
	global  map[string]variable // ARGs before FROM
	vars    map[string]variable
	workdir string
	// workdirSet: a WORKDIR set workdir; before it the working folder is
	// the base image's, which nel does not read (%post starts in /).
	workdirSet bool
	shell      []string
	user       string // a USER other than root, and its line
	userLine   int
}

// Convert reads dockerfile, whose build context is ctx (the folder that
// holds it), into a definition file's parts.
func Convert(dockerfile string, ctx fs.FS) (*Def, error) {
	if _, err := fs.Stat(ctx, ".dockerignore"); err == nil {
		return nil, &Error{Msg: "not supported yet: a .dockerignore (the whole build context would be copied)"}
	}
	ins, err := instructions(dockerfile)
	if err != nil {
		return nil, err
	}
	c := &converter{ctx: ctx, global: platformArgs(runtime.GOOS, runtime.GOARCH), vars: map[string]variable{}, workdir: "/", shell: []string{"/bin/sh", "-c"}}
	c.d.Post = []string{"set -e", "cd /"}
	for _, in := range ins {
		np, ne := len(c.d.Post), len(c.d.Env)
		err := c.instruction(in)
		for _, l := range append(c.d.Post[np:len(c.d.Post):len(c.d.Post)], c.d.Env[ne:]...) {
			if err == nil {
				err = bodyLine(l)
			}
		}
		if err != nil {
			return nil, &Error{Line: in.line, Instruction: in.text, Msg: err.Error()}
		}
	}
	if c.d.From == "" {
		return nil, &Error{Msg: "no FROM line"}
	}
	if c.d.Copies {
		// %files copies the context with its links followed: a link
		// to a host file would put the file in the image, where
		// Docker's context holds the link.
		if l := firstLink(ctx, "."); l != "" {
			return nil, &Error{Msg: "not supported yet: a symbolic link in the build context (" + l + "): the build would copy what it points to"}
		}
		c.d.Post = append(c.d.Post, "rm -rf "+Staging)
	}
	return &c.d, nil
}

// heredoc matches a heredoc's start (<<EOF, <<-"EOF"), not bash's <<<.
var heredoc = regexp.MustCompile(`(^|[^<])<<-?["']?[A-Za-z_]`)

func (c *converter) instruction(in instruction) error {
	if c.d.From == "" && in.cmd != "FROM" && in.cmd != "ARG" {
		return fmt.Errorf("only ARG may come before FROM")
	}
	if c.user != "" && in.cmd != "USER" && changesImage(in.cmd) {
		return fmt.Errorf("not supported yet: a step after USER %s (line %d): the build runs every step as root", c.user, c.userLine)
	}
	switch in.cmd {
	case "RUN", "COPY", "ADD":
		if heredoc.MatchString(in.args) {
			return fmt.Errorf("not supported yet: a heredoc")
		}
	}
	switch in.cmd {
	case "FROM":
		return c.from(in.args)
	case "ARG":
		return c.arg(in.args)
	case "ENV":
		return c.env(in.args)
	case "RUN":
		return c.run(in.args)
	case "WORKDIR":
		return c.workdirStep(in.args)
	case "COPY", "ADD":
		return c.copyStep(in.cmd, in.args)
	case "SHELL":
		argv, ok := execForm(in.args)
		if !ok || len(argv) == 0 {
			return fmt.Errorf("SHELL takes the JSON form: SHELL [\"executable\", \"parameters\"]")
		}
		for _, a := range argv {
			if err := bodyLine(a); err != nil {
				return err
			}
		}
		c.shell = argv
	case "USER":
		return c.userStep(in)
	case "LABEL", "MAINTAINER":
		// Metadata: nothing a session or its verifier reads.
	case "EXPOSE":
		// A sandbox session has no network to expose a port on.
	case "CMD", "ENTRYPOINT", "HEALTHCHECK", "STOPSIGNAL":
		// A session runs its own commands, never the image's default
		// program, and keeps no long-running container to check or stop.
	default:
		// VOLUME (what later steps write there is dropped in Docker),
		// ONBUILD (a trigger for another build), and what Docker may add.
		return fmt.Errorf("not supported yet: %s", in.cmd)
	}
	return nil
}

// changesImage: an instruction whose effect on the image depends on the
// user it runs as.
func changesImage(cmd string) bool {
	switch cmd {
	case "RUN", "COPY", "ADD", "WORKDIR":
		return true
	}
	return false
}

func (c *converter) from(args string) error {
	if c.d.From != "" {
		return fmt.Errorf("not supported yet: a build of several stages")
	}
	flags, rest := cutFlags(args)
	if len(flags) > 0 {
		return fmt.Errorf("not supported yet: FROM %s", flags[0])
	}
	ws, err := lexWords(rest, true)
	if err != nil {
		return err
	}
	if len(ws) != 1 && !(len(ws) == 3 && strings.EqualFold(mustLit(ws[1]), "AS")) {
		return fmt.Errorf("expected FROM IMAGE [AS NAME]")
	}
	img, err := c.path(ws[0], c.global)
	if err != nil {
		return err
	}
	if img == "" || strings.EqualFold(img, "scratch") || strings.HasPrefix(img, "-") {
		return fmt.Errorf("not supported yet: FROM %q (nel builds on a named image)", img)
	}
	if err := CheckImageRef(img); err != nil {
		return err
	}
	c.d.From = img
	return nil
}

func mustLit(w word) string {
	s, _ := w.literal()
	return s
}

// arg declares ARGs: a default is the value (no build arguments are
// given); before FROM the ARG is FROM's alone, and an ARG of the same
// name after FROM takes its default from it, as in Docker.
func (c *converter) arg(args string) error {
	ws, err := lexWords(args, true)
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		return fmt.Errorf("expected ARG NAME[=DEFAULT]")
	}
	for _, w := range ws {
		name, val, has := cutAssign(w)
		if nameLen(name) != len(name) || name == "" {
			return fmt.Errorf("ARG %q: not a variable name", name)
		}
		if _, ok := platformArgs("", "")[name]; ok {
			// The builder sets these, over any default.
			has = false
		}
		if c.d.From == "" {
			if has {
				c.global[name] = variable{val: c.resolve(val, c.global)}
			}
			continue
		}
		if !has {
			g, ok := c.global[name]
			if !ok {
				continue // declared, unset: RUN sees no such variable
			}
			val = g.val
		} else {
			val = c.resolve(val, c.vars)
		}
		if v, ok := c.vars[name]; ok && v.env {
			continue // an ENV of the same name wins over the ARG
		}
		c.vars[name] = variable{val: val}
		c.d.Post = append(c.d.Post, "export "+name+"="+val.shell())
	}
	return nil
}

// platformArgs are the ARGs BuildKit predefines, in the global scope
// (FROM reads them; a stage declares them to see them): the build's
// machine is both the build and the target platform, in Docker's
// spelling, which is Go's (linux/amd64, linux/arm64).
func platformArgs(goos, goarch string) map[string]variable {
	m := map[string]variable{}
	for _, p := range []string{"TARGET", "BUILD"} {
		m[p+"PLATFORM"] = variable{val: word{{lit: goos + "/" + goarch}}}
		m[p+"OS"] = variable{val: word{{lit: goos}}}
		m[p+"ARCH"] = variable{val: word{{lit: goarch}}}
		m[p+"VARIANT"] = variable{val: word{{lit: ""}}}
	}
	return m
}

// cutAssign splits NAME=VALUE; the name is literal text.
func cutAssign(w word) (string, word, bool) {
	if len(w) == 0 || w[0].name != "" {
		return "", nil, false
	}
	name, rest, ok := strings.Cut(w[0].lit, "=")
	if !ok {
		return w[0].lit + shellText(w[1:]), nil, false
	}
	val := append(word{}, w[1:]...)
	if rest != "" {
		val = append(word{{lit: rest}}, val...)
	}
	return name, val, true
}

// shellText is a word's remainder, for an error message.
func shellText(w word) string {
	if len(w) == 0 {
		return ""
	}
	return w.shell()
}

// env converts an ENV: every value is read with the variables as they
// were before the instruction (ENV A=new B=$A gives B the old A), as Docker
// does, and one export sets them all, whose words the shell expands before
// it assigns any.
func (c *converter) env(args string) error {
	kvs, err := envPairs(args)
	if err != nil {
		return err
	}
	post, env := "export", "export"
	vals := make([]word, len(kvs))
	for i, p := range kvs {
		if p.name == "" || nameLen(p.name) != len(p.name) {
			return fmt.Errorf("ENV %q: not a variable name", p.name)
		}
		vals[i] = c.resolve(p.val, c.vars)
	}
	for i, p := range kvs {
		c.vars[p.name] = variable{env: true, val: vals[i]}
		a := " " + p.name + "=" + vals[i].shell()
		post += a
		// A session's HOME is the sandbox's (apptainer's --home), as the
		// engine sets it for every command: the image's would override it.
		if p.name != "HOME" {
			env += a
		}
	}
	c.d.Post = append(c.d.Post, post)
	if env != "export" {
		c.d.Env = append(c.d.Env, env)
	}
	return nil
}

type envPair struct {
	name string
	val  word
}

// envPairs reads ENV's NAME=VALUE words, or the old form NAME VALUE (the
// rest of the line, after a space or a tab).
func envPairs(args string) ([]envPair, error) {
	ws, err := lexWords(args, true)
	if err != nil {
		return nil, err
	}
	if len(ws) == 0 {
		return nil, fmt.Errorf("expected ENV NAME=VALUE")
	}
	var kvs []envPair
	if name, _, has := cutAssign(ws[0]); has || nameLen(name) != len(name) {
		for _, w := range ws {
			name, val, has := cutAssign(w)
			if !has {
				return nil, fmt.Errorf("expected NAME=VALUE, found %s", w.shell())
			}
			kvs = append(kvs, envPair{name, val})
		}
		return kvs, nil
	}
	a := strings.TrimSpace(args)
	rest := strings.TrimLeft(a[strings.IndexAny(a+" ", " \t"):], " \t")
	vs, err := lexWords(rest, false)
	if err != nil {
		return nil, err
	}
	return append(kvs, envPair{mustLit(ws[0]), vs[0]}), nil
}

// resolve replaces the references of w to variables of vars that hold
// plain text by their values (a modifier applied); the others stay
// references, for the shell. A reference to an ENV is the variable the
// definition file's shell has at that point, so it stays as it is unless
// a modifier needs its value.
func (c *converter) resolve(w word, vars map[string]variable) word {
	var out word
	for _, s := range w {
		v, ok := vars[s.name]
		if s.name == "" || !ok {
			out = append(out, s)
			continue
		}
		val, plain := v.val.literal()
		switch {
		case plain && s.op == ":-" && val == "":
			out = append(out, seg{lit: s.arg})
		case plain && s.op == ":+":
			if val != "" {
				out = append(out, seg{lit: s.arg})
			}
		case plain:
			out = append(out, seg{lit: val})
		case v.env || s.op != "":
			out = append(out, s)
		default:
			out = append(out, v.val...)
		}
	}
	return out
}

// path is w as plain text: a path or a reference the converter must know.
func (c *converter) path(w word, vars map[string]variable) (string, error) {
	r := c.resolve(w, vars)
	s, ok := r.literal()
	if !ok {
		for _, g := range r {
			if g.name != "" {
				return "", fmt.Errorf("not supported yet: $%s here (a variable the Dockerfile does not set to plain text)", g.name)
			}
		}
	}
	return s, nil
}

func (c *converter) run(args string) error {
	flags, rest := cutFlags(args)
	if len(flags) > 0 {
		return fmt.Errorf("not supported yet: RUN %s", flags[0])
	}
	if argv, ok := execForm(rest); ok {
		if len(argv) == 0 {
			return fmt.Errorf("RUN []: no command")
		}
		c.d.Post = append(c.d.Post, shellquote.Join(argv))
		return nil
	}
	if strings.TrimSpace(rest) == "" {
		return fmt.Errorf("RUN: no command")
	}
	c.d.Post = append(c.d.Post, shellquote.Join(append(append([]string{}, c.shell...), rest)))
	return nil
}

func (c *converter) workdirStep(args string) error {
	ws, err := lexWords(strings.TrimSpace(args), false)
	if err != nil {
		return err
	}
	p, err := c.path(ws[0], c.vars)
	if err != nil {
		return err
	}
	if p == "" {
		return fmt.Errorf("WORKDIR: no folder")
	}
	if err := c.knownDir(p); err != nil {
		return err
	}
	c.workdir, c.workdirSet = c.abs(p), true
	q := shellquote.Quote(c.workdir)
	c.d.Post = append(c.d.Post, "mkdir -p "+q, "cd "+q) // set -e stops at either
	return nil
}

// knownDir refuses a relative path p before the Dockerfile's first
// absolute WORKDIR: Docker reads it in the base image's working folder,
// which nel does not know.
func (c *converter) knownDir(p string) error {
	if c.workdirSet || path.IsAbs(p) {
		return nil
	}
	return fmt.Errorf("not supported yet: the relative path %s before an absolute WORKDIR (it would be in the base image's working folder, which nel does not read): give a WORKDIR first, or an absolute path", p)
}

// abs is p relative to the WORKDIR when not absolute.
func (c *converter) abs(p string) string {
	if !path.IsAbs(p) {
		return path.Join(c.workdir, p)
	}
	return path.Clean(p)
}

func (c *converter) userStep(in instruction) error {
	u := strings.TrimSpace(in.args)
	name, _, _ := strings.Cut(u, ":")
	if name == "root" || name == "0" {
		c.user = ""
		return nil
	}
	// The image's user is not the session's (apptainer runs every
	// command as the host's user), so a USER that changes no step after
	// it changes nothing.
	c.user, c.userLine = u, in.line
	return nil
}

// cutFlags splits an instruction's leading --flag words from the rest.
func cutFlags(args string) ([]string, string) {
	var flags []string
	rest := strings.TrimLeft(args, " \t")
	for strings.HasPrefix(rest, "--") {
		f, r, _ := strings.Cut(rest, " ")
		flags = append(flags, f)
		rest = strings.TrimLeft(r, " \t")
	}
	return flags, rest
}

// execForm reads the JSON form ["a", "b"]; Docker takes anything else
// as the shell form.
func execForm(s string) ([]string, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[") {
		return nil, false
	}
	var argv []string
	if err := json.Unmarshal([]byte(s), &argv); err != nil {
		return nil, false
	}
	return argv, true
}
