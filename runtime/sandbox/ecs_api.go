package sandbox

import "context"

// The four ECS operations the ecs_fargate engine calls, in the AWS JSON
// 1.1 protocol through awsJSON: the fields nel sends and reads, named as
// the ECS API reference names them. The SDK's generated ECS client built
// the whole ECS API's schema at every nel-run start (0.9 MB of
// allocations and 1.6 ms, on every shard, whether it used ECS or not) and
// was 0.6 MB of nel-run, for these four calls.

const ecsService, ecsTarget = "ecs", "AmazonEC2ContainerServiceV20141113"

type ecsKeyValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type ecsMountPoint struct {
	SourceVolume  string `json:"sourceVolume"`
	ContainerPath string `json:"containerPath"`
	ReadOnly      bool   `json:"readOnly,omitempty"`
}

type ecsDependency struct {
	ContainerName string `json:"containerName"`
	Condition     string `json:"condition"`
}

type ecsPortMapping struct {
	ContainerPort int    `json:"containerPort"`
	Protocol      string `json:"protocol"`
}

type ecsLogConfiguration struct {
	LogDriver string            `json:"logDriver"`
	Options   map[string]string `json:"options,omitempty"`
}

type ecsContainerDefinition struct {
	Name             string               `json:"name"`
	Image            string               `json:"image"`
	Essential        bool                 `json:"essential"`
	User             string               `json:"user,omitempty"`
	EntryPoint       []string             `json:"entryPoint,omitempty"`
	Command          []string             `json:"command,omitempty"`
	DependsOn        []ecsDependency      `json:"dependsOn,omitempty"`
	MountPoints      []ecsMountPoint      `json:"mountPoints,omitempty"`
	PortMappings     []ecsPortMapping     `json:"portMappings,omitempty"`
	LogConfiguration *ecsLogConfiguration `json:"logConfiguration,omitempty"`
}

type ecsVolumeDef struct {
	Name string `json:"name"`
}

type ecsEphemeralStorage struct {
	SizeInGiB int `json:"sizeInGiB"`
}

// ecsTaskDefinitionInput is RegisterTaskDefinition's request.
type ecsTaskDefinitionInput struct {
	Family                  string                   `json:"family"`
	NetworkMode             string                   `json:"networkMode"`
	RequiresCompatibilities []string                 `json:"requiresCompatibilities"`
	CPU                     string                   `json:"cpu,omitempty"`
	Memory                  string                   `json:"memory,omitempty"`
	ContainerDefinitions    []ecsContainerDefinition `json:"containerDefinitions"`
	Volumes                 []ecsVolumeDef           `json:"volumes,omitempty"`
	ExecutionRoleArn        string                   `json:"executionRoleArn,omitempty"`
	TaskRoleArn             string                   `json:"taskRoleArn,omitempty"`
	EphemeralStorage        *ecsEphemeralStorage     `json:"ephemeralStorage,omitempty"`
}

type ecsAwsVpc struct {
	Subnets        []string `json:"subnets"`
	SecurityGroups []string `json:"securityGroups,omitempty"`
	AssignPublicIP string   `json:"assignPublicIp"`
}

type ecsNetwork struct {
	AwsvpcConfiguration ecsAwsVpc `json:"awsvpcConfiguration"`
}

type ecsContainerOverride struct {
	Name        string        `json:"name"`
	Environment []ecsKeyValue `json:"environment,omitempty"`
}

type ecsOverrides struct {
	ContainerOverrides []ecsContainerOverride `json:"containerOverrides"`
}

// ecsRunTaskInput is RunTask's request.
type ecsRunTaskInput struct {
	Cluster              string       `json:"cluster"`
	TaskDefinition       string       `json:"taskDefinition"`
	LaunchType           string       `json:"launchType"`
	Count                int          `json:"count"`
	StartedBy            string       `json:"startedBy,omitempty"`
	NetworkConfiguration ecsNetwork   `json:"networkConfiguration"`
	Overrides            ecsOverrides `json:"overrides"`
	// ClientToken makes RunTask idempotent: a retry of a call whose task
	// started (its answer lost) gets that task, not a second one that
	// nobody would stop.
	ClientToken string `json:"clientToken,omitempty"`
}

// ecsFailure is one of a call's failures (RunTask, DescribeTasks).
type ecsFailure struct {
	Arn    string `json:"arn"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

type ecsContainer struct {
	Name     string `json:"name"`
	Reason   string `json:"reason"`
	ExitCode *int   `json:"exitCode"`
}

type ecsAttachment struct {
	Type    string        `json:"type"`
	Details []ecsKeyValue `json:"details"`
}

// ecsTask is what nel reads of a task.
type ecsTask struct {
	TaskArn       string          `json:"taskArn"`
	LastStatus    string          `json:"lastStatus"`
	StoppedReason string          `json:"stoppedReason"`
	StopCode      string          `json:"stopCode"`
	Attachments   []ecsAttachment `json:"attachments"`
	Containers    []ecsContainer  `json:"containers"`
}

// ecsTasksOutput is RunTask's and DescribeTasks' answer.
type ecsTasksOutput struct {
	Tasks    []ecsTask    `json:"tasks"`
	Failures []ecsFailure `json:"failures"`
}

// registerTaskDefinition registers in and returns the new revision's ARN.
func (e *ecsEngine) registerTaskDefinition(ctx context.Context, in *ecsTaskDefinitionInput) (string, error) {
	var out struct {
		TaskDefinition struct {
			TaskDefinitionArn string `json:"taskDefinitionArn"`
		} `json:"taskDefinition"`
	}
	if err := e.ecs.call(ctx, "RegisterTaskDefinition", in, &out); err != nil {
		return "", err
	}
	return out.TaskDefinition.TaskDefinitionArn, nil
}
