package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/bundles"
)

func TestBundleStatusCommand(t *testing.T) {
	activated := time.Now().Add(-time.Hour)
	good := bundles.Status{Revision: "r1", Source: "https://b.example/mandate.tar.gz", ActivatedAt: activated, LastAttempt: activated}
	rejected := good
	rejected.LastAttempt, rejected.LastStep = time.Now(), bundles.StepVerify
	rejected.LastError = "bundle https://b.example/mandate.tar.gz rejected at verify: bundle signature verification failed"
	for _, tc := range []struct {
		name     string
		status   bundles.ServingStatus
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{name: "active", status: bundles.ServingStatus{Active: good},
			wantOut: []string{"Active revision:  r1", "Source:           https://b.example/mandate.tar.gz", "(1h0m0s ago): ok"}},
		{name: "rejected", status: bundles.ServingStatus{Active: rejected}, wantCode: 1,
			wantOut: []string{"Active revision:  r1", "FAILED at verify", "Error:            bundle https://b.example/mandate.tar.gz rejected at verify"},
			wantErr: "the last active bundle attempt failed at verify"},
		{name: "nothing active", status: bundles.ServingStatus{}, wantCode: 1, wantOut: []string{"Active revision:  (none)"},
			wantErr: "no active revision is active"},
		{name: "shadow", status: bundles.ServingStatus{Active: good, Shadow: &bundles.Status{Revision: "c1", Source: "candidate/", ActivatedAt: activated}},
			wantOut: []string{"Active revision:  r1", "Shadow revision:  c1", "Source:           candidate/"}},
		{name: "shadow rejected", status: bundles.ServingStatus{Active: good, Shadow: &rejected}, wantCode: 1,
			wantOut: []string{"Shadow revision:  r1", "FAILED at verify"}, wantErr: "the last shadow bundle attempt failed at verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != bundles.StatusPath {
					http.NotFound(w, r)
					return
				}
				_ = json.NewEncoder(w).Encode(tc.status)
			}))
			defer srv.Close()
			code, out, errText := run(t, "bundle", "status", "--addr", strings.TrimPrefix(srv.URL, "http://"))
			assert.Equal(t, tc.wantCode, code, "stderr: %s", errText)
			for _, want := range tc.wantOut {
				assert.Contains(t, out, want)
			}
			assert.Contains(t, errText, tc.wantErr)

			code, out, _ = run(t, "bundle", "status", "--addr", srv.URL, "-o", "json")
			assert.Equal(t, tc.wantCode, code)
			var got bundles.ServingStatus
			require.NoError(t, json.Unmarshal([]byte(out), &got))
			assert.Equal(t, tc.status.Active.Revision, got.Active.Revision)
		})
	}

	t.Run("unreachable", func(t *testing.T) {
		code, _, errText := run(t, "bundle", "status", "--addr", "127.0.0.1:1")
		assert.Equal(t, 2, code)
		assert.Contains(t, errText, "unable to ask mandate serve for its bundle status")
	})
}
