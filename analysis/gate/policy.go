package gate

import (
	"fmt"
	"slices"
)

// Tiers.
const (
	Critical   = "critical"
	Supporting = "supporting"
	Advisory   = "advisory"
)

// Directions.
const (
	HigherIsBetter = "higher_is_better"
	LowerIsBetter  = "lower_is_better"
)

// Defaults NeMo Evaluator gives a policy's defaults section.
const (
	DefaultTier      = Supporting
	DefaultMaxDrop   = 0.015
	DefaultDirection = HigherIsBetter
)

// Metrics a gated (critical or supporting) benchmark may name: NeMo's
// mean_reward and pass@1, and — beyond NeMo — scorer:<name>, an extra
// scorer's per-sample score (Row.Scores), paired per item the same way.
func GatedMetricOK(m string) bool {
	return m == "mean_reward" || m == "pass@1" || len(m) > len("scorer:") && m[:len("scorer:")] == "scorer:"
}

// Rule is one benchmark's entry in a policy (or its defaults). A nil field
// inherits the defaults' value.
type Rule struct {
	Tier               *string  `json:"tier,omitempty"`
	MaxDrop            *float64 `json:"max_drop,omitempty"`
	MaxRelativeDrop    *float64 `json:"max_relative_drop,omitempty"`
	RelativeGuardBelow *float64 `json:"relative_guard_below,omitempty"`
	Metric             *string  `json:"metric,omitempty"`
	Direction          *string  `json:"direction,omitempty"`
}

// Policy is a gate policy file, NeMo Evaluator's `version: 1` format. It
// is loaded and validated by compiler.LoadPolicyFile.
type Policy struct {
	Path       string          `json:"-"`
	Version    int             `json:"version"`
	Defaults   Rule            `json:"defaults"`
	Benchmarks map[string]Rule `json:"benchmarks,omitempty"`
}

// Resolved is one benchmark's rule with the defaults filled in.
type Resolved struct {
	Benchmark          string
	Tier               string
	MaxDrop            float64
	MaxRelativeDrop    *float64
	RelativeGuardBelow *float64
	// Metric is "" when neither the entry nor the defaults name one: the
	// gate then picks mean_reward, pass@1 or the first scorer:*.
	Metric    string
	Direction string
	// Listed is true for benchmarks named under benchmarks:.
	Listed bool
}

// Gated says whether the benchmark counts for the verdict.
func (r Resolved) Gated() bool { return r.Tier != Advisory }

// Resolve fills a benchmark's rule from the defaults.
func (p *Policy) Resolve(name string) Resolved {
	r, listed := p.Benchmarks[name]
	d := p.Defaults
	out := Resolved{Benchmark: name, Listed: listed, Tier: DefaultTier, MaxDrop: DefaultMaxDrop, Direction: DefaultDirection}
	str := func(a, b *string, dst *string) {
		if a != nil {
			*dst = *a
		} else if b != nil {
			*dst = *b
		}
	}
	str(r.Tier, d.Tier, &out.Tier)
	str(r.Metric, d.Metric, &out.Metric)
	str(r.Direction, d.Direction, &out.Direction)
	switch {
	case r.MaxDrop != nil:
		out.MaxDrop = *r.MaxDrop
	case d.MaxDrop != nil:
		out.MaxDrop = *d.MaxDrop
	}
	out.MaxRelativeDrop = cmpOr(r.MaxRelativeDrop, d.MaxRelativeDrop)
	out.RelativeGuardBelow = cmpOr(r.RelativeGuardBelow, d.RelativeGuardBelow)
	return out
}

func cmpOr(a, b *float64) *float64 {
	if a != nil {
		return a
	}
	return b
}

// Required lists the benchmarks named under benchmarks: whose tier is not
// advisory, sorted.
func (p *Policy) Required() []string {
	var out []string
	for name := range p.Benchmarks {
		if p.Resolve(name).Gated() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Check applies the policy's cross-field rule (NeMo's): every required
// benchmark resolves to a metric the gate can pair per item. It returns
// the offending benchmark names with what is wrong.
func (p *Policy) Check() map[string]string {
	bad := map[string]string{}
	for _, name := range p.Required() {
		r := p.Resolve(name)
		switch {
		case r.Metric == "":
			bad[name] = "a gated benchmark needs a metric (mean_reward, pass@1 or scorer:<name>), set here or in defaults"
		case !GatedMetricOK(r.Metric):
			bad[name] = fmt.Sprintf("metric %q cannot gate: expected mean_reward, pass@1 or scorer:<name>", r.Metric)
		}
	}
	return bad
}
