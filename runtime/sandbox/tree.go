package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// A session on a sandbox server (a pool's, or an ecs_fargate task's) starts
// from directories on the shard's node (a Harbor task's environment and
// tests), which the server cannot read: a pool's container mounts nel-run
// alone and its node need not share the shard's file system; a task sees
// nothing of it. They travel in the requests as trees: /app's with the
// opening, /tests' with the verifier's command alone.

// treeEntry is one directory, regular file or symbolic link of a tree.
type treeEntry struct {
	// Path is slash-separated and relative to the tree's root.
	Path string `json:"path"`
	// Mode is the permission bits (files and directories).
	Mode uint32 `json:"mode,omitempty"`
	Dir  bool   `json:"dir,omitempty"`
	// Link is a symbolic link's target, kept as written: it resolves
	// inside the sandbox, where the host is not visible.
	Link string `json:"link,omitempty"`
	Data []byte `json:"data,omitempty"`
}

// readTree reads the directory root into a tree, parents before children.
// Anything other than directories, regular files and links is refused.
func readTree(root string) ([]treeEntry, error) {
	if root == "" {
		return nil, nil
	}
	var out []treeEntry
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		te := treeEntry{Path: filepath.ToSlash(rel)}
		switch t := e.Type(); {
		case t.IsDir():
			te.Dir = true
		case t&fs.ModeSymlink != 0:
			if te.Link, err = os.Readlink(p); err != nil {
				return err
			}
		case t.IsRegular():
			if te.Data, err = os.ReadFile(p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: not a file, directory or link (%s)", p, t)
		}
		if fi, err := e.Info(); err == nil && te.Link == "" {
			te.Mode = uint32(fi.Mode().Perm())
		}
		out = append(out, te)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", root, err)
	}
	return out, nil
}

// writeTree writes a tree under dir, replacing files and links of the
// same names (a task image's /app may hold some already). Every path must
// stay inside dir: os.Root refuses "..", absolute paths and a link (from
// the tree itself, or already in dir) that would lead a later entry
// outside. Modes are set whatever the umask (test.sh stays executable).
func writeTree(dir string, tree []treeEntry) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, e := range tree {
		rel := path.Clean(e.Path)
		if !fs.ValidPath(rel) || rel == "." {
			return fmt.Errorf("tree entry %q: want a relative path inside the directory", e.Path)
		}
		mode := fs.FileMode(e.Mode).Perm()
		if d := path.Dir(rel); d != "." {
			err = root.MkdirAll(d, 0o777)
		}
		switch {
		case err != nil:
		case e.Dir:
			if err = root.MkdirAll(rel, 0o700); err == nil {
				err = root.Chmod(rel, mode|0o700)
			}
		case e.Link != "":
			_ = root.Remove(rel)
			err = root.Symlink(e.Link, rel)
		default:
			_ = root.Remove(rel)
			if err = root.WriteFile(rel, e.Data, 0o600); err == nil {
				err = root.Chmod(rel, mode|0o600)
			}
		}
		if err != nil {
			return fmt.Errorf("tree entry %q: %w", e.Path, err)
		}
	}
	return nil
}
