package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSyncBadInput: usage errors exit 2 before any cluster is contacted.
func TestSyncBadInput(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown scheduler", []string{"--kubeconfig", "x", "--schedulers", "slurm"}, `unknown scheduler "slurm"`},
		{"diff and check", []string{"--kubeconfig", "x", "--diff", "--check"}, "exclude each other"},
		{"both model sources", []string{"--kubeconfig", "x", "--policies", "p", "--bundle", "b"}, "at most one"},
		{"bad output", []string{"--kubeconfig", "x", "-o", "yaml"}, "want table or json"},
		{"unreadable kubeconfig", []string{"--kubeconfig", "/nonexistent/kubeconfig"}, "unable to read kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errText := run(t, append([]string{"sync"}, tc.args...)...)
			assert.Equal(t, exitBadInput, code, errText)
			assert.Contains(t, errText, tc.wantErr)
		})
	}
}
