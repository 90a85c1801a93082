package bench

import (
	"bytes"
	"crypto/sha256"
	byteorder "encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
)

// canonicalJSON encodes v with sorted object keys (encoding/json sorts map
// keys), no HTML escaping and json.Number written as its literal text.
func canonicalJSON(v any) []byte {
	if b, ok := appendCanonical(make([]byte, 0, 256), v); ok {
		return b
	}
	b, err := encodeCanonical(v)
	if err != nil {
		// Content holds only strings, numbers, bools, lists and maps
		// built by this package; anything else is a programming error.
		panic("bench: content is not JSON: " + err.Error())
	}
	return b
}

// encodeCanonical is canonicalJSON by encoding/json: what appendCanonical
// leaves, and the bytes it must write.
func encodeCanonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ContentID is the first 16 hex digits of the sha256 of content's
// canonical JSON.
func ContentID(content map[string]any) string {
	return hex.EncodeToString(contentSum(content))
}

// contentSum is the first 8 bytes of the sha256 of content's canonical JSON.
func contentSum(content map[string]any) []byte {
	sum := sha256.Sum256(canonicalJSON(content))
	return sum[:8]
}

// Duplicate is an item whose content repeats an earlier item's.
type Duplicate struct {
	Origin string // where the repeat is (Item.Origin)
	First  string // where the content first appears
}

// AssignIDs sets every item's ID to ContentID(Content). When a dataset holds
// the same content more than once, the k-th repeat (k >= 1, in item order)
// gets the ContentID of its content plus {"_dup": k}: IDs stay unique, and
// since the repeats are identical it does not matter which one is which.
// It returns the repeats, so that they can be reported.
func AssignIDs(items []Item) []Duplicate {
	ids := NewIDs(len(items))
	var dups []Duplicate
	for i := range items {
		id, first := ids.Next(items[i].Content, i)
		if first >= 0 {
			dups = append(dups, Duplicate{Origin: items[i].Origin, First: items[first].Origin})
		}
		items[i].ID = id
	}
	return dups
}

// IDs gives items their IDs one at a time, in dataset order, as AssignIDs
// does for a slice: a reader that streams the dataset and keeps a few
// items still numbers the repeats of the whole. It holds 16 bytes a
// distinct content (the ID's 64 bits, the count and the first index), not
// the items.
type IDs struct {
	seen map[uint64]uint64 // content sum → count<<32 | index of the first
}

// NewIDs returns an IDs with room for about n items.
func NewIDs(n int) *IDs { return &IDs{seen: make(map[uint64]uint64, n)} }

// Next returns the ID of the item at index (< 2^32) with content, and
// the index of the first item with the same content when it is a repeat
// (else -1).
func (a *IDs) Next(content map[string]any, index int) (id string, first int) {
	return a.next(contentSum(content), func() map[string]any { return content }, index)
}

// NextSum is Next for an item whose content sum (the first 8 bytes of its
// ContentID) is known; content is called only for a repeat, whose ID
// hashes its content again.
func (a *IDs) NextSum(sum [8]byte, content func() map[string]any, index int) (id string, first int) {
	return a.next(sum[:], content, index)
}

// NextID is Next for an item whose ContentID is known: base.
func (a *IDs) NextID(base string, content map[string]any, index int) (id string, first int, err error) {
	var sum [8]byte
	// The length first: Decode writes len(base)/2 bytes into sum.
	if len(base) != hex.EncodedLen(len(sum)) {
		return "", 0, fmt.Errorf("content id %q: not 16 hex digits", base)
	}
	if _, err := hex.Decode(sum[:], []byte(base)); err != nil {
		return "", 0, fmt.Errorf("content id %q: not 16 hex digits", base)
	}
	id, first = a.next(sum[:], func() map[string]any { return content }, index)
	return id, first, nil
}

func (a *IDs) next(sum []byte, content func() map[string]any, index int) (id string, first int) {
	key := byteorder.BigEndian.Uint64(sum)
	v, seen := a.seen[key]
	if !seen {
		a.seen[key] = 1<<32 | uint64(index)
		return hex.EncodeToString(sum), -1
	}
	a.seen[key] = v + 1<<32
	c := maps.Clone(content())
	c["_dup"] = int(v >> 32)
	return ContentID(c), int(v & 0xffffffff)
}

// DescribeDuplicates words repeats for a warning: how many, and where the
// first few are ("test.jsonl:9 repeats test.jsonl:2"), "" when none.
func DescribeDuplicates(dups []Duplicate) string {
	if len(dups) == 0 {
		return ""
	}
	const shown = 5
	var where []string
	for i, d := range dups {
		if i == shown {
			where = append(where, fmt.Sprintf("and %d more", len(dups)-shown))
			break
		}
		where = append(where, d.Origin+" repeats "+d.First)
	}
	noun := "item repeats"
	if len(dups) > 1 {
		noun = "items repeat"
	}
	return fmt.Sprintf("%d %s the content of an earlier one (each is evaluated, so it counts more than once): %s", len(dups), noun, strings.Join(where, "; "))
}
