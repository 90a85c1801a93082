package compiler

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Canonical returns the canonical JSON of v: object keys sorted, no
// insignificant whitespace, no HTML escaping, and numbers in one form
// whatever their source (1, 1.0 and 1e0 are all "1"), as in RFC 8785.
// v is any JSON-able Go value; it is round-tripped through encoding/json
// so structs, maps and cue.Values all reach the same form.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	var b bytes.Buffer
	if err := writeCanonical(&b, x); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeCanonical(b *bytes.Buffer, x any) error {
	switch x := x.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		s, err := canonicalNumber(string(x))
		if err != nil {
			return err
		}
		b.WriteString(s)
	case string:
		writeString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // byte order of UTF-8 = code point order
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := writeCanonical(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("canonical json: unexpected %T", x)
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // strings always encode
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// canonicalNumber writes a JSON number the way ECMAScript's
// Number.prototype.toString does (RFC 8785 §3.2.2.3), except that integers
// beyond 2^53 keep all their digits rather than being rounded.
func canonicalNumber(s string) (string, error) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.FormatInt(i, 10), nil
	}
	if !strings.ContainsAny(s, ".eE") {
		// An integer beyond int64 (CUE ints are unbounded): all its
		// digits, or two different values would share a hash.
		if i, ok := new(big.Int).SetString(s, 10); ok {
			return i.String(), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("canonical json: number %s out of range", s)
	}
	if f == 0 {
		return "0", nil
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	}
	// Shortest round-trip digits and exponent, then ES6 layout.
	e := strconv.FormatFloat(math.Abs(f), 'e', -1, 64) // d.ddde±XX
	mant, expS, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expS)
	digits := strings.Replace(mant, ".", "", 1)
	sign := ""
	if f < 0 {
		sign = "-"
	}
	n := exp + 1 // position of the decimal point relative to digits
	switch {
	case n >= 1 && n <= 21:
		if len(digits) <= n {
			return sign + digits + strings.Repeat("0", n-len(digits)), nil
		}
		return sign + digits[:n] + "." + digits[n:], nil
	case n <= 0 && n > -6:
		return sign + "0." + strings.Repeat("0", -n) + digits, nil
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	es := strconv.Itoa(n - 1)
	if n-1 > 0 {
		es = "+" + es
	}
	return sign + m + "e" + es, nil
}

// HashOf is "sha256:" + the hex sha256 of canonical JSON.
func HashOf(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:])
}
