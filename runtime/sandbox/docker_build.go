package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// buildTimeout bounds one docker build of a session's image: a task's
// Dockerfile may install packages.
const buildTimeout = 30 * time.Minute

// builds are the images a docker engine built for sessions, by build
// folder: each folder is built once per engine (the samples of one task
// share it), and a failed build fails every session that needs it, but
// one its caller cancelled.
type builds struct {
	mu sync.Mutex
	by map[string]*buildOnce
}

type buildOnce struct {
	once  sync.Once
	image string
	err   error
}

// build returns the image built from folder dir, building it on first use.
func (b *builds) build(ctx context.Context, d *dockerEngine, dir string) (string, error) {
	b.mu.Lock()
	if b.by == nil {
		b.by = map[string]*buildOnce{}
	}
	o := b.by[dir]
	if o == nil {
		o = &buildOnce{}
		b.by[dir] = o
	}
	b.mu.Unlock()
	o.once.Do(func() { o.image, o.err = d.buildImage(ctx, dir) })
	if o.err != nil && ctx.Err() != nil {
		// The build stopped because this session's caller gave up (its
		// sample's time budget, say), not because the Dockerfile is
		// wrong: the next session builds again.
		b.mu.Lock()
		if b.by[dir] == o {
			delete(b.by, dir)
		}
		b.mu.Unlock()
	}
	return o.image, o.err
}

// buildImage runs docker build on dir (its Dockerfile; the daemon's own
// network, as a task's package installs need) and returns the image's
// ID, which docker run takes as the image.
func (d *dockerEngine) buildImage(ctx context.Context, dir string) (string, error) {
	if err := checkSpec(d.name, SessionSpec{App: dir}); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.docker, "build", "--quiet", "--file", "Dockerfile", ".")
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("sandbox %s: docker build of %s: %v: %s", d.name, dir, err, lastLinesOf(stderr.String(), 4))
	}
	id := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(id, '\n'); i >= 0 {
		id = id[i+1:] // --quiet prints the ID last
	}
	if id == "" || strings.HasPrefix(id, "-") {
		return "", fmt.Errorf("sandbox %s: docker build of %s printed no image ID: %q", d.name, dir, out)
	}
	d.log.Info("session image built", "sandbox", d.name, "dir", dir, "image", id)
	return id, nil
}

// seedApp fills a new session's /app with the image's /app: a container
// of the image is created (never started) and docker cp copies the folder
// out, so that what the Dockerfile made there (RUN steps included) is what
// the agent starts from. An image without /app leaves it empty.
func (d *dockerEngine) seedApp(ctx context.Context, image string, sd sessionDir) error {
	ctx, cancel := context.WithTimeout(ctx, 3*probeTimeout)
	defer cancel()
	var b [8]byte
	rand.Read(b[:])
	name := "nel-seed-" + hex.EncodeToString(b[:])
	if out, err := exec.CommandContext(ctx, d.docker, "create", "--name", name, "--label", ContainerLabel+"="+d.name, image).CombinedOutput(); err != nil {
		return fmt.Errorf("sandbox %s: docker create of %s: %v: %s", d.name, image, err, firstLines(out, 3))
	}
	defer func() {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
		defer rcancel()
		exec.CommandContext(rctx, d.docker, "rm", "--force", name).Run()
	}()
	out, err := exec.CommandContext(ctx, d.docker, "cp", name+":"+SessionApp+"/.", sd.app()).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "Could not find the file") {
		return fmt.Errorf("sandbox %s: docker cp of %s from %s: %v: %s", d.name, SessionApp, image, err, firstLines(out, 3))
	}
	// The container's user may be any: what it works on is open to all.
	if err := openToAll(sd.app()); err != nil {
		return fmt.Errorf("sandbox %s: %w", d.name, err)
	}
	return nil
}

// lastLinesOf is the end of a command's error output, for a message.
func lastLinesOf(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
