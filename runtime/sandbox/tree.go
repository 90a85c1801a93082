package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// A session on a sandbox pool starts from directories on the shard's node
// (a Harbor task's environment and tests), which the pool's server cannot
// read: its container mounts nel-run alone, and its node need not share the
// shard's file system. They travel in the request as a tree.

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

// writeTree writes a tree under dir. Every path must stay inside dir:
// os.Root refuses "..", absolute paths and a link (from the tree itself)
// that would lead a later entry outside.
func writeTree(dir string, tree []treeEntry) error {
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
		switch {
		case e.Dir:
			if err = root.MkdirAll(rel, 0o700); err == nil {
				err = root.Chmod(rel, mode|0o700)
			}
		case e.Link != "":
			err = root.Symlink(e.Link, rel)
		default:
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
