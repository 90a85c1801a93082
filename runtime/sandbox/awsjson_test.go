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
	"github.com/aws/aws-sdk-go-v2/credentials"
)

func testAWSConfig() aws.Config {
	return aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret-never-sent", "")}
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
	if _, err := call(); !isAWSError(err, "ThrottlingException") || n.Load() != awsAttempts {
		t.Errorf("always throttled: err %v after %d requests, want ThrottlingException after %d", err, n.Load(), awsAttempts)
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
	cfg.BaseEndpoint = aws.String("https://vpce.example/")
	if got := (awsJSON{cfg: cfg, service: "ssm"}).url(); got != "https://vpce.example/" {
		t.Errorf("AWS_ENDPOINT_URL: url = %q", got)
	}
	if got := (awsJSON{cfg: cfg, service: "ssm", endpoint: "http://127.0.0.1:9/"}).url(); got != "http://127.0.0.1:9/" {
		t.Errorf("the sandbox's endpoint: url = %q", got)
	}
}
