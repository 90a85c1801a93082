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
session, which keys the cache as a sample does.

The config is a JSON FILE:

  {"listen": "127.0.0.1:4000", "upstream": "http://host:8000/v1",
   "model": "served-name", "api_key_env": "NVIDIA_API_KEY",
   "interceptors": [{"name": "system_message", "config": {"system_message": "…"}},
                    {"name": "caching", "config": {"cache_dir": "/scratch/cache"}}]}

The interceptors and their config keys are NeMo Evaluator's, as in a
recipe's proxy.interceptors, and turn_counter (a session's turn budget:
429 session_budget_exhausted past max_turns, reminders near the end). The key is read from the variable api_key_env
names and replaces the agent's Authorization; it is never written anywhere.
Prints "listening on http://ADDR/v1" on stderr once ready; stops on SIGINT
or SIGTERM.`

func newProxyCmd(e *env) *cobra.Command {
	var config string
	c := &cobra.Command{Use: "proxy --config FILE", Short: "serve an interceptor chain as an OpenAI-compatible proxy", Long: proxyHelp}
	c.Flags().StringVar(&config, "config", "", "the proxy's JSON config `FILE`")
	return command(e, c, false, func(ctx context.Context, _ []string) int {
		if config == "" {
			return usageError(e, c, "--config FILE is required")
		}
		cfg, err := intercept.LoadProxyConfig(config)
		if err != nil {
			e.errorf("proxy: %v", err)
			return exitFailure
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
