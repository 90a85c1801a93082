package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/nel-eval/nel/runtime/sandbox/dockerdef"
)

// An apptainer session of a Harbor task whose Dockerfile builds more than
// its base image runs in a SIF built from the Dockerfile: converted into a
// definition file (package dockerdef) and built by `apptainer build
// --fakeroot` on the image FROM names, pulled once into the cache folder.
// Builds are kept in the cache folder (Config.BuildCache: the sandbox's
// sif_cache_dir, else the run folder's) under the digest of the
// definition file and the build context, so a task is built once per
// cache however many samples, shards and reruns use it; the image's /app
// is copied out beside it once, and each session's /app starts as a copy
// of that, as the docker sandbox's starts as the built image's /app.

// sifBuilds are the builds an apptainer engine made or is making, by
// digest: the samples of one task wait for one build.
type sifBuilds struct {
	mu sync.Mutex
	by map[string]*sifBuild
	// jobs are the converted Dockerfiles by build folder: a task's folder
	// is read and digested once per engine, not once per sample.
	jobs map[string]buildJob
	// pull lets one pull of a base image run at a time: two tasks FROM
	// the same image pull it once.
	pull slots
}

type sifBuild struct {
	done chan struct{}
	img  builtSIF
	err  error
	// gaveUp: the build stopped because its caller's context ended (the
	// sample's time budget, say), not because the Dockerfile is wrong;
	// whoever waits builds again.
	gaveUp bool
}

// builtSIF is a built image and the folder its /app was copied out to.
type builtSIF struct{ sif, app string }

// build returns the image of the build folder dir (its Dockerfile),
// building it unless this engine, or an earlier one with the same cache,
// has.
func (b *sifBuilds) build(ctx context.Context, a *apptainerEngine, dir string) (builtSIF, error) {
	b.mu.Lock()
	if b.by == nil {
		b.by, b.jobs, b.pull = map[string]*sifBuild{}, map[string]buildJob{}, make(slots, 1)
	}
	job, ok := b.jobs[dir]
	b.mu.Unlock()
	if !ok {
		var err error
		if job, err = a.prepareBuild(dir); err != nil {
			return builtSIF{}, err
		}
		b.mu.Lock()
		b.jobs[dir] = job
		b.mu.Unlock()
	}
	for {
		b.mu.Lock()
		o, waiting := b.by[job.key]
		if !waiting {
			o = &sifBuild{done: make(chan struct{})}
			b.by[job.key] = o
		}
		b.mu.Unlock()
		if !waiting {
			o.img, o.err = a.buildSIF(ctx, job, b.pull)
			if o.err != nil && ctx.Err() != nil {
				o.gaveUp = true
				b.mu.Lock()
				delete(b.by, job.key)
				b.mu.Unlock()
			}
			close(o.done)
			return o.img, o.err
		}
		select {
		case <-o.done:
		case <-ctx.Done():
			return builtSIF{}, fmt.Errorf("sandbox %s: waiting for the build of %s: %w", a.name, dir, context.Cause(ctx))
		}
		if !o.gaveUp {
			return o.img, o.err
		}
	}
}

// buildJob is one Dockerfile's build: its definition and where it goes.
type buildJob struct {
	dir   string // the build context
	def   *dockerdef.Def
	text  string // the definition file, checked
	key   string // the digest of the definition file and the context
	cache string
}

func (j buildJob) sif() string { return filepath.Join(j.cache, "task-"+j.key[:24]+".sif") }
func (j buildJob) app() string { return filepath.Join(j.cache, "task-"+j.key[:24]+".app") }

// prepareBuild converts dir's Dockerfile and digests what the image is
// built from.
func (a *apptainerEngine) prepareBuild(dir string) (buildJob, error) {
	if a.buildCache == "" {
		return buildJob{}, fmt.Errorf("sandbox %s: apptainer: no folder to build %s/Dockerfile in (this engine builds no images)", a.name, dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		return buildJob{}, fmt.Errorf("sandbox %s: %w", a.name, err)
	}
	def, err := dockerdef.Convert(string(b), os.DirFS(dir))
	if err != nil {
		return buildJob{}, fmt.Errorf("sandbox %s: %s/%w", a.name, dir, err)
	}
	text, err := def.Text("base.sif", "context")
	if err != nil {
		return buildJob{}, fmt.Errorf("sandbox %s: %s/Dockerfile: %w", a.name, dir, err)
	}
	h := sha256.New()
	io.WriteString(h, "From "+def.From+"\n"+text)
	if err := digestTree(h, dir); err != nil {
		return buildJob{}, fmt.Errorf("sandbox %s: build context: %w", a.name, err)
	}
	return buildJob{dir: dir, def: def, text: text, key: hex.EncodeToString(h.Sum(nil)), cache: a.buildCache}, nil
}

// digestTree writes every path, kind, mode and content of the tree at
// root into h, in WalkDir's (lexical) order.
func digestTree(h io.Writer, root string) error {
	return filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := e.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%q %v\n", filepath.ToSlash(rel), fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			fmt.Fprintf(h, "-> %q\n", target)
			return err
		case fi.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			fmt.Fprintf(h, "%d\n", fi.Size())
			_, err = io.Copy(h, f)
			return err
		}
		return nil
	})
}

// buildSIF builds job's image into the cache, unless it is there.
func (a *apptainerEngine) buildSIF(ctx context.Context, job buildJob, pull slots) (builtSIF, error) {
	out := builtSIF{sif: job.sif(), app: job.app()}
	if exists(out.sif) {
		return out, nil // the app folder is renamed into place first
	}
	if err := rootBuildAllowed(); err != nil {
		return builtSIF{}, fmt.Errorf("sandbox %s: %s/Dockerfile: %w", a.name, job.dir, err)
	}
	if err := os.MkdirAll(job.cache, 0o755); err != nil {
		return builtSIF{}, fmt.Errorf("sandbox %s: image cache: %w", a.name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	if err := pull.acquire(ctx); err != nil {
		return builtSIF{}, fmt.Errorf("sandbox %s: waiting to pull %s: %w", a.name, job.def.From, err)
	}
	base, err := a.pullBase(ctx, job.cache, job.def.From)
	pull.release()
	if err != nil {
		return builtSIF{}, err
	}
	tmp, err := os.MkdirTemp(job.cache, ".build-")
	if err != nil {
		return builtSIF{}, fmt.Errorf("sandbox %s: build folder: %w", a.name, err)
	}
	defer os.RemoveAll(tmp)
	// The definition file names its base image and its build context by
	// links in the build's own folder: %files and From take no quoting,
	// and the paths they would otherwise name may hold anything.
	ctxDir, err := filepath.Abs(job.dir)
	if err == nil {
		err = errors.Join(os.Symlink(base, filepath.Join(tmp, "base.sif")), os.Symlink(ctxDir, filepath.Join(tmp, "context")),
			os.WriteFile(filepath.Join(tmp, "image.def"), []byte(job.text), 0o644))
	}
	if err != nil {
		return builtSIF{}, fmt.Errorf("sandbox %s: build folder: %w", a.name, err)
	}
	// --fakeroot: %post runs as root in a user namespace, which is how an
	// unprivileged user builds on an HPC node (it needs an /etc/subuid
	// range), and how root builds where it lacks the capabilities a
	// privileged build asks for.
	cmd := cliCommand(ctx, a.bin, "build", "--fakeroot", "--force", "image.sif", "image.def")
	cmd.Dir = tmp
	if log, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return builtSIF{}, fmt.Errorf("sandbox %s: apptainer build of %s/Dockerfile stopped: %w", a.name, job.dir, context.Cause(ctx))
		}
		return builtSIF{}, fmt.Errorf("sandbox %s: apptainer build of %s/Dockerfile: %v: %s", a.name, job.dir, err, lastLinesOf(string(log), 6))
	}
	if err := a.copyApp(ctx, filepath.Join(tmp, "image.sif"), filepath.Join(tmp, "app")); err != nil {
		return builtSIF{}, err
	}
	// The app folder first, the image last: the image is the mark that
	// both are there. Another process that built the same image first
	// has put the same files in place.
	if err := os.Rename(filepath.Join(tmp, "app"), out.app); err != nil && !exists(out.app) {
		return builtSIF{}, fmt.Errorf("sandbox %s: %w", a.name, err)
	}
	if err := os.Rename(filepath.Join(tmp, "image.sif"), out.sif); err != nil {
		return builtSIF{}, fmt.Errorf("sandbox %s: %w", a.name, err)
	}
	a.log.Info("session image built", "sandbox", a.name, "dir", job.dir, "image", out.sif)
	return out, nil
}

// RootBuildsEnv, set to 1, lets nel-run build task images as root.
const RootBuildsEnv = "NEL_APPTAINER_ROOT_BUILDS"

// rootBuildAllowed refuses a build by root unless RootBuildsEnv says the
// datasets are trusted. `build --fakeroot` run by root maps the build's
// root to the host's (uid_map "0 0 1"): a Dockerfile's RUN step then
// writes the host's /proc/sys (measured: kernel.core_pattern), where
// docker build mounts it read-only. An unprivileged user's build maps its
// root to that user, who cannot.
func rootBuildAllowed() error {
	if os.Geteuid() != 0 || os.Getenv(RootBuildsEnv) == "1" {
		return nil
	}
	return fmt.Errorf("building a task image as root is refused: apptainer's build --fakeroot by root runs the Dockerfile's RUN steps as the host's root, able to change the host (its /proc/sys); run nel as an unprivileged user with an /etc/subuid range, give the task an [environment].docker_image, or set %s=1 for datasets you trust", RootBuildsEnv)
}

// cliCommand is an apptainer command that ctx's end interrupts: on SIGINT
// the CLI removes its temporary build and bundle folders, and stops what
// it started (a killed build leaves them in $TMPDIR).
func cliCommand(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = cliWaitDelay
	return cmd
}

// cliWaitDelay is how long an interrupted apptainer command has to clean
// up before it is killed.
const cliWaitDelay = 30 * time.Second

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// copyApp copies the image's /app (what the Dockerfile put there) out to
// the host folder dst; an image without /app leaves it empty. It runs in
// the image as a session's command does (no network, nothing of the host
// but dst), --no-privs as the image's build left it root-owned.
func (a *apptainerEngine) copyApp(ctx context.Context, sif, dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("sandbox %s: %w", a.name, err)
	}
	// The image's own sh and cp run here, and the Dockerfile made them:
	// as root, under a uid of the sandbox's own, as model code does.
	uid, err := a.holdUID()
	if err != nil {
		return err
	}
	defer uid.release()
	if err := uid.chownTree(dst); err != nil {
		return fmt.Errorf("sandbox %s: %w", a.name, err)
	}
	argv := []string{a.bin, "exec", "--containall", "--no-privs", "--no-home", "--net", "--network", "none"}
	argv = append(argv, uid.securityArgv()...)
	argv = append(argv, "--bind", dst+":/.nel-app", sif, "/bin/sh", "-c", "if [ -d /app ]; then cp -a /app/. /.nel-app/; fi")
	if out, err := cliCommand(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("sandbox %s: copy /app out of the built image: %v: %s", a.name, err, lastLinesOf(string(out), 4))
	}
	return nil
}

// baseName is the file a registry image ref is pulled to in the cache:
// named by the reference's digest, so that any reference makes a plain
// file name and two never share one.
func baseName(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return "base-" + hex.EncodeToString(sum[:8]) + ".sif"
}

// pullArgv is the command line that pulls ref, a registry image, into
// file out, always as docker://: a reference naming another transport
// (oci-archive:, docker-daemon:, oras://…) would read the host's files or
// daemon, and is refused (the converter refused it first).
func pullArgv(bin, out, ref string) ([]string, error) {
	if err := dockerdef.CheckImageRef(ref); err != nil {
		return nil, err
	}
	return []string{bin, "pull", "--force", out, "docker://" + ref}, nil
}

// pullBase returns the SIF of the image FROM names, pulling it into the
// cache on first use.
func (a *apptainerEngine) pullBase(ctx context.Context, cache, ref string) (string, error) {
	p := filepath.Join(cache, baseName(ref))
	if exists(p) {
		return p, nil
	}
	f, err := os.CreateTemp(cache, ".pull-*.sif")
	if err != nil {
		return "", fmt.Errorf("sandbox %s: image cache: %w", a.name, err)
	}
	f.Close()
	defer os.Remove(f.Name())
	argv, err := pullArgv(a.bin, f.Name(), ref)
	if err != nil {
		return "", fmt.Errorf("sandbox %s: the Dockerfile's FROM: %w", a.name, err)
	}
	if out, err := cliCommand(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("sandbox %s: apptainer pull of %s (the Dockerfile's FROM): %v: %s", a.name, ref, err, lastLinesOf(string(out), 4))
	}
	if err := os.Rename(f.Name(), p); err != nil {
		return "", fmt.Errorf("sandbox %s: image cache: %w", a.name, err)
	}
	a.log.Info("base image pulled", "sandbox", a.name, "image", ref, "sif", p)
	return p, nil
}
