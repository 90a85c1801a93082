package harbor

import (
	"errors"
	"strings"
	"testing"
)

// TestImage: the smoke tasks' Dockerfiles only name python:3.12-slim and
// copy the environment to /app; docker_image wins.
func TestImage(t *testing.T) {
	ds := loadSmoke(t, smoke)
	for i := range ds.Tasks {
		if img, err := ds.Tasks[i].Image(); err != nil || img != "python:3.12-slim" {
			t.Errorf("%s: image %q, %v", ds.Tasks[i].Name, img, err)
		}
	}
	task := &Task{Name: "x", Dir: t.TempDir(), Config: Config{DockerImage: "ghcr.io/org/env:1"}}
	if img, err := task.Image(); err != nil || img != "ghcr.io/org/env:1" {
		t.Errorf("docker_image: %q, %v", img, err)
	}
	task.Config.DockerImage = ""
	if _, err := task.Image(); err == nil || !strings.Contains(err.Error(), "task x: no [environment].docker_image in task.toml, and open") {
		t.Errorf("neither: %v", err)
	}
}

func TestBaseImage(t *testing.T) {
	ok := map[string]string{
		"FROM python:3.12-slim\nWORKDIR /app\nCOPY . /app\n":               "python:3.12-slim",
		"# base\nFROM ubuntu:24.04\n\nLABEL a=b\nWORKDIR /app\nCOPY . .\n": "ubuntu:24.04",
		"FROM ubuntu:24.04\nWORKDIR /app/\nCOPY . .\n":                     "ubuntu:24.04",
		"FROM ubuntu:24.04\nWORKDIR /app\nCOPY . ./\n":                     "ubuntu:24.04",
		"FROM \\\n  registry.example/img@sha256:abc\n":                     "registry.example/img@sha256:abc",
		"from alpine:3\ncopy . /app/\n":                                    "alpine:3",
		// Read as Docker reads it (dockerdef.Steps): a comment inside a
		// continued instruction is skipped, a parser directive is no step.
		"# syntax=docker/dockerfile:1\nFROM alpine:3\nWORKDIR /app\nCOPY . \\\n# into the work folder\n  /app\n": "alpine:3",
	}
	for df, want := range ok {
		if got, err := baseImage(df); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", df, got, err, want)
		}
	}
	bad := map[string]string{
		"FROM python:3.12\nRUN pip install numpy\n": "line 2: not supported yet: building a task image (RUN pip install numpy;",
		"FROM a AS build\nFROM b\n":                 "line 2: not supported yet: a build of several stages",
		"ARG V=1\nFROM python:$V\n":                 "line 1: not supported yet: building a task image (ARG V=1;",
		"FROM python:3.12\nCOPY . .\n":              "line 2: not supported yet: building a task image (COPY . .;",
		"FROM python:3.12\nENV \\\n  A=1\n":         "line 2: not supported yet: building a task image (ENV A=1;",
		"FROM scratch\n":                            "line 1: not supported yet: FROM scratch",
		"# nothing\n":                               "no FROM line",
	}
	for df, want := range bad {
		if _, err := baseImage(df); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", df, err, want)
		}
	}
}

// A Dockerfile that must be built is ErrBuild (the docker sandbox builds
// it), unless its last stage works outside /app, which no build fixes.
func TestImageBuild(t *testing.T) {
	for df, want := range map[string]string{
		"FROM python:3.12\nRUN pip install numpy\nWORKDIR /app\nCOPY . /app\n":             "",
		"FROM a AS build\nWORKDIR /src\nFROM b\nWORKDIR /app\nRUN true\n":                  "",
		"FROM python:3.12\nRUN true\nWORKDIR /app\nWORKDIR src\n":                          "line 4: not supported yet: WORKDIR /app/src",
		"FROM python:3.12\nRUN make\nWORKDIR /testbed\n":                                   "line 3: not supported yet: WORKDIR /testbed",
		"FROM swebench/sweb.eval.x86_64.psf_1776_requests-1724:latest\nWORKDIR /testbed\n": "line 2: not supported yet: WORKDIR /testbed (nel's container sessions keep /app, /logs and /tmp",
	} {
		dir := t.TempDir()
		writeTask(t, dir, map[string]string{"environment/Dockerfile": df})
		task := &Task{Name: "x", Dir: dir}
		_, err := task.Image()
		if want == "" {
			if !errors.Is(err, ErrBuild) {
				t.Errorf("%q: %v, want ErrBuild", df, err)
			}
			continue
		}
		if err == nil || errors.Is(err, ErrBuild) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q (not ErrBuild)", df, err, want)
		}
	}
	if task := (&Task{Dir: "/d/t"}); task.BuildContext() != "/d/t/environment" {
		t.Errorf("BuildContext %q", task.BuildContext())
	}
}
