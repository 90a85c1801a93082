package compiler

import (
	"cmp"
	"fmt"
	"io"
	"strings"
)

// DryRun writes what nel run would do with s, without doing it (the v1
// launcher's run --dry-run): the hashes, the services and the endpoints
// they give, each benchmark with its image or nel's loop, the resources
// asked for, where results go, and the sbatch script the recipe compiles
// to (opts, target slurm), which is what a SLURM submission would be.
func DryRun(s *Source, opts CompileOptions, w io.Writer) error {
	h, _, err := ComputeHashes(s)
	if err != nil {
		return err
	}
	opts.Target = "slurm"
	script, err := Compile(s, opts)
	if err != nil {
		return err
	}
	r := s.Recipe
	var b strings.Builder
	fmt.Fprintf(&b, "dry run of %s: nothing is started\nrecipe %s\nplan   %s\n\nservices:\n", s.Path, h.Recipe, h.Plan)
	for _, name := range sortedKeys(r.Services) {
		fmt.Fprintf(&b, "  %s: %s\n", name, describeService(r.Services[name]))
	}
	b.WriteString("\nbenchmarks:\n")
	for _, bm := range r.Benchmarks {
		fmt.Fprintf(&b, "  %s\n", describeBenchmark(r, bm))
	}
	fmt.Fprintf(&b, "\nresources: %s\noutput: %s\n", describeCluster(&r.Cluster), r.Output.Dir)
	fmt.Fprintf(&b, "\n# the sbatch script it would submit (nel compile %s | sbatch):\n", s.Path)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	_, err = w.Write(script)
	return err
}

func describeService(sv *Service) string {
	switch sv.Type {
	case "api":
		out := fmt.Sprintf("endpoint %s (%s), model %s", sv.URL, sv.Protocol, sv.Model)
		if sv.APIKey != "" {
			out += ", key from " + strings.Trim(sv.APIKey, "${}")
		}
		return out
	case "process":
		return fmt.Sprintf("process %s on port %d, model %s", strings.Join(sv.Command, " "), sv.Port, sv.Model)
	}
	out := fmt.Sprintf("%s server of %s in %s, port %d, TP %d × PP %d × DP %d on %d node(s)",
		sv.Type, sv.Model, cmp.Or(sv.Image, "its default image"), sv.Port,
		sv.TensorParallelSize, sv.PipelineParallelSize, sv.DataParallelSize, sv.NumNodes)
	if sv.instanced() {
		b := sv.balancer()
		out += fmt.Sprintf(", %d instances behind %s on port %d", sv.Instances, b.Image, b.Port)
	}
	return out
}

func describeBenchmark(r *Recipe, bm *Benchmark) string {
	limit := "all items"
	if bm.MaxProblems != nil {
		limit = fmt.Sprintf("at most %d items", *bm.MaxProblems)
	}
	if kind, task, _, ok := harnessOf(bm); ok {
		if l, ok := bm.Params["limit_samples"]; ok {
			limit = fmt.Sprintf("limit_samples %v", l)
		}
		ep := ""
		if sv := r.Services[bm.Solver.Service]; sv != nil && kind == "container" {
			ep = ", " + containerEndpointType(bm, sv) + " endpoint"
		}
		return fmt.Sprintf("%s: the %s harness's task %s in %s%s, %s, %d repeat(s), against %s",
			bm.Name, kind, task, harnessImage(r, bm), ep, limit, bm.Repeats, bm.Solver.Service)
	}
	return fmt.Sprintf("%s: nel's own loop, %s, %d repeat(s), %d concurrent requests, against %s",
		bm.Name, limit, bm.Repeats, bm.MaxConcurrent, bm.Solver.Service)
}

func describeCluster(c *Cluster) string {
	if c.Type != "slurm" {
		return "this machine (nel run); as a SLURM job, the script below"
	}
	var pools []string
	for _, name := range sortedKeys(c.NodePools) {
		p := c.NodePools[name]
		pools = append(pools, fmt.Sprintf("%s: %d node(s) × %d task(s)%s", name, p.Nodes, p.NtasksPerNode, prefixed(", gres ", p.Gres)))
	}
	return fmt.Sprintf("SLURM account %s, partition %s, walltime %s; %s",
		cmp.Or(c.Account, "(none)"), cmp.Or(c.Partition, "(default)"), c.Walltime, strings.Join(pools, "; "))
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
