package sandbox

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// The lifecycle of one job's task: RunTask, DescribeTasks until RUNNING,
// StopTask; GetLogEvents to say why a task failed.

// capacityFailures are RunTask failure reasons that pass: Fargate out of
// capacity in the zone, or the account's rate of task launches. Others
// (a bad subnet, a missing role) fail the job at once.
var capacityFailures = []string{"capacity is unavailable", "rate exceeded", "throttl", "too many concurrent"}

// runTask starts the job's task, retrying capacity failures until
// StartupTimeout (awsJSON retries throttled calls itself).
func (e *ecsEngine) runTask(ctx context.Context, taskDef, token string) (string, error) {
	c := e.cfg
	in := &ecsRunTaskInput{
		Cluster: c.Cluster, TaskDefinition: taskDef,
		LaunchType: "FARGATE", Count: 1, StartedBy: "nel",
		NetworkConfiguration: ecsNetwork{AwsvpcConfiguration: ecsAwsVpc{
			Subnets: c.Subnets, SecurityGroups: c.SecurityGroups, AssignPublicIP: "DISABLED",
		}},
		// The token is made for this task alone and dies with it.
		Overrides: ecsOverrides{ContainerOverrides: []ecsContainerOverride{{
			Name: ecsMainContainer, Environment: []ecsKeyValue{{Name: TokenEnv, Value: token}},
		}}},
	}
	if c.AssignPublicIP == nil || *c.AssignPublicIP {
		in.NetworkConfiguration.AwsvpcConfiguration.AssignPublicIP = "ENABLED"
	}
	deadline := time.Now().Add(c.StartupTimeout)
	wait := c.PollInterval
	for {
		// One token a call: its retries (awsJSON) ask for the same task,
		// the next pass of this loop for a new one.
		in.ClientToken = rand.Text()
		var out ecsTasksOutput
		if err := e.ecs.call(ctx, "RunTask", in, &out); err != nil {
			// Throttled through all of the call's attempts: a burst of
			// launches, waited out like a lack of capacity.
			var ae *awsError
			if !errors.As(err, &ae) || !retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool() ||
				time.Now().Add(wait).After(deadline) {
				return "", fmt.Errorf("run task on cluster %s: %w", c.Cluster, err)
			}
			e.log.Warn("ecs run task: throttled, retrying", "err", err, "retry_in", wait)
			if err := sleepCtx(ctx, wait); err != nil {
				return "", fmt.Errorf("run task on cluster %s: %w (after: %w)", c.Cluster, err, ae)
			}
			wait = min(2*wait, 30*time.Second)
			continue
		}
		if len(out.Failures) == 0 && len(out.Tasks) > 0 {
			arn := out.Tasks[0].TaskArn
			e.log.Debug("ecs task started", "task", arn)
			return arn, nil
		}
		reasons := failureReasons(out.Failures)
		if len(out.Failures) == 0 {
			reasons = "RunTask returned no task"
		}
		if !isCapacity(reasons) || time.Now().Add(wait).After(deadline) {
			return "", fmt.Errorf("run task on cluster %s: %s", c.Cluster, reasons)
		}
		e.log.Warn("ecs run task: no capacity yet, retrying", "reasons", reasons, "retry_in", wait)
		if err := sleepCtx(ctx, wait); err != nil {
			return "", fmt.Errorf("run task on cluster %s: %s: %w", c.Cluster, reasons, err)
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// sleepCtx waits d, or until ctx ends (its error then).
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func failureReasons(fs []ecsFailure) string {
	var parts []string
	for _, f := range fs {
		s := f.Reason
		if d := f.Detail; d != "" {
			s += " (" + d + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func isCapacity(reasons string) bool {
	r := strings.ToLower(reasons)
	for _, m := range capacityFailures {
		if strings.Contains(r, m) {
			return true
		}
	}
	return false
}

// waitRunning polls the task until it runs and has its private IP, or
// stops (then the error says why), or ctx ends.
func (e *ecsEngine) waitRunning(ctx context.Context, arn string) (string, error) {
	last := ""
	for {
		t, err := e.describe(ctx, arn)
		if err != nil {
			return "", err
		}
		last = t.LastStatus
		switch last {
		case "STOPPED", "DEACTIVATING", "STOPPING", "DEPROVISIONING":
			return "", fmt.Errorf("stopped before it ran: %s%s", stopReason(t), e.logTail(ctx, arn))
		case "RUNNING":
			if ip := privateIP(t); ip != "" {
				return ip, nil
			}
		}
		if err := sleepCtx(ctx, e.cfg.PollInterval); err != nil {
			return "", fmt.Errorf("not running after %s (last status %s): %w", e.cfg.StartupTimeout, last, err)
		}
	}
}

func (e *ecsEngine) describe(ctx context.Context, arn string) (*ecsTask, error) {
	var out ecsTasksOutput
	err := e.ecs.call(ctx, "DescribeTasks", map[string]any{"cluster": e.cfg.Cluster, "tasks": []string{arn}}, &out)
	if err != nil {
		return nil, fmt.Errorf("describe task: %w", err)
	}
	if len(out.Tasks) == 0 {
		return nil, fmt.Errorf("describe task: not found (%s)", failureReasons(out.Failures))
	}
	return &out.Tasks[0], nil
}

// privateIP is the address of the task's network interface (awsvpc).
func privateIP(t *ecsTask) string {
	for _, a := range t.Attachments {
		if a.Type != "ElasticNetworkInterface" {
			continue
		}
		for _, d := range a.Details {
			if d.Name == "privateIPv4Address" {
				return d.Value
			}
		}
	}
	return ""
}

// stopReason is why ECS stopped a task, with its containers' own reasons
// and exit codes.
func stopReason(t *ecsTask) string {
	s := t.StoppedReason
	if s == "" {
		s = "no reason given"
	}
	if t.StopCode != "" {
		s = t.StopCode + ": " + s
	}
	for _, c := range t.Containers {
		var parts []string
		if r := c.Reason; r != "" {
			parts = append(parts, r)
		}
		if c.ExitCode != nil {
			parts = append(parts, fmt.Sprintf("exit code %d", *c.ExitCode))
		}
		if len(parts) > 0 {
			s += fmt.Sprintf("; container %s: %s", c.Name, strings.Join(parts, ", "))
		}
	}
	return s
}

// whyStopped is ", the task stopped: REASON" with its log's last lines
// when the task is no longer running (its exec server died with it), ""
// when it runs or cannot be asked.
func (e *ecsEngine) whyStopped(ctx context.Context, arn string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	t, err := e.describe(ctx, arn)
	if err != nil || t.LastStatus == "RUNNING" {
		return ""
	}
	return "; the task stopped: " + stopReason(t) + e.logTail(ctx, arn)
}

// logTailLines is how much of a failed task's log its error quotes.
const logTailLines = 20

// logTail is the last lines the task's exec server container logged, as
// "; its log ends: …", or "" without a log group or lines.
func (e *ecsEngine) logTail(ctx context.Context, arn string) string {
	if e.cfg.LogGroup == "" {
		return ""
	}
	id := arn[strings.LastIndexByte(arn, '/')+1:]
	// The awslogs driver's stream: PREFIX/CONTAINER/TASK-ID.
	stream := e.streamPrefix() + "/" + ecsMainContainer + "/" + id
	var out struct {
		Events []struct {
			Message string `json:"message"`
		} `json:"events"`
	}
	err := e.logs.call(ctx, "GetLogEvents", map[string]any{
		"logGroupName": e.cfg.LogGroup, "logStreamName": stream,
		"limit": logTailLines, "startFromHead": false,
	}, &out)
	if err != nil {
		e.log.Warn("ecs task log", "group", e.cfg.LogGroup, "stream", stream, "err", err)
		return ""
	}
	var lines []string
	for _, ev := range out.Events {
		lines = append(lines, strings.TrimRight(ev.Message, "\n"))
	}
	if len(lines) == 0 {
		return ""
	}
	return fmt.Sprintf("; its log (%s %s) ends: %s", e.cfg.LogGroup, stream, strings.Join(lines, " | "))
}

// stopTask stops the job's task, also when ctx ended: a task left running
// costs money until max_task_lifetime_sec.
func (e *ecsEngine) stopTask(ctx context.Context, arn string) {
	e.stopTaskFor(ctx, arn, "nel: job done")
}

// stopTaskFor stops a task, giving ECS the reason.
func (e *ecsEngine) stopTaskFor(ctx context.Context, arn, reason string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := e.ecs.call(ctx, "StopTask", map[string]string{"cluster": e.cfg.Cluster, "task": arn, "reason": reason}, nil)
	if err != nil {
		e.log.Warn("ecs stop task failed: it stops itself at max_task_lifetime_sec", "task", arn, "err", err)
		return
	}
	e.log.Debug("ecs task stopped", "task", arn)
}
