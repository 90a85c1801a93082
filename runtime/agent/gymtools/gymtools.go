// Package gymtools offers a NeMo Gym resource server's tools to the agent
// loop: the server publishes its OpenAPI document at /openapi.json, each
// POST operation there (but the server's own endpoints, such as
// /seed_session and /verify) is a tool whose parameters are the
// operation's JSON request body schema, and calling it POSTs the
// arguments to that path.
package gymtools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/nel-eval/nel/runtime/agent"
)

// notTools are the paths a resource server serves for the environment,
// not as tools (NeMo Evaluator's list).
var notTools = []string{"/seed_session", "/verify", "/run", "/health", "/openapi.json", "/docs", "/redoc"}

// maxBody bounds what is read of a response: the loop cuts tool output to
// max_output_chars anyway, and a runaway server must not exhaust memory.
const maxBody = 16 << 20

// errorChars is how much of an error response's body the model is shown.
const errorChars = 4096

// Config is one resource server.
type Config struct {
	// BaseURL is the server's root, e.g. http://host:8000.
	BaseURL string
	// SessionID, when set, is sent as "session_id" in every call's body
	// (unless the model's arguments set it): the server's state for this
	// sample.
	SessionID string
	// HTTPClient is optional (http.DefaultClient).
	HTTPClient *http.Client
}

func (cfg Config) withDefaults() Config {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	return cfg
}

// Tools reads the server's OpenAPI document and returns its tools, sorted
// by name. A server that cannot be read, or offers no tool, is an error.
func Tools(ctx context.Context, cfg Config) ([]agent.Tool, error) {
	cfg = cfg.withDefaults()
	url := cfg.BaseURL + "/openapi.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("gym tools: %w", err)
	}
	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("gym tools: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("gym tools: read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("gym tools: GET %s: %s", url, resp.Status)
	}
	specs, err := Parse(body)
	if err != nil {
		return nil, fmt.Errorf("gym tools: %s: %w", url, err)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("gym tools: %s offers no tool (no POST operation besides %s)", url, strings.Join(notTools, ", "))
	}
	tools := make([]agent.Tool, len(specs))
	for i, s := range specs {
		tools[i] = &tool{cfg: cfg, spec: s.ToolSpec, path: s.Path}
	}
	return tools, nil
}

// Spec is a tool read from an OpenAPI document, and the path it is called at.
type Spec struct {
	agent.ToolSpec
	Path string
}

// document is what is read of an OpenAPI 3 document.
type document struct {
	Paths map[string]map[string]struct {
		Summary     string `json:"summary"`
		Description string `json:"description"`
		RequestBody struct {
			Content map[string]struct {
				Schema map[string]any `json:"schema"`
			} `json:"content"`
		} `json:"requestBody"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]map[string]any `json:"schemas"`
	} `json:"components"`
}

// Parse reads the tools of an OpenAPI document: every POST operation but
// the server's own endpoints. A tool's name is its path without the
// leading slash, other slashes made underscores; its description the
// operation's summary, else its description, else its name; its
// parameters the application/json request body's schema with every $ref
// to components/schemas resolved inline (models are sent no references
// to resolve) and titles dropped at the top.
func Parse(doc []byte) ([]Spec, error) {
	var d document
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("OpenAPI document: %w", err)
	}
	var out []Spec
	for path, ops := range d.Paths {
		op, ok := ops["post"]
		if !ok || slices.Contains(notTools, path) {
			continue
		}
		name := strings.ReplaceAll(strings.TrimPrefix(path, "/"), "/", "_")
		desc := op.Summary
		if desc == "" {
			desc = op.Description
		}
		if desc == "" {
			desc = name
		}
		params := map[string]any{"type": "object", "properties": map[string]any{}}
		if s := op.RequestBody.Content["application/json"].Schema; len(s) > 0 {
			r, err := resolve(s, d.Components.Schemas, nil)
			if err != nil {
				return nil, fmt.Errorf("paths.%s.post.requestBody: %w", path, err)
			}
			m, ok := r.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("paths.%s.post.requestBody: the schema is not an object", path)
			}
			delete(m, "title")
			params = m
		}
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("paths.%s.post.requestBody: %w", path, err)
		}
		out = append(out, Spec{ToolSpec: agent.ToolSpec{Name: name, Description: desc, Parameters: b}, Path: path})
	}
	// The document's map has no order; the model is offered the tools in
	// one, the same every run.
	slices.SortFunc(out, func(a, b Spec) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("paths %s and %s are both the tool %q", out[i-1].Path, out[i].Path, out[i].Name)
		}
	}
	return out, nil
}

// resolve copies schema v with its "#/components/schemas/X" references
// replaced by the schemas (their titles dropped). seen is the chain of
// references being resolved: a schema that refers to itself cannot be
// inlined and is refused.
func resolve(v any, schemas map[string]map[string]any, seen []string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			name, found := strings.CutPrefix(ref, "#/components/schemas/")
			target, known := schemas[name]
			switch {
			case !found || !known:
				return nil, fmt.Errorf("$ref %q: not a schema of components/schemas", ref)
			case slices.Contains(seen, name):
				return nil, fmt.Errorf("$ref %q: the schema refers to itself (%s)", ref, strings.Join(append(seen, name), " → "))
			}
			r, err := resolve(target, schemas, append(seen, name))
			if m, ok := r.(map[string]any); ok {
				delete(m, "title")
			}
			return r, err
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := resolve(e, schemas, seen)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := resolve(e, schemas, seen)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// tool is one resource-server operation.
type tool struct {
	cfg  Config
	spec agent.ToolSpec
	path string
}

func (t *tool) Spec() agent.ToolSpec { return t.spec }

// Call POSTs the arguments. An error status is the model's to read (a
// tool error); a server that does not answer is an infrastructure failure.
func (t *tool) Call(ctx context.Context, args json.RawMessage) (agent.ToolResult, error) {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(args, &body); err != nil || body == nil {
		return agent.ToolResult{IsError: true, Output: "error: the arguments are not a JSON object"}, nil
	}
	if _, set := body["session_id"]; t.cfg.SessionID != "" && !set {
		body["session_id"], _ = json.Marshal(t.cfg.SessionID)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return agent.ToolResult{}, fmt.Errorf("%s: %w", t.spec.Name, err)
	}
	url := t.cfg.BaseURL + t.path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return agent.ToolResult{}, fmt.Errorf("%s: %w", t.spec.Name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.cfg.HTTPClient.Do(req)
	if err != nil {
		return agent.ToolResult{}, fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return agent.ToolResult{}, fmt.Errorf("POST %s: read the response: %w", url, err)
	}
	if resp.StatusCode >= 400 {
		text := string(out)
		if len(text) > errorChars {
			text = text[:errorChars]
		}
		return agent.ToolResult{IsError: true, Output: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, text)}, nil
	}
	return agent.ToolResult{Output: readable(out)}, nil
}

// readable is a response body as the model reads it: a JSON object or
// array indented, anything else as it came.
func readable(body []byte) string {
	t := bytes.TrimSpace(body)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		var buf bytes.Buffer
		if err := json.Indent(&buf, t, "", "  "); err == nil {
			return buf.String()
		}
	}
	return string(body)
}
