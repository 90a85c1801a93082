package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// A tree is a directory's files as they travel to a remote session (an
// ecs_fargate task's exec server): a Harbor task's environment files for
// /app, its tests for /tests. Modes travel with the files (test.sh and
// the task's scripts are executable); symbolic links travel as links and
// resolve inside the sandbox, as a local session's copy does.
type tree map[string]treeFile

type treeFile struct {
	Data []byte      `json:"data,omitempty"`
	Mode fs.FileMode `json:"mode"`           // permission bits, and fs.ModeDir for a directory
	Link string      `json:"link,omitempty"` // a symbolic link's target
}

// readTree reads the host directory dir; "" is an empty tree.
func readTree(dir string) (tree, error) {
	t := tree{}
	if dir == "" {
		return t, nil
	}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		fi, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			t[rel] = treeFile{Mode: fs.ModeDir | fi.Mode().Perm()}
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			t[rel] = treeFile{Mode: fs.ModeSymlink, Link: target}
		case e.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			t[rel] = treeFile{Data: b, Mode: fi.Mode().Perm()}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	return t, nil
}

// write puts the tree under dir, replacing files of the same names (an
// image's /app may already hold the task's files). Names are checked as
// a job's files are: relative, inside dir; os.Root refuses to follow a
// link out of dir while writing.
func (t tree) write(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for name, f := range t {
		rel, err := cleanRel(name)
		if err != nil {
			return err
		}
		if d := path.Dir(rel); d != "." {
			if err := root.MkdirAll(d, 0o777); err != nil {
				return fmt.Errorf("file %q: %w", name, err)
			}
		}
		switch {
		case f.Mode&fs.ModeDir != 0:
			err = root.MkdirAll(rel, f.Mode.Perm()|0o700)
		case f.Mode&fs.ModeSymlink != 0:
			_ = root.Remove(rel)
			err = root.Symlink(f.Link, rel)
		default:
			_ = root.Remove(rel)
			if err = root.WriteFile(rel, f.Data, f.Mode.Perm()|0o600); err == nil {
				err = root.Chmod(rel, f.Mode.Perm()|0o600) // whatever the umask
			}
		}
		if err != nil {
			return fmt.Errorf("file %q: %w", name, err)
		}
	}
	return nil
}
