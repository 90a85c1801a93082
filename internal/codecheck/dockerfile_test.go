package codecheck

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"
)

// dockerStage is one FROM of the Dockerfile and what it says.
type dockerStage struct {
	name, base string
	lines      []string // the stage's instructions, continuation lines joined
}

// readDockerfile returns the Dockerfile's stages and the ARGs declared
// before the first FROM (their defaults).
func readDockerfile(t *testing.T) (stages []dockerStage, globalArgs map[string]string) {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.Root(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	globalArgs = map[string]string{}
	sc := bufio.NewScanner(f)
	line := ""
	for sc.Scan() {
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "#") || text == "" && line == "" {
			continue
		}
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			line += cont + " "
			continue
		}
		line, text = "", line+text
		words := strings.Fields(text)
		switch {
		case len(words) == 0:
		case words[0] == "FROM":
			s := dockerStage{base: words[1]}
			if len(words) == 4 && strings.EqualFold(words[2], "AS") {
				s.name = words[3]
			}
			stages = append(stages, s)
		case len(stages) == 0 && words[0] == "ARG":
			k, v, _ := strings.Cut(words[1], "=")
			globalArgs[k] = v
		case len(stages) > 0:
			stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, text)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages, globalArgs
}

// TestDockerfile: the image builds nel's static binaries with the Go of
// go.mod, and ships them on distroless (the default target, last) and on a
// base with bubblewrap and python3 (the sandbox target).
func TestDockerfile(t *testing.T) {
	stages, args := readDockerfile(t)
	mod, err := os.ReadFile(filepath.Join(testenv.Root(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if goLine == nil || args["GO_VERSION"] != string(goLine[1]) {
		t.Errorf("Dockerfile ARG GO_VERSION=%q, go.mod says go %s", args["GO_VERSION"], goLine[1])
	}
	byName := map[string]dockerStage{}
	var names []string
	for _, s := range stages {
		byName[s.name] = s
		names = append(names, s.name)
	}
	if strings.Join(names, ",") != "build,sandbox,nel" {
		t.Fatalf("stages %v, want build, sandbox, nel (the last is what docker build gives)", names)
	}
	if b := byName["build"].base; !strings.HasPrefix(b, "golang:${GO_VERSION}") {
		t.Errorf("build stage FROM %s, want golang:${GO_VERSION}", b)
	}
	if !hasLine(byName["build"], "RUN make build ") {
		t.Error("the build stage does not build as make build does (static, nel-run's tags)")
	}
	if b := byName["nel"].base; !strings.HasPrefix(b, "gcr.io/distroless/static") {
		t.Errorf("default stage FROM %s, want distroless static", b)
	}
	if !hasLine(byName["sandbox"], "bubblewrap python3") {
		t.Error("the sandbox stage does not install bubblewrap and python3")
	}
	for _, name := range []string{"sandbox", "nel"} {
		if !hasLine(byName[name], "COPY --from=build /src/bin/nel /src/bin/nel-run /usr/local/bin/") {
			t.Errorf("stage %s does not copy nel and nel-run from the build", name)
		}
		if !hasLine(byName[name], `ENTRYPOINT ["nel"]`) {
			t.Errorf("stage %s has no ENTRYPOINT [\"nel\"]", name)
		}
	}
	// make build reads the version from git; the image has no .git.
	ignore, err := os.ReadFile(filepath.Join(testenv.Root(t), ".dockerignore"))
	if err != nil || !regexp.MustCompile(`(?m)^\.git$`).Match(ignore) || !hasLine(byName["build"], "ARG VERSION=") {
		t.Errorf(".dockerignore leaves out .git and the build takes ARG VERSION: %v", err)
	}
}

func hasLine(s dockerStage, sub string) bool {
	for _, l := range s.lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// TestImageSmoke builds both images and runs their binaries where a docker
// daemon answers, in CI (or with NEL_IMAGE_TEST=1: the builds take minutes
// and pull base images); elsewhere it skips, as the tests that need an
// engine do (internal/testenv).
func TestImageSmoke(t *testing.T) {
	if testing.Short() || !testenv.Strict() && os.Getenv("NEL_IMAGE_TEST") != "1" {
		t.Skip("builds two images (minutes, base images pulled): runs in CI, or with NEL_IMAGE_TEST=1")
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("docker is not installed")
	}
	if out, err := exec.Command(docker, "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no docker daemon answers: %s", strings.TrimSpace(string(out)))
	}
	deadline := time.Now().Add(30 * time.Minute)
	if d, ok := t.Deadline(); ok {
		// Stop the build in time to report it, not be killed by go test.
		deadline = d.Add(-30 * time.Second)
	}
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	for _, target := range []string{"nel", "sandbox"} {
		tag := "nel-smoke-test:" + target
		build := exec.CommandContext(ctx, docker, "build", "--target", target, "--build-arg", "VERSION=smoke", "-t", tag, testenv.Root(t))
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("docker build --target %s: %v\n%s", target, err, out)
		}
		for _, bin := range []string{"nel", "nel-run"} {
			out, err := exec.CommandContext(ctx, docker, "run", "--rm", "--entrypoint", bin, tag, "--version").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), bin+" smoke") {
				t.Errorf("%s in %s: --version printed %q (%v), want %q", bin, tag, out, err, bin+" smoke …")
			}
		}
	}
	out, err := exec.CommandContext(ctx, docker, "run", "--rm", "--entrypoint", "sh", "nel-smoke-test:sandbox", "-c", "command -v bwrap python3").CombinedOutput()
	if err != nil || strings.Count(string(out), "\n") != 2 {
		t.Errorf("the sandbox image lacks bwrap or python3: %q (%v)", out, err)
	}
}
