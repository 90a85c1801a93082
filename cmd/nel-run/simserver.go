package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/model"
	"github.com/nel-eval/nel/runtime/sim"
	"github.com/spf13/cobra"
)

const simServerHelp = `Serve a simulated OpenAI-compatible model endpoint (POST /v1/chat/completions,
POST /v1/completions, GET /v1/models, GET /health) that answers the items of
the --benchmark datasets from their gold answers, correct with probability
--accuracy. The same request always gets the same answer. Responses are
labelled simulated (header X-Nel-Simulated: true, system_fingerprint
"nel-sim-<hash of model, accuracy and seed>"); nel records the label in every result.

For trying nel without a GPU, and for testing: --latency, --faults. For
testing tool-calling loops, --scripts gives per-task scripts: a chat
request whose first user message contains a script's "match" gets the
tool calls the script makes at that turn, then its answer; the server
checks that every call was answered by a tool message with its id.
Prints "listening on http://ADDR/v1" on stderr once ready (with --addr
HOST:0, the port it got); stops on SIGINT or SIGTERM.

Example:
  nel-run sim-server --benchmark gsm8k=data/gsm8k.jsonl --accuracy 0.8 \
      --latency 50ms --faults 429=0.01,500=0.01`

func newSimServerCmd(e *env) *cobra.Command {
	var o simServerOptions
	c := &cobra.Command{Use: "sim-server [flags]", Short: "serve a simulated OpenAI-compatible endpoint answering from gold data", Long: simServerHelp}
	f := c.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8123", "`HOST:PORT` to listen on (port 0: any free port)")
	f.Var(&o.benchmarks, "benchmark", "benchmark `NAME[=DATA_PATH]` whose items it answers (repeatable); DATA_PATH replaces the default dataset")
	f.Float64Var(&o.cfg.Accuracy, "accuracy", 1, "probability that an answer is correct")
	f.Float64Var(&o.cfg.OffFormat, "off-format", 0, "probability that an answer has no final answer a scorer reads (a model ignoring the prompt's format)")
	f.DurationVar(&o.cfg.Latency, "latency", 0, "delay of every response")
	f.DurationVar(&o.cfg.LatencyJitter, "latency-jitter", 0, "uniform jitter (±) of the delay")
	f.IntVar(&o.cfg.MaxConcurrent, "max-concurrent", 0, "serve at most `N` completions at once, the others waiting in line (0: no cap)")
	f.StringVar(&o.faults, "faults", "", "fault `SPEC`: per-request probabilities, e.g. 429=0.01,500=0.02,reset=0.01,slow=0.01,malformed=0.01,empty=0.01")
	f.StringVar(&o.cfg.Model, "model", sim.DefaultModel, "model `NAME` it serves")
	f.Uint64Var(&o.cfg.Seed, "seed", 0, "seed of the answers (with the prompt and the request's seed)")
	f.StringVar(&o.answers, "answers", "", "answer table: a JSONL `FILE` of {\"prompt\": …, \"response\": …}; a prompt in it gets its response")
	f.StringVar(&o.scripts, "scripts", "", "tool-calling scripts: a JSON `FILE` {\"scripts\": [{\"match\": TEXT, \"turns\": [{\"calls\": [{\"name\": …, \"arguments\": {…}}]}, {\"answer\": TEXT}]}]} (\"endless\": [calls] instead of turns: a call every turn)")
	f.StringVar(&o.record, "record", "", "append the body of every completion request to `FILE`, one JSON line each (for tests)")
	f.StringVar(&o.keyEnv, "api-key-env", "", "require the API key in environment variable `NAME` (Authorization: Bearer) on /v1 requests; others get 401")
	return command(e, c, false, func(ctx context.Context, _ []string) int {
		if msg := o.complete(); msg != "" {
			return usageError(e, c, msg)
		}
		return o.run(ctx, e)
	})
}

type simServerOptions struct {
	addr       string
	benchmarks benchmarkFlags
	faults     string
	answers    string
	scripts    string
	keyEnv     string
	record     string
	cfg        sim.Config
	accuracy   float64 // as given: cfg.Accuracy stands in for 0
}

// benchmarkFlags collects repeated --benchmark NAME[=DATA_PATH] flags.
type benchmarkFlags []benchmarkFlag

type benchmarkFlag struct{ name, dataPath string }

func (b *benchmarkFlags) String() string {
	var s []string
	for _, f := range *b {
		if f.dataPath != "" {
			s = append(s, f.name+"="+f.dataPath)
		} else {
			s = append(s, f.name)
		}
	}
	return strings.Join(s, ",")
}

func (b *benchmarkFlags) Type() string { return "NAME[=DATA_PATH]" }

func (b *benchmarkFlags) Set(v string) error {
	name, path, hasPath := strings.Cut(v, "=")
	if name == "" || hasPath && path == "" {
		return fmt.Errorf("want NAME or NAME=DATA_PATH, got %q", v)
	}
	if _, ok := bench.Lookup(name); !ok {
		return fmt.Errorf("unknown benchmark %q (built in: %s)", name, strings.Join(bench.Names(), ", "))
	}
	*b = append(*b, benchmarkFlag{name, path})
	return nil
}

// complete checks the flags and fills the simulator's configuration from
// them; it returns what is wrong with the command line, or "".
func (o *simServerOptions) complete() string {
	faults, err := sim.ParseFaults(o.faults)
	if err != nil {
		return "--faults: " + err.Error()
	}
	o.cfg.Faults = faults
	if o.cfg.Accuracy < 0 || o.cfg.Accuracy > 1 {
		return "--accuracy must be in [0, 1]"
	}
	if o.cfg.OffFormat < 0 || o.cfg.OffFormat > 1 {
		return "--off-format must be in [0, 1]"
	}
	o.accuracy = o.cfg.Accuracy
	if o.cfg.Accuracy == 0 {
		// sim.Config reads 0 as "default" (1); the flag means what it says.
		o.cfg.Accuracy = 1e-300
	}
	if o.answers != "" {
		if o.cfg.Answers, err = sim.ReadAnswers(o.answers); err != nil {
			return "--answers: " + err.Error()
		}
	}
	if o.scripts != "" {
		if o.cfg.Scripts, err = sim.ReadScripts(o.scripts); err != nil {
			return "--scripts: " + err.Error()
		}
	}
	if o.keyEnv != "" {
		// By name, like nel's recipes: the key never appears on a command line.
		if o.cfg.APIKey = os.Getenv(o.keyEnv); o.cfg.APIKey == "" {
			return "--api-key-env: $" + o.keyEnv + " is not set or empty"
		}
	}
	return ""
}

// run serves until ctx ends, then says what it answered.
func (o *simServerOptions) run(ctx context.Context, e *env) int {
	o.cfg.Logger = e.log
	o.cfg.Version = version
	sets, names, err := o.load(ctx)
	if err != nil {
		e.errorf("sim-server: %v", err)
		return exitFailure
	}
	if o.record != "" {
		f, err := os.OpenFile(o.record, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			e.errorf("sim-server: --record: %v", err)
			return exitFailure
		}
		defer f.Close()
		o.cfg.Record = f
	}
	s, err := sim.New(o.cfg, sets...)
	if err != nil {
		e.errorf("sim-server: %v", err)
		return exitFailure
	}
	if _, err := model.RaiseOpenFiles(1 << 16); err != nil {
		e.log.Debug("could not raise the open-file limit", "err", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.addr)
	if err != nil {
		e.errorf("sim-server: %v", err)
		return exitFailure
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 30 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(e.stderr, "nel-run sim-server: listening on http://%s/v1 (simulated; %s)\n", ln.Addr(), o.describe(s, names))
	select {
	case err := <-done:
		e.errorf("sim-server: %v", err)
		return exitFailure
	case <-ctx.Done():
	}
	o.stop(e, srv, s)
	return exitOK
}

// describe says what the server answers from, and how.
func (o *simServerOptions) describe(s *sim.Server, names []string) string {
	from := "no benchmark: every prompt gets a non-answer"
	if len(names) > 0 {
		from = fmt.Sprintf("%d items from %s", s.Items(), strings.Join(names, ", "))
	}
	if n := len(o.cfg.Answers); n > 0 && len(names) > 0 {
		from += fmt.Sprintf("; %d answers from %s", n, o.answers)
	} else if n > 0 {
		from = fmt.Sprintf("%d answers from %s; other prompts get a non-answer", n, o.answers)
	}
	if n := len(o.cfg.Scripts); n > 0 {
		from += fmt.Sprintf("; %d tool-calling scripts from %s", n, o.scripts)
	}
	extra := ""
	if f := o.cfg.Faults.String(); f != "" {
		extra += "; faults " + f
	}
	if o.cfg.OffFormat > 0 {
		extra += fmt.Sprintf("; off-format %g", o.cfg.OffFormat)
	}
	return fmt.Sprintf("%s; model %s, accuracy %g%s", from, s.Config().Model, o.accuracy, extra)
}

// load reads the datasets of the --benchmark flags.
func (o *simServerOptions) load(ctx context.Context) ([]sim.Dataset, []string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, nil, err
	}
	loader := dataset.NewLoader(dataset.OptionsFromEnv(cwd))
	var sets []sim.Dataset
	var names []string
	for _, bf := range o.benchmarks {
		b, _ := bench.Lookup(bf.name) // checked by Set
		params := map[string]any{}
		if bf.dataPath != "" {
			params["data_path"] = bf.dataPath
		}
		set, err := b.Load(ctx, loader, params)
		if err != nil {
			return nil, nil, fmt.Errorf("load %s: %w", bf.String(), err)
		}
		sets = append(sets, sim.Dataset{Benchmark: b, Items: set.Items})
		names = append(names, b.Name)
	}
	return sets, names, nil
}

// stop shuts the server down and says what it answered.
func (o *simServerOptions) stop(e *env, srv *http.Server, s *sim.Server) {
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		e.errorf("sim-server: shutdown: %v", err)
	}
	st := s.Stats()
	var nf int64
	for _, n := range st.Faults {
		nf += n
	}
	refused := ""
	if o.keyEnv != "" {
		refused = fmt.Sprintf("; %d refused for the API key", st.Unauthorized)
	}
	if len(o.cfg.Answers) > 0 {
		refused += fmt.Sprintf("; %d from the answer table", st.Table)
	}
	if len(o.cfg.Scripts) > 0 {
		refused += fmt.Sprintf("; %d scripted", st.Scripted)
	}
	fmt.Fprintf(e.stderr, "nel-run sim-server: stopped after %d requests (%d correct, %d wrong, %d unknown, %d faults%s)\n",
		st.Requests, st.Correct, st.Wrong, st.Unknown, nf, refused)
}

func (f benchmarkFlag) String() string {
	if f.dataPath == "" {
		return f.name
	}
	return f.name + "=" + f.dataPath
}
