package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var hdr = Header{PlanHash: "sha256:p", Benchmark: "gsm8k", Shard: 1, Of: 3, Dataset: "sha256:d"}

func TestReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, st, err := Open(path, hdr)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Done) != 0 || len(st.Starts) != 0 {
		t.Fatalf("new journal has state %+v", st)
	}
	a, b := Key{"a", 0}, Key{"b", 1}
	must(t, j.Start(a))
	must(t, j.Start(b))
	must(t, j.Done(a, []byte(`{"reward":1}`)))
	must(t, j.Close())

	// Reopen: a is done, b was started and never finished.
	j, st, err = Open(path, hdr)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(st.Done[a]); got != `{"reward":1}` {
		t.Errorf("done[a] = %q", got)
	}
	if _, ok := st.Done[b]; ok {
		t.Error("b should not be done")
	}
	if st.Starts[a] != 1 || st.Starts[b] != 1 {
		t.Errorf("starts = %v", st.Starts)
	}
	must(t, j.Start(b))
	must(t, j.Done(b, []byte(`2`)))
	must(t, j.Close())
	_, st, err = Open(path, hdr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Starts[b] != 2 || string(st.Done[b]) != "2" {
		t.Errorf("after second attempt: starts %v done %q", st.Starts, st.Done[b])
	}
}

func TestTornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _, err := Open(path, hdr)
	if err != nil {
		t.Fatal(err)
	}
	must(t, j.Done(Key{"a", 0}, []byte(`1`)))
	must(t, j.Close())
	good, _ := os.ReadFile(path)
	// A crash in the middle of the next write leaves half a line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"t":"done","i":"b","r":0,"d":{"rew`)
	f.Close()

	j, st, err := Open(path, hdr)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Done) != 1 {
		t.Fatalf("done = %v, want only a", st.Done)
	}
	must(t, j.Close())
	if got, _ := os.ReadFile(path); string(got) != string(good) {
		t.Errorf("torn line not cut:\n%s", got)
	}
}

func TestCorruptMiddleLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _, _ := Open(path, hdr)
	must(t, j.Done(Key{"a", 0}, []byte(`1`)))
	must(t, j.Close())
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("garbage\n" + `{"t":"done","i":"b","r":0,"d":1}` + "\n")
	f.Close()
	_, _, err := Open(path, hdr)
	if err == nil || !strings.Contains(err.Error(), "corrupt record") || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want a corrupt-record error naming the file", err)
	}
}

func TestMismatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _, _ := Open(path, hdr)
	must(t, j.Close())
	other := hdr
	other.Dataset = "sha256:other"
	_, _, err := Open(path, other)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("err = %v, want ErrMismatch", err)
	}
	if !strings.Contains(err.Error(), "sha256:other") || !strings.Contains(err.Error(), "sha256:d") {
		t.Errorf("error does not show both datasets: %v", err)
	}
}

func TestEmptyFileIsNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	os.WriteFile(path, []byte(`{"nel_journ`), 0o644) // crash while writing the header
	j, st, err := Open(path, hdr)
	if err != nil {
		t.Fatal(err)
	}
	must(t, j.Close())
	if len(st.Done) != 0 {
		t.Fatal("state from a torn header")
	}
	b, _ := os.ReadFile(path)
	var h Header
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(b))), &h); err != nil || h.PlanHash != hdr.PlanHash || h.Journal != 1 {
		t.Fatalf("header not rewritten: %q", b)
	}
}

// Many writers at once: every Done is durable and replayed exactly once.
func TestConcurrentDone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _, err := Open(path, hdr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	const n = 2000
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := Key{fmt.Sprintf("item%04d", i), i % 3}
			if err := j.Start(k); err != nil {
				t.Error(err)
			}
			if err := j.Done(k, []byte(fmt.Sprint(i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	must(t, j.Close())
	_, st, err := Open(path, hdr)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Done) != n || len(st.Starts) != n {
		t.Fatalf("replayed %d done, %d started; want %d", len(st.Done), len(st.Starts), n)
	}
	for i := range n {
		if got := string(st.Done[Key{fmt.Sprintf("item%04d", i), i % 3}]); got != fmt.Sprint(i) {
			t.Fatalf("item %d: %q", i, got)
		}
	}
}

func TestWriteErrorIsSticky(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _, err := Open(path, hdr)
	if err != nil {
		t.Fatal(err)
	}
	j.f.Close() // the disk goes away
	err = j.Done(Key{"a", 0}, []byte("1"))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Done on a broken file: %v", err)
	}
	if err := j.Done(Key{"b", 0}, []byte("1")); err == nil {
		t.Fatal("second Done after a write error succeeded")
	}
	if err := j.Close(); err == nil {
		t.Fatal("Close after a write error succeeded")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Peek counts a journal's samples without changing it: a done sample, one
// in flight, and a torn last line (a writer mid-record), which stays.
func TestPeek(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _, err := Open(path, hdr)
	if err != nil {
		t.Fatal(err)
	}
	must(t, j.Start(Key{"a", 0}))
	must(t, j.Start(Key{"b", 0}))
	must(t, j.Done(Key{"a", 0}, []byte(`1`)))
	must(t, j.Start(Key{"a", 1}))
	must(t, j.Done(Key{"a", 1}, []byte(`1`)))
	must(t, j.Close())
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"t":"done","i":"b"`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before, _ := os.ReadFile(path)
	s, err := Peek(path)
	if err != nil {
		t.Fatal(err)
	}
	want := hdr
	want.Journal = 1
	if s.Header != want || len(s.Done) != 2 || string(s.Done[Key{"a", 1}]) != "1" || s.InFlight != 1 {
		t.Errorf("Peek = %+v, want header %+v, 2 done, 1 in flight", s, want)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("Peek changed the journal")
	}
	if _, err := Peek(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Peek of a missing file: %v, want ErrNotExist", err)
	}
}

// OpenKeys replays a journal keeping where each finished sample's last
// record is, not its data; Data reads it: the last record of a sample
// finished twice, nothing of a torn last line.
func TestOpenKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	j, _, err := Open(path, hdr)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := Key{"a", 0}, Key{"b", 1}, Key{"c", 0}
	must(t, j.Start(a))
	must(t, j.Done(a, []byte(`{"reward":0}`)))
	must(t, j.Start(b))
	must(t, j.Done(b, []byte(`"b"`)))
	must(t, j.Start(a))
	must(t, j.Done(a, []byte(`{"reward":1}`)))
	must(t, j.Close())
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"t":"done","i":"c","r":0,"d":{"rew`) // torn
	f.Close()

	j, st, err := OpenKeys(path, hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if len(st.Done) != 2 || st.Done[a] != nil || st.Done[b] != nil {
		t.Errorf("done = %v, want a and b, without their data", st.Done)
	}
	if _, ok := st.Done[c]; ok {
		t.Error("c's torn record counts as done")
	}
	for k, want := range map[Key]string{a: `{"reward":1}`, b: `"b"`} {
		got, err := j.Data(st, k)
		if err != nil || string(got) != want {
			t.Errorf("Data(%s) = %q, %v; want %q", k, got, err, want)
		}
	}
	if _, err := j.Data(st, c); err == nil || !strings.Contains(err.Error(), "sample c/0 is not done") {
		t.Errorf("Data(c) = %v, want an error", err)
	}
	if st.Starts[a] != 2 || st.Starts[b] != 1 {
		t.Errorf("starts = %v", st.Starts)
	}
}

// marshalItem writes what json.Marshal writes for every ID, hex digits as
// the rest (HTML characters, quotes, control bytes, invalid UTF-8).
func TestMarshalItemAsJSON(t *testing.T) {
	for _, id := range []string{"", "0123456789abcdef", "a-b_c.d/e:f~g", "q\"b\\s", "<&>", "tab\there", "\x7f", "é✓", "caf\xe9", "\u2028"} {
		want, _ := json.Marshal(id)
		got, err := marshalItem(id)
		if err != nil || string(got) != string(want) {
			t.Errorf("marshalItem(%q) = %s, %v; want %s", id, got, err, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { marshalItem("0123456789abcdef") }); n > 1 {
		t.Errorf("marshalItem of a hex ID: %v allocations, want 1", n)
	}
}

// appended writes itself by hand, as an Appender; refuse makes it leave
// itself to json.Marshal.
type appended struct {
	A      string `json:"a"`
	refuse bool
}

func (a appended) SizeJSON() int { return len(a.A) + 8 }

func (a appended) AppendJSON(b []byte) ([]byte, bool) {
	if a.refuse {
		return append(b, "garbage"...), false
	}
	return append(append(append(b, `{"a":"`...), a.A...), `"}`...), true
}

// TestDoneValueAppender: a value that writes itself makes the line
// json.Marshal's value would make; one that declines is marshalled.
func TestDoneValueAppender(t *testing.T) {
	j := &Journal{path: "x"}
	for _, v := range []appended{{A: "v"}, {A: "w", refuse: true}} {
		got, err := j.doneValueLine(Key{Item: "it", Repeat: 2}, v)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"t":"done","i":"it","r":2,"d":{"a":"` + v.A + `"}}` + "\n"; string(got) != want {
			t.Fatalf("line %q, want %q", got, want)
		}
	}
}
