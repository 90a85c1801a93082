// Package journal is the crash-safe record of a shard in progress: an
// append-only file of JSON lines, one per event, made durable with fsync
// before a sample counts as done.
//
// A shard writes a "start" record when a sample begins and a "done" record
// (the finished row) when it ends. After a kill -9 the shard is started again
// with the same command: Open replays the file, drops a torn last line, and
// reports which samples are done and how many times each unfinished sample
// was started, so the loop re-runs exactly the interrupted ones and counts
// their attempts.
//
// Writes go through one goroutine that batches records and fsyncs once per
// batch (group commit): thousands of samples per second cost a few fsyncs,
// not thousands, and Done returns only once its record is on disk.
package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Header is the first line of a journal: what it belongs to. A journal whose
// header does not match the shard being run is not replayed.
type Header struct {
	Journal   int    `json:"nel_journal"` // format version, 1
	PlanHash  string `json:"plan_hash"`
	Benchmark string `json:"benchmark"`
	Shard     int    `json:"shard"`
	Of        int    `json:"of"`
	// Dataset is the digest of the data the shard was started on.
	Dataset string `json:"dataset"`
}

// Key identifies a sample.
type Key struct {
	Item   string
	Repeat int
}

func (k Key) String() string { return fmt.Sprintf("%s/%d", k.Item, k.Repeat) }

// record is one line after the header.
type record struct {
	Type   string          `json:"t"` // "start" or "done"
	Item   string          `json:"i"`
	Repeat int             `json:"r"`
	Data   json.RawMessage `json:"d,omitempty"` // the finished sample (done)
}

// State is what a journal holds.
type State struct {
	// Done maps finished samples to the data they finished with; from
	// OpenKeys, to nil (Journal.Data reads the data).
	Done map[Key]json.RawMessage
	// Starts counts how often each sample was started (finished or not).
	Starts map[Key]int
	// at is where each finished sample's last done record lies (OpenKeys).
	at map[Key]span
}

// span is a line of the journal: its offset and length.
type span struct {
	off int64
	n   int32
}

// ErrMismatch is returned (wrapped) by Open when the journal belongs to
// another plan, benchmark, shard layout or dataset.
var ErrMismatch = errors.New("journal belongs to a different run")

// Journal is an open journal.
type Journal struct {
	path string
	f    *os.File
	reqs chan request
	done chan struct{}

	mu  sync.Mutex
	err error // first write error; every later call returns it
}

type request struct {
	line []byte
	// ack, when set, is sent the result (after the fsync) once line is
	// durable; then, when set, is called with it, on the writer goroutine,
	// before any ack of the same batch.
	ack  chan error
	then func(error)
}

// Open opens or creates the journal at path. An existing journal with the
// same header is replayed into the returned State; one with another header
// yields ErrMismatch (the file is left alone). A torn last line (a crash in
// the middle of a write) is cut off.
func Open(path string, h Header) (*Journal, *State, error) {
	return open(path, h, &State{Done: map[Key]json.RawMessage{}, Starts: map[Key]int{}})
}

// OpenKeys is Open for a journal whose samples' data need not all be in
// memory at once (a shard of many samples resuming): its State's Done
// holds the finished samples with nil data, and Data reads a sample's
// data from the file when it is wanted. What it holds is a few dozen
// bytes a sample.
func OpenKeys(path string, h Header) (*Journal, *State, error) {
	return open(path, h, &State{Done: map[Key]json.RawMessage{}, Starts: map[Key]int{}, at: map[Key]span{}})
}

// Data is the data finished sample k finished with, in st from OpenKeys
// (or Open) of j.
func (j *Journal) Data(st *State, k Key) (json.RawMessage, error) {
	if st.at == nil {
		return st.Done[k], nil
	}
	sp, ok := st.at[k]
	if !ok {
		return nil, fmt.Errorf("journal %s: sample %s is not done", j.path, k)
	}
	line := make([]byte, sp.n)
	if _, err := j.f.ReadAt(line, sp.off); err != nil {
		return nil, fmt.Errorf("journal %s: sample %s: %w", j.path, k, err)
	}
	var rec record
	if err := json.Unmarshal(line, &rec); err != nil || rec.Type != "done" || (Key{rec.Item, rec.Repeat}) != k {
		return nil, fmt.Errorf("journal %s: sample %s: the record at byte %d is not its own (%v)", j.path, k, sp.off, err)
	}
	return rec.Data, nil
}

func open(path string, h Header, st *State) (*Journal, *State, error) {
	h.Journal = 1
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open journal: %w", err)
	}
	good, err := replay(f, h, st)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if good == 0 {
		// New (or only a torn header): write the header.
		line, _ := json.Marshal(h)
		line = append(line, '\n')
		err := f.Truncate(0)
		if err == nil {
			_, err = f.WriteAt(line, 0)
		}
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("journal %s: write header: %w", path, err)
		}
		good = int64(len(line))
	} else if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("journal %s: cut torn record: %w", path, err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("journal %s: %w", path, err)
	}
	j := &Journal{path: path, f: f, reqs: make(chan request, 4096), done: make(chan struct{})}
	go j.writer()
	return j, st, nil
}

// replay reads f into st and returns the offset just past the last complete,
// valid line (0 when there is no valid header).
func replay(f *os.File, h Header, st *State) (int64, error) {
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	first := true
	for {
		line, err := r.ReadBytes('\n')
		if len(line) == 0 || line[len(line)-1] != '\n' {
			// EOF, possibly after a torn line: everything before is good.
			if err != nil && err != io.EOF {
				return 0, err
			}
			return off, nil
		}
		body := bytes.TrimSuffix(line, []byte{'\n'})
		if first {
			var got Header
			if json.Unmarshal(body, &got) != nil {
				// A header torn and then followed by nothing valid can only be
				// a crash during creation: start over.
				return 0, nil
			}
			if got != h {
				return 0, fmt.Errorf("%w: it is for plan %s, benchmark %q, shard %d of %d, dataset %s; this run is plan %s, benchmark %q, shard %d of %d, dataset %s",
					ErrMismatch, got.PlanHash, got.Benchmark, got.Shard, got.Of, got.Dataset, h.PlanHash, h.Benchmark, h.Shard, h.Of, h.Dataset)
			}
			first = false
			off += int64(len(line))
			continue
		}
		var rec record
		if err := json.Unmarshal(body, &rec); err != nil {
			// Only the last line can be torn; a bad line followed by more
			// lines means the file was damaged some other way.
			if _, perr := r.Peek(1); perr == nil {
				return 0, fmt.Errorf("corrupt record at byte %d (not the last line): %v", off, err)
			}
			return off, nil
		}
		k := Key{rec.Item, rec.Repeat}
		switch rec.Type {
		case "start":
			st.Starts[k]++
		case "done":
			if st.at != nil {
				st.Done[k] = nil
				st.at[k] = span{off, int32(len(line))}
			} else {
				st.Done[k] = rec.Data
			}
		default:
			return 0, fmt.Errorf("unknown record type %q at byte %d", rec.Type, off)
		}
		off += int64(len(line))
	}
}

// Start records that sample k is starting. It does not wait for the disk: a
// start lost in a crash only undercounts an attempt that barely began.
func (j *Journal) Start(k Key) error {
	// The bytes json.Marshal writes for the record, without its reflection.
	item, err := marshalItem(k.Item)
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	line := make([]byte, 0, len(item)+32)
	line = append(line, `{"t":"start","i":`...)
	line = append(line, item...)
	line = append(line, `,"r":`...)
	line = strconv.AppendInt(line, int64(k.Repeat), 10)
	return j.send(request{line: append(line, "}\n"...)})
}

// Done records that sample k finished with data (any JSON value) and returns
// once the record is durable.
func (j *Journal) Done(k Key, data []byte) error {
	line, err := json.Marshal(record{Type: "done", Item: k.Item, Repeat: k.Repeat, Data: data})
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	return j.commit(append(line, '\n'))
}

// DoneValue is Done with data json.Marshal(v), for hot loops: data that
// json.Marshal just returned goes into the line as is, where Done compacts
// (and so validates) data that came from anywhere, a second pass over it.
func (j *Journal) DoneValue(k Key, v any) error {
	line, err := j.doneValueLine(k, v)
	if err != nil {
		return err
	}
	return j.commit(line)
}

// An Appender writes itself as JSON, the bytes json.Marshal would write
// for it, without reflection (issue 23: a sample's record went through
// json.Marshal on every sample). ok false: marshal it with encoding/json.
type Appender interface {
	AppendJSON(dst []byte) (out []byte, ok bool)
	// SizeJSON is about how many bytes AppendJSON writes: the line's
	// buffer is made that size, once.
	SizeJSON() int
}

// doneValueLine is the line DoneValue writes.
func (j *Journal) doneValueLine(k Key, v any) ([]byte, error) {
	if a, ok := v.(Appender); ok {
		line, err := doneLineHead(make([]byte, 0, len(k.Item)+48+a.SizeJSON()), k)
		if err != nil {
			return nil, fmt.Errorf("journal %s: %w", j.path, err)
		}
		if line, ok := a.AppendJSON(line); ok {
			return append(line, "}\n"...), nil
		}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", j.path, err)
	}
	line, err := marshalledDoneLine(k, data)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", j.path, err)
	}
	return line, nil
}

// DoneValueThen is DoneValue without the wait: it returns once the record
// is queued, and then is called with the result once it is durable (nil)
// or failed, on the journal's writer goroutine, in the order of the
// records: it must not block for long, and must not call the journal.
// Wait waits for the thens of every record queued before it. A sample
// that waits for its record's fsync holds whatever runs it; with then, it
// holds only its record.
func (j *Journal) DoneValueThen(k Key, v any, then func(error)) error {
	line, err := j.doneValueLine(k, v)
	if err != nil {
		return err
	}
	return j.send(request{line: line, then: then})
}

// Wait returns once every record queued before it is durable (or failed)
// and its then has returned, with the journal's first write error.
func (j *Journal) Wait() error { return j.commit(nil) }

// commit appends line and returns once it is durable.
func (j *Journal) commit(line []byte) error {
	ack := make(chan error, 1)
	if err := j.send(request{line: line, ack: ack}); err != nil {
		return err
	}
	return <-ack
}

// marshalItem is json.Marshal(id): quoted as it is when it holds only
// printable ASCII that json.Marshal writes as is (item IDs are hex digits),
// without reflection. Every sample's start goes through it on the one
// goroutine that launches requests (issue 23).
func marshalItem(id string) ([]byte, error) {
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < ' ' || c > '~' || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return json.Marshal(id)
		}
	}
	return append(append(append(make([]byte, 0, len(id)+2), '"'), id...), '"'), nil
}

// marshalledDoneLine is the line Done writes (newline included) for data
// that json.Marshal returned, which is valid, compact JSON without a raw
// newline already: the same bytes, without compacting data again.
func marshalledDoneLine(k Key, data []byte) ([]byte, error) {
	line, err := doneLineHead(make([]byte, 0, len(data)+len(k.Item)+48), k)
	if err != nil {
		return nil, err
	}
	line = append(line, data...)
	return append(line, "}\n"...), nil
}

// doneLineHead appends a done line up to its data.
func doneLineHead(line []byte, k Key) ([]byte, error) {
	item, err := marshalItem(k.Item)
	if err != nil {
		return nil, err
	}
	line = append(line, `{"t":"done","i":`...)
	line = append(line, item...)
	line = append(line, `,"r":`...)
	line = strconv.AppendInt(line, int64(k.Repeat), 10)
	return append(line, `,"d":`...), nil
}

func (j *Journal) send(r request) (err error) {
	if err := j.failed(); err != nil {
		return err
	}
	defer func() {
		if recover() != nil { // sent after Close
			err = fmt.Errorf("journal %s: closed", j.path)
		}
	}()
	j.reqs <- r
	return nil
}

func (j *Journal) failed() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// writer appends batches of records and fsyncs once per batch.
func (j *Journal) writer() {
	defer close(j.done)
	var buf []byte
	var acks []chan error
	var thens []func(error)
	add := func(r request) {
		buf = append(buf, r.line...)
		if r.ack != nil {
			acks = append(acks, r.ack)
		}
		if r.then != nil {
			thens = append(thens, r.then)
			if r.ack == nil {
				// Someone waits for it too: the caller's then.
				acks = append(acks, nil)
			}
		}
	}
	for r := range j.reqs {
		buf, acks = buf[:0], acks[:0]
		clear(thens)
		thens = thens[:0]
		add(r)
		// Once someone waits for durability, give the samples finishing
		// alongside a moment to join the batch: one fsync then covers them
		// all. Waiters no longer hold a concurrency slot, so the delay
		// costs no throughput; fsyncs per sample drop several-fold.
		var window <-chan time.Time
		if len(acks) > 0 {
			window = time.After(groupCommitWindow)
		}
	drain:
		for len(buf) < 4<<20 {
			if window == nil {
				select {
				case r, ok := <-j.reqs:
					if !ok {
						break drain
					}
					add(r)
					if len(acks) > 0 {
						window = time.After(groupCommitWindow)
					}
				default:
					break drain
				}
				continue
			}
			select {
			case r, ok := <-j.reqs:
				if !ok {
					break drain
				}
				add(r)
			case <-window:
				break drain
			}
		}
		err := j.failed()
		if err == nil {
			if _, werr := j.f.Write(buf); werr != nil {
				err = werr
			} else if len(acks) > 0 {
				// Start records alone need no fsync: a later Done's
				// fsync makes them durable too.
				err = j.f.Sync()
			}
			if err != nil {
				err = fmt.Errorf("journal %s: %w", j.path, err)
				j.mu.Lock()
				j.err = err
				j.mu.Unlock()
			}
		}
		for _, then := range thens {
			then(err)
		}
		for _, a := range acks {
			if a != nil {
				a <- err
			}
		}
	}
}

// groupCommitWindow is how long the writer waits for more records once a
// batch has a record someone waits on.
const groupCommitWindow = 2 * time.Millisecond

// Close flushes pending records and closes the file.
func (j *Journal) Close() error {
	close(j.reqs)
	<-j.done
	err := j.f.Close()
	if ferr := j.failed(); ferr != nil {
		return ferr
	}
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	return nil
}

// Remove closes the journal and deletes its file: the shard's results are
// safely elsewhere.
func (j *Journal) Remove() error {
	if err := j.Close(); err != nil {
		return err
	}
	if err := os.Remove(j.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove journal: %w", err)
	}
	return nil
}

// Summary is what Peek reads of a journal.
type Summary struct {
	Header Header
	// Done maps the finished samples to the data they finished with (the
	// last record of each wins, as in Open).
	Done map[Key]json.RawMessage
	// InFlight counts the samples started and not finished: running now,
	// or interrupted.
	InFlight int
}

// Peek reads the journal at path without opening it for writing: nel
// status reads a running shard's journal, which only the shard may
// change. A torn or unreadable line is skipped, as a writer may be in the
// middle of it. It keeps every finished sample's data: a reader that needs
// a few fields of each uses Scan.
func Peek(path string) (*Summary, error) {
	s := &Summary{Done: map[Key]json.RawMessage{}}
	h, inFlight, err := Scan(path, func(k Key, data json.RawMessage) { s.Done[k] = data })
	if err != nil {
		return nil, err
	}
	s.Header, s.InFlight = h, inFlight
	return s, nil
}

// Scan is Peek that hands each finished sample's data to done as it reads
// it, in the journal's order, and keeps none of it: a sample finished more
// than once is handed over each time, and the last is the one Open keeps.
// It returns the header and how many samples are started and not finished.
func Scan(path string, done func(k Key, data json.RawMessage)) (h Header, inFlight int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return h, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return h, 0, fmt.Errorf("journal %s: no header yet", path)
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, 0, fmt.Errorf("journal %s: header: %w", path, err)
	}
	finished := map[Key]bool{}
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A record over the buffer (an agent's turns): read it whole.
			head := slices.Clone(line) // the next read reuses the buffer
			rest, rerr := r.ReadBytes('\n')
			line, err = append(head, rest...), rerr
		}
		if err != nil {
			break // EOF, or a torn last line
		}
		var rec record
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		k := Key{rec.Item, rec.Repeat}
		if rec.Type == "done" {
			finished[k] = true
			done(k, rec.Data)
		} else if _, ok := finished[k]; !ok {
			finished[k] = false
		}
	}
	for _, ok := range finished {
		if !ok {
			inFlight++
		}
	}
	return h, inFlight, nil
}
