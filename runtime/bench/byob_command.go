package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/score"
	"github.com/nel-eval/nel/runtime/serve"
)

// The scorer command protocol (docs/byob.md). For each sample nel-run
// starts the command (argv, no shell, in the recipe's directory),
// writes one JSON object on its stdin and closes it:
//
//	{"response": "...", "target": "...", "prompt": "...", "row": {...}}
//
// and reads one JSON object from its stdout, NeMo Evaluator's BYOB scorer
// dict:
//
//	{"correct": true}                      a binary verdict, or
//	{"reward": 0.5, "extracted": "Paris"}  a reward in [0, 1]
//
// "correct" wins over "reward" (as NeMo's verify() reads them); either
// may come with "extracted" (the answer the scorer read; the stripped
// response's first 200 characters when absent) and any other keys, kept
// in the row's scoring details. A command that exits non-zero, outlives
// its timeout or prints anything else is a scorer_error: an infrastructure
// failure of that sample, never a wrong answer.

// commandInput is what a scorer command reads.
type commandInput struct {
	Response string         `json:"response"`
	Target   string         `json:"target"`
	Prompt   string         `json:"prompt"`
	Row      map[string]any `json:"row"`
}

// commandStderr bounds the stderr kept in a failure message.
const commandStderr = 2000

// runCommand scores one response with the scorer command.
func (s *byobScorer) runCommand(ctx context.Context, _ *Env, it *Item, response string) Score {
	row, _ := it.Meta["row"].(map[string]any)
	in, err := json.Marshal(commandInput{Response: response, Target: it.Expected, Prompt: it.Question(), Row: row})
	if err != nil {
		return commandFailure(fmt.Errorf("encode the input: %w", err), nil)
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.spec.Command[0], s.spec.Command[1:]...)
	cmd.Dir = s.dir
	cmd.Env = without(os.Environ(), s.hide)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &limited{w: &stderr, n: commandStderr}
	// Killed at the timeout; WaitDelay bounds the wait for output pipes a
	// child it started may still hold open.
	cmd.WaitDelay = s.timeout / 10
	// Tied to this process: a scorer does not outlive a killed nel.
	err = serve.RunTied(cmd, serve.Tie{})
	switch {
	case parent.Err() != nil:
		// The sample's own budget ended (or the run stops), not the
		// command's timeout.
		return commandFailure(fmt.Errorf("stopped: %w", context.Cause(parent)), &stderr)
	case ctx.Err() == context.DeadlineExceeded:
		return commandFailure(fmt.Errorf("no answer within %s", s.timeout), &stderr)
	case err != nil:
		return commandFailure(err, &stderr)
	}
	return parseCommandOutput(stdout.Bytes(), response, &stderr)
}

// parseCommandOutput reads the command's answer.
func parseCommandOutput(out []byte, response string, stderr *bytes.Buffer) Score {
	var d map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		return commandFailure(fmt.Errorf("stdout is not one JSON object (%v): %q", err, truncate(string(out), 200)), stderr)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return commandFailure(fmt.Errorf("stdout holds more than one JSON value: %q", truncate(string(out), 200)), stderr)
	}
	ex := truncate(score.PyStrip(response), 200)
	if v, ok := d["extracted"]; ok {
		ex = text(v)
	}
	details := map[string]any{}
	for k, v := range d {
		details[k] = v
	}
	if v, ok := d["correct"]; ok {
		c, ok := v.(bool)
		if !ok {
			return commandFailure(fmt.Errorf(`"correct" is %v, want true or false`, v), stderr)
		}
		return binary("command", c, ex, details)
	}
	v, ok := d["reward"]
	if !ok {
		return commandFailure(fmt.Errorf(`the answer has neither "correct" nor "reward": %q`, truncate(string(out), 200)), stderr)
	}
	n, _ := v.(json.Number)
	r, err := n.Float64()
	if err != nil || math.IsNaN(r) || r < 0 || r > 1 {
		return commandFailure(fmt.Errorf(`"reward" is %v, want a number in [0, 1]`, v), stderr)
	}
	return Score{Method: "command", Reward: r, Extracted: ex, Details: details}
}

// commandFailure is a sample the scorer command could not score.
func commandFailure(err error, stderr *bytes.Buffer) Score {
	msg := "scorer command: " + err.Error()
	if stderr != nil && stderr.Len() > 0 {
		msg += "; stderr: " + strings.TrimSpace(stderr.String())
	}
	return Score{Method: "command", Failure: failure.ScorerError, Details: map[string]any{string(failure.ScorerError): msg}}
}

// limited keeps the first n bytes written to it and drops the rest.
type limited struct {
	w *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// without is env (NAME=value entries) less the variables named in names.
func without(env, names []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}
