package retryafter

import (
	"net/http"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 120 * time.Second, true},
		{" 3 ", 3 * time.Second, true},
		{"0", 0, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"-1", 0, false},
		{"", 0, false},
		{"soon", 0, false},
		{"1e300", 0, false},
		{"Wed, 21 Oct 2015 07:28:00 GMT", 0, true}, // in the past
	} {
		got, ok := Parse(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Parse(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	if d, ok := Parse(future); !ok || d < 85*time.Second || d > 90*time.Second {
		t.Errorf("Parse(a date 90 s ahead) = %v, %v", d, ok)
	}
}
