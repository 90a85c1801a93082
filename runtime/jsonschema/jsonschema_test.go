package jsonschema

import (
	"strings"
	"testing"
)

// A schema outside the subset, or malformed, is refused when it is
// compiled, with the place in the schema that is wrong.
func TestCompileRefuses(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{``, "not JSON"},
		{`{"type": "object"} x`, "not JSON: extra data"},
		{`3`, "#: a schema is an object or a boolean, not integer"},
		{`{"properties": {"email": {"type": "string", "format": "email"}}}`, `#/properties/email/format: not supported yet: keyword "format"`},
		{`{"$defs": {"a": {"multipleOf": 2}}}`, `#/$defs/a/multipleOf: not supported yet`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#"}`, "#/$schema: not supported yet"},
		{`{"$ref": "other.json#/a"}`, `#/$ref: not supported yet: $ref "other.json#/a"`},
		{`{"$ref": "#foo"}`, `#/$ref: not supported yet: $ref "#foo" (only JSON pointers`},
		{`{"$ref": "#/$defs/missing"}`, `#/$ref: $ref "#/$defs/missing" points at nothing`},
		{`{"items": [{"type": "string"}]}`, "#/items: items is one schema in draft 2020-12 (a tuple is prefixItems)"},
		{`{"type": "thing"}`, "#/type: unknown type thing"},
		{`{"minLength": -1}`, "#/minLength: want a non-negative integer"},
		{`{"maxItems": 1.5}`, "#/maxItems: want a non-negative integer"},
		{`{"minimum": "3"}`, "#/minimum: want a number, not string"},
		{`{"pattern": "(?<=a)b"}`, "#/pattern: error parsing regexp"},
		{`{"required": ["a", 1]}`, "#/required: want an array of strings"},
		{`{"anyOf": []}`, "#/anyOf: want a non-empty array of schemas"},
		{`{"properties": {"a~b/c": {"then": {}}}}`, "#/properties/a~0b~1c/then: not supported yet"},
	} {
		_, err := Compile(c.schema)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.schema, err, c.want)
		}
	}
}

// Each failure names where in the value it is and what was wanted.
func TestValidateMessages(t *testing.T) {
	const person = `{
		"type": "object",
		"required": ["name"],
		"properties": {
			"name": {"type": "string", "minLength": 2},
			"age": {"type": "integer", "minimum": 0},
			"tags": {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": true}
		},
		"additionalProperties": false
	}`
	for _, c := range []struct{ schema, value, want string }{
		{person, `{"name": "Al", "age": 3, "tags": ["a"]}`, ""},
		{person, `{"age": 3}`, `at $: missing required property "name"`},
		{person, `{"name": "A"}`, "at /name: 1 characters, want at least 2"},
		{person, `{"name": "Al", "age": 2.5}`, "at /age: got number, want integer"},
		{person, `{"name": "Al", "age": -1}`, "at /age: -1, want >= 0"},
		{person, `{"name": "Al", "tags": ["a", "c"]}`, `at /tags/1: "c" is not one of the enum's values`},
		{person, `{"name": "Al", "tags": ["a", "a"]}`, "at /tags: items 0 and 1 are equal"},
		{person, `{"name": "Al", "x": 1}`, `additional property "x": at /x: the schema #/additionalProperties accepts nothing`},
		{`{"anyOf": [{"type": "string"}, {"type": "null"}]}`, `1`, "at $: matches none of anyOf's 2 schemas"},
		{`{"oneOf": [{"minimum": 0}, {"maximum": 10}]}`, `5`, "at $: matches 2 of oneOf's 2 schemas, want exactly 1"},
		{`{"not": {"const": {"a": [1]}}}`, `{"a": [1.0]}`, "at $: matches the schema #/not, which it must not"},
		// Characters, not bytes: "é" is one.
		{`{"maxLength": 1}`, `"é"`, ""},
		{`{"pattern": "^[0-9]+$"}`, `"12a"`, `at $: "12a" does not match the pattern "^[0-9]+$"`},
		{`{"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}`, `[1, "x", 2]`, "at /2: got integer, want string"},
		// A $ref that never consumes the value ends, as an error.
		{`{"$ref": "#"}`, `1`, "recurses more than 512 levels"},
		// A recursive schema through $defs: a tree of any depth.
		{`{"$ref": "#/$defs/t", "$defs": {"t": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}}}}}`,
			`{"kids": [{"kids": [{"kids": 3}]}]}`, "at /kids/0/kids/0/kids: got integer, want array"},
	} {
		s, err := Compile(c.schema)
		if err != nil {
			t.Fatalf("%s: %v", c.schema, err)
		}
		v, err := Decode(c.value)
		if err != nil {
			t.Fatalf("%s: %v", c.value, err)
		}
		err = s.Validate(v)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s on %s: %v, want valid", c.schema, c.value, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s on %s: %v, want an error containing %q", c.schema, c.value, err, c.want)
		}
	}
}
