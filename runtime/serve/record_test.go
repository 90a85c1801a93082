//go:build linux

package serve

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/rundir"
)

// helperEnv makes this test binary a helper process (TestHelperProcess)
// instead of running tests.
const helperEnv = "NEL_SERVE_TEST_HELPER"

// TestHelperProcess is no test: started by the tests below as a child
// process (helperEnv set), it plays a part and exits.
//
//	tied:  starts sleep with StartTied, prints its pid, waits forever
//	serve: serves GET /health on $PORT, after starting a sleep that leaves
//	       its process group (a worker that would outlive the server)
func TestHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		return
	case "tied":
		cmd := exec.Command("sleep", "60")
		if _, err := StartTied(cmd, Tie{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(cmd.Process.Pid)
		select {}
	case "serve":
		stray := exec.Command("sleep", "60")
		stray.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := stray.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "stray %d\n", stray.Process.Pid)
		http.HandleFunc("/health", func(http.ResponseWriter, *http.Request) {})
		fmt.Fprintln(os.Stderr, http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), nil))
		os.Exit(1)
	}
	os.Exit(2)
}

// helper returns a command that runs TestHelperProcess as part.
func helper(part string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+part)
	return cmd
}

// startProc starts argv with extra environment variables in a process
// group of its own, as Start does, and stops it when the test ends.
func startProc(t *testing.T, env []string, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	return cmd
}

func mustIdentify(t *testing.T, pid int) procID {
	t.Helper()
	id, err := identify(pid)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// deadOwner is the identity of a run that has died: this process's pid
// with another start time, as a pid reused since.
func deadOwner(t *testing.T) procID {
	id := mustIdentify(t, os.Getpid())
	id.Start++
	return id
}

// membersOf waits until r's server has n live processes and returns them.
func membersOf(t *testing.T, r *record, n int) []procID {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ids, err := r.liveMembers()
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) == n {
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("server has %d processes %v, want %d", len(ids), ids, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testOptions(progress *[]string) StartOptions {
	return StartOptions{Progress: func(s string) { *progress = append(*progress, s) }}.withDefaults()
}

func TestParseStat(t *testing.T) {
	// comm may hold spaces and parentheses; starttime is field 22.
	line := "4242 (a) b (c) S 1 4240 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200\n"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := (procInfo{pid: 4242, pgid: 4240, start: 987654}); st != want {
		t.Errorf("parseStat = %+v, want %+v", st, want)
	}
	st, err = parseStat([]byte(strings.Replace(line, ") S ", ") Z ", 1)))
	if err != nil || !st.zombie {
		t.Errorf("zombie: %+v, %v", st, err)
	}
	for _, bad := range []string{"", "4242 (sh", "x (sh) S 1 2", "4242 (sh) S 1 2 3"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q): no error", bad)
		}
	}
}

// An earlier run died and left its server running: the server, its
// descendants and the members of its process group are stopped (a member
// that cleared its environment too), and the record is removed.
func TestReapStale(t *testing.T) {
	dir := t.TempDir()
	token := "tok-stale"
	sh := startProc(t, []string{serverEnv + "=" + token}, "sh", "-c", "env -i sleep 60 & sleep 60 & wait")
	r := &record{Service: "sim", Port: 8123, Server: mustIdentify(t, sh.Process.Pid), Token: token, Owner: deadOwner(t)}
	path, err := writeRecord(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	ids := membersOf(t, r, 3)
	var progress []string
	if err := reap(context.Background(), dir, 5*time.Second, testOptions(&progress)); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if isProcess(id) {
			t.Errorf("pid %d still runs", id.PID)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("record still there: %v", err)
	}
	if len(progress) != 1 || !strings.HasPrefix(progress[0], "stopping server sim (pids ") || !strings.HasSuffix(progress[0], "that an earlier run left running on port 8123") {
		t.Errorf("progress = %q", progress)
	}
}

// A stale record whose server's pid is now another process (another start
// time, no token): that process is not touched, the record is dropped.
func TestReapRecycledPID(t *testing.T) {
	dir := t.TempDir()
	other := startProc(t, nil, "sleep", "60")
	server := mustIdentify(t, other.Process.Pid)
	server.Start-- // the server had this pid before
	r := &record{Service: "sim", Port: 8123, Server: server, Token: "tok-recycled", Owner: deadOwner(t)}
	path, err := writeRecord(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if ids := membersOf(t, r, 0); len(ids) != 0 {
		t.Fatal(ids)
	}
	var progress []string
	if err := reap(context.Background(), dir, time.Second, testOptions(&progress)); err != nil {
		t.Fatal(err)
	}
	if !processAlive(other.Process.Pid) {
		t.Error("reap killed a process that only has the recorded pid")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("record still there: %v", err)
	}
	if len(progress) != 0 {
		t.Errorf("progress = %q", progress)
	}
}

// A server whose run still goes belongs to that run: left alone, and its
// record kept.
func TestReapLiveOwner(t *testing.T) {
	dir := t.TempDir()
	token := "tok-live"
	server := startProc(t, []string{serverEnv + "=" + token}, "sleep", "60")
	r := &record{Service: "sim", Port: 8123, Server: mustIdentify(t, server.Process.Pid), Token: token, Owner: mustIdentify(t, os.Getpid())}
	path, err := writeRecord(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	var progress []string
	if err := reap(context.Background(), dir, time.Second, testOptions(&progress)); err != nil {
		t.Fatal(err)
	}
	if !processAlive(server.Process.Pid) {
		t.Error("reap killed the server of a live run")
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("record: %v", err)
	}
}

// onEndingThread runs f on a thread that ends when f returns (a
// goroutine returning while locked to its thread), and returns that
// thread's id.
func onEndingThread(f func()) (tid int) {
	done := make(chan struct{})
	var run func()
	run = func() {
		runtime.LockOSThread() // not undone: the thread ends with the goroutine
		if syscall.Gettid() == os.Getpid() {
			// Go parks the main thread instead of ending it: keep it
			// busy here and run f from another goroutine.
			defer runtime.UnlockOSThread()
			inner := make(chan struct{})
			go func() { run(); close(inner) }()
			<-inner
			return
		}
		tid = syscall.Gettid()
		f()
		close(done)
	}
	go run()
	<-done
	return tid
}

// The thread that forks a child is the one whose death sends its
// parent-death signal: a caller locked to a thread that ends must not take
// the child with it.
func TestStartTiedOutlivesCallerThread(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	var err error
	tid := onEndingThread(func() { _, err = StartTied(cmd, Tie{Group: true}) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the caller's thread %d did not end: the test shows nothing", tid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the signal, had it been sent, has arrived
	if !processAlive(cmd.Process.Pid) {
		t.Fatal("the child died with the thread of the goroutine that called StartTied")
	}
}

// kill -9 of a process takes the children it started with StartTied along.
func TestStartTiedParentKilled(t *testing.T) {
	h := helper("tied")
	out, err := h.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.Stderr = os.Stderr
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		h.Process.Kill()
		h.Wait()
		t.Fatalf("helper: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	if !processAlive(child) {
		t.Fatal("child not running")
	}
	h.Process.Signal(syscall.SIGKILL)
	h.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for processAlive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still runs 5s after its parent was killed", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start records the server in RecordDir; its port is then taken, and the
// error says by whom; Stop stops it and what it left outside its group,
// and removes the record.
func TestStartRecordStop(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	h := helper("serve")
	var env []plan.EnvVar
	for _, kv := range []string{helperEnv + "=serve", "PORT=" + strconv.Itoa(port)} {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, plan.EnvVar{Name: k, Value: v})
	}
	svc := plan.Service{Name: "web", Command: h.Args, Env: env, Port: port, StartupTimeout: 30}
	o := StartOptions{LogDir: string(rundir.Dir(dir).Logs()), RecordDir: rundir.Dir(dir).Servers()}
	s, err := Start(context.Background(), svc, o)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			s.Stop(time.Second)
		}
	})
	paths, _ := filepath.Glob(filepath.Join(rundir.Dir(dir).Servers(), "*.json"))
	if len(paths) != 1 || filepath.Base(paths[0]) != "web-"+strconv.Itoa(s.cmd.Process.Pid)+".json" {
		t.Fatalf("records = %q", paths)
	}
	r, err := readRecord(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if r.Server.PID != s.cmd.Process.Pid || r.Owner != mustIdentify(t, os.Getpid()) || r.Port != port || !hasEnv(r.Server.PID, serverEnv+"="+r.Token) {
		t.Errorf("record = %+v", r)
	}
	// The supervisor (the recorded process, leader of the group), the
	// server under it, and the server's stray sleep.
	ids := membersOf(t, r, 3)
	others := slices.DeleteFunc(slices.Clone(ids), func(id procID) bool { return id.PID == r.Server.PID })

	// The port's holder is named: the server, not its supervisor.
	_, err = Start(context.Background(), svc, o)
	want := fmt.Sprintf("service web: port %d is in use by pid ", port)
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.HasPrefix(err.Error(), want+strconv.Itoa(r.Server.PID)+" ") ||
		!strings.Contains(err.Error(), " ("+os.Args[0]) ||
		!strings.Contains(err.Error(), fmt.Sprintf("server web of the nel run (pid %d) still going in this output folder", os.Getpid())) {
		t.Errorf("second Start: %v\nwant prefix %s", err, want)
	}

	stopped = true
	if err := s.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, id := range others {
		if isProcess(id) {
			t.Errorf("the server's process %d still runs after Stop", id.PID)
		}
	}
	if paths, _ := filepath.Glob(filepath.Join(rundir.Dir(dir).Servers(), "*.json")); len(paths) != 0 {
		t.Errorf("records after Stop: %q", paths)
	}
	if err := checkPort(port, ""); err != nil {
		t.Error(err)
	}
}

func TestCheckPortNamesHolder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	err = checkPort(port, "")
	want := fmt.Sprintf("port %d is in use by pid %d (%s", port, os.Getpid(), os.Args[0])
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "; stop it or give the service another port") {
		t.Errorf("checkPort = %v, want prefix %s", err, want)
	}
	ln.Close()
	if err := checkPort(port, ""); err != nil {
		t.Errorf("after close: %v", err)
	}
}
