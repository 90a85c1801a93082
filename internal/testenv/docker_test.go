package testenv

import (
	"os"
	"os/exec"
	"testing"
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
