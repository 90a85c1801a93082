package dataset

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
)

// specLoader records the specs asked for and serves a fixed dataset.
type specLoader struct {
	asked []string
	ds    Dataset
}

func (l *specLoader) Load(_ context.Context, spec string, _ LoadOptions) (*Dataset, error) {
	l.asked = append(l.asked, spec)
	d := l.ds
	d.Spec = spec
	d.Digest = Digest(d.Parts)
	return &d, nil
}

func TestPinnedHubRevision(t *testing.T) {
	parts := []Part{{Name: "main/test.parquet", SHA256: "ab"}}
	inner := &specLoader{ds: Dataset{Parts: parts, Revision: "c0ffee"}}
	pin := plan.DataPin{Spec: "hf://openai/gsm8k?config=main&split=test", Revision: "c0ffee", Digest: Digest(parts)}
	p := &Pinned{Loader: inner, Pins: []plan.DataPin{pin}}
	ds, err := p.Load(context.Background(), pin.Spec, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Loaded at the locked commit, whatever the recipe's revision says;
	// named by the spec as the recipe writes it.
	if len(inner.asked) != 1 || !strings.Contains(inner.asked[0], "revision=c0ffee") || !strings.Contains(inner.asked[0], "split=test") {
		t.Errorf("asked %q, want the spec at revision c0ffee", inner.asked)
	}
	if ds.Spec != pin.Spec {
		t.Errorf("Spec = %q, want %q", ds.Spec, pin.Spec)
	}

	// A spec the lock does not know is refused, not resolved.
	if _, err := p.Load(context.Background(), "hf://other/x", LoadOptions{}); err == nil || !strings.Contains(err.Error(), "not in the recipe's lock") {
		t.Errorf("unknown spec: %v", err)
	}
	if len(inner.asked) != 1 {
		t.Errorf("an unknown spec reached the loader: %q", inner.asked)
	}
}

func TestPinnedLocalContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.jsonl")
	if err := os.WriteFile(path, []byte(`{"q":"1+1","a":"2"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := NewLoader(Options{BaseDir: dir, Offline: true})
	ds, err := l.Load(context.Background(), "d.jsonl", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pins := PinsOf([]*Dataset{ds})
	if pins[0].Spec != "d.jsonl" || pins[0].Digest != ds.Digest || len(pins[0].Files) != 1 || pins[0].Files[0].SHA256 != ds.Parts[0].SHA256 {
		t.Fatalf("PinsOf = %+v", pins)
	}
	p := &Pinned{Loader: l, Pins: pins}
	if _, err := p.Load(context.Background(), "d.jsonl", LoadOptions{}); err != nil {
		t.Fatalf("unchanged data: %v", err)
	}
	// One byte more: refused, naming the file and both digests.
	if err := os.WriteFile(path, []byte(`{"q":"1+1","a":"3"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = p.Load(context.Background(), "d.jsonl", LoadOptions{})
	if err == nil {
		t.Fatal("changed data loaded")
	}
	for _, want := range []string{"dataset d.jsonl: content sha256:", "differs from the locked " + ds.Digest, "d.jsonl has sha256 "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q: want %q", err, want)
		}
	}
}

// TestPinnedHubMovedBranch: after the Hub's main moves on, a locked spec
// still reads the commit it was locked at (through the Hub's API, a mock
// of it here), while an unlocked load follows main.
func TestPinnedHubMovedBranch(t *testing.T) {
	clearHubEnv(t)
	m, srv := newMockHub(t)
	l := hubLoader(srv, t.TempDir(), "")
	ctx := context.Background()
	const spec = "hf://o/gsm?config=main&split=test"
	locked, err := l.Load(ctx, spec, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pins := PinsOf([]*Dataset{locked})
	if pins[0].Revision != sha40("gsm") {
		t.Fatalf("pinned revision %q, want the commit main pointed at", pins[0].Revision)
	}

	// main moves to a commit with other test data.
	next := &mockRev{sha: sha40("gsm-next"), files: map[string][]byte{"main/test-00000-of-00001.parquet": qaParquet(t, "next", 4)}}
	m.repos["o/gsm"].revs["main"] = next
	m.repos["o/gsm"].revs[next.sha] = next

	fresh, err := NewLoader(Options{CacheDir: t.TempDir(), Endpoint: srv.URL + "/", Client: srv.Client()}).Load(ctx, spec, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Revision != next.sha || fresh.Digest == locked.Digest {
		t.Fatalf("an unlocked load should follow main: revision %s", fresh.Revision)
	}
	p := &Pinned{Loader: NewLoader(Options{CacheDir: t.TempDir(), Endpoint: srv.URL + "/", Client: srv.Client()}), Pins: pins}
	ds, err := p.Load(ctx, spec, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Digest != locked.Digest || ds.Revision != sha40("gsm") || len(ds.Records()) != 3 {
		t.Errorf("locked load: revision %s, %d records, digest %s; want the locked commit's 3 records", ds.Revision, len(ds.Records()), ds.Digest)
	}
}
