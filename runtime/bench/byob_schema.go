package bench

import (
	"errors"
	"strings"

	"github.com/nel-eval/nel/runtime/jsonschema"
	"github.com/nel-eval/nel/runtime/score"
)

// jsonSchema is json_schema's compiled schema.
type jsonSchema struct{ s *jsonschema.Schema }

// compileSchema compiles a JSON Schema given as JSON text: draft 2020-12,
// the keywords runtime/jsonschema knows; any other keyword, and a $ref
// outside the schema, is refused (a scorer that fetched schemas at run
// time would score by something the hashes never saw).
func compileSchema(text string) (*jsonSchema, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("json_schema needs a schema")
	}
	s, err := jsonschema.Compile(text)
	if err != nil {
		return nil, err
	}
	return &jsonSchema{s}, nil
}

// CheckSchema reports whether text is a JSON Schema json_schema can use.
func CheckSchema(text string) error {
	_, err := compileSchema(text)
	return err
}

// jsonBlockRE is NeMo Evaluator's extract_json fence: the first ``` block,
// tagged json or not ([\s\S] there is any character: (?s) and ".").
var jsonBlockRE = score.MustCompilePy("(?s)```(?:json)?\\s*(.*?)```")

// extractJSON takes the JSON out of a response as NeMo Evaluator's
// extract_json does: the first fenced block's content if there is one,
// stripped; then the text from the first '{' to the last '}', else from
// the first '[' to the last ']', else the whole text, whichever parses
// first. ok is false when none does.
func extractJSON(response string) (v any, text string, ok bool) {
	t := response
	if m := jsonBlockRE.FindStringSubmatch(t); m != nil {
		t = m[1]
	}
	t = score.PyStrip(t)
	for _, br := range [][2]string{{"{", "}"}, {"[", "]"}} {
		si, ei := strings.Index(t, br[0]), strings.LastIndex(t, br[1])
		if si >= 0 && ei > si {
			if v, err := jsonschema.Decode(t[si : ei+1]); err == nil {
				return v, t[si : ei+1], true
			}
		}
	}
	if v, err := jsonschema.Decode(t); err == nil {
		return v, t, true
	}
	return nil, "", false
}

// score is correct when the response holds JSON that the schema accepts.
// A response without JSON is wrong with nothing extracted (a format
// error, the model's).
func (j *jsonSchema) score(response string) Score {
	v, text, ok := extractJSON(response)
	if !ok {
		return binary("json_schema", false, "", map[string]any{"errors": []any{"no JSON found in the response"}})
	}
	ex := truncate(text, 500)
	if err := j.s.Validate(v); err != nil {
		return binary("json_schema", false, ex, map[string]any{"errors": []any{truncate(err.Error(), 1000)}})
	}
	return binary("json_schema", true, ex, nil)
}
