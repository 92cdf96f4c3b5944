package bundles

import (
	"encoding/json"
	"net/http"
)

// StatusPath is where `mandate serve`'s metrics server serves the bundle
// status, and where `mandate bundle status` reads it.
const StatusPath = "/bundle/status"

// ServingStatus is what StatusPath serves: the activation status of the
// active policy and of the shadow revision, if any.
type ServingStatus struct {
	Active Status  `json:"active"`
	Shadow *Status `json:"shadow,omitempty"`
}

// StatusHandler serves status() as JSON.
func StatusHandler(status func() ServingStatus) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(status())
	})
}
