package compiler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/runtime/bench"
)

// Quick is what NeMo Evaluator's quick mode (`nel eval run --bench NAME
// --model-url … --model-id …`) says on its command line: one benchmark
// against one OpenAI-compatible endpoint, no recipe file. QuickRecipe
// turns it into recipe text, which then loads like any file, so a quick
// run has a recipe hash, a plan and a recipe copy in its run folder.
type Quick struct {
	Bench    string
	ModelURL string
	ModelID  string
	// APIKeyEnv names the variable holding the key ("" for none): the key
	// itself is never written, only ${APIKeyEnv}.
	APIKeyEnv string
	// Zero values leave the schema's defaults (repeats 1, every problem,
	// the server's max_tokens, no system prompt).
	Repeats      int
	MaxProblems  int
	Temperature  float64 // NeMo's quick mode sends 0.0 unless told
	MaxTokens    int
	SystemPrompt string
}

// quickFlag is the flag that sets a field of a quick recipe, so that an
// error in the recipe the flags built names the flag the user typed.
func quickFlag(path string) (string, bool) {
	flag, ok := map[string]string{
		"services.model.url":                    "--model-url",
		"services.model.model":                  "--model-id",
		"services.model.api_key":                "--api-key-env",
		"services.model.generation.temperature": "--temperature",
		"services.model.generation.max_tokens":  "--max-tokens",
		"benchmarks[0].name":                    "--bench",
		"benchmarks[0].repeats":                 "--repeats",
		"benchmarks[0].max_problems":            "--max-problems",
		"benchmarks[0].solver.system_prompt":    "--system-prompt",
	}[path]
	return flag, ok
}

// QuickEndpoint is NeMo's quick-mode URL rule: a URL that does not end in
// /chat/completions, /completions or /responses gets /chat/completions
// appended. NeMo then always speaks chat; nel speaks the protocol the URL
// names, so a /completions or /responses URL is asked there instead of
// failing with 404 on a path the user never wrote.
func QuickEndpoint(modelURL string) (endpoint, protocol string) {
	u := strings.TrimRight(modelURL, "/")
	switch {
	case strings.HasSuffix(u, "/chat/completions"):
		return u, "chat_completions"
	case strings.HasSuffix(u, "/completions"):
		return u, "completions"
	case strings.HasSuffix(u, "/responses"):
		return u, "responses"
	}
	return u + "/chat/completions", "chat_completions"
}

// QuickName is the name of the recipe q builds: its file name in the run
// folder's recipe copy, and what its errors are reported against.
func (q Quick) QuickName() string {
	return "quick-" + safeDir(q.Bench) + ".yaml"
}

// check refuses what no recipe could be built from, naming the flag.
func (q Quick) check() error {
	switch {
	case q.Bench == "":
		return fmt.Errorf("--bench: a benchmark name is required (nel list shows them)")
	case strings.Contains(q.Bench, "://"):
		// A harness source (lm-eval://…) builds a recipe like a name;
		// the compiler then says whether this machine can run it.
		if k, _ := benchmarkSource(q.Bench); !k.Supported {
			scheme, _, _ := strings.Cut(q.Bench, "://")
			return fmt.Errorf("--bench %s: not supported yet: benchmark source %s:// (%s); nel list shows the built-in benchmarks", q.Bench, scheme, k.About)
		}
	default:
		if _, ok := bench.Lookup(q.Bench); !ok {
			return fmt.Errorf("--bench %s: not a built-in benchmark; built in: %s (nel list)", q.Bench, strings.Join(bench.Names(), ", "))
		}
	}
	if q.ModelURL == "" {
		return fmt.Errorf("--model-url is required in quick mode (or set NEMO_MODEL_URL)")
	}
	if u, err := url.Parse(q.ModelURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--model-url %q: want an http(s) URL such as http://host:8000/v1", q.ModelURL)
	}
	if q.ModelID == "" {
		return fmt.Errorf("--model-id is required in quick mode (or set NEMO_MODEL_ID)")
	}
	if q.APIKeyEnv != "" && !envNameRE.MatchString(q.APIKeyEnv) {
		return fmt.Errorf("--api-key-env %q: want the name of an environment variable, such as NVIDIA_API_KEY (never the key itself)", q.APIKeyEnv)
	}
	return nil
}

// QuickRecipe is the recipe text q stands for: the services and the one
// benchmark NeMo's quick mode builds (an api service "model", a simple
// solver), as YAML a user can keep and edit.
func QuickRecipe(q Quick) ([]byte, error) {
	if err := q.check(); err != nil {
		return nil, err
	}
	endpoint, protocol := QuickEndpoint(q.ModelURL)
	var b bytes.Buffer
	line := func(indent int, key string, v any) {
		fmt.Fprintf(&b, "%s%s: %s\n", strings.Repeat("  ", indent), key, yamlScalar(v))
	}
	b.WriteString("# The recipe nel's quick mode (nel run --bench) built from its flags.\n")
	b.WriteString("services:\n  model:\n")
	line(2, "type", "api")
	line(2, "url", endpoint)
	line(2, "protocol", protocol)
	line(2, "model", q.ModelID)
	if q.APIKeyEnv != "" {
		line(2, "api_key", "${"+q.APIKeyEnv+"}")
	}
	b.WriteString("    generation:\n")
	line(3, "temperature", q.Temperature)
	if q.MaxTokens != 0 {
		line(3, "max_tokens", q.MaxTokens)
	}
	b.WriteString("benchmarks:\n")
	line(1, "- name", q.Bench)
	if q.Repeats != 0 {
		line(2, "repeats", q.Repeats)
	}
	if q.MaxProblems != 0 {
		line(2, "max_problems", q.MaxProblems)
	}
	b.WriteString("    solver:\n")
	line(3, "type", "simple")
	line(3, "service", "model")
	if q.SystemPrompt != "" {
		line(3, "system_prompt", q.SystemPrompt)
	}
	return b.Bytes(), nil
}

// yamlScalar writes v as a YAML flow scalar: strings as JSON strings
// (JSON is YAML), so that no value can become a key, a comment or a
// different type.
func yamlScalar(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings and numbers always encode
	return strings.TrimSuffix(b.String(), "\n")
}

// LoadQuick builds q's recipe and loads it with the overrides, as if it
// were a file named q.QuickName() in dir (relative paths in overrides,
// such as a data_path, resolve against dir). It returns the recipe text
// too: the run folder keeps it as the run's recipe. An error in what the
// flags said names the flag.
func (l *Loader) LoadQuick(q Quick, dir string, overrides []Override) (*Source, []byte, error) {
	src, err := QuickRecipe(q)
	if err != nil {
		return nil, nil, err
	}
	name := filepath.Join(dir, q.QuickName())
	s, err := l.Load(name, src, overrides)
	if errs, ok := err.(Errors); ok {
		for i, e := range errs {
			if e.File != name || e.Line == 0 {
				continue // an override's, named by its -O text
			}
			// The file is not on disk: a position in it helps no one.
			file := "quick mode (-O path=value sets a field)"
			if flag, ok := quickFlag(e.Path); ok {
				file = flag
			}
			errs[i] = Error{File: file, Path: e.Path, Msg: e.Msg}
		}
		return nil, nil, errs
	}
	return s, src, err
}
