package harbor

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/runtime/sandbox/dockerdef"
)

// Image is the container image a container sandbox (docker, apptainer,
// Pyxis) runs the task in: [environment].docker_image, or the FROM image
// of environment/Dockerfile when the Dockerfile does no more than the
// session does itself (copy the environment's files to /app, work there).
// A Dockerfile that must be built (RUN, ADD, ENV, other COPYs, several
// stages) is refused with its line, an error that is ErrBuild: the docker
// sandbox builds it (docker build of BuildContext), and so does the
// apptainer sandbox (the Dockerfile converted into a definition file,
// runtime/sandbox/dockerdef); other engines do not.
// A WORKDIR other than /app (SWE-bench's /testbed) is refused either way:
// a session keeps only /app, /logs and /tmp between commands.
// The local sandbox needs no image: it runs the host's programs.
func (t *Task) Image() (string, error) {
	if t.Config.DockerImage != "" {
		return t.Config.DockerImage, nil
	}
	path := filepath.Join(t.Dir, "environment", "Dockerfile")
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("task %s: no [environment].docker_image in task.toml, and %w", t.Name, err)
	}
	// Built or not, the image must leave the agent's work in /app.
	img, err := "", builtWorkdir(string(b))
	if err == nil {
		img, err = baseImage(string(b))
	}
	if err != nil {
		return "", fmt.Errorf("task %s: environment/Dockerfile: %w", t.Name, err)
	}
	return img, nil
}

// BuildContext is the folder the task's image is built from when Image
// says it must be (ErrBuild): environment/, with its Dockerfile.
func (t *Task) BuildContext() string { return filepath.Join(t.Dir, "environment") }

// ErrBuild is Image's error for a Dockerfile that builds more than its
// base image: only an engine that builds images (docker, apptainer) runs
// the task.
var ErrBuild = errors.New("the task's image must be built")

// buildError is a Dockerfile line that needs a build; it is ErrBuild.
type buildError struct{ msg string }

func (e *buildError) Error() string        { return e.msg }
func (e *buildError) Is(target error) bool { return target == ErrBuild }

func needsBuild(format string, a ...any) error { return &buildError{fmt.Sprintf(format, a...)} }

// builtWorkdir refuses a Dockerfile whose last stage works outside /app:
// a session keeps only /app from one command to the next, so SWE-bench's
// agent would lose what it changed in /testbed at its next command.
func builtWorkdir(dockerfile string) error {
	lines, err := dockerfileLines(dockerfile)
	if err != nil {
		return err
	}
	workdir := "/"
	// err is now the last stage's last WORKDIR's: what the agent works in.
	for _, in := range lines {
		word, rest, _ := strings.Cut(in.text, " ")
		switch strings.ToUpper(word) {
		case "FROM":
			workdir, err = "/", nil
		case "WORKDIR":
			if !path.IsAbs(rest) {
				rest = path.Join(workdir, rest)
			}
			workdir, err = path.Clean(rest), nil
			if workdir != "/app" {
				err = fmt.Errorf("line %d: not supported yet: WORKDIR %s (nel's container sessions keep /app, /logs and /tmp from one command to the next, nothing else: the agent's work in %s would not persist)", in.line, rest, rest)
			}
		}
	}
	return err
}

// baseImage reads a Dockerfile that only names its base image and copies
// its build context to /app.
func baseImage(dockerfile string) (string, error) {
	lines, err := dockerfileLines(dockerfile)
	if err != nil {
		return "", err
	}
	var from string
	workdir := "/"
	for _, in := range lines {
		n, line := in.line, in.text
		word, rest, _ := strings.Cut(line, " ")
		args := strings.Fields(rest)
		switch strings.ToUpper(word) {
		case "FROM":
			if from != "" {
				return "", needsBuild("line %d: not supported yet: a build of several stages (build the image, and give it as [environment].docker_image)", n)
			}
			if len(args) == 0 || strings.HasPrefix(args[0], "--") || strings.Contains(args[0], "$") || strings.EqualFold(args[0], "scratch") {
				return "", needsBuild("line %d: not supported yet: FROM %s (nel pulls a named image)", n, rest)
			}
			from = args[0]
		case "WORKDIR":
			// builtWorkdir has refused any but /app.
			workdir = rest
		case "LABEL", "MAINTAINER":
		case "COPY":
			if len(args) == 2 && args[0] == "." && copiesToApp(workdir, args[1]) {
				continue
			}
			fallthrough
		default:
			return "", needsBuild("line %d: not supported yet: building a task image (%s; build it, and give it as [environment].docker_image)", n, line)
		}
	}
	if from == "" {
		return "", fmt.Errorf("no FROM line")
	}
	return from, nil
}

// copiesToApp reports whether COPY's destination dst, relative to
// workdir when not absolute, is /app however it is spelt (/app/, ., ./).
func copiesToApp(workdir, dst string) bool {
	if !path.IsAbs(dst) {
		dst = path.Join(workdir, dst)
	}
	return path.Clean(dst) == "/app"
}

// instruction is one Dockerfile instruction and the line it starts on,
// its words separated by single spaces.
type instruction struct {
	line int
	text string
}

// dockerfileLines are a Dockerfile's instructions in order, read as
// Docker's parser does (dockerdef.Steps: continuation lines joined,
// comments, blank lines and parser directives left out).
func dockerfileLines(s string) ([]instruction, error) {
	steps, err := dockerdef.Steps(s)
	if err != nil {
		return nil, err
	}
	out := make([]instruction, len(steps))
	for i, st := range steps {
		out[i] = instruction{st.Line, strings.Join(strings.Fields(st.Text), " ")}
	}
	return out, nil
}
