package compiler

// For compiler_test: the syntax NeMo composition produces, before the
// schema fills defaults in (nemocompat_test.go walks it to see which fields
// a config writes).
var (
	ParseData = parseData
	Compose   = compose
	StringOf  = stringOf
)
