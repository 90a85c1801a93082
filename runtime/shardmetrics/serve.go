package shardmetrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Serve serves m on /metrics at addr (host:port; port 0 picks one) until
// ctx ends or stop is called. It returns the address it listens on, so
// that a caller that asked for port 0 can say where to scrape.
func Serve(ctx context.Context, addr string, m *Metrics, log *slog.Logger) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && log != nil {
			log.Warn("metrics server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		<-ctx.Done()
		// A scrape in progress gets a second to finish.
		sctx, done := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer done()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr().String(), cancel, nil
}
