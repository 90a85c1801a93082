// Package openclaw runs one sample with the OpenClaw agent CLI (the
// openclaw solver, NeMo Evaluator's OpenClawSolver): the config that points
// OpenClaw at nel-run's model proxy, the command line of one agent turn,
// and the JSON result it prints, read into the agent's turns and outcome.
package openclaw

import (
	"encoding/json"
	"strings"
)

// Settings are the solver's fields that shape OpenClaw's run, with NeMo's
// defaults filled in by the compiler.
type Settings struct {
	// Bin is the OpenClaw executable (openclaw_bin).
	Bin string
	// Thinking is the --thinking level ("" sends none).
	Thinking string
	// ContextWindow and MaxTokens, when set, are the model's in OpenClaw's
	// model entry; OpenClaw's own defaults otherwise.
	ContextWindow, MaxTokens int
	// MaxConcurrent is agents.defaults.maxConcurrent; IdleTimeoutSeconds
	// the provider's timeoutSeconds.
	MaxConcurrent, IdleTimeoutSeconds int
}

// Config is OpenClaw's openclaw.json for one run: an OpenAI-compatible
// provider at baseURL (nel-run's proxy) serving model, authenticated by
// apiKey (the proxy's token, never the model's key), the agent's
// workspace, and file tools not confined to it (a task's files are
// elsewhere, as in NeMo's config).
func Config(s Settings, baseURL, model, apiKey, workspace string) ([]byte, error) {
	// The provider is named by the model's prefix (nvidia/… → nvidia), and
	// OpenClaw names the model provider/id, as NeMo's config does.
	provider := "custom"
	if p, _, ok := strings.Cut(model, "/"); ok && p != "" {
		provider = p
	}
	entry := map[string]any{"id": model, "name": model, "input": []string{"text"}}
	if s.ContextWindow > 0 {
		entry["contextWindow"] = s.ContextWindow
	}
	if s.MaxTokens > 0 {
		entry["maxTokens"] = s.MaxTokens
	}
	if s.Thinking != "" && s.Thinking != "off" {
		// OpenClaw refuses a --thinking level other than off for a model
		// it does not know to reason ("Thinking level "high" is not
		// supported for …"): the recipe's thinking says it does.
		entry["reasoning"] = true
	}
	cfg := map[string]any{
		"models": map[string]any{
			"mode": "merge",
			"providers": map[string]any{provider: map[string]any{
				"baseUrl": baseURL, "api": "openai-completions", "apiKey": apiKey,
				"models": []any{entry}, "timeoutSeconds": s.IdleTimeoutSeconds,
			}},
		},
		"agents": map[string]any{"defaults": map[string]any{
			"model":         map[string]any{"primary": provider + "/" + model},
			"workspace":     workspace,
			"skipBootstrap": true,
			"compaction":    map[string]any{"mode": "safeguard"},
			"maxConcurrent": s.MaxConcurrent,
		}},
		"tools": map[string]any{"fs": map[string]any{"workspaceOnly": false}},
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// Args is the command line of one agent turn: the embedded agent
// (--local), its JSON result on stdout, in session session, the message
// read from messageFile (--message-file: a task's instruction may be
// longer than one argument may be, 128 KiB on Linux, and stays out of the
// process list).
func Args(s Settings, session, messageFile string) []string {
	a := []string{s.Bin, "agent", "--agent", "main", "--local", "--json", "--session-id", session, "--message-file", messageFile}
	if s.Thinking != "" {
		a = append(a, "--thinking", s.Thinking)
	}
	return a
}
