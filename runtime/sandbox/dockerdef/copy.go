package dockerdef

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/nel-eval/nel/runtime/shellquote"
)

// copyStep converts COPY and ADD of files of the build context: each
// source is copied from the staging folder at this point of %post, as
// Docker's rules place it (a folder's contents into the destination; a
// file into it when it ends with / or there are several sources, else to
// it).
func (c *converter) copyStep(cmd, args string) error {
	flags, rest := cutFlags(args)
	for _, f := range flags {
		name, _, _ := strings.Cut(f, "=")
		switch name {
		case "--chown", "--link":
			// --chown: apptainer runs a session's commands as the host's
			// user, never as an owner the image names, and /app is a copy
			// the user owns. --link only changes how Docker caches layers.
		case "--from":
			return fmt.Errorf("not supported yet: %s %s (a build of several stages)", cmd, f)
		default:
			return fmt.Errorf("not supported yet: %s %s", cmd, f)
		}
	}
	ws, err := c.copyWords(rest)
	if err != nil {
		return err
	}
	if len(ws) < 2 {
		return fmt.Errorf("expected %s SOURCE... DEST", cmd)
	}
	dest, err := c.path(ws[len(ws)-1], c.vars)
	if err != nil {
		return err
	}
	if err := c.knownDir(dest); err != nil {
		return err
	}
	var srcs []string
	for _, w := range ws[:len(ws)-1] {
		s, err := c.path(w, c.vars)
		if err != nil {
			return err
		}
		m, err := c.sources(cmd, s)
		if err != nil {
			return err
		}
		srcs = append(srcs, m...)
	}
	intoDir := strings.HasSuffix(dest, "/") || len(srcs) > 1
	d := shellquote.Quote(c.abs(dest))
	for _, s := range srcs {
		fi, err := fs.Stat(c.ctx, s)
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		from := shellquote.Quote(path.Join(Staging, s))
		// Separate lines: set -e stops %post at a failed mkdir (a
		// file where the folder goes), as the failed COPY stops Docker's
		// build; in a && list it would only skip the cp.
		var mkdir, cp string
		switch {
		case fi.IsDir():
			mkdir, cp = d, shellquote.Quote(path.Join(Staging, s)+"/.")+" "+d+"/"
		case intoDir:
			mkdir, cp = d, from+" "+d+"/"
		default:
			mkdir, cp = shellquote.Quote(path.Dir(c.abs(dest))), from+" "+d
		}
		if cmd == "ADD" && !fi.IsDir() {
			if err := notArchive(c.ctx, s); err != nil {
				return err
			}
		}
		c.d.Post = append(c.d.Post, "mkdir -p "+mkdir, "cp -a "+cp)
	}
	c.d.Copies = true
	return nil
}

// copyWords are COPY's words: the JSON form's strings, each read for its
// variables as Docker reads them, else the shell form's.
func (c *converter) copyWords(rest string) ([]word, error) {
	if argv, ok := execForm(rest); ok {
		ws := make([]word, len(argv))
		for i, a := range argv {
			w, err := lexWords(a, false)
			if err != nil {
				return nil, err
			}
			ws[i] = w[0]
		}
		return ws, nil
	}
	return lexWords(rest, true)
}

// sources are the files of the build context that source s names: itself,
// or what its wildcards match.
func (c *converter) sources(cmd, s string) ([]string, error) {
	if cmd == "ADD" && (strings.Contains(s, "://") || strings.HasPrefix(s, "git@")) {
		return nil, fmt.Errorf("not supported yet: ADD of a URL (%s): nothing is fetched at build time; put the file in environment/", s)
	}
	p := strings.TrimPrefix(path.Clean("/"+s), "/")
	for _, seg := range strings.Split(s, "/") {
		if seg == ".." {
			return nil, fmt.Errorf("%s leaves the build context", s)
		}
	}
	if p == "" {
		p = "."
	}
	if strings.ContainsAny(p, "*?[") {
		m, err := fs.Glob(c.ctx, p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no file of the build context matches", s)
		}
		return m, nil
	}
	if _, err := fs.Stat(c.ctx, p); err != nil {
		return nil, fmt.Errorf("%s: not in the build context (environment/)", s)
	}
	return []string{p}, nil
}

// firstLink is the first symbolic link under folder dir of ctx (in
// lexical order); "" when there is none.
func firstLink(ctx fs.FS, dir string) string {
	var link string
	fs.WalkDir(ctx, dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type()&fs.ModeSymlink != 0 {
			link = p
			return fs.SkipAll
		}
		return nil
	})
	return link
}

// notArchive refuses an ADD of a tar archive, which Docker unpacks.
func notArchive(ctx fs.FS, p string) error {
	f, err := ctx.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	// gzip, bzip2, xz and zstd: the compressions Docker unpacks a tar of.
	for _, magic := range [][]byte{{0x1f, 0x8b}, []byte("BZh"), {0xfd, '7', 'z', 'X', 'Z', 0}, {0x28, 0xb5, 0x2f, 0xfd}} {
		if bytes.HasPrefix(head, magic) {
			return fmt.Errorf("not supported yet: ADD of an archive (%s; Docker unpacks it): use COPY, and unpack it in a RUN", p)
		}
	}
	if len(head) >= 262 && string(head[257:262]) == "ustar" {
		return fmt.Errorf("not supported yet: ADD of an archive (%s; Docker unpacks it): use COPY, and unpack it in a RUN", p)
	}
	return nil
}
