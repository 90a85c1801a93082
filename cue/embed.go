// Package schema embeds the recipe schema, cue/schema.cue, into the nel binary.
//
// The schema is the single source of truth for what a recipe may contain;
// compiler/ unifies every recipe (CUE or YAML) with its #Recipe definition.
package schema

import _ "embed"

// Source is the text of schema.cue.
//
//go:embed schema.cue
var Source string

// Filename is the name positions in schema errors refer to.
const Filename = "nel/cue/schema.cue"

// PolicySource is the text of policy.cue, the schema of nel gate's policy
// files (#Policy).
//
//go:embed policy.cue
var PolicySource string

// PolicyFilename is the name positions in policy schema errors refer to.
const PolicyFilename = "nel/cue/policy.cue"
