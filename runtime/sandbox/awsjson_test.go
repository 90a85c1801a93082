package sandbox

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

func testAWSConfig() aws.Config {
	return aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret-never-sent", ""),
		Retryer: func() aws.Retryer { return noBackoff(retry.NewStandard()) }}
}

// noBackoff is the SDK's retryer r without its waits, for fast tests.
func noBackoff(r aws.Retryer) aws.Retryer {
	return retry.AddWithMaxBackoffDelay(r, 0)
}

// A JSON 1.1 call is signed for its service and region, names its
// operation in X-Amz-Target, retries the service's failures and not the
// caller's, and reads both forms of an error's type.
func TestAWSJSONCall(t *testing.T) {
	var n atomic.Int32
	var answers []func(w http.ResponseWriter)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1) - 1
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Amz-Target") != "AmazonSSM.GetParameter" || r.Header.Get("Content-Type") != "application/x-amz-json-1.1" || string(b) != `{"Name":"/p/ecs-sandbox/config"}` {
			t.Errorf("request %d: target %q, type %q, body %s", i, r.Header.Get("X-Amz-Target"), r.Header.Get("Content-Type"), b)
		}
		auth := r.Header.Get("Authorization")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(auth, "/eu-west-1/ssm/aws4_request") ||
			!strings.Contains(auth, "x-amz-target") || strings.Contains(auth, "secret-never-sent") {
			t.Errorf("request %d: Authorization %q", i, auth)
		}
		answers[i](w)
	}))
	defer srv.Close()
	a := awsJSON{cfg: testAWSConfig(), service: "ssm", target: "AmazonSSM", endpoint: srv.URL}
	call := func() (string, error) {
		var out struct{ Parameter *struct{ Value *string } }
		err := a.call(context.Background(), "GetParameter", map[string]string{"Name": "/p/ecs-sandbox/config"}, &out)
		if err != nil || out.Parameter == nil || out.Parameter.Value == nil {
			return "", err
		}
		return *out.Parameter.Value, nil
	}

	ok := func(w http.ResponseWriter) { io.WriteString(w, `{"Parameter":{"Name":"/p","Value":"{}"}}`) }
	throttled := func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"com.amazonaws.ssm#ThrottlingException","message":"Rate exceeded"}`)
	}
	n.Store(0)
	answers = []func(http.ResponseWriter){func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }, throttled, ok}
	if v, err := call(); err != nil || v != "{}" || n.Load() != 3 {
		t.Errorf("503, throttled, then 200: value %q, err %v, after %d requests, want {} after 3", v, err, n.Load())
	}

	n.Store(0)
	answers = []func(http.ResponseWriter){func(w http.ResponseWriter) {
		w.Header().Set("X-Amzn-ErrorType", "ParameterNotFound:http://internal.amazon.com/coral/com.amazonaws.ssm/")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"Message":"no such parameter"}`)
	}}
	_, err := call()
	if !isAWSError(err, "ParameterNotFound") || !strings.Contains(err.Error(), "no such parameter") || n.Load() != 1 {
		t.Errorf("not found: err %v after %d requests, want ParameterNotFound with its message, not retried", err, n.Load())
	}

	n.Store(0)
	answers = []func(http.ResponseWriter){throttled, throttled, throttled}
	if _, err := call(); !isAWSError(err, "ThrottlingException") || n.Load() != 3 || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Errorf("always throttled: err %v after %d requests, want ThrottlingException after the standard retryer's 3", err, n.Load())
	}

	// 501 is not among the statuses the SDK retries; 500 is.
	n.Store(0)
	answers = []func(http.ResponseWriter){func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotImplemented) }, ok}
	if _, err := call(); err == nil || n.Load() != 1 {
		t.Errorf("501: err %v after %d requests, want the error, not retried", err, n.Load())
	}

	// The configuration's retryer decides how many attempts (AWS_MAX_ATTEMPTS).
	n.Store(0)
	a.cfg.Retryer = func() aws.Retryer { return noBackoff(retry.AddWithMaxAttempts(retry.NewStandard(), 5)) }
	answers = []func(http.ResponseWriter){throttled, throttled, throttled, throttled, ok}
	if v, err := call(); err != nil || v != "{}" || n.Load() != 5 {
		t.Errorf("5 attempts allowed: value %q, err %v after %d requests, want {} after 5", v, err, n.Load())
	}
}

// The regional endpoint, unless the sandbox or the AWS configuration names
// one.
func TestAWSJSONURL(t *testing.T) {
	cfg := testAWSConfig()
	if got := (awsJSON{cfg: cfg, service: "logs"}).url(); got != "https://logs.eu-west-1.amazonaws.com/" {
		t.Errorf("url = %q", got)
	}
	cfg.Region = "cn-north-1"
	if got := (awsJSON{cfg: cfg, service: "ssm"}).url(); got != "https://ssm.cn-north-1.amazonaws.com.cn/" {
		t.Errorf("China: url = %q", got)
	}
	for region, want := range map[string]string{
		"us-gov-west-1":   "https://ssm.us-gov-west-1.amazonaws.com/",
		"us-iso-east-1":   "https://ssm.us-iso-east-1.c2s.ic.gov/",
		"us-isob-east-1":  "https://ssm.us-isob-east-1.sc2s.sgov.gov/",
		"us-isof-south-1": "https://ssm.us-isof-south-1.csp.hci.ic.gov/",
		"eu-isoe-west-1":  "https://ssm.eu-isoe-west-1.cloud.adc-e.uk/",
		"eusc-de-east-1":  "https://ssm.eusc-de-east-1.amazonaws.eu/",
	} {
		c := cfg
		c.Region = region
		if got := (awsJSON{cfg: c, service: "ssm"}).url(); got != want {
			t.Errorf("%s: url = %q, want %q", region, got, want)
		}
	}
	t.Setenv("AWS_USE_FIPS_ENDPOINT", "true")
	if got := (awsJSON{cfg: cfg, service: "ecs"}).url(); got != "https://ecs-fips.cn-north-1.amazonaws.com.cn/" {
		t.Errorf("FIPS: url = %q", got)
	}
	t.Setenv("AWS_USE_DUALSTACK_ENDPOINT", "true")
	if got := (awsJSON{cfg: cfg, service: "ecs"}).url(); got != "https://ecs-fips.cn-north-1.api.amazonwebservices.com.cn/" {
		t.Errorf("FIPS and dual-stack: url = %q", got)
	}
	t.Setenv("AWS_ENDPOINT_URL_CLOUDWATCH_LOGS", "https://logs.vpce.example/")
	if got := (awsJSON{cfg: cfg, service: "logs"}).url(); got != "https://logs.vpce.example/" {
		t.Errorf("AWS_ENDPOINT_URL_CLOUDWATCH_LOGS: url = %q", got)
	}
	if got := (awsJSON{cfg: cfg, service: "ecs"}).url(); strings.Contains(got, "vpce") {
		t.Errorf("another service's AWS_ENDPOINT_URL_ reached ECS: %q", got)
	}
	cfg.BaseEndpoint = aws.String("https://vpce.example/")
	if got := (awsJSON{cfg: cfg, service: "logs"}).url(); got != "https://logs.vpce.example/" {
		t.Errorf("the service's variable comes before AWS_ENDPOINT_URL: url = %q", got)
	}
	if got := (awsJSON{cfg: cfg, service: "ssm"}).url(); got != "https://vpce.example/" {
		t.Errorf("AWS_ENDPOINT_URL: url = %q", got)
	}
	if got := (awsJSON{cfg: cfg, service: "ssm", endpoint: "http://127.0.0.1:9/"}).url(); got != "http://127.0.0.1:9/" {
		t.Errorf("the sandbox's endpoint: url = %q", got)
	}
}
