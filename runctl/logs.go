package runctl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// LogOptions configure Logs.
type LogOptions struct {
	// Tail is how many last lines of each file to show; < 0 shows all.
	Tail int
	// Follow keeps printing what is appended (and files that appear)
	// until the run ends or ctx is done.
	Follow bool
	// Poll is how often Follow looks (default 500ms).
	Poll time.Duration
	// Shard, when not nil, shows shard *Shard only: its own log files
	// (a heterogeneous SLURM job's shard-<benchmark>-N-<job>.log) whole,
	// and of the other files the lines that name it (shard=N/…, as nel
	// run and nel-run log a shard).
	Shard *int
}

// Logs writes the target's log files to w, each after a "==> path <=="
// line: a run folder's logs/ (its servers, sandboxes and shards, and nel
// run's own log) and the output files of its SLURM jobs while SLURM still
// knows them; a job id's output file.
func (t Target) Logs(ctx context.Context, s Slurm, w io.Writer, o LogOptions) error {
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	files, err := t.logFiles(ctx, s)
	if err != nil {
		return err
	}
	keep, err := t.shardFilter(o.Shard)
	if err != nil {
		return err
	}
	if len(files) == 0 && !o.Follow {
		return fmt.Errorf("no log files yet for %s", t)
	}
	offsets, last, err := showTails(w, files, o.Tail, keep)
	if err != nil {
		return err
	}
	if !o.Follow {
		return nil
	}
	for {
		st, err := t.Status(ctx, s)
		running := err == nil && st.State == StateRunning
		if files, err = t.logFiles(ctx, s); err != nil {
			return err
		}
		for _, f := range files {
			if last, err = follow(w, f, offsets, last, keep(f)); err != nil {
				return err
			}
		}
		if !running {
			return nil // the run ended: everything it wrote is shown
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.Poll):
		}
	}
}

func (t Target) String() string {
	if t.Job != "" {
		return "job " + t.Job
	}
	return string(t.Dir)
}

// logFiles lists the target's log files that exist, sorted.
func (t Target) logFiles(ctx context.Context, s Slurm) ([]string, error) {
	var files []string
	ids := []string{t.Job}
	if t.Job == "" {
		var err error
		if files, err = t.Dir.Logs().List(); err != nil {
			return nil, err
		}
		if ids, err = ReadJobs(t.Dir); err != nil {
			return nil, err
		}
	}
	for _, id := range ids {
		out := s.Output(ctx, id)
		if fi, err := os.Stat(out); out != "" && err == nil && fi.Mode().IsRegular() && !slices.Contains(files, out) {
			files = append(files, out)
		}
	}
	slices.Sort(files)
	return files, nil
}

// showTails writes the tail of each file, and returns how far each was
// read and the file whose lines were written last ("" for none).
func showTails(w io.Writer, files []string, tail int, keep func(string) lineFilter) (map[string]int64, string, error) {
	offsets := map[string]int64{}
	last := ""
	for _, f := range files {
		n, wrote, err := writeTail(w, f, tail, keep(f))
		if err != nil {
			return nil, "", err
		}
		offsets[f] = n
		if wrote {
			last = f // a file filtered to nothing printed no header
		}
	}
	return offsets, last, nil
}

// lineFilter keeps the lines of a file to show; nil keeps them all.
type lineFilter func(line []byte) bool

// shardFilter returns, for each file, what --shard shows of it: a
// shard's own log whole, the lines of the others that name the shard.
func (t Target) shardFilter(shard *int) (func(file string) lineFilter, error) {
	if shard == nil {
		return func(string) lineFilter { return nil }, nil
	}
	// Patterns, not the files there now: under --follow a shard's own
	// log appears when SLURM starts the shard, after the first look.
	var own []string
	if t.Dir != "" {
		p, err := LatestPlan(t.Dir)
		if err != nil {
			return nil, err
		}
		if *shard < 0 || *shard >= p.Shards {
			return nil, fmt.Errorf("--shard %d: the run has shards 0 to %d", *shard, p.Shards-1)
		}
		for _, b := range p.Benchmarks {
			own = append(own, t.Dir.Logs().Shard(b.Dir, *shard, "*"))
		}
	}
	mark := []byte(fmt.Sprintf("shard=%d/", *shard))
	names := func(line []byte) bool { return bytes.Contains(line, mark) }
	return func(file string) lineFilter {
		for _, pat := range own {
			if ok, _ := filepath.Match(pat, file); ok {
				return nil
			}
		}
		return names
	}, nil
}

// filterLines keeps b's lines that keep accepts (all when keep is nil).
func filterLines(b []byte, keep lineFilter) []byte {
	if keep == nil {
		return b
	}
	var out []byte
	for len(b) > 0 {
		line, rest, _ := bytes.Cut(b, []byte("\n"))
		if keep(line) {
			out = append(append(out, line...), '\n')
		}
		b = rest
	}
	return out
}

// writeTail writes the last n lines of file (all when n < 0) that keep
// accepts after its header, and returns the size it read up to and
// whether it wrote the header.
func writeTail(w io.Writer, file string, n int, keep lineFilter) (int64, bool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false, err
	}
	size := int64(len(b))
	b = filterLines(b, keep)
	if keep != nil && len(b) == 0 {
		return size, false, nil // nothing of the shard's: no header either
	}
	if n >= 0 {
		b = lastLines(b, n)
	}
	if _, err := fmt.Fprintf(w, "==> %s <==\n", file); err != nil {
		return 0, false, err
	}
	_, err = w.Write(b)
	return size, true, err
}

// lastLines is the last n lines of b.
func lastLines(b []byte, n int) []byte {
	if n == 0 {
		return nil
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end-- // the final newline ends the last line, it does not start one
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}

// follow writes what was appended to file since offsets[file] (the lines
// keep accepts), after a header when the previous output was another
// file's, and returns the file last written. With a filter, only whole
// lines are read: a line still being written waits for the next look.
func follow(w io.Writer, file string, offsets map[string]int64, last string, keep lineFilter) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return last, nil // rotated away or not yet there
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return last, err
	}
	off := offsets[file]
	if fi.Size() < off {
		off = 0 // truncated: start over
	}
	if fi.Size() == off {
		return last, nil
	}
	var buf bytes.Buffer
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return last, err
	}
	if _, err := io.CopyN(&buf, f, fi.Size()-off); err != nil {
		return last, err
	}
	end := fi.Size()
	if keep != nil {
		whole := bytes.LastIndexByte(buf.Bytes(), '\n') + 1
		end = off + int64(whole)
		b := filterLines(buf.Bytes()[:whole], keep)
		buf.Reset()
		buf.Write(b)
	}
	offsets[file] = end
	if buf.Len() == 0 {
		return last, nil
	}
	if file != last {
		if _, err := fmt.Fprintf(w, "==> %s <==\n", file); err != nil {
			return last, err
		}
	}
	_, err = w.Write(buf.Bytes())
	return file, err
}
