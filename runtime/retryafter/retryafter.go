// Package retryafter reads the Retry-After header that rate-limited and
// overloaded HTTP servers send (RFC 9110 §10.2.3). The model client, the
// recipe store and the registry client all honour it; each caps the wait
// for its own purpose.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Parse reads a Retry-After value: delay-seconds (decimals accepted, as
// some servers send them) or an HTTP-date. ok is false when v is empty,
// negative or neither; a date in the past gives 0, true.
func Parse(v string) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > float64(1<<62)/float64(time.Second) {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}
