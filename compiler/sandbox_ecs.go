package compiler

import "github.com/nel-eval/nel/runtime/plan"

// An ecs_fargate sandbox runs each job as an AWS ECS Fargate task
// (runtime/sandbox/ecs.go). nel-run starts the task from the recipe's
// cluster, subnets and roles, or, given a region and no cluster, from
// those the SSM parameter /<ssm_project>/ecs-sandbox/config holds, read
// on the node when the sandbox opens (the machine that compiles may have
// no AWS access); it reaches the task's exec server at its private IP.
// What NeMo Evaluator does beyond that (building images with CodeBuild,
// staging files in S3, the SSH sidecar) needs machinery nel-run does not
// have, and is refused with the reason.

// unsupportedECS names the ecs_fargate fields nel-run cannot honour.
func unsupportedECS(sb *Sandbox, no func(string, ...any), at func(...any) []any) {
	e := sb.ECSFargate
	switch {
	case e.Cluster == "" && e.Region == "":
		no("an ecs_fargate sandbox without cluster and region (set the ECS cluster its tasks run on, or the region whose SSM parameter /"+e.SSMProject+"/ecs-sandbox/config names it)", at("cluster")...)
	case e.Cluster != "" && len(e.Subnets) == 0:
		no("an ecs_fargate sandbox without subnets (set its tasks' awsvpc subnets, which nel-run must reach)", at("subnets")...)
	}
	if sb.Image == "" {
		no("an ecs_fargate sandbox without image (nel-run runs the image as named in each task, e.g. python:3.12-slim; it builds none)", at("image")...)
	}
	if e.NelRunImage == "" {
		no("an ecs_fargate sandbox without nel_run_image (nel's field, with no default: nel publishes no image, and one make image builds is local. Build nel's image (make image, or docker build at the repository's root), push it where the tasks' execution role pulls from, e.g. ACCOUNT.dkr.ecr.REGION.amazonaws.com/nel:VERSION, and set nel_run_image to that; each task copies nel-run from it to serve the job)", at("nel_run_image")...)
	}
	if e.SSHSidecar != nil {
		no("ssh_sidecar (nel runs no SSH sidecar: nel-run reaches the task's exec server at its private IP with a token made for the task, so it must run in the task's VPC; drop ssh_sidecar)", at("ssh_sidecar")...)
	}
	if e.ContainerPort != nil {
		no("container_port (the task's image runs nel-run's exec server, not a server of its own)", at("container_port")...)
	}
	build := " (NeMo Evaluator builds task images with CodeBuild and pushes them to ECR; nel-run runs the image as named: build and push it yourself and set image)"
	for _, f := range []struct {
		set   bool
		field string
	}{
		{e.ECRRepository != "", "ecr_repository"}, {e.CodebuildProject != "", "codebuild_project"},
		{e.CodebuildServiceRole != "", "codebuild_service_role"}, {e.CodebuildTimeout != 0, "codebuild_build_timeout"},
		{e.CodebuildCompute != "", "codebuild_compute_type"}, {e.DockerhubSecretARN != "", "dockerhub_secret_arn"},
	} {
		if f.set {
			no(f.field+build, at(f.field)...)
		}
	}
	if e.S3Bucket != "" || e.S3Prefix != "" {
		no("s3_bucket and s3_prefix (NeMo Evaluator stages task files in S3; nel-run sends a job's files with the job)", at(firstSet(e.S3Bucket != "", "s3_bucket", "s3_prefix"))...)
	}
	if e.EFSFilesystemID != "" || e.EFSAccessPointID != "" {
		no("efs_filesystem_id and efs_access_point_id (an EFS workspace carries an agent's files to its verifier; nel keeps them in the sample's own task, which runs both)", at(firstSet(e.EFSFilesystemID != "", "efs_filesystem_id", "efs_access_point_id"))...)
	}
}

func firstSet(first bool, a, b string) string {
	if first {
		return a
	}
	return b
}

// planECS is an ecs_fargate sandbox's part of the plan.
func planECS(sb *Sandbox) *plan.ECS {
	e := sb.ECSFargate
	life := e.MaxTaskLifetimeSec
	if life == 0 {
		life = 14400 // NeMo Evaluator's runtime default
	}
	project := ""
	if e.Cluster == "" {
		project = e.SSMProject // read by nel-run only without a cluster
	}
	return &plan.ECS{
		Region: e.Region, Cluster: e.Cluster, SSMProject: project, Subnets: e.Subnets, SecurityGroups: e.SecurityGroups,
		AssignPublicIP: e.AssignPublicIP, CPU: e.CPU, Memory: sb.Memory, EphemeralStorageGiB: e.EphemeralStorageGiB,
		ExecutionRoleARN: e.ExecutionRoleARN, TaskRoleARN: e.TaskRoleARN, LogGroup: e.LogGroup,
		LogStreamPrefix: e.LogStreamPrefix, MaxTaskLifetimeSec: life, ExecServerPort: 19542, NelRunImage: e.NelRunImage,
	}
}
