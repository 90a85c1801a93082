package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// The ecs_fargate engine runs each job as an ECS Fargate task of its own
// (NeMo Evaluator's ecs_fargate sandbox runs one task per problem): the
// task holds the job's image, with nel-run copied in from NelRunImage by
// a first container, serving the job as nel-run sandbox-serve --engine
// container on ExecServerPort. nel-run reaches that server at the task's
// private IP (so nel-run must run inside the VPC, or one peered with it)
// with a token made for the task, sends the job, and stops the task
// whatever happened. NeMo Evaluator reaches its tasks through an SSH
// sidecar instead; nel's exec server needs no keys.
//
// The AWS credentials are the SDK's standard chain (environment, shared
// config and SSO, web identity, the ECS or EC2 role) and never logged.

// ECSConfig is an ecs_fargate sandbox's AWS side.
type ECSConfig struct {
	Region, Cluster         string
	Subnets, SecurityGroups []string
	// AssignPublicIP nil is NeMo Evaluator's default, true (a task in a
	// public subnet pulls its images through its public IP).
	AssignPublicIP                *bool
	CPU, Memory                   string // Fargate's units: "4096", "8192"
	EphemeralStorageGiB           int
	ExecutionRoleARN, TaskRoleARN string
	// LogGroup, when set, receives the task's container logs (awslogs),
	// and a failed task's last lines are quoted in its error.
	LogGroup, LogStreamPrefix string
	// MaxTaskLifetime bounds a task's life: the exec server in it exits
	// then, and nel-run gives up on it. 0 means 4 hours.
	MaxTaskLifetime time.Duration
	// ExecServerPort is where the task's exec server listens.
	ExecServerPort int
	// StartupTimeout bounds RunTask to a healthy exec server; 0 means 5
	// minutes.
	StartupTimeout time.Duration
	// NelRunImage is an image holding nel-run on PATH (nel's own image).
	NelRunImage string
	// SSMProject names the SSM parameter /<project>/ecs-sandbox/config
	// that completes a config with a Region and no Cluster when the
	// sandbox opens (ecs_ssm.go); "" is "harbor".
	SSMProject string
	// Endpoint replaces AWS's endpoints for ECS, CloudWatch Logs and SSM (a
	// test's fake AWS); "" is AWS's, or what AWS_ENDPOINT_URL says.
	Endpoint string
	// PollInterval is how often DescribeTasks is asked; 0 means 2s.
	PollInterval time.Duration
}

// Names inside the task definition.
const (
	ecsMainContainer    = "main"
	ecsInstallContainer = "nel-run"
	ecsVolume           = "nel"
	ecsNelRun           = "/nel/nel-run"
	// TokenEnv carries an exec server's token into its container.
	TokenEnv = "NEL_SANDBOX_TOKEN"
)

type ecsEngine struct {
	name    string
	cfg     ECSConfig
	env     map[string]string
	lim     limits
	slots   slots
	log     *slog.Logger
	ecs     awsJSON // ECS (ecs_api.go)
	logs    awsJSON // CloudWatch Logs
	http    *http.Client
	taskDef string // its ARN

	// defs are the task definitions of the session images other than
	// the sandbox's (a Harbor task's own image), by image.
	defsMu sync.Mutex
	defs   map[string]string
}

// openECS checks the configuration, loads the AWS credentials and
// registers the task definition every job's task runs.
func openECS(ctx context.Context, name string, cfg Config) (*ecsEngine, error) {
	if cfg.ECS == nil {
		return nil, fmt.Errorf("sandbox %s: ecs_fargate: no ECS settings", name)
	}
	c := *cfg.ECS
	if err := c.check(cfg.Image); err != nil {
		return nil, fmt.Errorf("sandbox %s: ecs_fargate: %w", name, err)
	}
	if c.MaxTaskLifetime <= 0 {
		c.MaxTaskLifetime = 4 * time.Hour
	}
	if c.StartupTimeout <= 0 {
		c.StartupTimeout = 5 * time.Minute
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 2 * time.Second
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(c.Region))
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: ecs_fargate: AWS configuration: %w", name, err)
	}
	// Asked now so that missing credentials fail the sandbox's opening,
	// not each job; the error names the chain, never a value.
	if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
		return nil, fmt.Errorf("sandbox %s: ecs_fargate: no AWS credentials from the standard chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE and ~/.aws, SSO, web identity, the ECS or EC2 role): %w", name, err)
	}
	log := cfg.Logger.With("sandbox", name)
	if c.discovers() {
		if err := c.discover(ctx, awsCfg, log); err != nil {
			return nil, fmt.Errorf("sandbox %s: ecs_fargate: %w", name, err)
		}
		if len(c.Subnets) == 0 {
			return nil, fmt.Errorf("sandbox %s: ecs_fargate: SSM parameter %s in %s names no subnets, nor does the sandbox", name, ssmParameter(c.SSMProject), c.Region)
		}
	}
	e := &ecsEngine{
		name: name, cfg: c, env: cfg.Env, lim: limitsOf(cfg), slots: make(slots, concurrency(cfg)),
		log:  log,
		ecs:  awsJSON{cfg: awsCfg, service: ecsService, target: ecsTarget, endpoint: c.Endpoint},
		logs: awsJSON{cfg: awsCfg, service: logsService, target: logsTarget, endpoint: c.Endpoint},
		// The tasks are on the VPC: no proxy.
		http: &http.Client{Transport: &http.Transport{Proxy: nil,
			DialContext: (&net.Dialer{Timeout: dialTimeout}).DialContext}},
	}
	e.taskDef, err = e.registerTaskDefinition(ctx, e.taskDefinition(cfg.Image))
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: ecs_fargate: register task definition: %w", name, err)
	}
	e.log.Info("ecs task definition", "arn", e.taskDef, "cluster", c.Cluster, "region", c.Region)
	return e, nil
}

// check names what an ECSConfig lacks (the compiler checks the recipe's
// fields; this guards other callers). Cluster and subnets may come from
// SSM.
func (c ECSConfig) check(image string) error {
	switch {
	case c.Cluster == "" && c.Region == "":
		return errors.New("cluster is required, or region to read it from SSM")
	case len(c.Subnets) == 0 && !c.discovers():
		return errors.New("subnets are required (the awsvpc network of the tasks)")
	case image == "":
		return errors.New("image is required (what each task runs)")
	case c.NelRunImage == "":
		return errors.New("nel_run_image is required (an image with nel-run, which serves the job in the task)")
	case c.ExecServerPort < 1 || c.ExecServerPort > 65535:
		return fmt.Errorf("exec server port %d is not a port", c.ExecServerPort)
	}
	return nil
}

var familyChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// taskDefinition is the task every job runs: a first container copies
// nel-run into a volume the task's containers share, then the job's
// image runs it as the exec server.
func (e *ecsEngine) taskDefinition(image string) *ecsTaskDefinitionInput {
	c := e.cfg
	// One slot: a job, or one sample's session, which the server never
	// removes for idleness (--session-idle 0): an agent may think longer
	// than a pool's idle bound, and the task's own lifetime bounds it.
	serve := []string{"sandbox-serve", "--engine", "container", "--name", e.name,
		"--listen", ":" + strconv.Itoa(c.ExecServerPort), "--slots", "1", "--session-idle", "0",
		"--token-env", TokenEnv, "--max-lifetime", c.MaxTaskLifetime.String(),
		"--timeout", e.lim.timeout.String()}
	install := ecsContainerDefinition{
		Name: ecsInstallContainer, Image: c.NelRunImage, Essential: false,
		User: "0", EntryPoint: []string{"nel-run"},
		Command:          []string{"sandbox-serve", "--install", ecsNelRun},
		MountPoints:      []ecsMountPoint{{SourceVolume: ecsVolume, ContainerPath: "/nel"}},
		LogConfiguration: e.logConfig(),
	}
	main := ecsContainerDefinition{
		Name: ecsMainContainer, Image: image, Essential: true,
		EntryPoint: []string{ecsNelRun}, Command: serve,
		DependsOn:        []ecsDependency{{ContainerName: ecsInstallContainer, Condition: "SUCCESS"}},
		MountPoints:      []ecsMountPoint{{SourceVolume: ecsVolume, ContainerPath: "/nel", ReadOnly: true}},
		PortMappings:     []ecsPortMapping{{ContainerPort: c.ExecServerPort, Protocol: "tcp"}},
		LogConfiguration: e.logConfig(),
	}
	in := &ecsTaskDefinitionInput{
		Family:                  "nel-sandbox-" + familyChars.ReplaceAllString(e.name, "-"),
		NetworkMode:             "awsvpc",
		RequiresCompatibilities: []string{"FARGATE"},
		CPU:                     c.CPU,
		Memory:                  c.Memory,
		ContainerDefinitions:    []ecsContainerDefinition{install, main},
		Volumes:                 []ecsVolumeDef{{Name: ecsVolume}},
		ExecutionRoleArn:        c.ExecutionRoleARN,
		TaskRoleArn:             c.TaskRoleARN,
	}
	if c.EphemeralStorageGiB > 0 {
		in.EphemeralStorage = &ecsEphemeralStorage{SizeInGiB: c.EphemeralStorageGiB}
	}
	return in
}

// logConfig sends a container's output to the log group, if there is one.
func (e *ecsEngine) logConfig() *ecsLogConfiguration {
	if e.cfg.LogGroup == "" {
		return nil
	}
	return &ecsLogConfiguration{LogDriver: "awslogs", Options: map[string]string{
		"awslogs-group": e.cfg.LogGroup, "awslogs-region": e.cfg.Region, "awslogs-stream-prefix": e.streamPrefix(),
	}}
}

func (e *ecsEngine) streamPrefix() string {
	if e.cfg.LogStreamPrefix != "" {
		return e.cfg.LogStreamPrefix
	}
	return "nel-sandbox"
}

func (e *ecsEngine) Name() string { return e.name }

func (e *ecsEngine) Close() error {
	e.http.CloseIdleConnections()
	return nil
}

// Run starts a task for the job, sends it the job and stops the task
// (also when ctx ends or anything fails).
func (e *ecsEngine) Run(ctx context.Context, job Job) (*Result, error) {
	if len(job.Command) == 0 {
		return nil, fmt.Errorf("sandbox %s: empty command", e.name)
	}
	if err := e.slots.acquire(ctx); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", e.name, err)
	}
	defer e.slots.release()
	job.Env = mergeEnv(e.env, job.Env)
	body, err := json.Marshal(toWireJob(job))
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: encode job: %w", e.name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.MaxTaskLifetime)
	defer cancel()
	token, err := newToken()
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", e.name, err)
	}
	arn, err := e.runTask(ctx, e.taskDef, token)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: ecs_fargate: %w", e.name, err)
	}
	defer e.stopTask(ctx, arn)
	rc := &remote{name: e.name, client: e.http, log: e.log, token: token}
	addr, err := e.startTask(ctx, rc, arn)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: ecs_fargate: task %s: %w", e.name, arn, err)
	}
	res, err := rc.post(ctx, addr, body)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: ecs_fargate: task %s: %w%s", e.name, arn, err, e.whyStopped(ctx, arn))
	}
	return res, nil
}

// mergeEnv is the sandbox's environment, then the job's own settings.
func mergeEnv(base, own map[string]string) map[string]string {
	if len(base) == 0 {
		return own
	}
	env := maps.Clone(base)
	maps.Copy(env, own)
	return env
}

func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("task token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// startTask waits (within StartupTimeout) for the task to run and its exec
// server to answer rc (the client with the task's token), and says where
// that is.
func (e *ecsEngine) startTask(ctx context.Context, rc *remote, arn string) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, e.cfg.StartupTimeout)
	defer cancel()
	ip, err := e.waitRunning(sctx, arn)
	if err != nil {
		return "", err
	}
	addr := net.JoinHostPort(ip, strconv.Itoa(e.cfg.ExecServerPort))
	if _, err := rc.waitHealthy(sctx, addr); err != nil {
		return "", fmt.Errorf("its exec server at %s did not answer within %s: %w%s",
			addr, e.cfg.StartupTimeout, err, e.whyStopped(ctx, arn))
	}
	return addr, nil
}
