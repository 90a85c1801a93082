package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/pflag"
)

// Profiles are the --cpuprofile and --memprofile flags of a command whose
// cost is worth a look (nel-run shard and merge), so that a profile of a
// real run is one flag away rather than a rebuild. Both files are in
// pprof's format: go tool pprof FILE.
type Profiles struct {
	CPU, Mem string
}

// AddFlags adds the two flags to f.
func (p *Profiles) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&p.CPU, "cpuprofile", "", "write a CPU profile of the command to `FILE` (go tool pprof FILE)")
	f.StringVar(&p.Mem, "memprofile", "", "write a heap profile to `FILE` when the command ends (allocations since start, and what is live)")
}

// Start starts the CPU profile if one was asked for. The returned stop
// ends it and writes the heap profile; call it once the command's work is
// done, also when it failed, since a failing run is often the one worth
// profiling.
func (p *Profiles) Start() (stop func() error, err error) {
	var cpu *os.File
	if p.CPU != "" {
		if cpu, err = os.Create(p.CPU); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("cpu profile %s: %w", p.CPU, err)
		}
	}
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				errs = append(errs, fmt.Errorf("cpu profile %s: %w", p.CPU, err))
			}
		}
		if p.Mem != "" {
			errs = append(errs, writeHeap(p.Mem))
		}
		return errors.Join(errs...)
	}, nil
}

func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	// The heap profile holds what the last GC saw; one now makes "live"
	// mean live at the end of the command, not at some earlier cycle.
	runtime.GC()
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("heap profile %s: %w", path, err)
	}
	return nil
}
