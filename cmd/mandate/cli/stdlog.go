package cli

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"strings"
)

// stdLog routes the standard library's logger (net/http's server errors,
// which controller-runtime's webhook server leaves to it) through serve's
// structured handler. A TLS handshake refused because the caller had no
// client certificate is logged at debug: with webhook client
// authentication on, the readiness check's own dial (controller-runtime's
// StartedChecker presents none) makes one per probe, and any other caller
// without a certificate is refused whatever the log says.
func stdLog(h slog.Handler) {
	log.SetFlags(0)
	log.SetOutput(stdLogWriter{log: slog.New(h).With("logger", "net/http")})
}

type stdLogWriter struct{ log *slog.Logger }

func (w stdLogWriter) Write(p []byte) (int, error) {
	msg := string(bytes.TrimRight(p, "\n"))
	level := slog.LevelInfo
	if strings.Contains(msg, "TLS handshake error") && strings.Contains(msg, "didn't provide a certificate") {
		level = slog.LevelDebug
	}
	w.log.Log(context.Background(), level, msg)
	return len(p), nil
}
