package decisionlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/decisionlog"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/test/reviewtest"
)

// gatedHandler writes JSON lines to buf; the line of the decision named
// "blocker" waits, once it has said so on entered, until release closes.
type gatedHandler struct {
	slog.Handler
	entered chan struct{}
	release chan struct{}
}

func (h *gatedHandler) Handle(ctx context.Context, r slog.Record) error {
	blocker := false
	r.Attrs(func(a slog.Attr) bool {
		blocker = blocker || (a.Key == "name" && a.Value.String() == "blocker")
		return true
	})
	if blocker {
		close(h.entered)
		<-h.release
	}
	return h.Handler.Handle(ctx, r)
}

func (h *gatedHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &gatedHandler{Handler: h.Handler.WithAttrs(attrs), entered: h.entered, release: h.release}
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine and callers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// TestQueueFullNeverDropsDenials: with the writer stuck on a line and the
// queue full, every allowed decision's line is dropped and counted, and
// every denial's and error's line is written by its caller; once the
// writer is free, Close writes what was queued.
func TestQueueFullNeverDropsDenials(t *testing.T) {
	const queue, extraAllowed, denials = 4, 7, 5
	var out syncBuffer
	h := &gatedHandler{Handler: slog.NewJSONHandler(&out, nil), entered: make(chan struct{}), release: make(chan struct{})}
	l, err := decisionlog.New(h, decisionlog.Options{Enabled: true, SampleRate: 1, Queue: queue})
	require.NoError(t, err)
	droppedBefore := reviewtest.Counter(t, "mandate_decision_log_dropped_total", nil)
	ctx := context.Background()

	blocker := allowed()
	blocker.Name = "blocker"
	require.True(t, l.Log(ctx, blocker))
	<-h.entered // the writer holds the blocker; the queue is empty
	for range queue {
		require.True(t, l.Log(ctx, allowed()))
	}
	for range extraAllowed {
		require.True(t, l.Log(ctx, allowed()), "a dropped line is done with")
	}
	for i := range denials {
		e := allowed()
		e.Name = "denied"
		e.Decision = evaluator.Decision{ID: "d", Violations: []evaluator.Violation{{Code: "quota", Dimension: evaluator.DimensionQuota, Message: "no"}}}
		if i%2 == 1 {
			e.Name, e.Err = "failed", context.DeadlineExceeded
		}
		require.True(t, l.Log(ctx, e))
	}
	assert.Equal(t, uint64(extraAllowed), l.Dropped())
	assert.Equal(t, float64(extraAllowed), reviewtest.Counter(t, "mandate_decision_log_dropped_total", nil)-droppedBefore)
	// The denials are written already, while the writer is still stuck.
	written := func() map[string]int {
		out.mu.Lock()
		defer out.mu.Unlock()
		n := map[string]int{}
		for _, line := range bytes.Split(bytes.TrimSpace(out.buf.Bytes()), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var m map[string]any
			require.NoError(t, json.Unmarshal(line, &m), "line %q", line)
			assert.Equal(t, decisionlog.Name, m["logger"])
			n[m["name"].(string)+"/"+m["result"].(string)]++
		}
		return n
	}
	assert.Equal(t, map[string]int{"denied/denied": 3, "failed/error": 2}, written())

	close(h.release)
	l.Close()
	assert.Equal(t, map[string]int{"denied/denied": 3, "failed/error": 2, "blocker/allowed": 1, "vit-sweep/allowed": queue}, written())
	// After Close, lines are written by their callers.
	require.True(t, l.Log(ctx, allowed()))
	assert.Equal(t, queue+1, written()["vit-sweep/allowed"])
	l.Close()
}

// TestLineEscapes: the hand-built arrays of a line encode any string as
// encoding/json would decode it back.
func TestLineEscapes(t *testing.T) {
	odd := []string{"quote \" backslash \\ slash /", "control \x00\x01\x1f\t\n\r", "<html> & 'x'", "line\u2028sep\u2029", "bad utf8 \xff\xfe end", "ünïcödé 日本"}
	l, buf := newLogger(t, decisionlog.Options{Enabled: true, SampleRate: 1})
	e := allowed()
	e.Decision.Allowed = false
	e.Decision.Warnings = odd
	for _, s := range odd {
		e.Decision.Violations = append(e.Decision.Violations, evaluator.Violation{Code: s, Dimension: evaluator.DimensionQuota, Message: s})
	}
	require.True(t, l.Log(context.Background(), e))
	got := lines(t, buf)
	require.Len(t, got, 1)
	want := func(s string) string {
		raw, err := json.Marshal(s)
		require.NoError(t, err)
		var back string
		require.NoError(t, json.Unmarshal(raw, &back))
		return back
	}
	warnings := got[0]["warnings"].([]any)
	violations := got[0]["violations"].([]any)
	require.Len(t, warnings, len(odd))
	require.Len(t, violations, len(odd))
	for i, s := range odd {
		assert.Equal(t, want(s), warnings[i])
		v := violations[i].(map[string]any)
		assert.Equal(t, map[string]any{"code": want(s), "dimension": "quota", "enforcement": "deny", "message": want(s)}, v)
	}
}
