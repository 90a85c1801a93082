package tbench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// toml is the task.toml of the converted task: the task.yaml's metadata,
// and its time limits as the agent's and the verifier's timeout_sec.
func (t *taskYAML) toml() string {
	var b strings.Builder
	b.WriteString("version = \"1.0\"\n\n[metadata]\n")
	kv := func(k, v string) { fmt.Fprintf(&b, "%s = %s\n", k, v) }
	kv("author_name", tomlString(or(t.AuthorName, unknown)))
	kv("author_email", tomlString(or(t.AuthorEmail, unknown)))
	kv("difficulty", tomlString(or(t.Difficulty, unknown)))
	kv("category", tomlString(or(t.Category, defaultCategory)))
	tags := make([]string, len(t.Tags))
	for i, tag := range t.Tags {
		tags[i] = tomlString(tag)
	}
	kv("tags", "["+strings.Join(tags, ", ")+"]")
	for _, f := range []struct {
		key string
		v   *float64
	}{{"estimated_duration_sec", t.EstimatedDurationSec}, {"expert_time_estimate_min", t.ExpertTimeEstimateMin}, {"junior_time_estimate_min", t.JuniorTimeEstimateMin}} {
		if f.v != nil {
			kv(f.key, tomlFloat(*f.v))
		}
	}
	b.WriteString("\n[verifier]\n")
	kv("timeout_sec", tomlFloat(orFloat(t.MaxTestTimeoutSec, defaultTestTimeout)))
	// Harbor sets TEST_DIR in the image (an ENV line appended to the
	// Dockerfile); nel's sandboxes do not build images, so the verifier
	// gets it from here, where every sandbox reads it.
	kv("env", "{ TEST_DIR = \"/tests\" }")
	b.WriteString("\n[agent]\n")
	kv("timeout_sec", tomlFloat(orFloat(t.MaxAgentTimeoutSec, defaultAgentTimeout)))
	return b.String()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orFloat(v *float64, def float64) float64 {
	if v == nil {
		return def
	}
	return *v
}

// tomlFloat writes v as a TOML float (always with a fraction or exponent;
// TOML spells the special values inf, -inf and nan).
func tomlFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case math.IsNaN(v):
		return "nan"
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// tomlString is s as a TOML basic string: quotes, backslashes and control
// characters escaped, everything else as it is (TOML is UTF-8).
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
