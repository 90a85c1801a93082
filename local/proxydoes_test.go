package local

import (
	"testing"

	"github.com/nel-eval/nel/runtime/intercept"
	"github.com/nel-eval/nel/runtime/plan"
)

// A harness behind the proxy for its request_timeout alone was announced
// as going "through 0 interceptors".
func TestProxyDoes(t *testing.T) {
	two := []plan.Interceptor{{Name: "reasoning"}, {Name: "response_stats"}}
	for _, c := range []struct {
		cfg  intercept.ProxyConfig
		want string
	}{
		{intercept.ProxyConfig{Interceptors: two}, "2 interceptors"},
		{intercept.ProxyConfig{Interceptors: two[:1]}, "1 interceptor"},
		{intercept.ProxyConfig{RequestTimeout: 30}, "a 30s request_timeout"},
		{intercept.ProxyConfig{Interceptors: two, RequestTimeout: 2.5}, "2 interceptors and a 2.5s request_timeout"},
	} {
		if got := proxyDoes(c.cfg); got != c.want {
			t.Errorf("proxyDoes(%d interceptors, %gs) = %q, want %q", len(c.cfg.Interceptors), c.cfg.RequestTimeout, got, c.want)
		}
	}
}
