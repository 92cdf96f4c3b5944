package cli

import (
	"context"
	"log/slog"

	"github.com/mandate-dev/mandate/config"
)

// levelHandler drops records below min and passes the rest to the
// handler it wraps, which the decision log shares unfiltered: one writer,
// so a decision line and a log line never interleave.
type levelHandler struct {
	min   slog.Level
	inner slog.Handler
}

// leveled filters h at the logLevel key's level. logr's V(1) (controller-
// runtime's debug lines) is slog level -1, so debug lets everything through.
func leveled(h slog.Handler, level string) slog.Handler {
	min := slog.LevelInfo
	switch level {
	case config.LogDebug:
		min = slog.LevelDebug
	case config.LogError:
		min = slog.LevelError
	}
	return &levelHandler{min: min, inner: h}
}

func (h *levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.inner.Enabled(ctx, l)
}

func (h *levelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.inner.Handle(ctx, r)
}

func (h *levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &levelHandler{min: h.min, inner: h.inner.WithAttrs(attrs)}
}

func (h *levelHandler) WithGroup(name string) slog.Handler {
	return &levelHandler{min: h.min, inner: h.inner.WithGroup(name)}
}
