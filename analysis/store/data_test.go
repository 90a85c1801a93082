package store_test

import (
	"strings"
	"testing"

	"github.com/nel-eval/nel/analysis/store"
)

// TestManifestData: the data list of a recipe entry survives publish and
// fetch, and a list that names what the entry does not hold, or a digest
// that is not one, is refused.
func TestManifestData(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	files := writeFiles(t, map[string]string{
		"canonical.json":                      "{}",
		"recipe/suite.cue":                    "x: 1\n",
		"recipe/data/items.json":              "hello\n",
		"data/" + digest[7:] + "/set/a.jsonl": "{}\n",
	})
	m := recipeManifest()
	m.Data = []store.DataRef{
		{Field: "benchmarks[0].params.data_path", Spec: "data/items.json", Digest: digest, Path: "recipe/data/items.json"},
		{Field: "benchmarks[1].params.data_path", Spec: "/abs/set", Digest: digest, Path: "data/" + digest[7:] + "/set"},
		{Field: "benchmarks[2].params.data_path", Spec: "/abs/gone.jsonl", Digest: digest},
	}
	st, _ := openDir(t)
	if _, err := store.Publish(t.Context(), st, m, files); err != nil {
		t.Fatal(err)
	}
	got, err := store.FetchRecipe(t.Context(), st, canonHash, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 3 || got.Data[1] != m.Data[1] || got.Data[2].Path != "" {
		t.Errorf("fetched data list %+v, published %+v", got.Data, m.Data)
	}

	for _, c := range []struct {
		name string
		ref  store.DataRef
		want string
	}{
		{"not held", store.DataRef{Field: "f", Spec: "x", Digest: digest, Path: "data/nope.jsonl"}, `data[0] (f): "data/nope.jsonl" is not among its files`},
		{"a prefix of a file name is no folder", store.DataRef{Field: "f", Spec: "x", Digest: digest, Path: "recipe/data/items"}, "is not among its files"},
		{"leaves the entry", store.DataRef{Field: "f", Spec: "x", Digest: digest, Path: "../x"}, "leaves its directory"},
		{"bad digest", store.DataRef{Field: "f", Spec: "x", Digest: "md5:00"}, `digest "md5:00" is not sha256:<64 lowercase hex digits>`},
	} {
		m := recipeManifest()
		m.Data = []store.DataRef{c.ref}
		if _, _, err := store.Prepare(m, files); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}
