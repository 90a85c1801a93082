package sandbox_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/fakeaws"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// discoveredJSON is the parameter as NeMo Evaluator's ECS sandbox stack
// writes it: the fields nel-run reads, and those it has no use for.
const discoveredJSON = `{"cluster": "harbor-cluster", "subnets": ["subnet-aaa", "subnet-bbb"], "security_groups": ["sg-123"],
 "assign_public_ip": true, "execution_role_arn": "arn:aws:iam::123456:role/exec", "task_role_arn": "arn:aws:iam::123456:role/task",
 "log_group": "/ecs/harbor/us-west-2", "s3_bucket": "harbor-staging", "ecr_repository": "123456.dkr.ecr.us-west-2.amazonaws.com/harbor",
 "codebuild_service_role": "arn:aws:iam::123456:role/cb", "dockerhub_secret_arn": "arn:dh", "efs_filesystem_id": "",
 "efs_access_point_id": "", "ssh_sidecar": {"sshd_port": 52222, "exec_server_port": 19542,
 "public_key_secret_arn": "arn:pub", "private_key_secret_arn": "arn:priv"}}`

// A sandbox with a region and no cluster reads its cluster, network,
// roles and log group from /<ssm_project>/ecs-sandbox/config once, when it
// opens; what the sandbox sets itself wins; its tasks then run.
func TestECSDiscoversFromSSM(t *testing.T) {
	f := fakeaws.New(t)
	f.Parameters = map[string]string{"/nel-proj/ecs-sandbox/config": discoveredJSON}
	var logs bytes.Buffer
	sb := openFakeECS(t, f, &logs, func(c *sandbox.ECSConfig) {
		c.Cluster, c.Subnets, c.ExecutionRoleARN, c.AssignPublicIP = "", nil, "", nil
		c.SSMProject = "nel-proj"
		c.SecurityGroups = []string{"sg-mine"} // and LogGroup "/nel/sandbox", the recipe's
	})
	for range 2 {
		res, err := sb.Run(context.Background(), sandbox.Job{Command: []string{"echo", "ok"}})
		if err != nil || string(res.Stdout) != "ok\n" {
			t.Fatalf("Run = %+v, %v", res, err)
		}
	}
	gp := f.Called("GetParameter")
	if len(gp) != 1 || gp[0].Body["Name"] != "/nel-proj/ecs-sandbox/config" {
		t.Errorf("GetParameter calls %v, want one, for /nel-proj/ecs-sandbox/config", gp)
	}
	td := f.Called("RegisterTaskDefinition")[0].Body
	lc := td["containerDefinitions"].([]any)[1].(map[string]any)["logConfiguration"].(map[string]any)["options"].(map[string]any)
	if td["executionRoleArn"] != "arn:aws:iam::123456:role/exec" || td["taskRoleArn"] != "arn:aws:iam::123456:role/task" ||
		lc["awslogs-group"] != "/nel/sandbox" {
		t.Errorf("task definition: roles %v %v, log group %v", td["executionRoleArn"], td["taskRoleArn"], lc["awslogs-group"])
	}
	for _, c := range f.Called("RunTask") {
		net := c.Body["networkConfiguration"].(map[string]any)["awsvpcConfiguration"].(map[string]any)
		if c.Body["cluster"] != "harbor-cluster" || strings.Join(anyStrings(net["subnets"]), ",") != "subnet-aaa,subnet-bbb" ||
			strings.Join(anyStrings(net["securityGroups"]), ",") != "sg-mine" || net["assignPublicIp"] != "ENABLED" {
			t.Errorf("RunTask %v", c.Body)
		}
	}
	f.CheckAllStopped("harbor-cluster", 2)
	f.CheckSigned()
	if !strings.Contains(logs.String(), "parameter=/nel-proj/ecs-sandbox/config region=us-west-2 cluster=harbor-cluster") {
		t.Errorf("the log does not say where the settings came from:\n%s", logs.String())
	}
}

// A missing, unreadable or incomplete parameter fails the sandbox's
// opening, naming the parameter and the region, before any task.
func TestECSDiscoveryErrors(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{"", "SSM parameter /harbor/ecs-sandbox/config not found in us-west-2 (the ECS sandbox stack writes it"},
		{`{"cluster": `, "SSM parameter /harbor/ecs-sandbox/config in us-west-2: invalid JSON"},
		{`{"subnets": ["s"]}`, "SSM parameter /harbor/ecs-sandbox/config in us-west-2 names no cluster"},
		{`{"cluster": "c"}`, "SSM parameter /harbor/ecs-sandbox/config in us-west-2 names no subnets, nor does the sandbox"},
	} {
		f := fakeaws.New(t)
		if c.value != "" {
			f.Parameters = map[string]string{"/harbor/ecs-sandbox/config": c.value}
		}
		_, err := sandbox.Open(context.Background(), sandbox.Config{Name: "py", Type: "ecs_fargate", Image: "i", ECS: &sandbox.ECSConfig{
			Region: "us-west-2", NelRunImage: "n", ExecServerPort: 1, Endpoint: f.URL()}})
		if err == nil || !strings.Contains(err.Error(), "sandbox py: ecs_fargate: "+c.want) {
			t.Errorf("parameter %q: err = %v, want %q", c.value, err, c.want)
		}
		if len(f.Called("RegisterTaskDefinition")) != 0 {
			t.Errorf("parameter %q: a task definition was registered", c.value)
		}
	}
}
