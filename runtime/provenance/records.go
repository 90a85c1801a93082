package provenance

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// Parse reads a results file's provenance metadata: one shard's Record (a
// JSON object) or a merged file's records (a JSON array). "" is no
// records.
func Parse(s string) ([]Record, error) {
	b := bytes.TrimSpace([]byte(s))
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] == '[' {
		var recs []Record
		if err := json.Unmarshal(b, &recs); err != nil {
			return nil, fmt.Errorf("provenance records: %w", err)
		}
		return recs, nil
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("provenance record: %w", err)
	}
	return []Record{r}, nil
}

// Join is the merged file's provenance: the distinct records of recs (equal
// when their JSON is), ordered by hostname, then JSON, as a JSON array.
func Join(recs []Record) (string, error) {
	type enc struct {
		host string
		js   []byte
	}
	var all []enc
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return "", fmt.Errorf("provenance record: %w", err)
		}
		all = append(all, enc{r.Host.Hostname, b})
	}
	slices.SortFunc(all, func(a, b enc) int {
		return cmp.Or(cmp.Compare(a.host, b.host), bytes.Compare(a.js, b.js))
	})
	all = slices.CompactFunc(all, func(a, b enc) bool { return bytes.Equal(a.js, b.js) })
	var out bytes.Buffer
	out.WriteByte('[')
	for i, e := range all {
		if i > 0 {
			out.WriteByte(',')
		}
		out.Write(e.js)
	}
	out.WriteByte(']')
	return out.String(), nil
}
