package compiler

import (
	"os"
	"path/filepath"
	"strings"
)

// nodeLocalDirs are folders that are, on almost every cluster, private to
// the machine they are on (a tmpfs or a local disk): a compute node never
// sees the login node's.
var nodeLocalDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// NodeLocalDir says whether path lies in a folder that is usually private
// to this machine (/tmp, /var/tmp, /dev/shm, or $TMPDIR), and which. The
// compiled job calls nel-run at the path it was compiled with, on the
// compute nodes: one there does not exist on them.
func NodeLocalDir(path string) (string, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	dirs := nodeLocalDirs
	if t := os.Getenv("TMPDIR"); t != "" && filepath.IsAbs(t) {
		dirs = append(dirs[:len(dirs):len(dirs)], filepath.Clean(t))
	}
	for _, d := range dirs {
		if abs == d || strings.HasPrefix(abs, d+string(filepath.Separator)) {
			return d, true
		}
	}
	return "", false
}
