package shard

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/gymenv"
	"github.com/nel-eval/nel/runtime/intercept"
	"github.com/nel-eval/nel/runtime/model"
)

// The gym_delegation solver (NeMo's GymSolver): a Gym server's agent runs
// each sample itself, calling the model on its own. NeMo hands the agent
// the model's URL and API key in the request's metadata; nel hands it a
// proxy to the model that this shard serves instead (runtime/intercept,
// with the service's chain), and a token made for the shard, the only key
// that proxy takes: the model's key never leaves nel-run. The agent's
// answer is scored by the benchmark's scorer, or, with trust_reward, its
// reward is the sample's, said so in the row's scoring details.

// delegation is a gym_delegation shard's agent and the proxy it reaches
// the model through.
type delegation struct {
	agent *gymenv.Agent
	proxy *intercept.AgentProxy
}

// delegationKeyEnv is the name the proxy reads the model's key by (from
// this process, never from the environment of anything it starts).
const delegationKeyEnv = "NEL_DELEGATION_API_KEY"

// openDelegation starts the shard's proxy to the model and finds the
// Gym server's agent; with trust_reward the server's reward becomes the
// benchmark's score. The closer stops the proxy.
func (r *runner) openDelegation(ctx context.Context) (func(), error) {
	s := r.b.Solver
	gym, ok := r.p.Service(s.GymService)
	if !ok {
		return nil, fmt.Errorf("gym_service: the plan has no service %q", s.GymService)
	}
	gymBase, _, err := r.endpoint(gym)
	if err != nil {
		return nil, fmt.Errorf("gym_service: %w", err)
	}
	ap, err := r.startModelProxy(ctx, proxyListen(gymBase))
	if err != nil {
		return nil, fmt.Errorf("gym_delegation: the model's proxy: %w", err)
	}
	r.deleg = &delegation{agent: gymenv.NewAgent(gymBase, s.GymAgent), proxy: ap}
	if s.TrustReward {
		r.def = serverReward(r.def)
	}
	r.log.Info("gym_delegation: the agent reaches the model through nel's proxy", "gym", gymBase, "proxy", ap.URL)
	return func() { ap.Stop() }, nil
}

// startModelProxy serves the shard's model, with the service's
// interceptors, to an agent that calls it itself, on listen; the model's
// key stays in this process.
func (r *runner) startModelProxy(ctx context.Context, listen string) (*intercept.AgentProxy, error) {
	base, key, err := r.endpoint(r.svc)
	if err != nil {
		return nil, err
	}
	cfg := intercept.ProxyConfig{Listen: listen, Upstream: base, Model: r.svc.Model,
		Interceptors: r.svc.Interceptors, Scope: r.b.Dir, RequestTimeout: r.b.RequestTimeout}
	if key != "" {
		cfg.APIKeyEnv = delegationKeyEnv
	}
	getenv := func(k string) string {
		if k == delegationKeyEnv {
			return key
		}
		return ""
	}
	return intercept.StartAgentProxy(ctx, cfg, getenv, intercept.Env{Logger: r.log})
}

// proxyListen is where the proxy listens: loopback for a Gym server on
// this host's loopback, every interface (advertised by this host's name)
// for one elsewhere, which must reach it over the network (the token
// keeps others from spending the key).
func proxyListen(gymBase string) string {
	if u, err := url.Parse(gymBase); err == nil {
		if h := u.Hostname(); h == "localhost" || net.ParseIP(h).IsLoopback() {
			return "127.0.0.1:0"
		}
	}
	return "0.0.0.0:0"
}

// delegateSample runs one (item, repeat) by the Gym server's agent, then
// scores it as a model's answer (conclude), the server's reward in the
// context for trust_reward's scorer.
func (r *runner) delegateSample(ctx context.Context, it *bench.Item, repeat, attempt int) (rec *sampleRecord, interrupted bool) {
	seed := Seed(r.p.RecipeHash, r.b.Key, it.ID, repeat)
	meta := maps.Clone(it.Meta)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["item_id"] = it.ID
	// The session is the sample's, as NeMo routes each attempt: the
	// proxy's chain (a cache, a turn budget) keys on it.
	session := fmt.Sprintf("%016x", uint64(seed))
	access := gymenv.ModelAccess{Model: r.svc.Model, Token: r.deleg.proxy.Token,
		URL: strings.TrimSuffix(r.deleg.proxy.URL, "/v1") + "/s/" + session + "/v1"}
	body := r.deleg.agent.Request(gymenv.Task{Prompt: it.Question(), Messages: r.messages(it), Metadata: meta}, access)
	sctx, cancel := context.WithTimeout(ctx, r.sampleBudget())
	defer cancel()
	start := time.Now()
	res, err := r.deleg.agent.Run(sctx, body)
	a := answer{it: it, repeat: repeat, attempt: attempt, seed: seed, latency: time.Since(start)}
	if err != nil {
		a.err = &failure.Error{Category: failure.ServerError, Err: fmt.Errorf("gym agent: %w", err)}
		return r.conclude(ctx, a)
	}
	// The agent's answer is read as nel reads a model's: a leading
	// <think> block is reasoning, not the answer.
	reasoning, content := model.SplitReasoning(res.Response)
	a.resp = &model.Response{Content: content, Reasoning: reasoning, Model: r.svc.Model, FinishReason: "stop"}
	return r.conclude(context.WithValue(ctx, agentResultKey{}, res), a)
}

type agentResultKey struct{}

// serverReward is def scored by the Gym agent's reward (trust_reward):
// the reward /run answered for the sample, its other fields the details,
// with who gave the reward. An answer without a reward is the server's
// failure, not a wrong answer.
func serverReward(def *bench.Benchmark) *bench.Benchmark {
	d := *def
	d.Scorer = "gym_reward"
	// The shard's probe of its scorer (openScoring) has no answer to
	// score: the benchmark's own says whether its rewards are 0 or 1.
	d.ScoreEnv = func(ctx context.Context, _ *bench.Env, it *bench.Item, response string) bench.Score {
		res, ok := ctx.Value(agentResultKey{}).(*gymenv.Result)
		if !ok {
			return def.Score(it, response)
		}
		details := map[string]any{"reward_from": "the gym agent (trust_reward)"}
		if len(res.Details) > 0 {
			details["agent"] = res.Details
		}
		if !res.HasReward {
			details[string(failure.ScorerError)] = "the agent's /run answered no reward"
			return bench.Score{Method: "gym_reward", Failure: failure.ScorerError, Details: details}
		}
		binary := res.Reward == 0 || res.Reward == 1
		return bench.Score{Method: "gym_reward", Reward: res.Reward, Binary: binary, Correct: res.Reward == 1, Details: details}
	}
	return &d
}
