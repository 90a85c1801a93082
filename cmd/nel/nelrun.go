package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// locateNelRun finds the nel-run binary the compiled job will call and
// computes its sha256, which the job checks before running it. A path given
// with --nel-run (or $NEL_RUN) is recorded as given; the default, the
// nel-run beside this nel, is recorded as an absolute path.
func locateNelRun(flagPath string) (path, sum string, err error) {
	path = flagPath
	if path == "" {
		path = os.Getenv("NEL_RUN")
	}
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", "", fmt.Errorf("find nel-run: %w", err)
		}
		if exe, err = filepath.EvalSymlinks(exe); err != nil {
			return "", "", fmt.Errorf("find nel-run: %w", err)
		}
		path = filepath.Join(filepath.Dir(exe), "nel-run")
	}
	f, err := os.Open(path)
	if err != nil {
		return "", "", fmt.Errorf("nel-run: %w (build it with 'make build', or pass --nel-run PATH)", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", "", fmt.Errorf("nel-run: read %s: %w", path, err)
	}
	return path, hex.EncodeToString(h.Sum(nil)), nil
}
