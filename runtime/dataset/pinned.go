package dataset

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/nel-eval/nel/runtime/plan"
)

// Pinned loads only what a lock pinned: each spec at its locked revision,
// and only when its content digest is the locked one. A spec the lock does
// not know is refused rather than resolved afresh.
type Pinned struct {
	Loader interface {
		Load(ctx context.Context, spec string, opts LoadOptions) (*Dataset, error)
	}
	Pins []plan.DataPin
	// Local says the pins are an unlocked recipe's local datasets, as
	// the compiler hashed them: other specs load unchecked, and a changed
	// file is refused as changed since compiling, not since locking.
	Local bool
}

// Load loads spec at its pinned revision and checks its digest.
func (p *Pinned) Load(ctx context.Context, spec string, opts LoadOptions) (*Dataset, error) {
	pin, err := p.pin(spec)
	if err != nil {
		return nil, err
	}
	if pin == nil {
		return p.Loader.Load(ctx, spec, opts)
	}
	load, err := atRevision(spec, pin)
	if err != nil {
		return nil, err
	}
	ds, err := p.Loader.Load(ctx, load, opts)
	if err != nil {
		return nil, err
	}
	ds.Spec = spec
	if err := p.check(pin, ds); err != nil {
		return nil, err
	}
	return ds, nil
}

// atRevision is spec at pin's revision: a Hub spec with its revision
// replaced by the pin's; other specs as they are.
func atRevision(spec string, pin *plan.DataPin) (string, error) {
	if pin == nil || pin.Revision == "" || !strings.HasPrefix(spec, "hf://") {
		return spec, nil
	}
	u, err := url.Parse(spec)
	if err != nil {
		return "", fmt.Errorf("dataset %s: %w", spec, err)
	}
	q := u.Query()
	q.Set("revision", pin.Revision)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// pin returns spec's pin: nil when the pins are local and do not name it
// (it loads unchecked), an error when a lock does not name it.
func (p *Pinned) pin(spec string) (*plan.DataPin, error) {
	for i := range p.Pins {
		if p.Pins[i].Spec == spec {
			return &p.Pins[i], nil
		}
	}
	if p.Local {
		return nil, nil
	}
	known := make([]string, len(p.Pins))
	for i, q := range p.Pins {
		known[i] = q.Spec
	}
	return nil, fmt.Errorf("dataset %s: not in the recipe's lock (it pins %s): run nel lock again", spec, strings.Join(known, ", "))
}

// check refuses ds when its digest is not pin's.
func (p *Pinned) check(pin *plan.DataPin, ds *Dataset) error {
	if ds.Digest != pin.Digest && p.Local {
		return fmt.Errorf("dataset %s: content %s differs from the %s the recipe hash covers (%s): the data changed since the job was compiled; restore it, or compile again (the recipe hash will change)",
			ds.Spec, ds.Digest, pin.Digest, diffFiles(pin.Files, ds.Parts))
	}
	if ds.Digest != pin.Digest {
		return fmt.Errorf("dataset %s: content %s differs from the locked %s (%s): the data changed since nel lock; restore it, or lock again and publish a new recipe hash",
			ds.Spec, ds.Digest, pin.Digest, diffFiles(pin.Files, ds.Parts))
	}
	return nil
}

// Stream streams spec with the loader underneath, at its pinned
// revision, checking its digest once read; a spec the lock does not name
// is not streamed (Load says why).
func (p *Pinned) Stream(ctx context.Context, spec string) (Stream, bool) {
	s, ok := p.Loader.(Streamer)
	if !ok {
		return nil, false
	}
	pin, err := p.pin(spec)
	if err != nil {
		return nil, false
	}
	load, err := atRevision(spec, pin)
	if err != nil {
		return nil, false
	}
	st, ok := s.Stream(ctx, load)
	if !ok {
		return nil, false
	}
	return &pinnedStream{Stream: st, p: p, pin: pin, spec: spec}, true
}

// pinnedStream checks what a Stream read against its pin, and names what
// it read by the spec as given (as Load does), not at the pin's revision.
type pinnedStream struct {
	Stream
	p    *Pinned
	pin  *plan.DataPin // nil: unchecked
	spec string
}

// Windows reads the files and checks their digest. A changed file is
// reported before an error of fn: fn may have refused a record only
// because the file changed.
func (s *pinnedStream) Windows(ctx context.Context, opts LoadOptions, size int, fn func(w *Dataset) error) (*Dataset, error) {
	ds, err := s.Stream.Windows(ctx, opts, size, func(w *Dataset) error {
		w.Spec = s.spec
		return fn(w)
	})
	if ds == nil {
		return ds, err
	}
	ds.Spec = s.spec
	if s.pin == nil {
		return ds, err
	}
	if cerr := s.p.check(s.pin, ds); cerr != nil {
		return nil, cerr
	}
	return ds, err
}

// diffFiles names the first files that differ between a pin and what was
// read.
func diffFiles(want []plan.DataFile, got []Part) string {
	w := map[string]string{}
	for _, f := range want {
		w[f.Name] = f.SHA256
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range got {
		seen[p.Name] = true
		switch sum, ok := w[p.Name]; {
		case !ok:
			out = append(out, p.Name+" is new")
		case sum != p.SHA256:
			out = append(out, fmt.Sprintf("%s has sha256 %s, locked %s", p.Name, short(p.SHA256), short(sum)))
		}
	}
	for _, f := range want {
		if !seen[f.Name] {
			out = append(out, f.Name+" is missing")
		}
	}
	if len(out) == 0 {
		return "the same files in another order"
	}
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("%d more", len(out)-3))
	}
	return strings.Join(out, "; ")
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// PinsOf turns loaded datasets into the pins a lock records.
func PinsOf(dss []*Dataset) []plan.DataPin {
	out := make([]plan.DataPin, 0, len(dss))
	for _, d := range dss {
		pin := plan.DataPin{Spec: d.Spec, Revision: d.Revision, Digest: d.Digest, Files: make([]plan.DataFile, len(d.Parts))}
		for i, p := range d.Parts {
			pin.Files[i] = plan.DataFile{Name: p.Name, SHA256: p.SHA256}
		}
		out = append(out, pin)
	}
	return out
}
