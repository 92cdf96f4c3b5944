package authoritymetrics_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mandate-dev/mandate/authoritymetrics"
	"github.com/mandate-dev/mandate/clusterreport"
)

// TestLoopWaitsUntilReady: no report is computed before Ready says so (serve's
// state synced), and the first one comes once it does.
func TestLoopWaitsUntilReady(t *testing.T) {
	var ready atomic.Bool
	reports := make(chan struct{}, 16)
	var early atomic.Bool
	loop := &authoritymetrics.Loop{
		Interval: time.Hour,
		Ready:    ready.Load,
		Report: func(context.Context) (*clusterreport.Report, error) {
			if !ready.Load() {
				early.Store(true)
			}
			reports <- struct{}{}
			return &clusterreport.Report{BlockedBy: map[string]int{}}, nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- loop.Start(ctx) }()
	// Polls of Ready pass while it is false; then it turns true.
	for range 3 {
		select {
		case <-reports:
			t.Fatal("a report was computed before the state was ready")
		case <-time.After(150 * time.Millisecond):
		}
	}
	ready.Store(true)
	<-reports
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if early.Load() {
		t.Fatal("a report was computed before the state was ready")
	}
}
