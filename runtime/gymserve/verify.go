package gymserve

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/gymenv"
	"github.com/nel-eval/nel/runtime/shard"
)

// verifyRequest is a /verify body in either format, read.
type verifyRequest struct {
	gym      bool // Gym's format: no "expected" key
	response string
	expected string
	hasExp   bool
	meta     map[string]any
	raw      map[string]json.RawMessage
}

func (srv *Server) verify(w http.ResponseWriter, r *http.Request) {
	var raw map[string]json.RawMessage
	if err := decode(w, r, &raw); err != nil {
		badRequest(w, "verify: %v", err)
		return
	}
	req, err := readVerify(raw)
	if err != nil {
		badRequest(w, "verify: %v", err)
		return
	}
	it, err := srv.item(req)
	if err != nil {
		badRequest(w, "verify: %v", err)
		return
	}
	if srv.pool != nil {
		select {
		case srv.pool <- struct{}{}:
			defer func() { <-srv.pool }()
		case <-r.Context().Done():
			return
		}
	}
	v, err := srv.s.Score(r.Context(), it, req.response)
	if err != nil {
		return // the client went away while its answer was scored
	}
	writeJSON(w, http.StatusOK, verifyAnswer(req, it, v))
}

// readVerify reads a body in nel's (NeMo Evaluator's) format, told by its
// "expected" key, or in Gym's.
func readVerify(raw map[string]json.RawMessage) (*verifyRequest, error) {
	if raw == nil {
		return nil, fmt.Errorf("the body is empty: want {\"response\": …, \"expected\": …} or Gym's {\"response\": {…}, \"expected_answer\": …}")
	}
	req := &verifyRequest{raw: raw}
	resp, ok := raw["response"]
	if !ok {
		return nil, fmt.Errorf("response: missing (the model's answer: text, or a NeMoGymResponse)")
	}
	expKey := "expected"
	if _, ok := raw["expected"]; !ok {
		req.gym, expKey = true, "expected_answer"
	}
	if e, ok := raw[expKey]; ok {
		if err := json.Unmarshal(e, &req.expected); err != nil {
			return nil, fmt.Errorf("%s: want a string, got %s", expKey, gymenv.Clip(e))
		}
		req.hasExp = true
	}
	if m, ok := raw["metadata"]; ok && string(m) != "null" {
		if err := json.Unmarshal(m, &req.meta); err != nil {
			return nil, fmt.Errorf("metadata: want an object, got %s", gymenv.Clip(m))
		}
	}
	var err error
	if req.gym {
		req.response, err = gymenv.AssistantText(resp)
	} else if uerr := json.Unmarshal(resp, &req.response); uerr != nil {
		err = fmt.Errorf("response: want a string in this format (the body has \"expected\"), got %s", gymenv.Clip(resp))
	}
	return req, err
}

// item is what the answer is scored against: the served item the
// metadata's idx names (the scorer's fields as loaded, its expected answer
// replaced by the request's), else an item made of the request's expected
// answer and metadata alone.
func (srv *Server) item(req *verifyRequest) (*bench.Item, error) {
	x, ok := req.meta["idx"]
	if !ok {
		if !req.hasExp {
			return nil, fmt.Errorf("neither an expected answer nor metadata.idx: nothing to score against")
		}
		return &bench.Item{Expected: req.expected, Meta: req.meta}, nil
	}
	// (The metadata was read into plain Go values: a number is a float64,
	// printed back as the JSON number it was.)
	n := json.Number(fmt.Sprint(x))
	idx, err := srv.index(&n)
	if err != nil {
		return nil, fmt.Errorf("metadata.%v", err)
	}
	it := *srv.s.Item(idx)
	if id, ok := req.meta["item_id"].(string); ok && id != it.ID {
		return nil, fmt.Errorf("metadata.item_id: %s is not the item at idx %d (%s): this server serves another selection of the benchmark", id, idx, it.ID)
	}
	if req.hasExp {
		it.Expected = req.expected
	}
	return &it, nil
}

// verifyAnswer is /verify's answer: NeMo's fields for the request's
// format, and nel's verdict (correct, outcome, scores) besides.
func verifyAnswer(req *verifyRequest, it *bench.Item, v shard.Verdict) map[string]any {
	details := map[string]any{}
	if len(v.Details) > 0 {
		_ = json.Unmarshal(v.Details, &details) // the shard wrote it from a map
	}
	out := map[string]any{
		"reward":           v.Reward,
		"extracted_answer": v.Extracted,
		"scoring_details":  details,
		"correct":          v.Correct,
		"outcome":          v.Outcome,
		"scores":           v.Scores,
	}
	if v.ErrorCategory != "" {
		out["error_category"], out["error_message"] = v.ErrorCategory, v.ErrorMessage
	}
	if !req.gym {
		out["metadata"] = maps.Clone(req.meta)
		if req.meta == nil {
			out["metadata"] = map[string]any{}
		}
		return out
	}
	out["expected_answer"] = it.Expected
	for _, k := range []string{"responses_create_params", "response"} {
		if x, ok := req.raw[k]; ok {
			out[k] = x
		}
	}
	return out
}
