package bench

import (
	"strings"
	"testing"
)

// NextID numbers an item by its known ContentID as Next does by its
// content, and refuses a base that is not 16 hex digits with an error
// (a longer one overran the 8-byte sum and panicked).
func TestNextID(t *testing.T) {
	content := map[string]any{"q": "1"}
	want, _ := NewIDs(1).Next(content, 0)
	ids := NewIDs(1)
	if id, first, err := ids.NextID(ContentID(content), content, 0); err != nil || id != want || first != -1 {
		t.Errorf("NextID = %q, %d, %v; want %q, -1 (as Next)", id, first, err, want)
	}
	for _, base := range []string{"", "0123", "0123456789abcdeg", "0123456789abcdef00", strings.Repeat("ab", 40)} {
		if _, _, err := NewIDs(1).NextID(base, content, 0); err == nil {
			t.Errorf("NextID(%q): no error, want one (not 16 hex digits)", base)
		}
	}
}
