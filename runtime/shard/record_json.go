package shard

import (
	"strconv"

	"github.com/nel-eval/nel/runtime/jsonany"
	"github.com/nel-eval/nel/runtime/results"
)

// AppendJSON writes rec as json.Marshal does (journal.Appender): every
// sample's record is journaled, and encoding/json's reflection over its
// two structs was a tenth of a shard's CPU at zero latency (issue 23).
// An agentic sample's turns are left to json.Marshal (ok false), as is a
// record json.Marshal refuses (a NaN). TestRecordAppendJSON holds the two
// to each other, and fails when a field is added to a struct and not here.
func (rec *sampleRecord) AppendJSON(b []byte) ([]byte, bool) {
	if rec.Turns != nil {
		return b, false
	}
	b, ok := appendRow(append(b, `{"row":`...), &rec.Row)
	if !ok {
		return b, false
	}
	if b, ok = appendTraj(append(b, `,"traj":`...), &rec.Traj); !ok {
		return b, false
	}
	if rec.Simulated {
		b = append(b, `,"sim":true`...)
	}
	if rec.Status != 0 {
		b = strconv.AppendInt(append(b, `,"status":`...), int64(rec.Status), 10)
	}
	return append(b, '}'), true
}

// SizeJSON is about the length of rec's JSON (journal.Appender): its
// texts and what the members' names and numbers take.
func (rec *sampleRecord) SizeJSON() int {
	r, t := &rec.Row, &rec.Traj
	n := len(r.RecipeHash) + len(r.Benchmark) + len(r.ItemID) + len(r.Category) + len(r.Extracted) +
		len(r.Expected) + len(r.FinishReason) + len(r.ErrorCategory) + len(r.Outcome) + len(r.ErrorMessage) +
		len(r.Model) + 24*len(r.Scores)
	n += len(t.RecipeHash) + len(t.Benchmark) + len(t.ItemID) + len(t.Request) + len(t.Response) +
		len(t.Reasoning) + len(t.ScoringDetails) + len(t.Error) + len(t.Model) + len(t.JudgeCalls)
	return n + n/8 + 640 // escapes; names, numbers
}

// appendRow writes a results.Row as json.Marshal does.
func appendRow(b []byte, r *results.Row) ([]byte, bool) {
	b = jsonany.AppendString(append(b, `{"RecipeHash":`...), r.RecipeHash)
	b = jsonany.AppendString(append(b, `,"Benchmark":`...), r.Benchmark)
	b = jsonany.AppendString(append(b, `,"ItemID":`...), r.ItemID)
	b = strconv.AppendInt(append(b, `,"ItemIdx":`...), r.ItemIdx, 10)
	b = strconv.AppendInt(append(b, `,"Repeat":`...), r.Repeat, 10)
	b = jsonany.AppendString(append(b, `,"Category":`...), r.Category)
	b, ok := jsonany.AppendFloat(append(b, `,"Reward":`...), r.Reward)
	if !ok {
		return b, false
	}
	b = append(b, `,"Correct":`...)
	if r.Correct == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendBool(b, *r.Correct)
	}
	b = jsonany.AppendString(append(b, `,"Extracted":`...), r.Extracted)
	b = jsonany.AppendString(append(b, `,"Expected":`...), r.Expected)
	b = jsonany.AppendString(append(b, `,"FinishReason":`...), r.FinishReason)
	b = strconv.AppendInt(append(b, `,"PromptTokens":`...), r.PromptTokens, 10)
	b = strconv.AppendInt(append(b, `,"CompletionTokens":`...), r.CompletionTokens, 10)
	b = strconv.AppendInt(append(b, `,"ReasoningTokens":`...), r.ReasoningTokens, 10)
	if b, ok = jsonany.AppendFloat(append(b, `,"LatencyMS":`...), r.LatencyMS); !ok {
		return b, false
	}
	b = strconv.AppendInt(append(b, `,"Attempts":`...), r.Attempts, 10)
	b = jsonany.AppendString(append(b, `,"ErrorCategory":`...), r.ErrorCategory)
	b = strconv.AppendInt(append(b, `,"Seed":`...), r.Seed, 10)
	b = jsonany.AppendString(append(b, `,"Outcome":`...), r.Outcome)
	b = jsonany.AppendString(append(b, `,"ErrorMessage":`...), r.ErrorMessage)
	if b, ok = jsonany.AppendMap(append(b, `,"Scores":`...), r.Scores, jsonany.AppendFloat); !ok {
		return b, false
	}
	b = jsonany.AppendString(append(b, `,"Model":`...), r.Model)
	return append(b, '}'), true
}

// appendTraj writes a results.Trajectory as json.Marshal does.
func appendTraj(b []byte, t *results.Trajectory) ([]byte, bool) {
	b = jsonany.AppendString(append(b, `{"RecipeHash":`...), t.RecipeHash)
	b = jsonany.AppendString(append(b, `,"Benchmark":`...), t.Benchmark)
	b = jsonany.AppendString(append(b, `,"ItemID":`...), t.ItemID)
	b = strconv.AppendInt(append(b, `,"ItemIdx":`...), t.ItemIdx, 10)
	b = strconv.AppendInt(append(b, `,"Repeat":`...), t.Repeat, 10)
	b = jsonany.AppendString(append(b, `,"Request":`...), t.Request)
	b = jsonany.AppendString(append(b, `,"Response":`...), t.Response)
	b = jsonany.AppendString(append(b, `,"Reasoning":`...), t.Reasoning)
	b = jsonany.AppendString(append(b, `,"ScoringDetails":`...), t.ScoringDetails)
	b = jsonany.AppendString(append(b, `,"Error":`...), t.Error)
	b = jsonany.AppendString(append(b, `,"Model":`...), t.Model)
	b = strconv.AppendInt(append(b, `,"Retries":`...), t.Retries, 10)
	b, ok := jsonany.AppendFloat(append(b, `,"LatencyMS":`...), t.LatencyMS)
	if !ok {
		return b, false
	}
	b = jsonany.AppendString(append(b, `,"JudgeCalls":`...), t.JudgeCalls)
	return append(b, '}'), true
}
