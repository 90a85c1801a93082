package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// DefaultWandbURL is W&B's public API, used unless --tracking-uri or
// WANDB_BASE_URL names a W&B server of one's own.
const DefaultWandbURL = "https://api.wandb.ai"

// The GraphQL mutation the W&B SDK creates or updates a run with
// (upsertBucket), with what nel sets: the run's id (name), project
// (modelName), entity, display name, config and summary (JSON strings).
const wandbUpsert = `mutation UpsertBucket($name: String, $project: String, $entity: String, $displayName: String, $config: JSONString, $summaryMetrics: JSONString, $tags: [String!]) {
  upsertBucket(input: {name: $name, modelName: $project, entityName: $entity, displayName: $displayName, config: $config, summaryMetrics: $summaryMetrics, tags: $tags}) {
    bucket { id name project { name entity { name } } }
    inserted
  }
}`

// postWandb sends the run to W&B over its HTTP API, as the SDK's online
// mode does, without the SDK: upsertBucket with a run id derived from the
// plan hashes (so a second export updates the same run), the params as
// config and the metrics as the run's summary, then the file stream's
// final request, which marks the run finished (exit code 1 when a
// benchmark is INVALID).
func postWandb(ctx context.Context, run *runData, o Options) ([]string, error) {
	if o.Token == "" {
		return nil, errors.New("--dest wandb: no API key: set WANDB_API_KEY")
	}
	base := o.TrackingURI
	if base == "" {
		base = DefaultWandbURL
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("--tracking-uri %q: want the http(s):// URL of a W&B server", base)
	}
	api := newAPI(base, o.Client, func(r *http.Request) { r.SetBasicAuth("api", o.Token) })
	// W&B allows any metric name: nel's own (gsm8k/pass@1).
	m := mlflowRunOf(run, func(s string) string { return s })
	config := map[string]any{}
	for _, p := range m.params {
		config[p.key] = map[string]any{"value": p.val, "desc": nil}
	}
	for _, t := range m.tags {
		if strings.HasPrefix(t.key, "nel.") {
			config[t.key] = map[string]any{"value": t.val, "desc": nil}
		}
	}
	summary := map[string]any{}
	for _, x := range m.metrics {
		summary[x.key] = x.val
	}
	configJSON, _ := json.Marshal(config)
	summaryJSON, _ := json.Marshal(summary)
	project := experimentName(o)
	vars := map[string]any{
		"name": m.exportID, "project": project, "displayName": m.name, "tags": []string{"nel"},
		"config": string(configJSON), "summaryMetrics": string(summaryJSON),
	}
	if o.Entity != "" {
		vars["entity"] = o.Entity
	}
	var got struct {
		Data struct {
			UpsertBucket struct {
				Bucket struct {
					Name    string `json:"name"`
					Project struct {
						Name   string `json:"name"`
						Entity struct {
							Name string `json:"name"`
						} `json:"entity"`
					} `json:"project"`
				} `json:"bucket"`
			} `json:"upsertBucket"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := api.doJSON(ctx, "POST", "/graphql", map[string]any{"query": wandbUpsert, "variables": vars}, &got); err != nil {
		return nil, fmt.Errorf("wandb upsertBucket: %w", err)
	}
	if len(got.Errors) > 0 {
		return nil, fmt.Errorf("wandb upsertBucket: %s", got.Errors[0].Message)
	}
	b := got.Data.UpsertBucket.Bucket
	entity := b.Project.Entity.Name
	if entity == "" || b.Name == "" {
		return nil, errors.New("wandb upsertBucket: the answer names no run or entity")
	}
	exit := 0
	if m.status != "FINISHED" {
		exit = 1
	}
	stream := map[string]any{
		"files":    map[string]any{"wandb-summary.json": map[string]any{"offset": 0, "content": []string{string(summaryJSON)}}},
		"complete": true, "exitcode": exit,
	}
	path := "/files/" + url.PathEscape(entity) + "/" + url.PathEscape(project) + "/" + url.PathEscape(b.Name) + "/file_stream"
	if err := api.doJSON(ctx, "POST", path, stream, nil); err != nil {
		return nil, fmt.Errorf("wandb file_stream: %w", err)
	}
	return []string{entity + "/" + project + "/" + b.Name}, nil
}
