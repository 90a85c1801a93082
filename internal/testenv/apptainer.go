package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Mksquashfs packs the apptainer tests' SIF images (Debian package
// squashfs-tools); .ci/testdeps installs it.
var Mksquashfs = Tool{"mksquashfs", "squashfs-tools"}

// apptainerBase is the SIF this test binary built or found, once.
var apptainerBase struct {
	once          sync.Once
	bin, sif, why string
	missing       *missingPart
}

// Apptainer returns the apptainer CLI (apptainer, or SingularityCE's
// singularity, which .ci/testdeps builds from its Go module because
// neither is packaged for Debian bookworm) and a SIF image holding the
// docker tests' base root (busybox and a static bash, DockerBaseImage's
// files). The SIF is built once and kept in the user's cache folder under
// a name that is the digest of its files, so later runs reuse it and a
// changed busybox makes a new one.
//
// With no CLI on PATH the test is Missing one (a failure under Strict);
// when the CLI cannot build or run an image here, it skips saying why,
// and fails under Strict too.
func Apptainer(tb testing.TB) (bin, sif string) {
	tb.Helper()
	bin, sif, part, why := ApptainerBase()
	if part != "" {
		Missing(tb, part, why)
	}
	if sif == "" {
		tb.Skip("apptainer cannot run an image here: " + why)
	}
	return bin, sif
}

// ApptainerBase is Apptainer for a caller with no testing.TB (a
// testscript condition): the CLI and the base SIF, or the missing part
// and why (part set), or only why when the CLI cannot build or run an
// image here (a skip, not a missing part).
func ApptainerBase() (bin, sif, part, why string) {
	apptainerBase.once.Do(findApptainer)
	b := &apptainerBase
	if b.missing != nil {
		return "", "", b.missing.part, b.missing.why
	}
	return b.bin, b.sif, "", b.why
}

func findApptainer() {
	b := &apptainerBase
	for _, name := range []string{"apptainer", "singularity"} {
		if p, err := exec.LookPath(name); err == nil {
			b.bin = p
			break
		}
	}
	if b.bin == "" {
		b.missing = &missingPart{"apptainer or SingularityCE (.ci/testdeps builds SingularityCE from its Go module)", "neither apptainer nor singularity is on PATH"}
		return
	}
	if _, err := exec.LookPath(Mksquashfs.Name); err != nil {
		b.missing = &missingPart{"mksquashfs (Debian package squashfs-tools)", "mksquashfs is not on PATH"}
		return
	}
	rootfs, m := baseRootfs()
	if m != nil {
		b.missing = m
		return
	}
	sif, err := baseSIF(b.bin, rootfs)
	if err != nil {
		// Under Strict a CLI that is there but cannot build or run the base
		// image is a failure like a missing one: a broken install (a build
		// of SingularityCE that stopped halfway, a flag it refuses) must
		// not turn every apptainer test into a skip on a green CI run.
		if Strict() {
			b.missing = &missingPart{"a working " + filepath.Base(b.bin) + " (it is on PATH, but cannot build or run the base image)", err.Error()}
			return
		}
		b.why = err.Error()
		return
	}
	b.sif = sif
}

// baseSIF builds (or finds) the SIF of rootfs, a tar of the base root.
func baseSIF(bin string, rootfs []byte) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256(rootfs)
	dir := filepath.Join(cache, "nel-test")
	sif := filepath.Join(dir, "base-"+hex.EncodeToString(sum[:8])+".sif")
	if _, err := os.Stat(sif); err == nil {
		return sif, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	root, err := os.MkdirTemp(dir, "base-root-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(root)
	if err := untar(root, rootfs); err != nil {
		return "", fmt.Errorf("unpack the base root: %w", err)
	}
	// apptainer binds these; an image without them gets warnings.
	for _, d := range []string{"var/tmp", "work", "app"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return "", err
		}
	}
	// Built under a temporary name and renamed: a concurrent test binary
	// never sees half a SIF.
	tmp := sif + fmt.Sprintf(".%d.tmp", os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "build", "-F", tmp, root).CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("%s build %s: %v: %s", filepath.Base(bin), filepath.Base(sif), err, lastLines(out, 5))
	}
	out, err = exec.CommandContext(ctx, bin, "exec", "--containall", "--no-privs", tmp, "/bin/sh", "-c", "echo ok").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		os.Remove(tmp)
		return "", fmt.Errorf("%s exec of the base image: %v: %s", filepath.Base(bin), err, lastLines(out, 5))
	}
	return sif, os.Rename(tmp, sif)
}

// untar writes the tar b under dir: directories, regular files and
// symlinks, the only kinds baseRootfs writes.
func untar(dir string, b []byte) error {
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
			if err == nil {
				err = os.Chmod(p, tarMode(h.Mode))
			}
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, data, tarMode(h.Mode))
			}
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, p)
		default:
			err = fmt.Errorf("%s: unexpected tar entry type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			return err
		}
	}
}

// tarMode is a tar header's mode as a FileMode, sticky bit included (/tmp).
func tarMode(m int64) os.FileMode {
	mode := os.FileMode(m) & os.ModePerm
	if m&0o1000 != 0 {
		mode |= os.ModeSticky
	}
	return mode
}
