package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// NeMo Evaluator's ECS sandbox stack (its Terraform) writes the region's
// sandbox infrastructure as one JSON String parameter,
// /<ssm_project>/ecs-sandbox/config. A sandbox that names a region and no
// cluster reads it when it opens, on the node (the machine that compiles
// may have no AWS access), and fills in what the recipe left unset: what
// the recipe gives wins, as in NeMo Evaluator.

// ecsDiscovered is that parameter's JSON, the fields nel-run uses; the
// rest (S3, ECR, CodeBuild, Docker Hub, EFS, the SSH sidecar's keys) feed
// NeMo Evaluator's image builds and SSH tunnel, which nel-run has no use
// for: it runs images as named and reaches its exec server directly.
type ecsDiscovered struct {
	Cluster          string   `json:"cluster"`
	Subnets          []string `json:"subnets"`
	SecurityGroups   []string `json:"security_groups"`
	AssignPublicIP   *bool    `json:"assign_public_ip"`
	ExecutionRoleARN string   `json:"execution_role_arn"`
	TaskRoleARN      string   `json:"task_role_arn"`
	LogGroup         string   `json:"log_group"`
}

// DefaultSSMProject is NeMo Evaluator's ssm_project default.
const DefaultSSMProject = "harbor"

// ssmParameter is the name of the parameter of project.
func ssmParameter(project string) string {
	if project == "" {
		project = DefaultSSMProject
	}
	return "/" + project + "/ecs-sandbox/config"
}

// discovers says whether c is completed from SSM: NeMo Evaluator's rule,
// a region and no cluster.
func (c ECSConfig) discovers() bool { return c.Region != "" && c.Cluster == "" }

// discover reads c's SSM parameter and fills in what c leaves unset.
func (c *ECSConfig) discover(ctx context.Context, awsCfg aws.Config, log *slog.Logger) error {
	name := ssmParameter(c.SSMProject)
	ssm := awsJSON{cfg: awsCfg, service: ssmService, target: ssmTarget, endpoint: c.Endpoint}
	var out struct {
		Parameter *struct{ Value *string }
	}
	err := ssm.call(ctx, "GetParameter", map[string]string{"Name": name}, &out)
	switch {
	case isAWSError(err, "ParameterNotFound"):
		return fmt.Errorf("SSM parameter %s not found in %s (the ECS sandbox stack writes it: apply it in this region, set ssm_project to its project, or set cluster, subnets and security_groups in the sandbox)", name, c.Region)
	case err != nil:
		return fmt.Errorf("SSM parameter %s in %s: %w", name, c.Region, err)
	case out.Parameter == nil || out.Parameter.Value == nil:
		return fmt.Errorf("SSM parameter %s in %s: no value", name, c.Region)
	}
	var d ecsDiscovered
	if err := json.Unmarshal([]byte(aws.ToString(out.Parameter.Value)), &d); err != nil {
		return fmt.Errorf("SSM parameter %s in %s: invalid JSON: %w", name, c.Region, err)
	}
	if d.Cluster == "" {
		return fmt.Errorf("SSM parameter %s in %s names no cluster", name, c.Region)
	}
	c.Cluster = d.Cluster
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	fill(&c.ExecutionRoleARN, d.ExecutionRoleARN)
	fill(&c.TaskRoleARN, d.TaskRoleARN)
	fill(&c.LogGroup, d.LogGroup)
	if len(c.Subnets) == 0 {
		c.Subnets = slices.Clone(d.Subnets)
	}
	if len(c.SecurityGroups) == 0 {
		c.SecurityGroups = slices.Clone(d.SecurityGroups)
	}
	if c.AssignPublicIP == nil {
		c.AssignPublicIP = d.AssignPublicIP
	}
	log.Info("ecs sandbox settings from SSM", "parameter", name, "region", c.Region,
		"cluster", c.Cluster, "subnets", len(c.Subnets), "security_groups", len(c.SecurityGroups))
	return nil
}
