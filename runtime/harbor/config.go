package harbor

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultVerifierTimeout is Harbor's verifier timeout when task.toml sets
// none (and NeMo Evaluator's).
const DefaultVerifierTimeout = 600 * time.Second

// Config is what nel reads of a task's task.toml.
type Config struct {
	// AgentTimeout is [agent].timeout_sec; 0 when the task sets none (the
	// benchmark's timeout applies).
	AgentTimeout time.Duration
	// VerifierTimeout is [verifier].timeout_sec, DefaultVerifierTimeout
	// when unset.
	VerifierTimeout time.Duration
	// VerifierEnv is [verifier].env: the verifier's environment besides
	// PATH and HOME.
	VerifierEnv map[string]string
	// VerifierSetup is [verifier].setup_script (NeMo Evaluator's): a
	// program in the environment run before tests/test.sh.
	VerifierSetup string
	// DockerImage is [environment].docker_image: the image a container
	// sandbox runs the task in instead of building environment/.
	DockerImage string
	// CPUs, MemoryMB and StorageMB are [environment]'s resources (0 when
	// unset); the legacy memory = "4G" and storage forms are read too.
	CPUs      float64
	MemoryMB  int
	StorageMB int
	GPUs      int
	// NetworkMode is [environment].network_mode ("" when unset: Harbor's
	// default, public).
	NetworkMode string
	// Metadata is [metadata], free-form.
	Metadata map[string]any
}

// Category is the task's model-card category: [metadata].category, or
// "Agentic" when it has none.
func (c Config) Category() string {
	if s, ok := c.Metadata["category"].(string); ok && s != "" {
		return s
	}
	return "Agentic"
}

// readConfig reads a task.toml; a missing one is all defaults. What the
// file asks for that nel cannot do (several steps, a separate verifier
// environment) is refused, never skipped.
func readConfig(path string) (Config, error) {
	c := Config{VerifierTimeout: DefaultVerifierTimeout}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	doc, err := parseTOML(string(b))
	if err != nil {
		return c, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	r := &configReader{doc: doc}
	if _, ok := doc["steps"]; ok {
		r.refuse("steps", "multi-step tasks ([[steps]])")
	}
	if m := r.str("verifier", "environment_mode"); m != "" && m != "shared" {
		r.refuse("verifier.environment_mode", "a verifier environment of its own (environment_mode "+m+"); the verifier runs in the agent's sandbox")
	}
	if _, ok := r.table("verifier")["environment"]; ok {
		r.refuse("verifier.environment", "a verifier environment of its own")
	}
	c.AgentTimeout = r.seconds("agent", "timeout_sec", 0)
	c.VerifierTimeout = r.seconds("verifier", "timeout_sec", DefaultVerifierTimeout)
	c.VerifierEnv = r.strMap("verifier", "env")
	c.VerifierSetup = r.str("verifier", "setup_script")
	c.DockerImage = r.str("environment", "docker_image")
	c.CPUs = r.number("environment", "cpus")
	c.MemoryMB = r.megabytes("environment", "memory_mb", "memory")
	c.StorageMB = r.megabytes("environment", "storage_mb", "storage")
	c.GPUs = int(r.number("environment", "gpus"))
	c.NetworkMode = r.str("environment", "network_mode")
	c.Metadata = r.table("metadata")
	if r.err != nil {
		return c, fmt.Errorf("%s: %w", filepath.Base(path), r.err)
	}
	return c, nil
}

// configReader reads typed fields of a task.toml, keeping the first error.
type configReader struct {
	doc map[string]any
	err error
}

func (r *configReader) fail(field, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...))
	}
}

func (r *configReader) refuse(field, feature string) {
	r.fail(field, "not supported yet: %s", feature)
}

func (r *configReader) table(name string) map[string]any {
	switch t := r.doc[name].(type) {
	case map[string]any:
		return t
	case nil:
		return nil
	default:
		r.fail(name, "expected a table, found %v", t)
		return nil
	}
}

func (r *configReader) str(table, key string) string {
	v, ok := r.table(table)[key]
	if !ok {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.fail(table+"."+key, "expected a string, found %v", v)
	}
	return s
}

func (r *configReader) number(table, key string) float64 {
	v, ok := r.table(table)[key]
	if !ok {
		return 0
	}
	switch n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		if !math.IsNaN(n) && !math.IsInf(n, 0) {
			return n
		}
	}
	r.fail(table+"."+key, "expected a number, found %v", v)
	return 0
}

// seconds reads a positive number of seconds; def when unset.
func (r *configReader) seconds(table, key string, def time.Duration) time.Duration {
	if _, ok := r.table(table)[key]; !ok {
		return def
	}
	n := r.number(table, key)
	if n <= 0 || n > 1e7 {
		r.fail(table+"."+key, "expected seconds above 0, found %v", n)
		return def
	}
	return time.Duration(n * float64(time.Second))
}

// megabytes reads a size given in MB (key), or in the legacy form (legacy)
// as text: "4G", "512M".
func (r *configReader) megabytes(table, key, legacy string) int {
	if _, ok := r.table(table)[key]; ok {
		return int(r.number(table, key))
	}
	s := strings.ToUpper(strings.TrimSpace(r.str(table, legacy)))
	if s == "" {
		return 0
	}
	mult := map[string]float64{"K": 1.0 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
	unit := strings.TrimSuffix(strings.TrimSuffix(s, "B"), "I")
	var f, n float64
	ok := false
	if unit != "" {
		f, ok = mult[unit[len(unit)-1:]]
		var err error
		n, err = strconv.ParseFloat(unit[:len(unit)-1], 64)
		ok = ok && err == nil && n > 0
	}
	if !ok {
		r.fail(table+"."+legacy, "expected a size such as \"4G\", found %q", s)
		return 0
	}
	return int(math.Ceil(n * f))
}

func (r *configReader) strMap(table, key string) map[string]string {
	v, ok := r.table(table)[key]
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		r.fail(table+"."+key, "expected a table of strings, found %v", v)
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s, ok := m[k].(string)
		if !ok {
			r.fail(table+"."+key+"."+k, "expected a string, found %v", m[k])
		}
		out[k] = s
	}
	return out
}
