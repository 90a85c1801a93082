package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeCLI puts an executable shell script named name first on PATH.
func fakeCLI(t *testing.T, name, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestDockerDaemonDown(t *testing.T) {
	// docker's own message when the daemon is not running.
	fakeCLI(t, "docker", `echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2; exit 1`)
	t.Setenv("DOCKER_HOST", "")
	_, err := Open(context.Background(), Config{Type: "docker", Name: "py", Image: "python:3.12-slim"})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err %v, want ErrUnavailable", err)
	}
	for _, want := range []string{"sandbox py", "cannot connect to the daemon at unix:///var/run/docker.sock", "docker info: Cannot connect to the Docker daemon"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestDockerMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Open(context.Background(), Config{Type: "docker", Image: "x"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "docker CLI is not on PATH") {
		t.Errorf("err %v", err)
	}
}

func TestDockerPullFailure(t *testing.T) {
	// A docker whose daemon answers but cannot pull the image: docker
	// run's real message and exit status 125.
	fakeCLI(t, "docker", `case "$1" in
info) echo 27.0.3; exit 0;;
run) cat >/dev/null
  echo "Unable to find image 'nel/nonexistent:1' locally" >&2
  echo "docker: Error response from daemon: pull access denied for nel/nonexistent, repository does not exist or may require 'docker login': denied: requested access to the resource is denied." >&2
  echo "See 'docker run --help'." >&2
  exit 125;;
esac
exit 1`)
	sb, err := Open(context.Background(), Config{Type: "docker", Name: "py", Image: "nel/nonexistent:1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Run(context.Background(), Job{Command: []string{"python", "-"}, Stdin: []byte("print(1)")})
	if err == nil {
		t.Fatalf("no error; result %+v", res)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Errorf("a pull failure is not a missing engine: %v", err)
	}
	for _, want := range []string{"sandbox py", `image "nel/nonexistent:1" cannot be pulled`, "pull access denied"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestDockerProgramResult(t *testing.T) {
	// A fake docker that runs the command itself: the program's exit
	// status, output and environment come back through the engine, and
	// the environment is passed by name only.
	fakeCLI(t, "docker", `case "$1" in
info) echo 27.0.3; exit 0;;
run) echo "$@" > "$ARGS_FILE"; echo "GREETING=$GREETING"; echo oops >&2; exit 3;;
esac
exit 1`)
	argsFile := filepath.Join(t.TempDir(), "args")
	t.Setenv("ARGS_FILE", argsFile)
	sb, err := Open(context.Background(), Config{Type: "docker", Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Run(context.Background(), Job{Command: []string{"python", "-"}, Env: map[string]string{"GREETING": "secret-value"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || string(res.Stdout) != "GREETING=secret-value\n" || string(res.Stderr) != "oops\n" || res.Limit != LimitNone {
		t.Errorf("got %+v", res)
	}
	args, _ := os.ReadFile(argsFile)
	if strings.Contains(string(args), "secret-value") || !strings.Contains(string(args), "-e GREETING ") {
		t.Errorf("docker argv %q: want -e GREETING without its value", args)
	}
}

func TestDockerTimeoutKillsContainer(t *testing.T) {
	dir := t.TempDir()
	killed := filepath.Join(dir, "killed")
	fakeCLI(t, "docker", `case "$1" in
info) echo 27.0.3; exit 0;;
run) exec sleep 30;;
kill) echo "$2" > "`+killed+`"; exit 0;;
esac
exit 1`)
	sb, err := Open(context.Background(), Config{Type: "docker", Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Run(context.Background(), Job{Command: []string{"python", "-"}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit != LimitTimeout {
		t.Errorf("limit %q, want timeout", res.Limit)
	}
	name, _ := os.ReadFile(killed)
	if !strings.HasPrefix(string(name), "nel-sandbox-") {
		t.Errorf("docker kill got %q, want the container's name", name)
	}
}

func TestDockerArgv(t *testing.T) {
	d := &dockerEngine{name: "py", docker: "docker", image: "python:3.12-slim", net: "none",
		lim: limitsOf(Config{MemoryBytes: 256 << 20, CPUs: 1, MaxProcesses: 64})}
	got := d.argv("nel-sandbox-1", "/tmp/wd", map[string]string{"B": "2", "A": "1"}, []string{"python", "-"})
	// NeMo Evaluator's code_sandbox command line (--network none --memory
	// 256m --cpus 1 --pids-limit 64 --read-only --tmpfs /tmp
	// --security-opt no-new-privileges), plus file-size, open-file and
	// core limits, dropped capabilities and the work dir.
	want := []string{"docker", "run", "--rm", "-i", "--name", "nel-sandbox-1", "--label", "nel.sandbox=py",
		"--network", "none", "--memory", "268435456", "--memory-swap", "268435456",
		"--cpus", "1", "--pids-limit", "64",
		"--ulimit", "fsize=67108864:67108864", "--ulimit", "nofile=256:256", "--ulimit", "core=0:0",
		"--read-only", "--security-opt", "no-new-privileges", "--cap-drop", "ALL",
		"--tmpfs", "/tmp:rw,exec,size=67108864", "-v", "/tmp/wd:/work", "-w", "/work", "-e", "A", "-e", "B",
		"python:3.12-slim", "python", "-"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("argv\n got %q\nwant %q", got, want)
	}
}

func TestApptainerMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Open(context.Background(), Config{Type: "apptainer", Image: "x.sif"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "neither apptainer nor singularity is on PATH") {
		t.Errorf("err %v", err)
	}
}

// The real CLI opens as an apptainer sandbox and runs a job in testenv's
// base SIF.
func TestApptainerReal(t *testing.T) {
	t.Parallel()
	res, err := openApptainerT(t, Config{}).Run(context.Background(), Job{Command: []string{"echo", "ok"}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || string(res.Stdout) != "ok\n" || len(res.Stderr) != 0 {
		t.Errorf("exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}

func TestApptainerPullFailure(t *testing.T) {
	// apptainer's real message for an image it cannot fetch, exit 255.
	fakeCLI(t, "apptainer", `case "$1" in
version) echo 1.3.4; exit 0;;
exec) cat >/dev/null
  echo "INFO:    Using cached SIF image" >&2
  echo "FATAL:   Unable to handle docker://nel/nonexistent:1 uri: failed to get checksum for docker://nel/nonexistent:1: reading manifest 1 in docker.io/nel/nonexistent: requested access to the resource is denied" >&2
  exit 255;;
esac
exit 1`)
	sb, err := Open(context.Background(), Config{Type: "apptainer", Name: "ap", Image: "docker://nel/nonexistent:1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sb.Run(context.Background(), Job{Command: []string{"python3", "-"}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"sandbox ap", `image "docker://nel/nonexistent:1"`, "FATAL: Unable to handle docker://nel/nonexistent:1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestApptainerArgvAndEnv(t *testing.T) {
	fakeCLI(t, "apptainer", `case "$1" in
version) echo 1.3.4; exit 0;;
exec) echo "V=$APPTAINERENV_V"; exit 0;;
esac
exit 1`)
	sb, err := Open(context.Background(), Config{Type: "apptainer", Image: "img.sif"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Run(context.Background(), Job{Command: []string{"python3", "-"}, Env: map[string]string{"V": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "V=x\n" {
		t.Errorf("stdout %q: the job's environment must reach apptainer as APPTAINERENV_", res.Stdout)
	}

	a := &apptainerEngine{bin: "apptainer", image: "img.sif", lim: limitsOf(Config{MemoryBytes: 1 << 30, MaxProcesses: 16})}
	got := a.argv(nil, "/tmp/wd", "/work", 10*time.Second, []string{"python3", "-"})
	want := []string{"apptainer", "exec", "--containall", "--no-privs", "--no-home", "--home", "/work", "--net", "--network", "none",
		"--bind", "/tmp/wd:/work", "--pwd", "/work", "img.sif",
		"/bin/sh", "-c", limitScript, "sh", "1073741824", "16", "67108864", "11", "256",
		"python3", "-"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("argv\n got %q\nwant %q", got, want)
	}
	// As root, the job's own uid (apptainer_uid.go).
	got = a.argv(&heldUID{uid: sandboxUIDBase + 7}, "/tmp/wd", "/work", 10*time.Second, []string{"python3", "-"})
	want = slices.Insert(want, 10, "--security", "uid:2100000007,gid:2100000007")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("argv as a sandbox uid\n got %q\nwant %q", got, want)
	}
}

func TestLocalArgv(t *testing.T) {
	l := &local{bwrap: "bwrap", prlim: "/usr/bin/prlimit", path: "/py/bin:/usr/bin",
		lim:  limitsOf(Config{Timeout: 5 * time.Second, CPUs: 2}),
		env:  map[string]string{"C": "config", "HOME": "/elsewhere"},
		args: []string{"--unshare-all"}}
	got := l.argv(Job{Command: []string{"python3", "-"}, Env: map[string]string{"J": "job"}}, "/tmp/wd", 5*time.Second)
	want := []string{"bwrap", "--unshare-all", "--size", "67108864", "--tmpfs", "/tmp",
		"--bind", "/tmp/wd", "/work", "--chdir", "/work", "--clearenv",
		"--setenv", "C", "config", "--setenv", "HOME", "/elsewhere", "--setenv", "J", "job",
		"--setenv", "LANG", "C.UTF-8", "--setenv", "PATH", "/py/bin:/usr/bin", "--setenv", "TMPDIR", "/tmp",
		"--remount-ro", "/", "--as-pid-1", "--", "/bin/sh", "-c", `"$@"; exit $?`, "sh",
		// 5 s on 2 cores is 10 CPU seconds, plus one.
		"/usr/bin/prlimit", "--as=2147483648", "--nproc=64", "--fsize=67108864", "--cpu=11", "--nofile=256", "--core=0", "--",
		"python3", "-"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("argv\n got %q\nwant %q", got, want)
	}
}

func TestOpenUnknownType(t *testing.T) {
	_, err := Open(context.Background(), Config{Type: "custom", Name: "x"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), `"custom"`) {
		t.Errorf("err %v", err)
	}
}
