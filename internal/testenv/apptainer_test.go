package testenv

import (
	"os/exec"
	"strings"
	"testing"
)

// TestApptainerBase runs the base SIF the apptainer tests share: busybox
// and bash answer in it, and the image holds no network but loopback.
func TestApptainerBase(t *testing.T) {
	bin, sif := Apptainer(t)
	out, err := exec.Command(bin, "exec", "--containall", "--no-privs", "--net", "--network", "none", sif,
		"/bin/bash", "-c", "echo $BASH_VERSION; echo devices: $(ls /sys/class/net)").CombinedOutput()
	if err != nil {
		t.Fatalf("%s exec: %v\n%s", bin, err, out)
	}
	if !strings.Contains(string(out), ".") {
		t.Errorf("bash printed no version: %q", out)
	}
	_, devs, _ := strings.Cut(string(out), "devices: ")
	if devs = strings.TrimSpace(devs); devs != "lo" {
		t.Errorf("the container's network devices are %q, want lo alone", devs)
	}
	// A second call is the same image, not a rebuild.
	_, again := Apptainer(t)
	if again != sif {
		t.Errorf("second Apptainer call gave %s, first %s", again, sif)
	}
}
