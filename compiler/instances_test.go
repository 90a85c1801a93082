package compiler

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestBalancerServes starts HAProxy with the config the job writes, in
// front of two made-up instances on loopback addresses (the same port on
// 127.0.0.1 and 127.0.0.2, as instances share the server's port on their
// own nodes), and checks what the job relies on: the balancer's health
// answers 200 once the instances answer theirs, requests reach both
// instances, and the caller's Authorization header (the job's key) is
// passed on unchanged.
func TestBalancerServes(t *testing.T) {
	haproxy := testenv.LookPath(t, testenv.HAProxy)
	var mu sync.Mutex
	hits := map[string]int{}
	var auth []string
	instance := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/health" {
				return
			}
			mu.Lock()
			hits[name]++
			auth = append(auth, r.Header.Get("Authorization"))
			mu.Unlock()
			fmt.Fprintf(w, `{"instance":%q}`, name)
		})
	}
	first := listen(t, "127.0.0.1:0")
	port := first.Addr().(*net.TCPAddr).Port
	second := listen(t, net.JoinHostPort("127.0.0.2", strconv.Itoa(port)))
	for name, l := range map[string]net.Listener{"a": first, "b": second} {
		srv := &http.Server{Handler: instance(name)}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}
	front := listen(t, "127.0.0.3:0")
	frontPort := front.Addr().(*net.TCPAddr).Port
	front.Close() // HAProxy binds it

	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.cfg")
	script := "set -euo pipefail\nnel_fail() { echo \"$*\" >&2; exit 9; }\n" +
		"nel_ips_M=(127.0.0.1 127.0.0.2)\nNEL_SERVICE_M_HOST=127.0.0.3\n" +
		balancerConfigScript(cfg, "M", "NEL_SERVICE_M_HOST", frontPort, port, "/health") + "\n"
	if b, err := exec.Command("bash", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("bash: %v\n%s", err, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs, err := os.Create(filepath.Join(dir, "haproxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	cmd := exec.CommandContext(ctx, haproxy, "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })

	base := "http://127.0.0.3:" + strconv.Itoa(frontPort)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the balancer's /health did not answer 200 (last: %v)\n%s", err, haproxyLog(dir))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Both instances must pass their checks before requests spread.
	for time.Now().Before(deadline) {
		mu.Lock()
		spread := hits["a"] > 0 && hits["b"] > 0
		mu.Unlock()
		if spread {
			break
		}
		req, _ := http.NewRequest("GET", base+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer k3y")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/models through the balancer: %s", resp.Status)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if hits["a"] == 0 || hits["b"] == 0 {
		t.Fatalf("requests reached instances %v; want both\n%s", hits, haproxyLog(dir))
	}
	for _, a := range auth {
		if a != "Bearer k3y" {
			t.Errorf("an instance got Authorization %q, want the caller's", a)
		}
	}
}

func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func haproxyLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "haproxy.log"))
	return string(b)
}

// TestInstancesJob runs the part of a compiled job that starts a service's
// instances (examples/slurm_vllm_instances.cue: 2 instances of 2 nodes)
// with bash, srun, scontrol and getent replaced by stubs that record what
// they are asked, and checks where each server, Ray process and the
// balancer would run, what each server binds, the balancer's config and
// what the job waits on.
func TestInstancesJob(t *testing.T) {
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.LoadFile(filepath.Join("..", "examples", "slurm_vllm_instances.cue"), nil)
	if err != nil {
		t.Fatal(err)
	}
	job, err := Compile(s, CompileOptions{Target: "slurm", NelVersion: "test", NelRun: "/opt/nel-run", NelRunSHA256: strings.Repeat("0", 64)})
	if err != nil {
		t.Fatal(err)
	}
	text := string(job)
	start := strings.Index(text, "# service model")
	end := strings.Index(text, `"$NEL_RUN" wait-ready --name model`)
	if start < 0 || end < start {
		t.Fatalf("no service section in the job:\n%s", text)
	}
	out := t.TempDir()
	stubs := `set -euo pipefail
nel_fail() { echo "nel_fail: $*" >&2; exit 9; }
scontrol() { printf '%s\n' n1 n2 n3 n4 n5; }
getent() { echo "10.0.0.${2#n} STREAM $2"; }
od() { echo 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff; }
sleep() { :; }
srun() { echo "srun $*" >> "$NEL_OUT/srun.log"; }
nel_pids=()
mkdir -p "$NEL_OUT/logs" "$NEL_OUT/.nel"
`
	script := stubs + text[start:end] + "wait\nprintf '%s\\n' \"${nel_wait_MODEL[@]}\" > \"$NEL_OUT/wait.txt\"\necho \"url=$NEL_SERVICE_MODEL_URL\"\n"
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "NEL_OUT="+out, "SLURM_JOB_ID=42", "SLURM_JOB_NODELIST=n[1-5]")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, b)
	}
	if want := "url=http://10.0.0.1:5010/v1\n"; string(b) != want {
		t.Errorf("output %q, want %q", b, want)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	calls := strings.Split(strings.TrimSpace(read("srun.log")), "\n")
	// Background calls log in any order: compare each call's node and role.
	var got []string
	for _, c := range calls {
		node := between(c, "--nodelist=", " ")
		switch {
		case strings.Contains(c, "ray start --head"):
			got = append(got, node+" ray head")
		case strings.Contains(c, "ray start --address="):
			got = append(got, node+" ray worker of "+between(c, "--address=", " "))
		case strings.Contains(c, "vllm serve"):
			got = append(got, node+" vllm on "+between(c, "--host ", " ")+":"+between(c, "--port ", " "))
		case strings.Contains(c, "haproxy -f"):
			got = append(got, node+" haproxy "+between(c, "--container-mounts=", " "))
		default:
			got = append(got, "unexpected: "+c)
		}
	}
	slices.Sort(got)
	want := []string{
		"n1 haproxy " + out + "/.nel/haproxy-model-42.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro",
		"n1 ray head",
		"n1 vllm on 10.0.0.1:8000",
		"n2 ray worker of n1:6379",
		"n3 ray head",
		"n3 vllm on 10.0.0.3:8000",
		"n4 ray worker of n3:6379",
	}
	if !slices.Equal(got, want) {
		t.Errorf("srun calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	cfg := read(".nel/haproxy-model-42.cfg")
	for _, line := range []string{"    server instance0 10.0.0.1:8000 check\n", "    server instance1 10.0.0.3:8000 check\n", "    bind 10.0.0.1:5010\n"} {
		if !strings.Contains(cfg, line) {
			t.Errorf("balancer config lacks %q:\n%s", line, cfg)
		}
	}
	wait := strings.Fields(read("wait.txt"))
	if len(wait) != 6 || wait[0] != "http://10.0.0.1:8000/health" || wait[1] != "http://10.0.0.3:8000/health" ||
		wait[2] != "--pid" || wait[4] != "--pid" {
		t.Errorf("the job waits on %q, want both instances' health URLs and two --pid", wait)
	}
}

// between is the text of s after the first prefix, up to sep (or the end).
func between(s, prefix, sep string) string {
	_, after, ok := strings.Cut(s, prefix)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, sep)
	return v
}
