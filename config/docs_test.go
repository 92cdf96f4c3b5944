package config

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListEveryKey: docs/configuration.md has a table row for every
// key of Keys, with its environment variables and flag, so a key added to
// the table cannot go undocumented.
func TestDocsListEveryKey(t *testing.T) {
	data, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if cells := strings.Split(line, "|"); len(cells) > 2 && strings.HasPrefix(line, "| `") {
			rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = line
		}
	}
	for _, k := range Keys {
		row, ok := rows[k.Name]
		if !ok {
			t.Errorf("docs/configuration.md has no row for %s", k.Name)
			continue
		}
		for _, env := range k.Env {
			if !strings.Contains(row, "`"+env+"`") {
				t.Errorf("the row of %s does not name %s", k.Name, env)
			}
		}
		if k.Flag != "" && !strings.Contains(row, "`--"+k.Flag+"`") {
			t.Errorf("the row of %s does not name --%s", k.Name, k.Flag)
		}
	}
}
