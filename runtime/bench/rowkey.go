package bench

import (
	"crypto/sha256"
	"slices"

	"github.com/nel-eval/nel/runtime/dataset"
)

// RowKey says how a RowWise benchmark makes an item's Content when it is
// some of the record's fields, each the string it is in the record. A
// reader that needs only the items' IDs (a shard picking its items among
// a whole dataset's) then reads those fields and leaves the rest of the
// record, and Load, alone.
type RowKey struct {
	// Fields are the record fields Content holds, under the same names.
	Fields []string
	// Accept, when set, says whether Load takes a record with these
	// values (in Fields' order); a record it refuses goes to Load, which
	// says why.
	Accept func(values []string) bool
	order  []int // Fields' indices in the order canonical JSON sorts them
}

// newRowKey is a RowKey over fields.
func newRowKey(accept func([]string) bool, fields ...string) *RowKey {
	order := make([]int, len(fields))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case fields[a] < fields[b]:
			return -1
		case fields[a] > fields[b]:
			return 1
		}
		return 0
	})
	return &RowKey{Fields: fields, Accept: accept, order: order}
}

// Values returns rec's Fields in order, false when one is missing or not
// a string: Load must then read the record.
func (k *RowKey) Values(rec dataset.Record, out []string) ([]string, bool) {
	out = out[:0]
	for _, f := range k.Fields {
		s, ok := rec[f].(string)
		if !ok {
			return out, false
		}
		out = append(out, s)
	}
	return out, k.Accept == nil || k.Accept(out)
}

// Sum returns the first 8 bytes of the ContentID of the item Load makes
// of a record with values (from Values), without building its Content:
// the canonical JSON is written straight into buf, which it returns for
// reuse.
func (k *RowKey) Sum(values []string, buf []byte) ([8]byte, []byte) {
	buf = append(buf[:0], '{')
	for n, i := range k.order {
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, k.Fields[i])
		buf = append(buf, ':')
		buf = appendJSONString(buf, values[i])
	}
	buf = append(buf, '}')
	sum := sha256.Sum256(buf)
	return [8]byte(sum[:8]), buf
}

// Content is the item's Content for values, as Load makes it.
func (k *RowKey) Content(values []string) map[string]any {
	m := make(map[string]any, len(values))
	for i, f := range k.Fields {
		m[f] = values[i]
	}
	return m
}
