package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/config"
)

func TestCheckSchedule(t *testing.T) {
	d := 24 * time.Hour
	for _, tc := range []struct {
		name                               string
		ca, caRenew, serving, servingRenew time.Duration
		wantErr                            string
	}{
		{name: "defaults", ca: 365 * d, caRenew: 365 * d / 3, serving: 30 * d, servingRenew: 10 * d},
		{name: "serving renew after expiry", ca: 365 * d, caRenew: 100 * d, serving: 30 * d, servingRenew: 30 * d, wantErr: "ServingRenewBefore"},
		{name: "ca renew zero", ca: 365 * d, caRenew: 0, serving: 30 * d, servingRenew: 10 * d, wantErr: "CARenewBefore"},
		{name: "ca renewed too late for overlap", ca: 365 * d, caRenew: 20 * d, serving: 30 * d, servingRenew: 10 * d, wantErr: "old CA must outlive"},
		{name: "serving too short", ca: 365 * d, caRenew: 100 * d, serving: time.Second, servingRenew: time.Millisecond, wantErr: "ServingDuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := config.CheckSchedule(tc.ca, tc.caRenew, tc.serving, tc.servingRenew, time.Minute)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}
