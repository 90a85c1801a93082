package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/serve"
	"github.com/spf13/cobra"
)

const waitReadyHelp = `Poll each URL (--url and/or arguments, one after the other, within one
--timeout) with HTTP GET until it answers 200 OK. A URL ending in /v1 is an
OpenAI base URL: its /v1/models is polled. Refused connections (vLLM
while loading) and other answers such as 503 (SGLang while starting) mean
"not yet"; progress is reported on stderr every 30s.

Fails (exit 1) when --timeout passes, or at once when a process --pid no
longer exists (--pid may be given once per process the server needs); the
message then includes the last 50 lines of --log.

--api-key-env NAME sends the key in $NAME (Authorization: Bearer) with each
poll, for a server the job started with a key; the key is never printed.

--or-url URL (repeatable) makes a 200 OK from URL count too, for each URL
polled: a Gym server answers /health or only /openapi.json.

--dynamo-workers P,D waits, beyond the 200, until a dynamo frontend's /health
lists P prefill and D decode workers (an aggregated worker counts as decode).

Example:
  vllm serve MODEL --port 8000 >server.log 2>&1 &
  nel-run wait-ready --url http://localhost:8000/health --pid $! --log server.log --name vllm`

func newWaitReadyCmd(e *env) *cobra.Command {
	var opts serve.WaitOptions
	var pids []int
	var dynamo []int
	var keyEnv string
	c := &cobra.Command{Use: "wait-ready [flags]", Short: "wait until model servers answer their health URLs with 200 OK", Long: waitReadyHelp}
	f := c.Flags()
	f.StringVar(&opts.URL, "url", "", "health `URL` to poll, e.g. http://localhost:8000/health (required)")
	f.IntSliceVar(&pids, "pid", nil, "`PID` of the server process (repeatable); fail fast if one exits")
	f.IntSliceVar(&dynamo, "dynamo-workers", nil, "`P,D`: ready once a dynamo frontend lists P prefill and D decode workers")
	f.StringVar(&opts.LogFile, "log", "", "server log `FILE` whose tail is shown on failure")
	f.DurationVar(&opts.Timeout, "timeout", serve.DefaultTimeout, "give up after this long")
	f.DurationVar(&opts.Interval, "interval", serve.DefaultInterval, "pause between polls")
	f.StringVar(&keyEnv, "api-key-env", "", "send the API key in environment variable `NAME` as a bearer token (a server started with a key)")
	f.StringVar(&opts.Name, "name", "", "server `NAME` used in messages (default: the URL's host)")
	f.StringArrayVar(&opts.Or, "or-url", nil, "another `URL` whose 200 OK makes the server ready too (repeatable; a Gym server's /openapi.json)")
	return command(e, c, true, func(ctx context.Context, urls []string) int {
		if opts.URL != "" {
			urls = append([]string{opts.URL}, urls...)
		}
		if len(urls) == 0 {
			return usageError(e, c, "--url is required")
		}
		if opts.Timeout <= 0 {
			return usageError(e, c, "--timeout must be positive")
		}
		if keyEnv != "" {
			if opts.APIKey = os.Getenv(keyEnv); opts.APIKey == "" {
				return usageError(e, c, "--api-key-env: $"+keyEnv+" is not set or empty")
			}
		}
		if len(pids) > 0 {
			opts.PID, opts.OtherPIDs = pids[0], pids[1:]
		}
		switch {
		case len(dynamo) == 2 && dynamo[0] >= 0 && dynamo[1] >= 0:
			opts.Ready = serve.DynamoReady(dynamo[0], dynamo[1])
		case dynamo != nil:
			return usageError(e, c, "--dynamo-workers takes two counts, P,D")
		}
		deadline := time.Now().Add(opts.Timeout)
		for _, u := range urls {
			o := opts
			o.URL = u
			if strings.HasSuffix(u, "/v1") || strings.HasSuffix(u, "/v1/") {
				o.URL = strings.TrimSuffix(u, "/") + "/models"
			}
			o.Timeout = max(time.Until(deadline), time.Millisecond)
			if code := waitReady(ctx, e, c, o); code != exitOK {
				return code
			}
		}
		return exitOK
	})
}

func waitReady(ctx context.Context, e *env, c *cobra.Command, opts serve.WaitOptions) int {
	switch {
	case opts.PID < 0 || slices.ContainsFunc(opts.OtherPIDs, func(p int) bool { return p < 0 }):
		return usageError(e, c, "--pid must not be negative")
	case opts.Timeout <= 0:
		return usageError(e, c, "--timeout must be positive")
	case opts.Interval <= 0:
		return usageError(e, c, "--interval must be positive")
	}
	opts.Logger = e.log
	opts.Progress = func(msg string) { e.errorf("%s", msg) }

	err := serve.WaitReady(ctx, opts)
	if err == nil {
		return exitOK
	}
	var werr *serve.WaitError
	if errors.As(err, &werr) {
		e.errorf("%v", err)
	} else {
		e.errorf("wait-ready: %v", err)
	}
	return exitFailure
}
