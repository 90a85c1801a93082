package openclaw

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nel-eval/nel/runtime/agent"
	"github.com/nel-eval/nel/runtime/failure"
)

// Envelope is what `openclaw agent --json` prints: the reply's payloads and
// the run's meta, or, when the CLI itself failed, ok false and its error.
// Only the fields nel reads are here; the rest of OpenClaw's report
// (systemPromptReport, executionTrace, …) is left as it came.
type Envelope struct {
	Payloads []Payload `json:"payloads"`
	Meta     Meta      `json:"meta"`
	OK       *bool     `json:"ok"`
	Error    *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// Payload is one part of the agent's reply; IsError marks a run that
// failed (the provider refused the request, for one).
type Payload struct {
	Text    string `json:"text"`
	IsError bool   `json:"isError"`
}

// Meta is the run's account of itself.
type Meta struct {
	DurationMS float64 `json:"durationMs"`
	Aborted    bool    `json:"aborted"`
	StopReason string  `json:"stopReason"`
	AgentMeta  struct {
		Model string `json:"model"`
		Usage struct {
			Input  int64 `json:"input"`
			Output int64 `json:"output"`
		} `json:"usage"`
	} `json:"agentMeta"`
	Completion struct {
		FinishReason string `json:"finishReason"`
	} `json:"completion"`
}

// ParseEnvelope finds the envelope in the CLI's stdout: the last
// top-level JSON object with payloads or an error (a plugin may print
// other objects or log lines before it).
func ParseEnvelope(stdout []byte) (*Envelope, error) {
	var found *Envelope
	for i := 0; i < len(stdout); {
		j := bytes.IndexByte(stdout[i:], '{')
		if j < 0 {
			break
		}
		d := json.NewDecoder(bytes.NewReader(stdout[i+j:]))
		var raw map[string]json.RawMessage
		if err := d.Decode(&raw); err != nil {
			i += j + 1
			continue
		}
		_, hasPayloads := raw["payloads"]
		_, hasError := raw["error"]
		if hasPayloads || hasError {
			var e Envelope
			if err := json.Unmarshal(stdout[i+j:i+j+int(d.InputOffset())], &e); err == nil {
				found = &e
			}
		}
		i += j + int(d.InputOffset())
	}
	if found == nil {
		return nil, errors.New("no JSON result on stdout")
	}
	return found, nil
}

// Text is the reply's visible text: the payloads that are not errors, in
// order.
func (e *Envelope) Text() string {
	var parts []string
	for _, p := range e.Payloads {
		if t := strings.TrimSpace(p.Text); t != "" && !p.IsError {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// Failure is why the run has no answer ("" when it has one): the CLI's
// error, an error payload, an aborted run, or an empty reply.
func (e *Envelope) Failure() string {
	if e.OK != nil && !*e.OK || e.Error != nil {
		if e.Error != nil {
			return fmt.Sprintf("openclaw %s: %s", e.Error.Type, e.Error.Message)
		}
		return "openclaw: ok false"
	}
	for _, p := range e.Payloads {
		if p.IsError {
			return "openclaw: " + strings.TrimSpace(p.Text)
		}
	}
	if e.Meta.Aborted {
		return "openclaw: the run was aborted"
	}
	if e.Text() == "" {
		return "openclaw returned an empty visible response"
	}
	return ""
}

// Outcome reads one finished CLI run into the agent's result: its answer
// and one assistant turn (OpenClaw keeps its transcript in its own
// session store; the envelope gives the final reply and the run's usage).
// exit is the CLI's exit status. A run that did not answer is the agent's
// infrastructure failing (an agent error is never a wrong answer).
func Outcome(stdout []byte, exit int) *agent.Result {
	e, err := ParseEnvelope(stdout)
	if err != nil {
		// No result at all: the CLI could not run (missing, crashed).
		return &agent.Result{Outcome: agent.InfraError, Err: &failure.Error{Category: failure.SandboxError,
			Err: fmt.Errorf("openclaw (exit status %d): %w", exit, err)}}
	}
	res := &agent.Result{PromptTokens: e.Meta.AgentMeta.Usage.Input, CompletionTokens: e.Meta.AgentMeta.Usage.Output}
	turn := agent.Turn{Role: "assistant", Content: e.Text(), LatencyMS: e.Meta.DurationMS,
		PromptTokens: int(res.PromptTokens), CompletionTokens: int(res.CompletionTokens),
		FinishReason: e.Meta.Completion.FinishReason}
	if why := e.Failure(); why != "" || exit != 0 {
		if why == "" {
			why = "openclaw: the CLI failed"
		}
		// OpenClaw ran and says it failed: its provider (nel's proxy to
		// the model) or its own error.
		res.Outcome, res.Err = agent.InfraError, &failure.Error{Category: failure.APIError, Err: fmt.Errorf("%s (exit status %d)", why, exit)}
		if turn.Content == "" {
			turn.Content = why
		}
		res.Turns = []agent.Turn{turn}
		return res
	}
	res.Outcome, res.Answer, res.Turns = agent.Answered, turn.Content, []agent.Turn{turn}
	return res
}
