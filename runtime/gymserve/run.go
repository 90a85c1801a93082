package gymserve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/nel-eval/nel/runtime/atomicfile"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/shard"
)

// RunOptions are what nel serve and nel-run serve are told.
type RunOptions struct {
	Plan *plan.Plan
	// Benchmark is the benchmark's key in the plan; "" takes the plan's
	// only benchmark.
	Benchmark string
	Addr      string
	GymCompat bool
	// ExportDir, when set, gets the Gym JSONL export; then the server
	// starts only if Serve is set too.
	ExportDir string
	Serve     bool
	Pool      int
	// EndpointFile, when set, gets "http://HOST:PORT" once the server
	// listens (a job's clients wait for it).
	EndpointFile string
	NelVersion   string
	Logger       *slog.Logger
	// Stderr gets the lines a person reads: where it listens, the export.
	Stderr io.Writer
}

// Run loads the benchmark, exports it and serves it as o says, until ctx
// ends.
func Run(ctx context.Context, o RunOptions) error {
	key, err := benchmarkKey(o.Plan, o.Benchmark)
	if err != nil {
		return err
	}
	s, err := shard.OpenScorer(ctx, shard.Options{Plan: o.Plan, Benchmark: key, NelVersion: o.NelVersion, Logger: o.Logger})
	if err != nil {
		return err
	}
	defer s.Close()
	if o.ExportDir != "" {
		path, err := Export(s, o.ExportDir)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Stderr, "exported %d rows to %s\n", s.Len(), path)
		if !o.Serve {
			return nil
		}
	}
	srv := New(s, Options{GymCompat: o.GymCompat, Pool: o.Pool, Logger: o.Logger})
	return srv.ListenAndServe(ctx, o.Addr, func(a net.Addr) error {
		url := "http://" + a.String()
		mode := "evaluator"
		if o.GymCompat {
			mode = "gym-compat"
		}
		fmt.Fprintf(o.Stderr, "%s on %s (%s): %d items; endpoints /health /dataset_size /seed_session /verify\n", key, url, mode, s.Len())
		if o.EndpointFile == "" {
			return nil
		}
		// Whole or absent: a client polling the file never reads half a URL.
		if err := atomicfile.WriteFile(o.EndpointFile, []byte(url+"\n")); err != nil {
			return fmt.Errorf("serve: endpoint file: %w", err)
		}
		return nil
	})
}

// benchmarkKey is the benchmark of p to serve: the one named, or p's only one.
func benchmarkKey(p *plan.Plan, name string) (string, error) {
	if name != "" {
		if _, ok := p.Benchmark(name); !ok {
			return "", fmt.Errorf("serve: the recipe has no benchmark %q (it has: %s)", name, keys(p))
		}
		return name, nil
	}
	if len(p.Benchmarks) != 1 {
		return "", fmt.Errorf("serve: the recipe has %d benchmarks (%s): name the one to serve with -b", len(p.Benchmarks), keys(p))
	}
	return p.Benchmarks[0].Key, nil
}

func keys(p *plan.Plan) string {
	s := ""
	for i, b := range p.Benchmarks {
		if i > 0 {
			s += ", "
		}
		s += b.Key
	}
	return s
}

// ServicePlan is p with the benchmark that gym service name serves as its
// only benchmark: what a job's managed gym server serves (nel-run serve
// --service). The served benchmark is compiled into the service's plan
// entry, not among the benchmarks the job runs itself.
func ServicePlan(p *plan.Plan, name string) (*plan.Plan, error) {
	sv, ok := p.Service(name)
	if !ok {
		return nil, fmt.Errorf("the plan has no service %q", name)
	}
	if sv.Serves == nil {
		return nil, fmt.Errorf("service %s serves no benchmark (a gym service with benchmark: does)", name)
	}
	c := *p
	c.Benchmarks = []plan.Benchmark{*sv.Serves}
	return &c, nil
}
