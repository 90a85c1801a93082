package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
)

// canonicalJSON encodes v with sorted object keys (encoding/json sorts map
// keys), no HTML escaping and json.Number written as its literal text.
func canonicalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Content holds only strings, numbers, bools, lists and maps
		// built by this package; anything else is a programming error.
		panic("bench: content is not JSON: " + err.Error())
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// ContentID is the first 16 hex digits of the sha256 of content's
// canonical JSON.
func ContentID(content map[string]any) string {
	sum := sha256.Sum256(canonicalJSON(content))
	return hex.EncodeToString(sum[:])[:16]
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
	type first struct {
		n      int
		origin string
	}
	seen := make(map[string]first, len(items))
	var dups []Duplicate
	for i := range items {
		base := ContentID(items[i].Content)
		f := seen[base]
		id := base
		if f.n == 0 {
			f.origin = items[i].Origin
		} else {
			c := maps.Clone(items[i].Content)
			c["_dup"] = f.n
			id = ContentID(c)
			dups = append(dups, Duplicate{Origin: items[i].Origin, First: f.origin})
		}
		f.n++
		seen[base] = f
		items[i].ID = id
	}
	return dups
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
