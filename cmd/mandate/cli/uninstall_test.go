package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUninstallNeedsAName: an empty --webhook-configuration is a usage
// error (exit 2), never a delete of something else. test/chart's
// TestInstall runs the command against a real API server.
func TestUninstallNeedsAName(t *testing.T) {
	code, out, errText := run(t, "uninstall", "--webhook-configuration=")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, errText, "--webhook-configuration is required")
}
