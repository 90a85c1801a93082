package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(DockerMain(m)) }

// The daemon Docker gives runs the base image: busybox's sh and applets,
// and bash, with no network.
func TestDockerRunsBaseImage(t *testing.T) {
	host := Docker(t)
	cmd := exec.Command("docker", "run", "--rm", "--network", "none", DockerBaseImage,
		"bash", "-c", `echo "$BASH_VERSION" | cut -d. -f1; sh -c 'echo sh ok'; ls /sys/class/net`)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+host)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	if got := string(out); got != "5\nsh ok\nlo\n" {
		t.Errorf("output %q, want bash 5, sh, and no network but loopback", got)
	}
}

// A dockerd that cannot start (here: one that says why and exits, as
// dockerd does without root or with a stale pid file) is an error quoting
// its log, for the tests' skip; one that never answers is given up on and
// stopped. Either way its folder is removed.
func TestStartDaemonFails(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "dockerd")
	fake := func(script string) {
		if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake(`echo "failed to start daemon: pid file found, ensure docker is not running or delete $1" >&2; exit 1`)
	d, host, err := startDaemon(bin, 10*time.Second)
	if err == nil || host != "" || !strings.Contains(err.Error(), "dockerd exited (exit status 1) before it answered: failed to start daemon: pid file found") {
		t.Errorf("exiting dockerd: host %q, err %v", host, err)
	}
	if d == nil {
		t.Fatal("no daemon to stop")
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.dir); !os.IsNotExist(err) {
		t.Errorf("folder after stop: %v", err)
	}

	fake(`exec sleep 60`)
	start := time.Now()
	d, _, err = startDaemon(bin, time.Second)
	if err == nil || !strings.Contains(err.Error(), "dockerd did not answer within 1s") {
		t.Errorf("silent dockerd: %v", err)
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("stopping a silent dockerd took %v", took)
	}
	if _, err := os.Stat(d.dir); !os.IsNotExist(err) {
		t.Errorf("folder after stop: %v", err)
	}
}
