package runctl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
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
	if len(files) == 0 && !o.Follow {
		return fmt.Errorf("no log files yet for %s", t)
	}
	offsets := map[string]int64{}
	last := ""
	for _, f := range files {
		n, err := writeTail(w, f, o.Tail)
		if err != nil {
			return err
		}
		offsets[f], last = n, f
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
			if last, err = follow(w, f, offsets, last); err != nil {
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

// writeTail writes the last n lines of file (all when n < 0) after its
// header, and returns the size it read up to.
func writeTail(w io.Writer, file string, n int) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	size := int64(len(b))
	if n >= 0 {
		b = lastLines(b, n)
	}
	if _, err := fmt.Fprintf(w, "==> %s <==\n", file); err != nil {
		return 0, err
	}
	_, err = w.Write(b)
	return size, err
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

// follow writes what was appended to file since offsets[file], after a
// header when the previous output was another file's, and returns the
// file last written.
func follow(w io.Writer, file string, offsets map[string]int64, last string) (string, error) {
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
	if file != last {
		if _, err := fmt.Fprintf(w, "==> %s <==\n", file); err != nil {
			return last, err
		}
	}
	offsets[file] = fi.Size()
	_, err = w.Write(buf.Bytes())
	return file, err
}
