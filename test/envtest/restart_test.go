package envtest_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/test/envtest"
)

// TestRestartAPIServer: the API server is unreachable while stopped and
// serves again, same address, same client, same objects, once restarted.
func TestRestartAPIServer(t *testing.T) {
	env := envtest.Start(t, envtest.WithRestartableAPIServer())
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "before"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatalf("Create() error = %v", err)
	}
	errs := make(chan error, 1)
	go func() { errs <- env.RestartAPIServer(2 * time.Second) }()
	// Poll until a read fails: the API server is down. The restart must
	// not have completed without a failed read in between.
	unreachable := func() bool {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		return env.Client.Get(short, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) != nil
	}
	var restartErr error
	restarted := false
	for !unreachable() {
		select {
		case restartErr = <-errs:
			restarted = true
		default:
		}
		if restarted {
			t.Fatalf("the API server restarted (error %v) without a read failing while it was stopped", restartErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-errs; err != nil {
		t.Fatalf("RestartAPIServer() error = %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
		t.Errorf("Get() after the restart error = %v, want the object stored before", err)
	}
}

// TestRestartNeedsOption: an Env started without WithRestartableAPIServer
// says how to get one instead of losing its certificates.
func TestRestartNeedsOption(t *testing.T) {
	env := envtest.Start(t)
	if err := env.RestartAPIServer(0); err == nil {
		t.Fatal("RestartAPIServer() without WithRestartableAPIServer succeeded, want an error")
	}
}
