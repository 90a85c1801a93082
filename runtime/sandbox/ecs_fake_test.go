package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeAWS speaks the AWS JSON 1.1 protocol of the ECS and CloudWatch Logs
// calls the ecs_fargate engine makes, as the API references describe
// them. Its tasks "run" on loopback: their ENI's private IP is 127.0.0.1,
// and their exec server is a real sandbox Server (the container engine)
// bearing the token RunTask was given, behind one listener on the exec
// server port that passes each request to the task whose token it bears.
type fakeAWS struct {
	t   *testing.T
	srv *httptest.Server
	ln  net.Listener // the tasks' exec server port

	mu    sync.Mutex
	calls []fakeCall
	// runFailures are answered, one per RunTask call, before tasks run.
	runFailures []string
	// stopAtStart makes each task stop before running, with this reason.
	stopAtStart string
	logLines    []string
	tasks       map[string]*fakeTask // by ARN
	seq         int
}

type fakeCall struct {
	target, auth string
	body         map[string]any
}

type fakeTask struct {
	token     string
	server    *Server
	describes int
	stopped   bool
}

const fakeSecret = "fake-secret-key-never-logged-0123456789"

func newFakeAWS(t *testing.T) *fakeAWS {
	t.Helper()
	// Credentials only from the SDK's standard chain: here its first
	// link, the environment; no shared files or instance role is read.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDNELTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", fakeSecret)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", "")
	f := &fakeAWS{t: t, tasks: map[string]*fakeTask{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serveAWS))
	t.Cleanup(f.srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.ln = ln
	hs := &http.Server{Handler: http.HandlerFunc(f.serveTask)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return f
}

func (f *fakeAWS) port() int { return f.ln.Addr().(*net.TCPAddr).Port }

// serveTask passes an exec server request to the running task whose token
// it bears; a request without one gets what a task's server answers.
func (f *fakeAWS) serveTask(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	var target *Server
	for _, task := range f.tasks {
		if !task.stopped && r.Header.Get("Authorization") == "Bearer "+task.token {
			target = task.server
		}
	}
	f.mu.Unlock()
	if target == nil {
		http.Error(w, `{"error":"no running task with this token"}`, http.StatusUnauthorized)
		return
	}
	target.ServeHTTP(w, r)
}

func (f *fakeAWS) serveAWS(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &body); err != nil || r.Method != http.MethodPost ||
		r.Header.Get("Content-Type") != "application/x-amz-json-1.1" {
		f.t.Errorf("%s: not an AWS JSON 1.1 request: %s %s %q", target, r.Method, r.Header.Get("Content-Type"), b)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeCall{target: target, auth: r.Header.Get("Authorization"), body: body})
	var out any
	switch target {
	case "AmazonEC2ContainerServiceV20141113.RegisterTaskDefinition":
		out = map[string]any{"taskDefinition": map[string]any{
			"taskDefinitionArn": "arn:aws:ecs:us-west-2:123456789012:task-definition/" + body["family"].(string) + ":1"}}
	case "AmazonEC2ContainerServiceV20141113.RunTask":
		out = f.runTask(body)
	case "AmazonEC2ContainerServiceV20141113.DescribeTasks":
		out = f.describeTasks(body)
	case "AmazonEC2ContainerServiceV20141113.StopTask":
		arn := body["task"].(string)
		if task := f.tasks[arn]; task != nil {
			task.stopped = true
		}
		out = map[string]any{"task": map[string]any{"taskArn": arn, "lastStatus": "STOPPED"}}
	case "Logs_20140328.GetLogEvents":
		var evs []map[string]any
		for i, l := range f.logLines {
			evs = append(evs, map[string]any{"timestamp": 1700000000000 + i, "message": l})
		}
		out = map[string]any{"events": evs}
	default:
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"UnknownOperationException","message":"%s"}`, target)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	json.NewEncoder(w).Encode(out)
}

func (f *fakeAWS) runTask(body map[string]any) any {
	if len(f.runFailures) > 0 {
		reason := f.runFailures[0]
		f.runFailures = f.runFailures[1:]
		return map[string]any{"tasks": []any{}, "failures": []any{map[string]any{"arn": "arn:aws:ecs:us-west-2:123456789012:container-instance/x", "reason": reason}}}
	}
	token := ""
	for _, o := range body["overrides"].(map[string]any)["containerOverrides"].([]any) {
		for _, kv := range o.(map[string]any)["environment"].([]any) {
			if kv := kv.(map[string]any); kv["name"] == TokenEnv {
				token = kv["value"].(string)
			}
		}
	}
	f.seq++
	arn := fmt.Sprintf("arn:aws:ecs:us-west-2:123456789012:task/nel-test/%032x", f.seq)
	f.tasks[arn] = &fakeTask{token: token, server: NewServer(openContainer("fake-task", Config{}), ServerOptions{Token: token})}
	return map[string]any{"tasks": []any{map[string]any{"taskArn": arn, "lastStatus": "PROVISIONING"}}, "failures": []any{}}
}

// describeTasks answers PROVISIONING once, then RUNNING with the ENI (or
// STOPPED with stopAtStart's reason).
func (f *fakeAWS) describeTasks(body map[string]any) any {
	arn := body["tasks"].([]any)[0].(string)
	task := f.tasks[arn]
	if task == nil {
		return map[string]any{"tasks": []any{}, "failures": []any{map[string]any{"arn": arn, "reason": "MISSING"}}}
	}
	task.describes++
	t := map[string]any{"taskArn": arn, "lastStatus": "PROVISIONING"}
	switch {
	case task.stopped || (f.stopAtStart != "" && task.describes > 1):
		task.stopped = true
		t["lastStatus"] = "STOPPED"
		t["stopCode"] = "TaskFailedToStart"
		t["stoppedReason"] = f.stopAtStart
		t["containers"] = []any{map[string]any{"name": "main", "reason": "CannotPullContainerError: pull image manifest has been retried 5 time(s)"}}
	case task.describes > 1:
		t["lastStatus"] = "RUNNING"
		t["attachments"] = []any{map[string]any{"type": "ElasticNetworkInterface", "status": "ATTACHED", "details": []any{
			map[string]any{"name": "subnetId", "value": "subnet-1"},
			map[string]any{"name": "networkInterfaceId", "value": "eni-1"},
			map[string]any{"name": "privateIPv4Address", "value": "127.0.0.1"},
		}}}
	}
	return map[string]any{"tasks": []any{t}, "failures": []any{}}
}

// called lists the calls made to an operation ("RunTask").
func (f *fakeAWS) called(op string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if strings.HasSuffix(c.target, "."+op) {
			out = append(out, c)
		}
	}
	return out
}

// checkSigned fails unless every call was SigV4-signed with the test's
// access key and no call carried the secret.
func (f *fakeAWS) checkSigned() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if !strings.HasPrefix(c.auth, "AWS4-HMAC-SHA256 Credential=AKIDNELTEST/") || !strings.Contains(c.auth, "Signature=") {
			f.t.Errorf("%s: Authorization %q, want a SigV4 signature with the environment's key", c.target, c.auth)
		}
		b, _ := json.Marshal(c.body)
		if strings.Contains(c.auth+string(b), fakeSecret) {
			f.t.Errorf("%s: the secret key is in the request", c.target)
		}
	}
}
