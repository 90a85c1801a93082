package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/nel-eval/nel/runtime/intercept"
)

const proxyHelp = `Serve a service's interceptor chain as an OpenAI-compatible HTTP proxy in
front of one model endpoint, for agents that call the model themselves
(Harbor, NeMo Gym, containers): each POST goes through the chain to the
upstream, GET /health answers {"status":"ok"}. A path /s/<hex>/… names a
session, which keys the cache and turn_counter's budget as a sample does.

The config is a JSON FILE:

  {"listen": "127.0.0.1:4000", "upstream": "http://host:8000/v1",
   "model": "served-name", "api_key_env": "NVIDIA_API_KEY",
   "interceptors": [{"name": "system_message", "config": {"system_message": "…"}},
                    {"name": "caching", "config": {"cache_dir": "/scratch/cache"}}]}

"upstream_env" instead of "upstream" names the variable that holds the
upstream's URL. The interceptors and their config keys are NeMo
Evaluator's, as in a recipe's proxy.interceptors; turn_counter answers 429
session_budget_exhausted past max_turns. The key is read from the variable
api_key_env names and replaces the agent's Authorization; it is never
written anywhere.

With a COMMAND after --, nel-run runs it as the agent: on a free port of
the listen host (port 0), its --url-env variable set to the proxy's base URL
and its --key-env variable to a token made for this run, the only key the
proxy then takes (the agent never sees the upstream's key). The agent is
tied to nel-run (a kill -9 takes it along), the proxy stops when it exits,
and nel-run exits with its status. A listen host 0.0.0.0 is given to the
agent as this host's name.

Without a COMMAND, prints "listening on http://ADDR/v1" on stderr once
ready and serves until SIGINT or SIGTERM.`

func newProxyCmd(e *env) *cobra.Command {
	var config, urlEnv, keyEnv string
	c := &cobra.Command{Use: "proxy --config FILE [-- COMMAND [ARG...]]", Short: "serve an interceptor chain as an OpenAI-compatible proxy", Long: proxyHelp}
	c.Flags().StringVar(&config, "config", "", "the proxy's JSON config `FILE`")
	c.Flags().StringVar(&urlEnv, "url-env", "OPENAI_BASE_URL", "with a COMMAND: the `NAME` of the variable that gets the proxy's base URL")
	c.Flags().StringVar(&keyEnv, "key-env", "OPENAI_API_KEY", "with a COMMAND: the `NAME` of the variable that gets the proxy's token")
	return command(e, c, true, func(ctx context.Context, args []string) int {
		if config == "" {
			return usageError(e, c, "--config FILE is required")
		}
		if len(args) > 0 && c.ArgsLenAtDash() != 0 {
			return usageError(e, c, "a COMMAND goes after --")
		}
		cfg, err := intercept.LoadProxyConfig(config)
		if err != nil {
			e.errorf("proxy: %v", err)
			return exitFailure
		}
		if len(args) > 0 {
			return runAgent(ctx, e, cfg, intercept.Agent{Argv: args, URLEnv: urlEnv, KeyEnv: keyEnv, Stdout: e.stdout, Stderr: e.stderr})
		}
		err = intercept.Serve(ctx, cfg, os.Getenv, intercept.Env{Logger: e.log}, func(addr string) {
			fmt.Fprintf(e.stderr, "nel-run proxy: listening on http://%s/v1 → %s (%d interceptors)\n", addr, cfg.Upstream, len(cfg.Interceptors))
		})
		if err != nil {
			e.errorf("proxy: %v", err)
			return exitFailure
		}
		return exitOK
	})
}

// runAgent runs the agent behind the proxy and exits with its status.
func runAgent(ctx context.Context, e *env, cfg intercept.ProxyConfig, a intercept.Agent) int {
	return childExit(ctx, e, "proxy", intercept.RunAgent(ctx, cfg, os.Getenv, intercept.Env{Logger: e.log}, a))
}
