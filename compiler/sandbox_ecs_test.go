package compiler

import (
	"reflect"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
)

// loadECS loads a recipe of one api service and the given sandboxes and
// benchmarks.
func loadECS(t *testing.T, rest string) *Source {
	t.Helper()
	s, err := newTestLoader(t).Load("r.yaml", []byte("services:\n  m: {type: api, url: \"http://127.0.0.1:8000/v1\", model: m}\n"+rest), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// planOK is the plan of a recipe compile does not refuse.
func planOK(t *testing.T, s *Source) *plan.Plan {
	t.Helper()
	if u := Unsupported(s); len(u) != 0 {
		t.Fatalf("refused: %v", u)
	}
	return mustPlan(t, s)
}

// An ecs_fargate sandbox with what nel-run needs compiles into the plan's
// ecs section: names and ARNs as written (no credentials exist in a
// recipe), Fargate's memory in MiB there and not as a byte size, NeMo
// Evaluator's default lifetime, and the exec server's port.
func TestECSSandboxPlan(t *testing.T) {
	s := loadECS(t, `sandboxes:
  fargate:
    type: ecs_fargate
    region: us-west-2
    cluster: nel-sandbox
    subnets: [subnet-1, subnet-2]
    security_groups: [sg-1]
    execution_role_arn: arn:aws:iam::123456789012:role/exec
    image: python:3.12-slim
    nel_run_image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/nel:1
    cpu: "2048"
    memory: "4096"
    log_group: /nel/sandbox
    timeout: 120.0
benchmarks:
  - name: humaneval
    solver: {type: simple, service: m}
    sandbox: fargate
`)
	p := planOK(t, s)
	sb := p.Benchmarks[0].Sandbox
	if sb.Name != "fargate" || sb.Type != "ecs_fargate" || sb.Image != "python:3.12-slim" || sb.Memory != "" || sb.Timeout != 120 || sb.Concurrency != 4 {
		t.Errorf("sandbox %+v", sb)
	}
	want := plan.ECS{Region: "us-west-2", Cluster: "nel-sandbox", Subnets: []string{"subnet-1", "subnet-2"}, SecurityGroups: []string{"sg-1"},
		CPU: "2048", Memory: "4096", ExecutionRoleARN: "arn:aws:iam::123456789012:role/exec", LogGroup: "/nel/sandbox",
		MaxTaskLifetimeSec: 14400, ExecServerPort: 19542, NelRunImage: "123456789012.dkr.ecr.us-west-2.amazonaws.com/nel:1"}
	if sb.ECS == nil || !reflect.DeepEqual(*sb.ECS, want) {
		t.Errorf("ecs %+v\nwant %+v", sb.ECS, want)
	}
}

// What nel-run cannot do with an ecs_fargate sandbox is refused where the
// recipe says it, with the reason.
func TestECSSandboxRefused(t *testing.T) {
	s := loadECS(t, `sandboxes:
  discovered:
    type: ecs_fargate
    region: us-west-1
    ssm_project: nel-sandbox
    ecr_repository: 123.dkr.ecr.us-west-2.amazonaws.com/x
    s3_bucket: staging
    efs_filesystem_id: fs-1
    container_port: 8080
    ssh_sidecar:
      public_key_secret_arn: arn:aws:secretsmanager:us-west-1:1:secret:pub
      private_key_secret_arn: arn:aws:secretsmanager:us-west-1:1:secret:priv
  nosubnets:
    type: ecs_fargate
    cluster: c
    image: python:3.12-slim
    nel_run_image: nel:1
  nowhere:
    type: ecs_fargate
    image: python:3.12-slim
    nel_run_image: nel:1
benchmarks:
  - name: humaneval
    solver: {type: simple, service: m}
    sandbox: discovered
  - name: humaneval
    solver: {type: simple, service: m}
    sandbox: nosubnets
  - name: humaneval
    solver: {type: simple, service: m}
    sandbox: nowhere
`)
	got := Unsupported(s).Error() // one error a line
	// A field the sandbox lacks is placed at the sandbox.
	want := []string{
		"r.yaml:4:3: sandboxes.discovered.image: not supported yet: an ecs_fargate sandbox without image (nel-run runs the image as named in each task, e.g. python:3.12-slim; it builds none)",
		"r.yaml:4:3: sandboxes.discovered.nel_run_image: not supported yet: an ecs_fargate sandbox without nel_run_image (nel's field, with no default: nel publishes no image, and one make image builds is local. Build nel's image (make image, or docker build at the repository's root), push it where the tasks' execution role pulls from, e.g. ACCOUNT.dkr.ecr.REGION.amazonaws.com/nel:VERSION, and set nel_run_image to that; each task copies nel-run from it to serve the job)",
		"r.yaml:8:21: sandboxes.discovered.ecr_repository: not supported yet: ecr_repository (NeMo Evaluator builds task images with CodeBuild and pushes them to ECR; nel-run runs the image as named: build and push it yourself and set image)",
		"r.yaml:9:16: sandboxes.discovered.s3_bucket: not supported yet: s3_bucket and s3_prefix (NeMo Evaluator stages task files in S3; nel-run sends a job's files with the job)",
		"r.yaml:10:24: sandboxes.discovered.efs_filesystem_id: not supported yet: efs_filesystem_id and efs_access_point_id (an EFS workspace carries an agent's files to its verifier; nel keeps them in the sample's own task, which runs both)",
		"r.yaml:11:21: sandboxes.discovered.container_port: not supported yet: container_port (the task's image runs nel-run's exec server, not a server of its own)",
		"r.yaml:12:5: sandboxes.discovered.ssh_sidecar: not supported yet: ssh_sidecar (nel runs no SSH sidecar: nel-run reaches the task's exec server at its private IP with a token made for the task, so it must run in the task's VPC; drop ssh_sidecar)",
		"r.yaml:15:3: sandboxes.nosubnets.subnets: not supported yet: an ecs_fargate sandbox without subnets (set its tasks' awsvpc subnets, which nel-run must reach)",
		"r.yaml:20:3: sandboxes.nowhere.cluster: not supported yet: an ecs_fargate sandbox without cluster and region (set the ECS cluster its tasks run on, or the region whose SSM parameter /harbor/ecs-sandbox/config names it)",
	}
	if w := strings.Join(want, "\n"); got != w {
		t.Errorf("got\n%s\nwant\n%s", got, w)
	}
}

// A region and no cluster compiles: the plan keeps the region and the
// SSM project (the schema's default, NeMo Evaluator's "harbor"), and
// leaves cluster, subnets and the public IP unset for nel-run to read
// from SSM on the node; what the recipe gives is kept to win over SSM.
// With a cluster, the plan names no SSM project: nothing is discovered.
func TestECSSandboxPlanDiscovered(t *testing.T) {
	s := loadECS(t, `sandboxes:
  bare:
    type: ecs_fargate
    region: us-west-2
    image: python:3.12-slim
    nel_run_image: nel:1
  mine:
    type: ecs_fargate
    region: eu-west-1
    ssm_project: mine
    log_group: /mine
    assign_public_ip: false
    image: python:3.12-slim
    nel_run_image: nel:1
  fixed:
    type: ecs_fargate
    region: us-west-2
    cluster: c
    subnets: [subnet-1]
    image: python:3.12-slim
    nel_run_image: nel:1
benchmarks:
  - {name: humaneval, solver: {type: simple, service: m}, sandbox: bare}
  - {name: humaneval, solver: {type: simple, service: m}, sandbox: mine}
  - {name: humaneval, solver: {type: simple, service: m}, sandbox: fixed}
`)
	p := planOK(t, s)
	bare, mine, fixed := p.Benchmarks[0].Sandbox.ECS, p.Benchmarks[1].Sandbox.ECS, p.Benchmarks[2].Sandbox.ECS
	if bare.Region != "us-west-2" || bare.Cluster != "" || bare.SSMProject != "harbor" || len(bare.Subnets) != 0 ||
		bare.AssignPublicIP != nil || bare.LogGroup != "" {
		t.Errorf("region only: %+v", bare)
	}
	if mine.Region != "eu-west-1" || mine.SSMProject != "mine" || mine.LogGroup != "/mine" ||
		mine.AssignPublicIP == nil || *mine.AssignPublicIP {
		t.Errorf("region and own fields: %+v", mine)
	}
	if fixed.Cluster != "c" || fixed.SSMProject != "" {
		t.Errorf("cluster given: %+v", fixed)
	}
}
