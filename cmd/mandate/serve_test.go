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
	dir := t.TempDir()
	writeConfig := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	unknownKey := writeConfig("unknown.yaml", "webhook:\n  prot: 9443\n")
	wrongType := writeConfig("type.yaml", "webhook:\n  port: abc\n")
	noCerts := t.TempDir()
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{name: "unknown key in --config", args: []string{"serve", "--kubeconfig", kubeconfig, "--config", unknownKey}, wantErr: "webhook.prot: unknown key"},
		{name: "wrong type in --config", args: []string{"serve", "--kubeconfig", kubeconfig, "--config", wrongType}, wantErr: `webhook.port: "abc" is not an integer`},
		{name: "missing --config file", args: []string{"serve", "--config", filepath.Join(dir, "nope.yaml")}, wantErr: "unable to read the configuration file"},
		{name: "missing TLS files", args: []string{"serve", "--kubeconfig", kubeconfig, "--cert-dir", noCerts}, wantErr: "webhook.certDir: " + filepath.Join(noCerts, "tls.crt") + " not found"},
		{name: "MANDATE_WEBHOOK_PORT=0", args: []string{"serve", "--kubeconfig", kubeconfig}, env: map[string]string{"MANDATE_WEBHOOK_PORT": "0"}, wantErr: "webhook.port: 0 is not a port (1-65535)"},
		{name: "--port out of range", args: []string{"serve", "--kubeconfig", kubeconfig, "--port", "70000"}, wantErr: "webhook.port: 70000 is not a port"},
		{name: "missing kubeconfig", args: []string{"serve", "--kubeconfig", filepath.Join(t.TempDir(), "nope")}, wantErr: "unable to load kubeconfig"},
		{name: "missing policy directory", args: []string{"serve", "--kubeconfig", kubeconfig, "--policies", filepath.Join(t.TempDir(), "nope")}, wantErr: "nope"},
		{name: "stray argument", args: []string{"serve", "extra"}, wantErr: "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, errText := run(t, tc.args...)
			if code != 1 || !strings.Contains(errText, tc.wantErr) {
				t.Errorf("exit %d, error %q; want exit 1 and an error containing %q", code, errText, tc.wantErr)
			}
		})
	}
}
