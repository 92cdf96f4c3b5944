package cli

import (
	"strings"
	"testing"
)

func TestServeDecisionLogFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		env      map[string]string
		wantErr  string
		wantCode int
	}{
		{args: []string{"serve", "--decision-log-sample-rate", "2"}, wantErr: "decisionLog.sampleRate: 2 is out of range (0-1"},
		{args: []string{"serve"}, env: map[string]string{"MANDATE_DECISION_LOG_SAMPLE_RATE": "-1"}, wantErr: "decisionLog.sampleRate: -1 is out of range"},
		// A flag's bad value is a usage error: exit 2.
		{args: []string{"serve", "--decision-log=maybe"}, wantErr: `invalid argument "maybe" for "--decision-log"`, wantCode: 2},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			if tc.wantCode == 0 {
				tc.wantCode = 1
			}
			code, _, errText := run(t, tc.args...)
			if code != tc.wantCode || !strings.Contains(errText, tc.wantErr) {
				t.Errorf("exit %d, error %q; want exit %d and an error containing %q", code, errText, tc.wantCode, tc.wantErr)
			}
		})
	}
}
