package model

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// ProbeTimeout bounds the probe's request: a server that accepts the
// connection and then says nothing for this long is as good as dead for a
// run that is about to send it thousands of requests.
const ProbeTimeout = 15 * time.Second

// Probe problems a run cannot start with.
var (
	// ErrUnreachable: no HTTP answer at all (refused, no such host, TLS
	// failure, or silence past ProbeTimeout).
	ErrUnreachable = errors.New("endpoint unreachable")
	// ErrUnauthorized: the server refused the credentials (401, 403).
	ErrUnauthorized = errors.New("credentials refused")
)

// ProbeResult is what the server said to GET <base>/models.
type ProbeResult struct {
	// Status is the HTTP status; 404 means the server has no model list
	// (not every OpenAI-compatible server implements it).
	Status int
	// Models are the ids the server lists (nil when it lists none).
	Models []string
}

// Offers says whether the server lists the model (true when it lists
// nothing: no list, no verdict).
func (p *ProbeResult) Offers(model string) bool {
	return len(p.Models) == 0 || slices.Contains(p.Models, model)
}

// Probe asks the endpoint for its model list, once, before a run sends it
// work: a run against a dead endpoint or with a rejected key must fail in
// seconds with what is wrong, not after a dataset's worth of retries. The
// error wraps ErrUnreachable or ErrUnauthorized; other answers (5xx, a
// server without /models) are not the probe's to judge and come back as a
// result.
func (c *Client) Probe(ctx context.Context) (*ProbeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	url := strings.TrimRight(c.cfg.BaseURL, "/") + "/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, c.cfg.BaseURL, err)
	}
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.transport.base.RoundTrip(req)
	if err != nil {
		return nil, c.probeErr(ErrUnreachable, "%s: %s", c.cfg.BaseURL, describeDialError(ctx, err))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	resp.Body.Close()
	if err != nil {
		return nil, c.probeErr(ErrUnreachable, "%s: reading the answer to GET /models: %s", c.cfg.BaseURL, describeDialError(ctx, err))
	}
	res := &ProbeResult{Status: resp.StatusCode}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return res, c.probeErr(ErrUnauthorized, "%s answered GET /models with %s%s", c.cfg.BaseURL, resp.Status, bodyHint(body))
	case resp.StatusCode/100 == 2:
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if json.Unmarshal(body, &list) == nil {
			for _, m := range list.Data {
				res.Models = append(res.Models, m.ID)
			}
		}
	}
	return res, nil
}

// probeErr is kind with a message from which the API key is removed (a
// server may echo it back).
func (c *Client) probeErr(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %v", kind, c.redact(fmt.Errorf(format, args...)))
}

// describeDialError says in words why no HTTP answer came.
func describeDialError(ctx context.Context, err error) string {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("no answer within %v (the server accepted nothing, or is stuck)", ProbeTimeout)
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("no such host %q (%v)", dnsErr.Name, dnsErr.Err)
	case errors.As(err, &certErr):
		return "TLS: " + certErr.Error()
	case errors.As(err, &recErr):
		return "TLS: the server does not speak TLS here (an http:// URL written as https://?)"
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return "cannot connect: " + opErr.Err.Error()
	}
	return err.Error()
}

// bodyHint is the start of an error body, for the message.
func bodyHint(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if s == "" {
		return ""
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return ": " + s
}
