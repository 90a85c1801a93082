// Package jsonschema validates JSON values against a JSON Schema (draft
// 2020-12) restricted to the keywords a scorer needs, and refuses a schema
// that uses any other keyword rather than ignore it.
//
// nel-run carries it instead of a general validator: every draft, formats
// and remote references cost the node binary about 0.68 MB (x/text's
// message catalogs came with them) for schemas that say which fields an
// answer has and what they hold. A keyword outside the subset is an error
// when the schema is compiled (at `nel compile`), never a silent pass.
package jsonschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Draft is the only $schema a schema may name (or name none).
const Draft = "https://json-schema.org/draft/2020-12/schema"

// keywords are those that constrain a value.
var keywords = []string{
	"$ref", "additionalProperties", "allOf", "anyOf", "const", "enum",
	"exclusiveMaximum", "exclusiveMinimum", "items", "maxItems", "maxLength",
	"maximum", "minItems", "minLength", "minimum", "not", "oneOf", "pattern",
	"prefixItems", "properties", "required", "type", "uniqueItems",
}

// annotations change no verdict; they are read past. $defs and
// definitions hold schemas that $ref points at (they are compiled, so an
// unsupported keyword there is refused too).
var annotations = []string{
	"$comment", "$defs", "$schema", "default", "definitions", "deprecated",
	"description", "examples", "readOnly", "title", "writeOnly",
}

// Keywords lists what a schema may say, for messages and documentation.
func Keywords() []string { return slices.Concat(keywords, annotations) }

// Schema is a compiled schema.
type Schema struct{ root *node }

// node is one schema location. A nil limit is unset.
type node struct {
	loc      string // where it is in the schema, as a JSON pointer fragment
	always   *bool  // a boolean schema
	types    []string
	propKeys []string // sorted: the first error found is always the same one
	props    map[string]*node
	required []string
	addl     *node
	prefix   []*node
	items    *node
	enum     []any
	hasConst bool
	constant any

	minimum, maximum, exclusiveMin, exclusiveMax *float64
	minLength, maxLength, minItems, maxItems     int // -1 when unset

	pattern *regexp.Regexp
	unique  bool

	allOf, anyOf, oneOf []*node
	not, ref            *node
}

// compiler compiles one document; nodes are cached by location so that a
// $ref and the walk that reaches the same place share one node (and a
// recursive schema closes on itself).
type compiler struct {
	doc   any
	nodes map[string]*node
}

// Compile compiles a schema given as JSON text.
func Compile(text string) (*Schema, error) {
	doc, err := Decode(text)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := &compiler{doc: doc, nodes: map[string]*node{}}
	root, err := c.compile(doc, "#")
	if err != nil {
		return nil, err
	}
	return &Schema{root: root}, nil
}

// Decode reads one JSON value as Python's json.loads would accept it
// (nothing after it but space), numbers kept as json.Number so that
// integers stay exact until a keyword compares them.
func Decode(text string) (any, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("extra data after the JSON value")
	}
	return v, nil
}

func (c *compiler) compile(v any, loc string) (*node, error) {
	if n, ok := c.nodes[loc]; ok {
		return n, nil
	}
	n := &node{loc: loc, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	c.nodes[loc] = n
	switch s := v.(type) {
	case bool:
		n.always = &s
		return n, nil
	case map[string]any:
		for _, k := range sortedKeys(s) {
			if err := c.keyword(n, k, s[k], loc+"/"+escape(k)); err != nil {
				return nil, err
			}
		}
		return n, nil
	}
	return nil, fmt.Errorf("%s: a schema is an object or a boolean, not %s", loc, kind(v))
}

// keyword compiles one keyword of n; at is the keyword's location.
func (c *compiler) keyword(n *node, k string, v any, at string) error {
	var err error
	switch k {
	case "$schema":
		if s, ok := v.(string); !ok || strings.TrimSuffix(s, "#") != Draft {
			return fmt.Errorf("%s: not supported yet: %v (nel validates draft 2020-12: name %s or no $schema)", at, v, Draft)
		}
	case "$comment", "default", "deprecated", "description", "examples", "readOnly", "title", "writeOnly":
	case "$defs", "definitions", "properties":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object of schemas, not %s", at, kind(v))
		}
		keys := sortedKeys(m)
		subs := make(map[string]*node, len(m))
		for _, name := range keys {
			if subs[name], err = c.compile(m[name], at+"/"+escape(name)); err != nil {
				return err
			}
		}
		if k == "properties" {
			n.propKeys, n.props = keys, subs
		}
	case "$ref":
		n.ref, err = c.ref(v, at)
	case "additionalProperties":
		n.addl, err = c.compile(v, at)
	case "items":
		if _, isArray := v.([]any); isArray {
			return fmt.Errorf("%s: items is one schema in draft 2020-12 (a tuple is prefixItems)", at)
		}
		n.items, err = c.compile(v, at)
	case "not":
		n.not, err = c.compile(v, at)
	case "prefixItems", "allOf", "anyOf", "oneOf":
		err = c.schemaList(n, k, v, at)
	default:
		return c.assertion(n, k, v, at)
	}
	return err
}

// schemaList compiles a keyword whose value is a non-empty array of schemas.
func (c *compiler) schemaList(n *node, k string, v any, at string) error {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return fmt.Errorf("%s: want a non-empty array of schemas", at)
	}
	list := make([]*node, len(a))
	for i, s := range a {
		var err error
		if list[i], err = c.compile(s, at+"/"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	*map[string]*[]*node{"prefixItems": &n.prefix, "allOf": &n.allOf, "anyOf": &n.anyOf, "oneOf": &n.oneOf}[k] = list
	return nil
}

// assertion compiles a keyword that checks the value itself.
func (c *compiler) assertion(n *node, k string, v any, at string) error {
	var err error
	switch k {
	case "type":
		n.types, err = types(v)
	case "required":
		n.required, err = stringList(v)
	case "enum":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array", at)
		}
		n.enum = a
	case "const":
		n.hasConst, n.constant = true, v
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		f, ok := number(v)
		if !ok {
			return fmt.Errorf("%s: want a number, not %s", at, kind(v))
		}
		*map[string]**float64{"minimum": &n.minimum, "maximum": &n.maximum,
			"exclusiveMinimum": &n.exclusiveMin, "exclusiveMaximum": &n.exclusiveMax}[k] = &f
	case "minLength", "maxLength", "minItems", "maxItems":
		f, ok := number(v)
		if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
			return fmt.Errorf("%s: want a non-negative integer, not %v", at, v)
		}
		*map[string]*int{"minLength": &n.minLength, "maxLength": &n.maxLength,
			"minItems": &n.minItems, "maxItems": &n.maxItems}[k] = int(f)
	case "pattern":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: want a string", at)
		}
		if n.pattern, err = regexp.Compile(s); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
	case "uniqueItems":
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%s: want true or false", at)
		}
		n.unique = b
	default:
		return fmt.Errorf("%s: not supported yet: keyword %q (nel's validator knows %s)", at, k, strings.Join(Keywords(), ", "))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	return nil
}

// ref resolves a $ref within the document: "#" or "#/a/json/pointer".
func (c *compiler) ref(v any, at string) (*node, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%s: want a string", at)
	}
	if !strings.HasPrefix(s, "#") {
		return nil, fmt.Errorf("%s: not supported yet: $ref %q (a schema may only refer to itself, as \"#/$defs/name\"; nel reads no other schema)", at, s)
	}
	frag, err := url.PathUnescape(s[1:])
	if err != nil || (frag != "" && !strings.HasPrefix(frag, "/")) {
		return nil, fmt.Errorf("%s: not supported yet: $ref %q (only JSON pointers: \"#\", \"#/$defs/name\")", at, s)
	}
	target, loc := c.doc, "#"
	if frag != "" {
		for _, tok := range strings.Split(frag[1:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			loc += "/" + escape(tok)
			switch t := target.(type) {
			case map[string]any:
				target, ok = t[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				ok = err == nil && i >= 0 && i < len(t)
				if ok {
					target = t[i]
				}
			default:
				ok = false
			}
			if !ok {
				return nil, fmt.Errorf("%s: $ref %q points at nothing in the schema", at, s)
			}
		}
	}
	return c.compile(target, loc)
}

func types(v any) ([]string, error) {
	list := []any{v}
	if a, ok := v.([]any); ok {
		list = a
	}
	var out []string
	for _, t := range list {
		s, _ := t.(string)
		switch s {
		case "null", "boolean", "object", "array", "number", "integer", "string":
			out = append(out, s)
		default:
			return nil, fmt.Errorf("unknown type %v (null, boolean, object, array, number, integer, string)", t)
		}
	}
	return out, nil
}

func stringList(v any) ([]string, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, errors.New("want an array of strings")
	}
	out := make([]string, len(a))
	for i, s := range a {
		if out[i], ok = s.(string); !ok {
			return nil, errors.New("want an array of strings")
		}
	}
	return out, nil
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// escape is a JSON pointer token: ~ and / escaped.
func escape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}
