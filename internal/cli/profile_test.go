package cli

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
)

// The flags give two pprof files: gzipped protocol buffers whose string
// tables name their sample types (a CPU profile's "cpu"/"nanoseconds", a
// heap profile's "alloc_space" and "inuse_space").
func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	var p Profiles
	f := pflag.NewFlagSet("shard", pflag.ContinueOnError)
	p.AddFlags(f)
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	if err := f.Parse([]string{"--cpuprofile", cpu, "--memprofile", mem}); err != nil {
		t.Fatal(err)
	}
	stop, err := p.Start()
	if err != nil {
		t.Fatal(err)
	}
	var sink [][]byte
	for i := range 1000 {
		sink = append(sink, make([]byte, 1024+i))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	_ = sink
	for path, names := range map[string][]string{cpu: {"cpu", "nanoseconds"}, mem: {"alloc_space", "inuse_space"}} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s is not gzip, as pprof writes: %v", path, err)
		}
		proto, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if !bytes.Contains(proto, []byte(name)) {
				t.Errorf("%s: no sample type %q in the profile", path, name)
			}
		}
	}
}

// No flag, no file and no error; a file that cannot be created is an
// error that names it, from Start for the CPU profile and from stop for
// the heap's.
func TestProfilesErrors(t *testing.T) {
	stop, err := (&Profiles{}).Start()
	if err != nil || stop() != nil {
		t.Fatalf("no profiles: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "no", "such")
	if _, err := (&Profiles{CPU: missing}).Start(); err == nil || !bytes.Contains([]byte(err.Error()), []byte(missing)) {
		t.Errorf("cpu profile in a missing folder: %v", err)
	}
	stop, err = (&Profiles{Mem: missing}).Start()
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err == nil || !bytes.Contains([]byte(err.Error()), []byte(missing)) {
		t.Errorf("heap profile in a missing folder: %v", err)
	}
}
