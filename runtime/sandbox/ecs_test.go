package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/fakeaws"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// openFakeECS opens an ecs_fargate sandbox against f, logging into logs.
func openFakeECS(t *testing.T, f *fakeaws.ECS, logs *bytes.Buffer, edit func(*sandbox.ECSConfig)) sandbox.Sandbox {
	t.Helper()
	ec := &sandbox.ECSConfig{
		Region: "us-west-2", Cluster: "nel-test", Subnets: []string{"subnet-1", "subnet-2"}, SecurityGroups: []string{"sg-1"},
		AssignPublicIP: new(false), CPU: "2048", Memory: "4096", EphemeralStorageGiB: 30, ExecutionRoleARN: "arn:aws:iam::123456789012:role/exec",
		LogGroup: "/nel/sandbox", LogStreamPrefix: "humaneval", MaxTaskLifetime: time.Minute,
		ExecServerPort: f.Port(), StartupTimeout: 10 * time.Second, NelRunImage: "nel:test",
		Endpoint: f.URL(), PollInterval: 10 * time.Millisecond,
	}
	if edit != nil {
		edit(ec)
	}
	sb, err := sandbox.Open(context.Background(), sandbox.Config{
		Name: "py", Type: "ecs_fargate", Image: "python:3.12-slim", Concurrency: 2,
		Env: map[string]string{"FROM_CONFIG": "c"}, ECS: ec,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

func TestECSRunEndToEnd(t *testing.T) {
	f := fakeaws.New(t)
	var logs bytes.Buffer
	sb := openFakeECS(t, f, &logs, nil)
	res, err := sb.Run(context.Background(), sandbox.Job{
		Command: []string{"sh", "-c", `cat in.txt; echo "env=$FROM_CONFIG,$OWN,${NEL_SANDBOX_TOKEN:-none}"; echo out > got.txt; echo warn >&2; exit 3`},
		Files:   map[string][]byte{"in.txt": []byte("hello\n")},
		Env:     map[string]string{"OWN": "j"},
		Collect: []string{"got.txt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The program's failure is a result, not an error of the sandbox.
	if res.ExitCode != 3 || string(res.Stdout) != "hello\nenv=c,j,none\n" || string(res.Stderr) != "warn\n" || string(res.Files["got.txt"]) != "out\n" {
		t.Errorf("result: exit %d stdout %q stderr %q files %q", res.ExitCode, res.Stdout, res.Stderr, res.Files)
	}
	f.CheckAllStopped("nel-test", 1)
	f.CheckSigned()
	if strings.Contains(logs.String(), fakeaws.Secret) {
		t.Error("the secret key is in the log")
	}

	reg := f.Called("RegisterTaskDefinition")
	if len(reg) != 1 {
		t.Fatalf("RegisterTaskDefinition called %d times, want once at Open", len(reg))
	}
	td := reg[0].Body
	for k, want := range map[string]any{"family": "nel-sandbox-py", "networkMode": "awsvpc", "cpu": "2048", "memory": "4096",
		"executionRoleArn": "arn:aws:iam::123456789012:role/exec"} {
		if td[k] != want {
			t.Errorf("task definition %s = %v, want %v", k, td[k], want)
		}
	}
	if rc := td["requiresCompatibilities"].([]any); len(rc) != 1 || rc[0] != "FARGATE" {
		t.Errorf("requiresCompatibilities %v", rc)
	}
	if es := td["ephemeralStorage"].(map[string]any)["sizeInGiB"]; es != 30.0 {
		t.Errorf("ephemeralStorage %v, want 30", es)
	}
	cds := td["containerDefinitions"].([]any)
	install, main := cds[0].(map[string]any), cds[1].(map[string]any)
	if install["image"] != "nel:test" || install["essential"] != false || strings.Join(anyStrings(install["command"]), " ") != "sandbox-serve --install /nel/nel-run" {
		t.Errorf("install container %v", install)
	}
	cmd := strings.Join(anyStrings(main["command"]), " ")
	if main["image"] != "python:3.12-slim" || anyStrings(main["entryPoint"])[0] != "/nel/nel-run" ||
		!strings.Contains(cmd, "--engine container") || !strings.Contains(cmd, "--token-env NEL_SANDBOX_TOKEN") ||
		!strings.Contains(cmd, "--max-lifetime 1m0s") || !strings.Contains(cmd, "--listen :"+strconv.Itoa(f.Port())) ||
		!strings.Contains(cmd, "--slots 1 --session-idle 0") {
		t.Errorf("main container %v", main)
	}
	dep := main["dependsOn"].([]any)[0].(map[string]any)
	if dep["containerName"] != "nel-run" || dep["condition"] != "SUCCESS" {
		t.Errorf("main dependsOn %v", dep)
	}
	lc := main["logConfiguration"].(map[string]any)["options"].(map[string]any)
	if lc["awslogs-group"] != "/nel/sandbox" || lc["awslogs-stream-prefix"] != "humaneval" || lc["awslogs-region"] != "us-west-2" {
		t.Errorf("log configuration %v", lc)
	}

	run := f.Called("RunTask")[0].Body
	net := run["networkConfiguration"].(map[string]any)["awsvpcConfiguration"].(map[string]any)
	if run["cluster"] != "nel-test" || run["launchType"] != "FARGATE" || run["taskDefinition"] != "arn:aws:ecs:us-west-2:123456789012:task-definition/nel-sandbox-py:1" ||
		strings.Join(anyStrings(net["subnets"]), ",") != "subnet-1,subnet-2" || strings.Join(anyStrings(net["securityGroups"]), ",") != "sg-1" ||
		net["assignPublicIp"] != "DISABLED" {
		t.Errorf("RunTask %v", run)
	}
	for _, token := range f.Tasks() {
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) {
			t.Errorf("task token %q, want 32 random bytes in hex", token)
		}
		if strings.Contains(logs.String(), token) {
			t.Error("the task's token is in the log")
		}
	}
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// A task that stops before it runs (an image that cannot be pulled) is an
// error naming the task, ECS's reason and the end of its log: the job is
// an infrastructure failure, never a wrong answer.
func TestECSTaskStoppedAtStart(t *testing.T) {
	f := fakeaws.New(t)
	f.StopAtStart = "Essential container in task exited"
	f.LogLines = []string{"exec /nel/nel-run: exec format error"}
	var logs bytes.Buffer
	sb := openFakeECS(t, f, &logs, nil)
	res, err := sb.Run(context.Background(), sandbox.Job{Command: []string{"true"}})
	if err == nil {
		t.Fatalf("Run = %+v, want an error", res)
	}
	msg := err.Error()
	for _, want := range []string{"sandbox py: ecs_fargate: task arn:aws:ecs:us-west-2:123456789012:task/nel-test/",
		"stopped before it ran: TaskFailedToStart: Essential container in task exited",
		"container main: CannotPullContainerError",
		"its log (/nel/sandbox humaneval/main/", "ends: exec /nel/nel-run: exec format error"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q\nlacks %q", msg, want)
		}
	}
	gl := f.Called("GetLogEvents")
	if len(gl) != 1 || gl[0].Body["logGroupName"] != "/nel/sandbox" || !strings.HasPrefix(gl[0].Body["logStreamName"].(string), "humaneval/main/") {
		t.Errorf("GetLogEvents calls %v", gl)
	}
	f.CheckAllStopped("nel-test", 1)
}

// Fargate out of capacity is retried; another RunTask failure is an error
// at once, and nothing is left to stop.
func TestECSRunTaskFailures(t *testing.T) {
	f := fakeaws.New(t)
	f.RunFailures = []string{"Capacity is unavailable at this time. Please try again later or in a different availability zone"}
	var logs bytes.Buffer
	sb := openFakeECS(t, f, &logs, nil)
	res, err := sb.Run(context.Background(), sandbox.Job{Command: []string{"echo", "ok"}})
	if err != nil || string(res.Stdout) != "ok\n" {
		t.Fatalf("after a capacity failure: %v %+v", err, res)
	}
	if n := len(f.Called("RunTask")); n != 2 {
		t.Errorf("RunTask called %d times, want 2 (one capacity failure, one retry)", n)
	}
	f.CheckAllStopped("nel-test", 1)

	f.RunFailures = []string{"AGENT"}
	_, err = sb.Run(context.Background(), sandbox.Job{Command: []string{"echo", "ok"}})
	if err == nil || !strings.Contains(err.Error(), "run task on cluster nel-test: AGENT") {
		t.Fatalf("err = %v, want the RunTask failure", err)
	}
	if n := len(f.Called("RunTask")); n != 3 {
		t.Errorf("RunTask called %d times, want 3 (a non-capacity failure is not retried)", n)
	}
	f.CheckAllStopped("nel-test", 1)
}

// A job whose caller gives up, or that outlives max_task_lifetime_sec,
// still has its task stopped.
func TestECSStopOnCancelAndLifetime(t *testing.T) {
	f := fakeaws.New(t)
	var logs bytes.Buffer
	sb := openFakeECS(t, f, &logs, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := sb.Run(ctx, sandbox.Job{Command: []string{"sleep", "30"}})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("err = %v after %s, want the caller's deadline", err, time.Since(start))
	}
	f.CheckAllStopped("nel-test", 1)

	sb = openFakeECS(t, f, &logs, func(c *sandbox.ECSConfig) { c.MaxTaskLifetime = 500 * time.Millisecond })
	_, err = sb.Run(context.Background(), sandbox.Job{Command: []string{"sleep", "30"}})
	if err == nil || time.Since(start) > 20*time.Second {
		t.Fatalf("err = %v, want the task's lifetime to end the job", err)
	}
	f.CheckAllStopped("nel-test", 2)
}

// The configuration nel-run cannot start tasks from is refused at Open,
// and so are missing credentials, naming the chain but no value.
func TestECSOpenErrors(t *testing.T) {
	f := fakeaws.New(t)
	var logs bytes.Buffer
	for _, c := range []struct {
		edit func(*sandbox.ECSConfig)
		want string
	}{
		{func(c *sandbox.ECSConfig) { c.Cluster, c.Region = "", "" }, "cluster is required, or region to read it from SSM"},
		{func(c *sandbox.ECSConfig) { c.Subnets = nil }, "subnets are required"},
		{func(c *sandbox.ECSConfig) { c.NelRunImage = "" }, "nel_run_image is required"},
	} {
		ec := &sandbox.ECSConfig{Region: "us-west-2", Cluster: "c", Subnets: []string{"s"}, NelRunImage: "n", ExecServerPort: 1, Endpoint: f.URL()}
		c.edit(ec)
		_, err := sandbox.Open(context.Background(), sandbox.Config{Name: "py", Type: "ecs_fargate", Image: "i", ECS: ec})
		if err == nil || !strings.Contains(err.Error(), "sandbox py: ecs_fargate: "+c.want) {
			t.Errorf("err = %v, want %q", err, c.want)
		}
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	_, err := sandbox.Open(context.Background(), sandbox.Config{Name: "py", Type: "ecs_fargate", Image: "i", ECS: &sandbox.ECSConfig{
		Region: "us-west-2", Cluster: "c", Subnets: []string{"s"}, NelRunImage: "n", ExecServerPort: 1, Endpoint: f.URL()}})
	if err == nil || !strings.Contains(err.Error(), "no AWS credentials from the standard chain") {
		t.Errorf("err = %v, want the missing credentials", err)
	}
	if len(f.Called("RegisterTaskDefinition")) != 0 {
		t.Error("a refused sandbox registered a task definition")
	}
	_ = logs
}

// ECS's error answers: a client error fails at once, naming the call and
// ECS's own type and message; throttling and server errors are retried.
func TestECSErrorAnswers(t *testing.T) {
	t.Run("client error", func(t *testing.T) {
		f := fakeaws.New(t)
		f.Errors = map[string][]string{"RegisterTaskDefinition": {"ClientException: Role is not valid"}}
		_, err := sandbox.Open(context.Background(), sandbox.Config{
			Name: "py", Type: "ecs_fargate", Image: "python:3.12-slim",
			ECS: &sandbox.ECSConfig{Region: "us-west-2", Cluster: "nel-test", Subnets: []string{"subnet-1"},
				ExecServerPort: f.Port(), NelRunImage: "nel:test", Endpoint: f.URL()},
			Logger: slog.New(slog.DiscardHandler),
		})
		if err == nil {
			t.Fatal("Open succeeded though ECS refused the task definition")
		}
		for _, want := range []string{"register task definition", "RegisterTaskDefinition", "HTTP 400", "ClientException: Role is not valid"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if n := len(f.Called("RegisterTaskDefinition")); n != 1 {
			t.Errorf("RegisterTaskDefinition called %d times: a client error is not retried", n)
		}
	})
	t.Run("throttled, then a server error", func(t *testing.T) {
		f := fakeaws.New(t)
		f.Errors = map[string][]string{"DescribeTasks": {"ThrottlingException: Rate exceeded", "ServerException500: try again"}}
		sb := openFakeECS(t, f, new(bytes.Buffer), nil)
		res, err := sb.Run(context.Background(), sandbox.Job{Command: []string{"sh", "-c", "echo ok"}})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Stdout) != "ok\n" {
			t.Errorf("stdout %q", res.Stdout)
		}
		if n := len(f.Called("DescribeTasks")); n < 3 {
			t.Errorf("DescribeTasks called %d times: both errors should have been retried", n)
		}
		f.CheckAllStopped("nel-test", 1)
	})
}

// A RunTask whose task started but whose answer was lost is retried with
// the same client token: ECS gives back that task, and no second one runs
// unstopped until its lifetime ends.
func TestECSRunTaskIdempotent(t *testing.T) {
	f := fakeaws.New(t)
	f.LostAnswers = map[string]int{"RunTask": 1}
	sb := openFakeECS(t, f, new(bytes.Buffer), nil)
	if _, err := sb.Run(context.Background(), sandbox.Job{Command: []string{"sh", "-c", "echo ok"}}); err != nil {
		t.Fatal(err)
	}
	runs := f.Called("RunTask")
	if len(runs) != 2 {
		t.Fatalf("RunTask called %d times, want 2 (the lost answer retried)", len(runs))
	}
	t1, _ := runs[0].Body["clientToken"].(string)
	t2, _ := runs[1].Body["clientToken"].(string)
	if t1 == "" || t1 != t2 {
		t.Errorf("client tokens %q and %q: a retry must carry its call's token", t1, t2)
	}
	if n := len(f.Tasks()); n != 1 {
		t.Errorf("%d tasks started, want 1", n)
	}
	f.CheckAllStopped("nel-test", 1)
}

// RunTask throttled through all of a call's attempts is waited out like a
// lack of capacity, until StartupTimeout. AWS_MAX_ATTEMPTS=1 (honoured, as
// the SDK's clients did) leaves each call one attempt.
func TestECSRunTaskThrottled(t *testing.T) {
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	f := fakeaws.New(t)
	f.Errors = map[string][]string{"RunTask": {"ThrottlingException: Rate exceeded", "ThrottlingException: Rate exceeded"}}
	var logs bytes.Buffer
	sb := openFakeECS(t, f, &logs, nil)
	if _, err := sb.Run(context.Background(), sandbox.Job{Command: []string{"sh", "-c", "echo ok"}}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Called("RunTask")); n != 3 {
		t.Errorf("RunTask called %d times, want 3: one attempt a call, two throttled", n)
	}
	if n := strings.Count(logs.String(), "throttled, retrying"); n != 2 {
		t.Errorf("%d logs of a wait, want 2:\n%s", n, logs.String())
	}
	f.CheckAllStopped("nel-test", 1)
}
