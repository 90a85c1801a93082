package compiler

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"
)

// TestBalancerConfigScript runs the shell text that writes the load
// balancer's config with bash, against made-up instance addresses, and
// checks the file line by line (the expected text is written here from
// the launcher's HAProxy template, not copied from the output); HAProxy
// itself then reads it with -c.
func TestBalancerConfigScript(t *testing.T) {
	out := t.TempDir()
	if err := os.MkdirAll(filepath.Join(out, ".nel"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := "$NEL_OUT/.nel/haproxy-m-$SLURM_JOB_ID.cfg"
	script := "set -euo pipefail\n" +
		"nel_fail() { echo \"nel_fail: $*\" >&2; exit 9; }\n" +
		"nel_ips_M=(10.0.0.1 10.0.0.3 10.0.0.5)\n" +
		"NEL_SERVICE_M_HOST=10.0.0.1\n" +
		balancerConfigScript(path, "M", "NEL_SERVICE_M_HOST", 5009, 8000, "/v1/health") + "\n"
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "NEL_OUT="+out, "SLURM_JOB_ID=77")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash: %v\n%s", err, b)
	}
	cfg := filepath.Join(out, ".nel", "haproxy-m-77.cfg")
	got, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := `global
    log stdout format raw local0
    maxconn 4096

defaults
    log global
    mode http
    option httplog
    timeout connect 10s
    timeout client 100000s
    timeout server 100000s

backend nel_instances
    option httpchk GET /v1/health
    http-check expect status 200
    option http-server-close
    balance leastconn
    server instance0 10.0.0.1:8000 check
    server instance1 10.0.0.3:8000 check
    server instance2 10.0.0.5:8000 check

frontend nel_balancer
    bind 10.0.0.1:5009
    default_backend nel_instances
`
	if string(got) != want {
		t.Errorf("config:\n%s\nwant:\n%s", got, want)
	}
	haproxy := testenv.LookPath(t, testenv.HAProxy)
	if b, err := exec.Command(haproxy, "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Errorf("haproxy -c: %v\n%s", err, b)
	}
}

// TestBalancerConfigScriptFails checks that a config the job cannot write
// ends the job through nel_fail, naming the file.
func TestBalancerConfigScriptFails(t *testing.T) {
	script := "nel_fail() { echo \"nel_fail: $*\"; exit 9; }\n" +
		"nel_ips_M=(10.0.0.1)\nNEL_SERVICE_M_HOST=10.0.0.1\n" +
		balancerConfigScript("/nonexistent/dir/h.cfg", "M", "NEL_SERVICE_M_HOST", 5009, 8000, "/health") + "\n" +
		"echo went on\n"
	b, err := exec.Command("bash", "-c", script).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 9 {
		t.Fatalf("exit: %v, want status 9 from nel_fail\n%s", err, b)
	}
	if want := "nel_fail: cannot write /nonexistent/dir/h.cfg"; !strings.Contains(string(b), want) {
		t.Errorf("output %q lacks %q", b, want)
	}
}
