package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
)

// TestLogLevel: --log-level debug lets logr's V(1) lines through, info
// (the default) only Info and errors, error only errors.
func TestLogLevel(t *testing.T) {
	for _, tc := range []struct {
		level string
		want  []string
	}{
		{"debug", []string{"detail", "news", "failure"}},
		{"info", []string{"news", "failure"}},
		{"error", []string{"failure"}},
	} {
		t.Run(tc.level, func(t *testing.T) {
			var buf bytes.Buffer
			log := logr.FromSlogHandler(leveled(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), tc.level))
			log.V(1).Info("detail")
			log.WithValues("k", "v").Info("news")
			log.WithName("sub").Error(nil, "failure")
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				for _, msg := range []string{"detail", "news", "failure"} {
					if strings.Contains(line, `"msg":"`+msg+`"`) {
						got = append(got, msg)
					}
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
