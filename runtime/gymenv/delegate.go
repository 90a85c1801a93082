package gymenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Agent is a Gym server's agent that runs a whole sample itself: NeMo's
// gym_delegation solver POSTs the task to its /run and reads back the
// agent's response and, with trust_reward, the reward. The agent calls
// the model itself, so the request tells it where (ModelAccess).
type Agent struct {
	base  string // the Gym server's head: http://HOST:PORT
	name  string // gym_agent, lower case: it decides the request's form
	hc    *http.Client
	mu    sync.Mutex
	url   string // the agent's own URL (discover), once found is set
	found bool
}

// NewAgent is the agent named name ("" for NeMo's default) of the Gym
// server at base.
func NewAgent(base, name string) *Agent {
	return &Agent{base: strings.TrimRight(base, "/"), name: strings.ToLower(name), hc: &http.Client{Timeout: time.Hour}}
}

// ModelAccess is where the agent reaches the model: nel's proxy for the
// sample, and the token that proxy takes (never the model's own key).
type ModelAccess struct {
	Model, URL, Token string
}

// Task is one sample as the agent is given it.
type Task struct {
	Prompt   string
	Messages any // the chat messages, as JSON
	Metadata map[string]any
}

// Request is the /run body for task, in the form NeMo's gym_delegation
// sends to this agent: SWE-bench's (openhands, swebench, and NeMo's
// default) with the model's URL and key in responses_create_params'
// metadata; mini-SWE's; or the task's own row (any other agent).
func (a *Agent) Request(t Task, m ModelAccess) map[string]any {
	meta := t.Metadata
	switch a.name {
	case "miniswe":
		rcp := map[string]any{"temperature": 0.0, "top_p": 1.0, "input": []any{}}
		if m.Model != "" {
			rcp["model"] = m.Model
		}
		return map[string]any{"responses_create_params": rcp, "instance_id": str(meta, "instance_id", ""),
			"subset": str(meta, "subset", "gym"), "split": str(meta, "split", "test")}
	case "openhands", "swebench", "":
		model := m.Model
		if model == "" {
			model = "evaluator"
		}
		row, _ := json.Marshal(meta)
		md := map[string]any{
			"problem_statement": str(meta, "problem_statement", t.Prompt), "instance_id": str(meta, "instance_id", ""),
			"base_commit": str(meta, "base_commit", ""), "dataset_name": str(meta, "dataset_name", ""),
			"split": str(meta, "split", "test"), "instance_dict": str(meta, "instance_dict", string(row)),
			"api_key": m.Token, "model_url": m.URL,
		}
		rcp := map[string]any{"input": []any{map[string]any{"role": "user", "content": t.Prompt}}, "model": model, "metadata": md}
		return map[string]any{"responses_create_params": rcp}
	}
	rcp := map[string]any{"input": t.Messages}
	body := map[string]any{"responses_create_params": rcp}
	for k, v := range meta {
		switch k {
		case "tools", "reasoning":
			rcp[k] = v
		default:
			body[k] = v
		}
	}
	return body
}

func str(m map[string]any, k, def string) string {
	if s, ok := m[k].(string); ok {
		return s
	}
	return def
}

// Result is what /run answered: the agent's response text, its reward
// (HasReward: the answer had one), and the rest of the answer, which
// trust_reward keeps as the scoring details.
type Result struct {
	Response  string
	Reward    float64
	HasReward bool
	Details   map[string]any
}

// Run sends body to the agent's /run and reads its answer.
func (a *Agent) Run(ctx context.Context, body map[string]any) (*Result, error) {
	base := a.agentURL(ctx)
	var out map[string]json.RawMessage
	c := &Client{base: base, hc: a.hc}
	if err := c.call(ctx, http.MethodPost, "/run", body, &out); err != nil {
		return nil, err
	}
	res := &Result{Details: map[string]any{}}
	if raw, ok := out["reward"]; ok {
		if err := json.Unmarshal(raw, &res.Reward); err != nil {
			return nil, fmt.Errorf("gym %s/run: reward %s is not a number", base, Clip(raw))
		}
		res.HasReward = true
	}
	if raw, ok := out["response"]; ok {
		res.Response, _ = AssistantText(raw)
	}
	for k, v := range out {
		if k != "responses_create_params" && k != "response" && k != "reward" {
			var x any
			json.Unmarshal(v, &x)
			res.Details[k] = x
		}
	}
	return res, nil
}

// agentURL is the agent's own URL, discovered by the first sample that
// gets an answer from the head server and kept from then on. A discovery
// that got none (the sample's context ended, the server was not up yet or
// failed) is not kept: that sample goes to the head server, and the next
// one asks again.
func (a *Agent) agentURL(ctx context.Context) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.found {
		a.url, a.found = a.discover(ctx)
	}
	return a.url
}

// discover asks the head server's /server_instances for the agent's own
// URL, as NeMo does: the instance of the agent's name, else the first
// responses_api_agents server, else the head server itself. settled is
// false when the server gave no answer (a network error or a 5xx).
func (a *Agent) discover(ctx context.Context) (url string, settled bool) {
	var instances []struct {
		ProcessName string `json:"process_name"`
		ServerType  string `json:"server_type"`
		URL, Host   string
		Port        int
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := &Client{base: a.base, hc: a.hc}
	if retry, err := c.once(dctx, http.MethodGet, "/server_instances", nil, &instances); err != nil {
		return a.base, !retry
	}
	at := func(i int) string {
		if instances[i].URL != "" {
			return strings.TrimRight(instances[i].URL, "/")
		}
		return fmt.Sprintf("http://%s:%d", instances[i].Host, instances[i].Port)
	}
	for i, in := range instances {
		if a.name != "" && strings.ToLower(in.ProcessName) == a.name {
			return at(i), true
		}
	}
	for i, in := range instances {
		if in.ServerType == "responses_api_agents" {
			return at(i), true
		}
	}
	return a.base, true
}

// AssistantText is the answer's text in a Gym response: a plain string,
// the output_text parts of a NeMoGymResponse's assistant messages, or a
// chat completion's first message (what NeMo's serving app reads).
func AssistantText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var r struct {
		Output []struct {
			Type, Role string
			Content    json.RawMessage
		}
		Choices []struct {
			Message struct{ Content string }
		}
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("response: want a NeMoGymResponse object or a string, got %s", Clip(raw))
	}
	var texts []string
	for _, o := range r.Output {
		if o.Type != "message" || o.Role != "assistant" {
			continue
		}
		var parts []struct{ Text *string }
		var text string
		switch {
		case json.Unmarshal(o.Content, &parts) == nil:
			for _, p := range parts {
				if p.Text != nil {
					texts = append(texts, *p.Text)
				}
			}
		case json.Unmarshal(o.Content, &text) == nil:
			texts = append(texts, text)
		}
	}
	if len(texts) > 0 {
		return strings.TrimSpace(strings.Join(texts, "\n")), nil
	}
	for _, c := range r.Choices {
		if c.Message.Content != "" {
			return c.Message.Content, nil
		}
	}
	return "", fmt.Errorf("response: no assistant message with output_text in output[] (nor a chat completion's choices)")
}

// Clip is a JSON value cut for an error message (gymserve's too).
func Clip(raw json.RawMessage) string {
	if len(raw) > 80 {
		return string(raw[:77]) + "..."
	}
	return string(raw)
}
