package results

import (
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// kind is a column's Parquet shape. Each kind has exactly one accessor in
// field.
type kind int

const (
	kindString    kind = iota // required BYTE_ARRAY (String)
	kindInt64                 // required INT64
	kindFloat64               // required DOUBLE
	kindOptBool               // optional BOOLEAN
	kindScores                // required MAP<BYTE_ARRAY (String), DOUBLE>
	kindBool                  // required BOOLEAN
	kindOptString             // optional BYTE_ARRAY (String): "" is written as NULL
)

func (k kind) String() string {
	switch k {
	case kindString:
		return "BYTE_ARRAY (String)"
	case kindInt64:
		return "INT64"
	case kindFloat64:
		return "DOUBLE"
	case kindOptBool:
		return "optional BOOLEAN"
	case kindScores:
		return "MAP<BYTE_ARRAY (String), DOUBLE>"
	case kindBool:
		return "BOOLEAN"
	case kindOptString:
		return "optional BYTE_ARRAY (String)"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// field maps one column to a struct field of T. The accessors return a
// pointer so that the same table serves the writer (read through it) and
// the reader (assign through it); only the one matching kind is set.
type field[T any] struct {
	name   string
	kind   kind
	str    func(*T) *string
	i64    func(*T) *int64
	f64    func(*T) *float64
	opt    func(*T) **bool
	b      func(*T) *bool
	scores func(*T) *map[string]float64
	// optional: absent from older files (see optional).
	optional bool
}

// optional marks a column added after files were first written: a file
// without it reads with the field left at its zero value.
func optional[T any](f field[T]) field[T] {
	f.optional = true
	return f
}

func strField[T any](name string, f func(*T) *string) field[T] {
	return field[T]{name: name, kind: kindString, str: f}
}

// optStrField is a string column whose "" is NULL in the file: a value
// that is absent, not empty (a row's category).
func optStrField[T any](name string, f func(*T) *string) field[T] {
	return field[T]{name: name, kind: kindOptString, str: f}
}

func i64Field[T any](name string, f func(*T) *int64) field[T] {
	return field[T]{name: name, kind: kindInt64, i64: f}
}

func f64Field[T any](name string, f func(*T) *float64) field[T] {
	return field[T]{name: name, kind: kindFloat64, f64: f}
}

func boolField[T any](name string, f func(*T) *bool) field[T] {
	return field[T]{name: name, kind: kindBool, b: f}
}

// rowFields is the results.parquet schema: Row's fields in order.
func rowFields() []field[Row] {
	return []field[Row]{
		strField("recipe_hash", func(r *Row) *string { return &r.RecipeHash }),
		strField("benchmark", func(r *Row) *string { return &r.Benchmark }),
		strField("item_id", func(r *Row) *string { return &r.ItemID }),
		i64Field("item_idx", func(r *Row) *int64 { return &r.ItemIdx }),
		i64Field("repeat", func(r *Row) *int64 { return &r.Repeat }),
		// NULL when the item has none ("" reads back), so that SQL's
		// count(category) and IS NULL mean what they say.
		optStrField("category", func(r *Row) *string { return &r.Category }),
		f64Field("reward", func(r *Row) *float64 { return &r.Reward }),
		{name: "correct", kind: kindOptBool, opt: func(r *Row) **bool { return &r.Correct }},
		strField("extracted", func(r *Row) *string { return &r.Extracted }),
		strField("expected", func(r *Row) *string { return &r.Expected }),
		strField("finish_reason", func(r *Row) *string { return &r.FinishReason }),
		i64Field("prompt_tokens", func(r *Row) *int64 { return &r.PromptTokens }),
		i64Field("completion_tokens", func(r *Row) *int64 { return &r.CompletionTokens }),
		i64Field("reasoning_tokens", func(r *Row) *int64 { return &r.ReasoningTokens }),
		f64Field("latency_ms", func(r *Row) *float64 { return &r.LatencyMS }),
		i64Field("attempts", func(r *Row) *int64 { return &r.Attempts }),
		strField("error_category", func(r *Row) *string { return &r.ErrorCategory }),
		i64Field("seed", func(r *Row) *int64 { return &r.Seed }),
		{name: "scores", kind: kindScores, scores: func(r *Row) *map[string]float64 { return &r.Scores }},
		// Added with scoring version 3; after scores so that the columns
		// older readers know keep their positions.
		optional(strField("outcome", func(r *Row) *string { return &r.Outcome })),
		optional(strField("error_message", func(r *Row) *string { return &r.ErrorMessage })),
		// Added after them, for the same reason.
		optional(strField("model", func(r *Row) *string { return &r.Model })),
	}
}

// trajectoryFields is the trajectories.parquet schema: Trajectory's fields
// in order.
func trajectoryFields() []field[Trajectory] {
	return []field[Trajectory]{
		strField("recipe_hash", func(t *Trajectory) *string { return &t.RecipeHash }),
		strField("benchmark", func(t *Trajectory) *string { return &t.Benchmark }),
		strField("item_id", func(t *Trajectory) *string { return &t.ItemID }),
		i64Field("item_idx", func(t *Trajectory) *int64 { return &t.ItemIdx }),
		i64Field("repeat", func(t *Trajectory) *int64 { return &t.Repeat }),
		strField("request", func(t *Trajectory) *string { return &t.Request }),
		strField("response", func(t *Trajectory) *string { return &t.Response }),
		strField("reasoning", func(t *Trajectory) *string { return &t.Reasoning }),
		strField("scoring_details", func(t *Trajectory) *string { return &t.ScoringDetails }),
		strField("error", func(t *Trajectory) *string { return &t.Error }),
		strField("model", func(t *Trajectory) *string { return &t.Model }),
		i64Field("retries", func(t *Trajectory) *int64 { return &t.Retries }),
		f64Field("latency_ms", func(t *Trajectory) *float64 { return &t.LatencyMS }),
		optional(strField("judge_calls", func(t *Trajectory) *string { return &t.JudgeCalls })),
	}
}

// buildSchema returns the Parquet schema for fields. Maps use the standard
// three-level layout (scores / key_value / key, value) that DuckDB, pyarrow
// and polars read as a native map.
func buildSchema[T any](fields []field[T]) (*schema.GroupNode, error) {
	req := parquet.Repetitions.Required
	nodes := make(schema.FieldList, 0, len(fields))
	for _, f := range fields {
		var (
			n   schema.Node
			err error
		)
		switch f.kind {
		case kindString:
			n, err = stringNode(f.name, req)
		case kindOptString:
			n, err = stringNode(f.name, parquet.Repetitions.Optional)
		case kindInt64:
			n = schema.NewInt64Node(f.name, req, -1)
		case kindFloat64:
			n = schema.NewFloat64Node(f.name, req, -1)
		case kindOptBool:
			n = schema.NewBooleanNode(f.name, parquet.Repetitions.Optional, -1)
		case kindBool:
			n = schema.NewBooleanNode(f.name, req, -1)
		case kindScores:
			var key schema.Node
			if key, err = stringNode("key", req); err == nil {
				n, err = schema.MapOf(f.name, key, schema.NewFloat64Node("value", req, -1), req, -1)
			}
		default:
			err = fmt.Errorf("unknown kind %v", f.kind)
		}
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.name, err)
		}
		nodes = append(nodes, n)
	}
	return schema.NewGroupNode("schema", req, nodes, -1)
}

func stringNode(name string, rep parquet.Repetition) (schema.Node, error) {
	return schema.NewPrimitiveNodeLogical(name, rep,
		schema.StringLogicalType{}, parquet.Types.ByteArray, -1, -1)
}
