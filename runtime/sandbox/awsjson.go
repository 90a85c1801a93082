package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// awsJSON calls operations of an AWS service that speaks the JSON 1.1
// protocol, signed with the SDK's SigV4 signer. The ECS sandbox calls four
// ECS operations (ecs_api.go), reads one SSM parameter when it opens and a
// failed task's CloudWatch log tail; the SDK's generated clients for those
// three services were 1.6 MB of nel-run and built their whole API's schema
// at every nel-run start (service/ssm's alone 1.4 MB of allocations and
// 2–3 ms on an idle machine, service/ecs's 0.9 MB), for a few calls.
type awsJSON struct {
	cfg aws.Config
	// service is the signing name and endpoint prefix ("ssm", "logs");
	// target the X-Amz-Target prefix ("AmazonSSM", "Logs_20140328").
	service, target string
	// endpoint overrides the service's regional endpoint (tests, VPC
	// endpoints); empty: cfg.BaseEndpoint, else the public one.
	endpoint string
}

// The JSON 1.1 services the ECS sandbox calls besides ECS: their signing
// names (and endpoint prefixes) and X-Amz-Target prefixes.
const (
	ssmService, ssmTarget   = "ssm", "AmazonSSM"
	logsService, logsTarget = "logs", "Logs_20140328" // nel:not-a-run-path: CloudWatch Logs
)

// awsError is an error answer of a JSON 1.1 service.
type awsError struct {
	Op, Type, Message string
	Status            int
}

func (e *awsError) Error() string {
	msg := e.Type
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.Op, e.Status, msg)
}

// retryable: throttling and the service's own failures, as the SDK's
// standard retryer.
func (e *awsError) retryable() bool {
	switch e.Type {
	case "ThrottlingException", "Throttling", "ThrottledException", "RequestLimitExceeded",
		"TooManyRequestsException", "RequestThrottled", "RequestThrottledException":
		return true
	}
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests
}

// awsAttempts is how many times a call is tried (the SDK's standard
// retryer's default).
const awsAttempts = 3

// call runs operation op with in as its JSON body and decodes the answer
// into out (nil: ignored).
func (a awsJSON) call(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s.%s: %w", a.target, op, err)
	}
	var last error
	for attempt := range awsAttempts {
		if attempt > 0 {
			// Exponential backoff with full jitter, as the SDK's.
			wait := time.Duration(rand.Int64N(int64(100*time.Millisecond) << attempt))
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return fmt.Errorf("%s.%s: %w (after: %w)", a.target, op, ctx.Err(), last)
			}
		}
		retry, err := a.once(ctx, op, body, out)
		if err == nil || !retry {
			return err
		}
		last = err
	}
	return last
}

// once sends one attempt; retry says whether another may succeed.
func (a awsJSON) once(ctx context.Context, op string, body []byte, out any) (retry bool, err error) {
	name := a.target + "." + op
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url(), bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", name)
	creds, err := a.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return false, fmt.Errorf("%s: AWS credentials: %w", name, err)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), a.service, a.cfg.Region, time.Now()); err != nil {
		return false, fmt.Errorf("%s: sign: %w", name, err)
	}
	client := a.cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("%s: %w", name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("%s: read the answer: %w", name, err)
	}
	if resp.StatusCode != http.StatusOK {
		e := decodeAWSError(name, resp, b)
		return e.retryable(), e
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return false, fmt.Errorf("%s: the answer is not the expected JSON: %w", name, err)
		}
	}
	return false, nil
}

// url is the endpoint the call goes to.
func (a awsJSON) url() string {
	switch {
	case a.endpoint != "":
		return a.endpoint
	case a.cfg.BaseEndpoint != nil && *a.cfg.BaseEndpoint != "":
		return *a.cfg.BaseEndpoint
	}
	domain := "amazonaws.com"
	if strings.HasPrefix(a.cfg.Region, "cn-") {
		domain = "amazonaws.com.cn"
	}
	return "https://" + a.service + "." + a.cfg.Region + "." + domain + "/"
}

// decodeAWSError reads a JSON 1.1 error: its type from the X-Amzn-ErrorType
// header or the body's __type (either may carry a namespace before "#" or
// a URL after ":"), its message from message or Message.
func decodeAWSError(op string, resp *http.Response, body []byte) *awsError {
	var v struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
		Msg     string `json:"Message"`
	}
	_ = json.Unmarshal(body, &v) // a body that is not JSON leaves the status
	typ := resp.Header.Get("X-Amzn-ErrorType")
	if typ == "" {
		typ = v.Type
	}
	if i := strings.LastIndexByte(typ, '#'); i >= 0 {
		typ = typ[i+1:]
	}
	typ, _, _ = strings.Cut(typ, ":")
	msg := v.Message
	if msg == "" {
		msg = v.Msg
	}
	return &awsError{Op: op, Type: typ, Message: msg, Status: resp.StatusCode}
}

// isAWSError says whether err is an answer of type typ.
func isAWSError(err error, typ string) bool {
	var e *awsError
	return errors.As(err, &e) && e.Type == typ
}
