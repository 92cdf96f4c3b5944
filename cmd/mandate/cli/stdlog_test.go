package cli

import (
	"bytes"
	"log"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestStdLogIsStructured: net/http's lines come out as serve's JSON log
// lines; a handshake refused for want of a client certificate (the
// readiness check's own dial, once per probe) only at debug.
func TestStdLogIsStructured(t *testing.T) {
	var out bytes.Buffer
	t.Cleanup(func() { log.SetOutput(os.Stderr); log.SetFlags(log.LstdFlags) })
	stdLog(leveled(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}), "info"))
	log.Print("http: TLS handshake error from 127.0.0.1:4000: tls: client didn't provide a certificate")
	log.Print("http: panic serving 127.0.0.1:4001: boom")
	assert.NotContains(t, out.String(), "didn't provide a certificate", "debug only")
	assert.Contains(t, out.String(), `"msg":"http: panic serving 127.0.0.1:4001: boom"`)
	assert.Contains(t, out.String(), `"logger":"net/http"`)
}
