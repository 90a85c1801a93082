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
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
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

// ErrorCode and HTTPStatusCode are what the SDK's retryer classifies an
// error by (throttling, retryable codes and statuses).
func (e *awsError) ErrorCode() string   { return e.Type }
func (e *awsError) HTTPStatusCode() int { return e.Status }

// retryer is the SDK's retryer of the configuration (AWS_MAX_ATTEMPTS,
// AWS_RETRY_MODE, a profile's max_attempts and retry_mode), else its
// standard one: the same attempts, backoff and retryable errors as the
// generated clients had.
func (a awsJSON) retryer() aws.Retryer {
	var r aws.Retryer
	if a.cfg.Retryer != nil {
		r = a.cfg.Retryer()
	}
	if r == nil {
		if a.cfg.RetryMode == aws.RetryModeAdaptive {
			r = retry.NewAdaptiveMode()
		} else {
			r = retry.NewStandard()
		}
	}
	if a.cfg.RetryMaxAttempts != 0 {
		r = retry.AddWithMaxAttempts(r, a.cfg.RetryMaxAttempts)
	}
	return r
}

// call runs operation op with in as its JSON body and decodes the answer
// into out (nil: ignored). Every attempt sends the same body, so an
// idempotency token in it (RunTask's clientToken) holds across retries.
func (a awsJSON) call(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s.%s: %w", a.target, op, err)
	}
	r := a.retryer()
	for attempt := 1; ; attempt++ {
		transport, err := a.once(ctx, op, body, out)
		if err == nil {
			return nil
		}
		var ae *awsError
		retryable := transport
		if errors.As(err, &ae) {
			retryable = r.IsErrorRetryable(err)
		}
		if !retryable {
			return err
		}
		if attempt >= r.MaxAttempts() {
			return fmt.Errorf("%w (after %d attempts)", err, attempt)
		}
		wait, derr := r.RetryDelay(attempt, err)
		if derr != nil {
			return fmt.Errorf("%w (after %d attempts: %w)", err, attempt, derr)
		}
		if werr := sleepCtx(ctx, wait); werr != nil {
			return fmt.Errorf("%s.%s: %w (after: %w)", a.target, op, werr, err)
		}
	}
}

// once sends one attempt; transport says that it failed on the way (no
// answer, or half of one), where another attempt may succeed.
func (a awsJSON) once(ctx context.Context, op string, body []byte, out any) (transport bool, err error) {
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
		return false, decodeAWSError(name, resp, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return false, fmt.Errorf("%s: the answer is not the expected JSON: %w", name, err)
		}
	}
	return false, nil
}

// url is the endpoint the call goes to: the sandbox's; else the
// environment's for this service (AWS_ENDPOINT_URL_ECS, _SSM,
// _CLOUDWATCH_LOGS) or for all (AWS_ENDPOINT_URL, the configuration's);
// else the region's, in its partition, FIPS or dual-stack as
// AWS_USE_FIPS_ENDPOINT and AWS_USE_DUALSTACK_ENDPOINT ask.
func (a awsJSON) url() string {
	if a.endpoint != "" {
		return a.endpoint
	}
	if id := serviceEnvID(a.service); id != "" {
		if u := os.Getenv("AWS_ENDPOINT_URL_" + id); u != "" {
			return u
		}
	}
	if a.cfg.BaseEndpoint != nil && *a.cfg.BaseEndpoint != "" {
		return *a.cfg.BaseEndpoint
	}
	p := partitionOf(a.cfg.Region)
	host, domain := a.service, p.dns
	if strings.EqualFold(os.Getenv("AWS_USE_FIPS_ENDPOINT"), "true") {
		host += "-fips"
	}
	if strings.EqualFold(os.Getenv("AWS_USE_DUALSTACK_ENDPOINT"), "true") {
		domain = p.dualStack
	}
	return "https://" + host + "." + a.cfg.Region + "." + domain + "/"
}

// serviceEnvID is a service's name in its AWS_ENDPOINT_URL_ variable.
func serviceEnvID(service string) string {
	switch service {
	case ecsService:
		return "ECS"
	case ssmService:
		return "SSM"
	case logsService:
		return "CLOUDWATCH_LOGS"
	}
	return ""
}

// partition is an AWS partition's DNS suffixes.
type partition struct{ dns, dualStack string }

// partitionOf is the partition of region, by the prefixes of the SDK's
// partition table (internal/endpoints/awsrulesfn/partitions.json):
// longest first, the commercial one for any other.
func partitionOf(region string) partition {
	for _, p := range []struct {
		prefix string
		partition
	}{
		{"us-isob-", partition{"sc2s.sgov.gov", "api.aws.scloud"}},
		{"us-isof-", partition{"csp.hci.ic.gov", "api.aws.hci.ic.gov"}},
		{"us-iso-", partition{"c2s.ic.gov", "api.aws.ic.gov"}},
		{"eu-isoe-", partition{"cloud.adc-e.uk", "api.cloud-aws.adc-e.uk"}},
		{"eusc-", partition{"amazonaws.eu", "api.amazonwebservices.eu"}},
		{"cn-", partition{"amazonaws.com.cn", "api.amazonwebservices.com.cn"}},
	} {
		if strings.HasPrefix(region, p.prefix) {
			return p.partition
		}
	}
	return partition{"amazonaws.com", "api.aws"} // aws and aws-us-gov
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
