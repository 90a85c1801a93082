package compiler

import (
	"encoding/json"
	"maps"
	"slices"
)

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
