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
	load := spec
	if pin.Revision != "" && strings.HasPrefix(spec, "hf://") {
		u, err := url.Parse(spec)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", spec, err)
		}
		q := u.Query()
		q.Set("revision", pin.Revision)
		u.RawQuery = q.Encode()
		load = u.String()
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

// Streams says whether the loader underneath streams spec; a pin at a
// Hub revision does not.
func (p *Pinned) Streams(spec string) bool {
	s, ok := p.Loader.(Streamer)
	if !ok || !s.Streams(spec) {
		return false
	}
	pin, err := p.pin(spec)
	return err == nil && (pin == nil || pin.Revision == "")
}

// Count counts spec's records with the loader underneath; the content is
// checked by Windows.
func (p *Pinned) Count(ctx context.Context, spec string, opts LoadOptions) (int, error) {
	if !p.Streams(spec) {
		return 0, fmt.Errorf("dataset %s: not supported yet: counting it without loading it", spec)
	}
	return p.Loader.(Streamer).Count(ctx, spec, opts)
}

// Windows streams spec with the loader underneath and checks its digest
// once read. A changed file is reported before an error of fn: fn may
// have refused a record only because the file changed.
func (p *Pinned) Windows(ctx context.Context, spec string, opts LoadOptions, size int, fn func(w *Dataset) error) (*Dataset, error) {
	pin, err := p.pin(spec)
	if err != nil {
		return nil, err
	}
	if !p.Streams(spec) {
		return nil, fmt.Errorf("dataset %s: not supported yet: reading it a window at a time", spec)
	}
	ds, err := p.Loader.(Streamer).Windows(ctx, spec, opts, size, fn)
	if ds == nil || pin == nil {
		return ds, err
	}
	if cerr := p.check(pin, ds); cerr != nil {
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
