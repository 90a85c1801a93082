// Package fakeaws is a fake AWS endpoint for tests: the ECS, CloudWatch
// Logs and SSM Parameter Store calls of the ecs_fargate sandbox (runtime/sandbox/ecs.go) in the AWS
// JSON 1.1 protocol, as the API references describe them. Point the SDK at
// URL (sandbox.ECSConfig.Endpoint) and the exec server port at Port.
package fakeaws

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nel-eval/nel/runtime/sandbox"
)

// ECS speaks the AWS JSON 1.1 protocol of the ECS and CloudWatch Logs
// calls the ecs_fargate engine makes, as the API references describe
// them. Its tasks "run" on loopback: their ENI's private IP is 127.0.0.1,
// and their exec server is a real sandbox Server (the container engine)
// bearing the token RunTask was given, behind one listener on the exec
// server port that passes each request to the task whose token it bears.
type ECS struct {
	t   testing.TB
	srv *httptest.Server
	ln  net.Listener // the tasks' exec server port

	mu    sync.Mutex
	calls []Call
	// RunFailures are answered, one per RunTask call, before tasks run.
	RunFailures []string
	// StopAtStart makes each task stop before running, with this reason.
	StopAtStart string
	// TaskEngine is the engine of the tasks' exec servers: "" is the
	// container engine, its sessions under a directory of the test's
	// (their commands see the host's / elsewhere: give them relative
	// paths); "local" runs each session command in bubblewrap, where
	// /app, /logs, /tmp and /tests are the session's as in a task.
	TaskEngine string
	// OnSessionExec, when set, is called before each session command a
	// task's exec server gets, with the task and the command's number in
	// it (from 1): a test stops the task there (StopUnder).
	OnSessionExec func(arn string, n int)
	// LogLines are every log stream's events.
	LogLines []string
	// Errors are error answers, by operation ("RunTask"): each call of the
	// operation takes the next one ("TYPE: message"; status 400, or 500
	// for a type ending in "Exception500"), until none is left.
	Errors map[string][]string
	// LostAnswers makes the next calls of an operation do their work and
	// then answer 500, as when an answer is lost on its way (RunTask: the
	// task starts, the caller does not learn it).
	LostAnswers map[string]int
	// Parameters are the SSM parameters' values, by name; GetParameter
	// answers ParameterNotFound for any other name.
	Parameters map[string]string
	tasks      map[string]*task  // by ARN
	byClient   map[string]string // RunTask's task ARN by its clientToken
	seq        int
	revisions  map[string]int // task definitions registered, by family
}

// Call is one request to an operation.
type Call struct {
	Target, Auth string
	Body         map[string]any
}

type task struct {
	token     string
	server    *sandbox.Server
	describes int
	stopped   bool
	execs     int // session commands it was sent
	// code and reason say why a task stopped under its client (StopUnder).
	code, reason string
	root         string // its container engine's session root
}

// Secret is the secret access key New puts in the environment; no
// request may carry it.
const Secret = "fake-secret-key-never-logged-0123456789"

// AccessKey is the access key id New puts in the environment.
const AccessKey = "AKIDNELTEST"

// New starts the fake, and sets the environment so that the SDK's
// standard chain finds the test's credentials there and nowhere else.
// Set RunFailures, StopAtStart and LogLines before the calls they shape.
func New(t testing.TB) *ECS {
	t.Helper()
	// Credentials only from the SDK's standard chain: here its first
	// link, the environment; no shared files or instance role is read.
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", Secret)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", "")
	f := &ECS{t: t, tasks: map[string]*task{}, revisions: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serveAWS))
	t.Cleanup(f.srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.ln = ln
	hs := &http.Server{Handler: http.HandlerFunc(f.serveTask)}
	go hs.Serve(ln)
	t.Cleanup(func() {
		hs.Close()
		// Tasks the test never stopped end with it (their sessions'
		// folders are in the host's temp dir).
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, tk := range f.tasks {
			tk.server.CloseSessions()
		}
	})
	return f
}

// URL is the AWS endpoint.
func (f *ECS) URL() string { return f.srv.URL }

// Port is the tasks' exec server port (on 127.0.0.1, their ENI's IP).
func (f *ECS) Port() int { return f.ln.Addr().(*net.TCPAddr).Port }

// serveTask passes an exec server request to the running task whose token
// it bears; a request without one gets what a task's server answers.
func (f *ECS) serveTask(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	var target *task
	var arn string
	for a, tk := range f.tasks {
		if !tk.stopped && r.Header.Get("Authorization") == "Bearer "+tk.token {
			target, arn = tk, a
		}
	}
	n, hook := 0, f.OnSessionExec
	if target != nil && strings.HasPrefix(r.URL.Path, "/session/") && strings.HasSuffix(r.URL.Path, "/exec") {
		target.execs++
		n = target.execs
	}
	f.mu.Unlock()
	if n > 0 && hook != nil {
		hook(arn, n)
	}
	f.mu.Lock()
	gone := target == nil || target.stopped
	f.mu.Unlock()
	if gone {
		http.Error(w, `{"error":"no running task with this token"}`, http.StatusUnauthorized)
		return
	}
	target.server.ServeHTTP(w, r)
}

func (f *ECS) serveAWS(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &body); err != nil || r.Method != http.MethodPost ||
		r.Header.Get("Content-Type") != "application/x-amz-json-1.1" {
		f.t.Errorf("%s: not an AWS JSON 1.1 request: %s %s %q", target, r.Method, r.Header.Get("Content-Type"), b)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{Target: target, Auth: r.Header.Get("Authorization"), Body: body})
	_, op, _ := strings.Cut(target, ".")
	if errs := f.Errors[op]; len(errs) > 0 {
		f.Errors[op] = errs[1:]
		typ, msg, _ := strings.Cut(errs[0], ": ")
		status := http.StatusBadRequest
		if strings.HasSuffix(typ, "Exception500") {
			typ, status = strings.TrimSuffix(typ, "500"), http.StatusInternalServerError
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.ecs#" + typ, "message": msg})
		return
	}
	var out any
	switch target {
	case "AmazonEC2ContainerServiceV20141113.RegisterTaskDefinition":
		// Each registration of a family is its next revision, as in ECS.
		family := body["family"].(string)
		f.revisions[family]++
		out = map[string]any{"taskDefinition": map[string]any{
			"taskDefinitionArn": fmt.Sprintf("arn:aws:ecs:us-west-2:123456789012:task-definition/%s:%d", family, f.revisions[family])}}
	case "AmazonEC2ContainerServiceV20141113.RunTask":
		// ECS starts one task per client token: a retry gets the first.
		ct, _ := body["clientToken"].(string)
		if arn, ok := f.byClient[ct]; ok && ct != "" {
			out = map[string]any{"tasks": []any{map[string]any{"taskArn": arn, "lastStatus": "PROVISIONING"}}, "failures": []any{}}
			break
		}
		out = f.runTask(body)
		if ts := out.(map[string]any)["tasks"].([]any); len(ts) > 0 && ct != "" {
			if f.byClient == nil {
				f.byClient = map[string]string{}
			}
			f.byClient[ct] = ts[0].(map[string]any)["taskArn"].(string)
		}
	case "AmazonEC2ContainerServiceV20141113.DescribeTasks":
		out = f.describeTasks(body)
	case "AmazonEC2ContainerServiceV20141113.StopTask":
		arn := body["task"].(string)
		if tk := f.tasks[arn]; tk != nil {
			tk.stopped = true
			// A stopped task's container is gone with its files; the
			// fake's server keeps its sessions in the host's temp dir.
			tk.server.CloseSessions()
		}
		out = map[string]any{"task": map[string]any{"taskArn": arn, "lastStatus": "STOPPED"}}
	case "AmazonSSM.GetParameter":
		name, _ := body["Name"].(string)
		v, ok := f.Parameters[name]
		if !ok {
			awsError(w, "ParameterNotFound", "")
			return
		}
		out = map[string]any{"Parameter": map[string]any{"Name": name, "Type": "String", "Value": v, "Version": 1,
			"ARN": "arn:aws:ssm:us-west-2:123456789012:parameter" + name}}
	case "Logs_20140328.GetLogEvents":
		var evs []map[string]any
		for i, l := range f.LogLines {
			evs = append(evs, map[string]any{"timestamp": 1700000000000 + i, "message": l})
		}
		out = map[string]any{"events": evs}
	default:
		awsError(w, "UnknownOperationException", target)
		return
	}
	if f.LostAnswers[op] > 0 {
		f.LostAnswers[op]--
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	json.NewEncoder(w).Encode(out)
}

// awsError answers an AWS JSON 1.1 error of type typ.
func awsError(w http.ResponseWriter, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

func (f *ECS) runTask(body map[string]any) any {
	if len(f.RunFailures) > 0 {
		reason := f.RunFailures[0]
		f.RunFailures = f.RunFailures[1:]
		return map[string]any{"tasks": []any{}, "failures": []any{map[string]any{"arn": "arn:aws:ecs:us-west-2:123456789012:container-instance/x", "reason": reason}}}
	}
	token := ""
	for _, o := range body["overrides"].(map[string]any)["containerOverrides"].([]any) {
		for _, kv := range o.(map[string]any)["environment"].([]any) {
			if kv := kv.(map[string]any); kv["name"] == sandbox.TokenEnv {
				token = kv["value"].(string)
			}
		}
	}
	f.seq++
	arn := fmt.Sprintf("arn:aws:ecs:us-west-2:123456789012:task/nel-test/%032x", f.seq)
	cfg := sandbox.Config{Name: "fake-task", Type: "container", Concurrency: 1, Root: f.t.TempDir()}
	if f.TaskEngine != "" {
		cfg.Type = f.TaskEngine
	}
	sb, err := sandbox.Open(context.Background(), cfg)
	if err != nil {
		f.t.Errorf("the task's %s engine: %v", cfg.Type, err)
		return map[string]any{"tasks": []any{}, "failures": []any{map[string]any{"arn": "x", "reason": err.Error()}}}
	}
	f.tasks[arn] = &task{token: token, server: sandbox.NewServer(sb, sandbox.ServerOptions{Token: token}), root: cfg.Root}
	return map[string]any{"tasks": []any{map[string]any{"taskArn": arn, "lastStatus": "PROVISIONING"}}, "failures": []any{}}
}

// describeTasks answers PROVISIONING once, then RUNNING with the ENI (or
// STOPPED with StopAtStart's reason).
func (f *ECS) describeTasks(body map[string]any) any {
	arn := body["tasks"].([]any)[0].(string)
	tk := f.tasks[arn]
	if tk == nil {
		return map[string]any{"tasks": []any{}, "failures": []any{map[string]any{"arn": arn, "reason": "MISSING"}}}
	}
	tk.describes++
	t := map[string]any{"taskArn": arn, "lastStatus": "PROVISIONING"}
	switch {
	case tk.code != "":
		t["lastStatus"] = "STOPPED"
		t["stopCode"] = tk.code
		t["stoppedReason"] = tk.reason
	case tk.stopped || (f.StopAtStart != "" && tk.describes > 1):
		tk.stopped = true
		t["lastStatus"] = "STOPPED"
		t["stopCode"] = "TaskFailedToStart"
		t["stoppedReason"] = f.StopAtStart
		t["containers"] = []any{map[string]any{"name": "main", "reason": "CannotPullContainerError: pull image manifest has been retried 5 time(s)"}}
	case tk.describes > 1:
		t["lastStatus"] = "RUNNING"
		t["attachments"] = []any{map[string]any{"type": "ElasticNetworkInterface", "status": "ATTACHED", "details": []any{
			map[string]any{"name": "subnetId", "value": "subnet-1"},
			map[string]any{"name": "networkInterfaceId", "value": "eni-1"},
			map[string]any{"name": "privateIPv4Address", "value": "127.0.0.1"},
		}}}
	}
	return map[string]any{"tasks": []any{t}, "failures": []any{}}
}

// StopUnder stops a running task as ECS does on its own (a Spot
// reclaim, an OOM kill): its exec server goes away, and DescribeTasks
// says STOPPED with code and reason.
func (f *ECS) StopUnder(arn, code, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tk := f.tasks[arn]; tk != nil {
		tk.stopped, tk.code, tk.reason = true, code, reason
	}
}

// Root is where the task arn's container engine keeps its session's
// /app, /logs, /tmp and /tests.
func (f *ECS) Root(arn string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tk := f.tasks[arn]; tk != nil {
		return tk.root
	}
	return ""
}

// Called lists the calls made to an operation ("RunTask").
func (f *ECS) Called(op string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if strings.HasSuffix(c.Target, "."+op) {
			out = append(out, c)
		}
	}
	return out
}

// CheckSigned fails the test unless every call was SigV4-signed with the
// test's access key and no call carried the secret.
func (f *ECS) CheckSigned() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if !strings.HasPrefix(c.Auth, "AWS4-HMAC-SHA256 Credential="+AccessKey+"/") || !strings.Contains(c.Auth, "Signature=") {
			f.t.Errorf("%s: Authorization %q, want a SigV4 signature with the environment's key", c.Target, c.Auth)
		}
		b, _ := json.Marshal(c.Body)
		if strings.Contains(c.Auth+string(b), Secret) {
			f.t.Errorf("%s: the secret key is in the request", c.Target)
		}
	}
}

// Tasks lists the tasks RunTask started, by ARN, with their tokens.
func (f *ECS) Tasks() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for arn, tk := range f.tasks {
		out[arn] = tk.token
	}
	return out
}

// CheckAllStopped fails the test unless n tasks ran and StopTask stopped
// each, on cluster.
func (f *ECS) CheckAllStopped(cluster string, n int) {
	f.t.Helper()
	started := f.Tasks()
	stopped := map[string]bool{}
	for _, c := range f.Called("StopTask") {
		if c.Body["cluster"] != cluster {
			f.t.Errorf("StopTask cluster %v, want %s", c.Body["cluster"], cluster)
		}
		arn, _ := c.Body["task"].(string)
		stopped[arn] = true
	}
	if len(started) != n || len(stopped) != n {
		f.t.Errorf("%d tasks started, %d stopped: want %d each", len(started), len(stopped), n)
	}
	for arn := range started {
		if !stopped[arn] {
			f.t.Errorf("task %s was not stopped", arn)
		}
	}
}
