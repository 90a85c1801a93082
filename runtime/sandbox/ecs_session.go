package sandbox

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// An ecs_fargate session is one task per sample: RunTask from the
// sample's image (a Harbor task's own, else the sandbox's) when the
// session opens, every command an exec in that same task through its
// exec server's session (server_session.go's protocol, the same as a
// pool's; container_session.go runs the commands there), StopTask when it
// closes. The task is also stopped when the ctx it was
// opened with ends (the sample was cancelled) and at
// max_task_lifetime_sec, and a command that finds the task gone fails
// with ECS's stop reason and the log's tail: a sandbox failure, never
// the model's wrong answer.
type ecsSession struct {
	e    *ecsEngine
	arn  string
	conn *sessionConn // the session in the task's exec server, once open
	spec SessionSpec

	mu      sync.Mutex
	life    *time.Timer // stops the task at max_task_lifetime_sec
	unhook  func() bool // of the AfterFunc that stops it when ctx ends
	stopped string      // why nel stopped the task; "" while it runs
}

// OpenSession starts the sample's task and opens the session in it; ctx
// bounds the session's life.
func (e *ecsEngine) OpenSession(ctx context.Context, spec SessionSpec) (Session, error) {
	if err := checkSpec(e.name, spec); err != nil {
		return nil, err
	}
	// The task's files are read on this host now: the task has no view
	// of it. The tests stay here until the verifier's command.
	body, tests, err := sessionRequest(e.name, spec)
	if err != nil {
		return nil, err
	}
	def, err := e.taskDefFor(ctx, spec.Image)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: ecs_fargate: %w", e.name, err)
	}
	if err := e.slots.acquire(ctx); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", e.name, err)
	}
	token, err := newToken()
	if err == nil {
		var arn string
		if arn, err = e.runTask(ctx, def, token); err == nil {
			return e.startSession(ctx, arn, token, spec, body, tests)
		}
	}
	e.slots.release()
	return nil, fmt.Errorf("sandbox %s: ecs_fargate: %w", e.name, err)
}

// startSession waits for the task's exec server and opens the session in
// it; on failure the task is stopped.
func (e *ecsEngine) startSession(ctx context.Context, arn, token string, spec SessionSpec, body []byte, tests []treeEntry) (Session, error) {
	s := &ecsSession{e: e, arn: arn, spec: spec}
	rc := &remote{name: e.name, client: e.http, log: e.log, token: token, env: e.env}
	// Set under mu: either may fire at once, and stop reads both.
	s.mu.Lock()
	s.life = time.AfterFunc(e.cfg.MaxTaskLifetime, func() {
		s.stop(fmt.Sprintf("max_task_lifetime_sec (%s) reached", e.cfg.MaxTaskLifetime))
	})
	s.unhook = context.AfterFunc(ctx, func() { s.stop("the sample was cancelled") })
	s.mu.Unlock()
	addr, err := e.startTask(ctx, rc, arn)
	if err == nil {
		s.conn, err = rc.openOn(ctx, addr, body, tests)
	}
	if err != nil {
		s.stop("the session did not open")
		return nil, fmt.Errorf("sandbox %s: ecs_fargate: task %s: open session: %w", e.name, arn, err)
	}
	e.log.Debug("ecs session open", "task", arn, "image", spec.Image)
	return s, nil
}

// taskDefFor is the task definition of image: the sandbox's own, or one
// registered for the image the first time a session asks for it.
func (e *ecsEngine) taskDefFor(ctx context.Context, image string) (string, error) {
	if image == "" {
		return e.taskDef, nil
	}
	e.defsMu.Lock()
	defer e.defsMu.Unlock()
	if arn, ok := e.defs[image]; ok {
		return arn, nil
	}
	arn, err := e.registerTaskDefinition(ctx, e.taskDefinition(image))
	if err != nil {
		return "", fmt.Errorf("register the task definition of image %s: %w", image, err)
	}
	if e.defs == nil {
		e.defs = map[string]string{}
	}
	e.defs[image] = arn
	e.log.Info("ecs task definition", "arn", arn, "image", image)
	return arn, nil
}

func (s *ecsSession) Exec(ctx context.Context, c Command) (*Result, error) {
	// Refused here, before a request: the task's server would say the same.
	if _, err := (&session{name: s.e.name, spec: s.spec}).check(c); err != nil {
		return nil, err
	}
	if why := s.stoppedWhy(); why != "" {
		return nil, fmt.Errorf("sandbox %s: ecs_fargate: task %s was stopped: %s", s.e.name, s.arn, why)
	}
	res, err := s.conn.exec(ctx, c)
	if err != nil {
		why := s.stoppedWhy()
		if why != "" {
			why = "; nel stopped the task: " + why
		} else {
			why = s.e.whyStopped(ctx, s.arn)
		}
		return nil, fmt.Errorf("sandbox %s: ecs_fargate: task %s: %w%s", s.e.name, s.arn, err, why)
	}
	return res, nil
}

func (s *ecsSession) stoppedWhy() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// stop stops the task once, for why, and frees its slot.
func (s *ecsSession) stop(why string) {
	s.mu.Lock()
	if s.stopped != "" {
		s.mu.Unlock()
		return
	}
	s.stopped = why
	life, unhook := s.life, s.unhook
	s.mu.Unlock()
	life.Stop()
	unhook()
	s.e.stopTaskFor(context.Background(), s.arn, "nel: "+why)
	s.e.slots.release()
}

// Close stops the task, which removes everything the session kept.
func (s *ecsSession) Close() error {
	s.stop("session closed")
	return nil
}
