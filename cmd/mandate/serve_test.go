package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServeSetupErrors(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"missing kubeconfig", []string{"serve", "--kubeconfig", filepath.Join(t.TempDir(), "nope")}, "unable to load kubeconfig"},
		{"missing policy directory", []string{"serve", "--kubeconfig", kubeconfig, "--policies", filepath.Join(t.TempDir(), "nope")}, "nope"},
		{"stray argument", []string{"serve", "extra"}, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errText := run(t, tc.args...)
			if code != 1 || !strings.Contains(errText, tc.wantErr) {
				t.Errorf("exit %d, error %q; want exit 1 and an error containing %q", code, errText, tc.wantErr)
			}
		})
	}
}
