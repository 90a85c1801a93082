package bench

import "github.com/nel-eval/nel/runtime/jsonany"

// appendCanonical appends what canonicalJSON's encoder writes for v, and
// reports false, leaving v to encoding/json, for what jsonany.AppendValue
// does not write. Why: every item's ID hashes its content's canonical JSON,
// and encoding/json's reflection was a quarter of the CPU a shard spends
// reading its dataset before its first request (issue 23).
// TestAppendCanonicalAgrees and FuzzAppendCanonical hold it to
// encoding/json's bytes: the IDs must not change.
func appendCanonical(dst []byte, v any) ([]byte, bool) { return jsonany.AppendValue(dst, v) }

// appendJSONString writes s quoted as canonicalJSON does.
func appendJSONString(dst []byte, s string) []byte { return jsonany.AppendStringNoHTML(dst, s) }
