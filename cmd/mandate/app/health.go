package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mandate-dev/mandate/config"
)

// earlyHealth serves /healthz (alive) and /readyz (not ready: the first
// bundle is being fetched) on the health address until the returned stop
// is called, which frees the address for the manager's own health
// server. Nothing is served without a bundle source (there is nothing to
// wait for) or with health disabled.
func earlyHealth(ctx context.Context, c config.Serve) (stop func() error, err error) {
	if (c.Bundle.Source == "" && c.Bundle.Shadow.Source == "") || c.HealthAddr == "0" {
		return func() error { return nil }, nil
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", c.HealthAddr)
	if err != nil {
		return nil, fmt.Errorf("healthAddr: unable to listen on %s: %w", c.HealthAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not ready: fetching the first policy bundle", http.StatusServiceUnavailable)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	return func() error {
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(shutdown)
		if serveErr := <-done; !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
		if err != nil {
			return fmt.Errorf("unable to stop the startup health server: %w", err)
		}
		return nil
	}, nil
}
