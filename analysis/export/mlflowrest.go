package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// mlflowClient speaks MLflow's tracking REST API (/api/2.0/mlflow/…).
type mlflowClient struct{ httpAPI }

// httpAPI sends requests to one server, authenticated by auth.
type httpAPI struct {
	base   string
	auth   func(*http.Request)
	client *http.Client
}

// apiError is MLflow's error body.
type apiError struct {
	Status    int
	ErrorCode string `json:"error_code"`
	Message   string `json:"message"`
}

func (e *apiError) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.ErrorCode, e.Message)
}

// log-batch's limits per request (MLflow's REST reference).
const (
	batchMetrics = 1000
	batchParams  = 100
	batchTags    = 100
)

// postMLflow sends the run to the tracking server at o.TrackingURI: the
// experiment (found by name or created), one run (found again by its
// nel.export_id tag, so a second export changes nothing), its metrics,
// params and tags in batches, the artifacts, and its end.
func postMLflow(ctx context.Context, run *runData, o Options) ([]string, error) {
	c := &mlflowClient{newAPI(o.TrackingURI, o.Client, func(r *http.Request) {
		if o.Token != "" {
			r.Header.Set("Authorization", "Bearer "+o.Token)
		}
	})}
	m := mlflowRunOf(run, metricKey)
	expID, err := c.experiment(ctx, experimentName(o))
	if err != nil {
		return nil, err
	}
	if runID, err := c.findRun(ctx, expID, m.exportID); err != nil || runID != "" {
		return []string{runID}, err
	}
	var created struct {
		Run struct {
			Info struct {
				RunID       string `json:"run_id"`
				ArtifactURI string `json:"artifact_uri"`
			} `json:"info"`
		} `json:"run"`
	}
	err = c.call(ctx, "POST", "runs/create", map[string]any{
		"experiment_id": expID, "run_name": m.name, "start_time": m.start, "tags": tagList(nil),
	}, &created)
	if err != nil {
		return nil, err
	}
	runID := created.Run.Info.RunID
	if err := c.logBatch(ctx, runID, m); err != nil {
		return nil, err
	}
	if err := c.upload(ctx, created.Run.Info.ArtifactURI, m.artifacts); err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	return []string{runID}, c.call(ctx, "POST", "runs/update", map[string]any{"run_id": runID, "status": m.status, "end_time": m.end}, nil)
}

// experiment returns the id of the experiment named name, created when
// missing.
func (c *mlflowClient) experiment(ctx context.Context, name string) (string, error) {
	var got struct {
		Experiment struct {
			ExperimentID string `json:"experiment_id"`
		} `json:"experiment"`
	}
	err := c.call(ctx, "GET", "experiments/get-by-name?experiment_name="+url.QueryEscape(name), nil, &got)
	var ae *apiError
	if errors.As(err, &ae) && ae.ErrorCode == "RESOURCE_DOES_NOT_EXIST" {
		var made struct {
			ExperimentID string `json:"experiment_id"`
		}
		err := c.call(ctx, "POST", "experiments/create", map[string]any{"name": name}, &made)
		return made.ExperimentID, err
	}
	return got.Experiment.ExperimentID, err
}

// findRun returns the run an earlier export of the same nel run created,
// "" when there is none.
func (c *mlflowClient) findRun(ctx context.Context, expID, exportID string) (string, error) {
	var found struct {
		Runs []struct {
			Info struct {
				RunID string `json:"run_id"`
			} `json:"info"`
		} `json:"runs"`
	}
	err := c.call(ctx, "POST", "runs/search", map[string]any{
		"experiment_ids": []string{expID},
		"filter":         fmt.Sprintf("tags.`%s` = '%s'", tagExportID, exportID),
		"max_results":    1,
	}, &found)
	if err != nil || len(found.Runs) == 0 {
		return "", err
	}
	return found.Runs[0].Info.RunID, nil
}

func (c *mlflowClient) logBatch(ctx context.Context, runID string, m mlflowRun) error {
	metrics, params, tags := m.metrics, m.params, m.tags
	for len(metrics)+len(params)+len(tags) > 0 {
		nm, np, nt := min(len(metrics), batchMetrics), min(len(params), batchParams), min(len(tags), batchTags)
		ms := make([]map[string]any, nm)
		for i, x := range metrics[:nm] {
			ms[i] = map[string]any{"key": x.key, "value": x.val, "timestamp": m.end, "step": 0}
		}
		err := c.call(ctx, "POST", "runs/log-batch", map[string]any{
			"run_id": runID, "metrics": ms, "params": tagList(params[:np]), "tags": tagList(tags[:nt]),
		}, nil)
		if err != nil {
			return err
		}
		metrics, params, tags = metrics[nm:], params[np:], tags[nt:]
	}
	return nil
}

func tagList(xs []kv[string]) []map[string]string {
	out := make([]map[string]string, len(xs))
	for i, x := range xs {
		out[i] = map[string]string{"key": x.key, "value": x.val}
	}
	return out
}

// upload puts each artifact through the server's artifact proxy
// (mlflow-artifacts:/…, a server started with --serve-artifacts, the
// default since MLflow 2.0). An artifact store nel cannot reach through the
// server (s3://, a path on the server's disk) is refused with the reason.
func (c *mlflowClient) upload(ctx context.Context, artifactURI string, files []kv[string]) error {
	rest, ok := strings.CutPrefix(artifactURI, "mlflow-artifacts:")
	if !ok {
		return fmt.Errorf("artifacts not uploaded: the server keeps them at %s, which it does not proxy; start it with --serve-artifacts, or export with -o DIR to a file store", artifactURI)
	}
	// mlflow-artifacts:/0/abc/artifacts or mlflow-artifacts://host/0/abc/artifacts
	if host, ok := strings.CutPrefix(rest, "//"); ok {
		_, p, _ := strings.Cut(host, "/")
		rest = "/" + p
	}
	for _, f := range files {
		data, err := os.ReadFile(f.val)
		if err != nil {
			return fmt.Errorf("read %s: %w", f.val, err)
		}
		path := "/api/2.0/mlflow-artifacts/artifacts" + rest + "/" + f.key
		if err := c.do(ctx, "PUT", path, bytes.NewReader(data), "application/octet-stream", nil); err != nil {
			return fmt.Errorf("upload %s: %w", f.key, err)
		}
	}
	return nil
}

// call sends one request to /api/2.0/mlflow/<endpoint> with body as JSON
// and decodes the answer into out (when not nil).
func (c *mlflowClient) call(ctx context.Context, method, endpoint string, body, out any) error {
	if err := c.doJSON(ctx, method, "/api/2.0/mlflow/"+endpoint, body, out); err != nil {
		return fmt.Errorf("mlflow %s: %w", strings.SplitN(endpoint, "?", 2)[0], err)
	}
	return nil
}

func newAPI(base string, client *http.Client, auth func(*http.Request)) httpAPI {
	if client == nil {
		client = http.DefaultClient
	}
	return httpAPI{base: strings.TrimRight(base, "/"), auth: auth, client: client}
}

// doJSON is do with body (when not nil) sent as JSON.
func (c httpAPI) doJSON(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(data)
	}
	return c.do(ctx, method, path, r, "application/json", out)
}

// do sends one request to base+path and decodes a 2xx answer into out
// (when not nil); any other status is an *apiError.
func (c httpAPI) do(ctx context.Context, method, path string, body io.Reader, ctype string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	c.auth(req)
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		ae := &apiError{Status: resp.StatusCode}
		if json.Unmarshal(data, ae) != nil || ae.Message == "" {
			ae.Message = strings.TrimSpace(clip(string(data), 300))
		}
		return ae
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	return json.Unmarshal(data, out)
}
