// Package docs checks that docs/architecture.md says what the code is: its
// Layers table against the imports `go list` reports, and its "Adding a
// workload kind" and "Adding a scheduler" tables against the fields of the
// registrations they describe. A doc that drifts from the code fails here,
// with the difference named.
package docs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/schedsync"
	"github.com/mandate-dev/mandate/scheduler/facts"
	"github.com/mandate-dev/mandate/test/envtest"
	"github.com/mandate-dev/mandate/workload"
)

const module = "github.com/mandate-dev/mandate"

// section returns the lines of the markdown section under heading, up to
// the next heading of the same or a higher level.
func section(t *testing.T, doc, heading string) []string {
	t.Helper()
	level := strings.Index(heading, " ")
	var lines []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		line := sc.Text()
		if line == heading {
			in = true
			continue
		}
		if in && strings.HasPrefix(line, "#") {
			if l := strings.Index(line, " "); l > 0 && l <= level && strings.Trim(line[:l], "#") == "" {
				break
			}
		}
		if in {
			lines = append(lines, line)
		}
	}
	require.NotEmpty(t, lines, "docs/architecture.md has no section %q", heading)
	return lines
}

// tableRows returns the cells of a markdown table's body rows.
func tableRows(lines []string) [][]string {
	var rows [][]string
	header := true
	for _, line := range lines {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 || !header {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if header {
			header = false
			continue
		}
		if strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			continue
		}
		rows = append(rows, cells)
	}
	return rows
}

var backticked = regexp.MustCompile("`([^`]+)`")

// listedNames returns the names in a table cell: its backticked words, or
// (for an imports cell) its comma-separated words.
func listedNames(cell string) []string {
	var names []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		names = append(names, m[1])
	}
	return names
}

type goPackage struct {
	ImportPath string
	Imports    []string
}

// imports maps each Mandate package (its path below the module) to the
// Mandate packages it imports, from `go list` of the product tree.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	got := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p goPackage
		require.NoError(t, dec.Decode(&p))
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		var own []string
		for _, imp := range p.Imports {
			if r, ok := strings.CutPrefix(imp, module+"/"); ok {
				own = append(own, r)
			}
		}
		got[rel] = own
	}
	return got
}

// TestLayersTableMatchesImports checks each row of the Layers table whose
// imports cell is a list: the Mandate packages its folders import (other
// than their own subfolders and internal/ helpers) are exactly the ones
// listed, "—" meaning none. Rows that describe their imports in words
// ("everything it wires") are not lists and are not checked.
func TestLayersTableMatchesImports(t *testing.T) {
	root := envtest.RepoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	require.NoError(t, err)
	rows := tableRows(section(t, string(doc), "## Layers"))
	require.NotEmpty(t, rows, "the Layers table has no rows")
	pkgs := imports(t, root)
	listed := regexp.MustCompile(`^(—|[a-z][a-z0-9/]*(, [a-z][a-z0-9/]*)*)$`)
	checked := 0
	for _, row := range rows {
		require.Len(t, row, 3, "a Layers row has folder, owns, imports: %q", row)
		folders := listedNames(row[0])
		require.NotEmpty(t, folders, "a Layers row names its folders in backticks: %q", row[0])
		cell := strings.ReplaceAll(row[2], "`", "")
		if !listed.MatchString(cell) {
			continue
		}
		checked++
		var want []string
		if cell != "—" {
			want = strings.Split(cell, ", ")
		}
		var got []string
		for _, folder := range folders {
			folder = strings.TrimSuffix(folder, "/")
			_, ok := pkgs[folder]
			require.True(t, ok, "the Layers table names %s/, which is no package", folder)
			for _, imp := range pkgs[folder] {
				if imp == folder || strings.HasPrefix(imp, folder+"/") || strings.Contains(imp, "internal/") ||
					slices.Contains(folders, imp+"/") || slices.Contains(got, imp) {
					continue
				}
				got = append(got, imp)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		assert.Equal(t, want, got, "docs/architecture.md Layers row %s: imports listed (want) vs `go list` (got)", row[0])
	}
	assert.Greater(t, checked, 10, "most Layers rows list their imports")
}

// fieldsTable returns the first-column names of the table under heading.
func fieldsTable(t *testing.T, doc, heading string) []string {
	t.Helper()
	var names []string
	for _, row := range tableRows(section(t, doc, heading)) {
		n := listedNames(row[0])
		require.NotEmpty(t, n, "a row of %q names its field in backticks: %q", heading, row[0])
		names = append(names, n...)
	}
	slices.Sort(names)
	return names
}

// exported returns the exported field names of a struct type.
func exported(typ reflect.Type) []string {
	var names []string
	for i := range typ.NumField() {
		if f := typ.Field(i); f.IsExported() {
			names = append(names, f.Name)
		}
	}
	slices.Sort(names)
	return names
}

// TestAddingAWorkloadKindListsEveryField checks that the "Adding a
// workload kind" table documents every field of workload.Kind, and no
// field the registration lacks.
func TestAddingAWorkloadKindListsEveryField(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(envtest.RepoRoot(t), "docs", "architecture.md"))
	require.NoError(t, err)
	assert.Equal(t, exported(reflect.TypeFor[workload.Kind]()), fieldsTable(t, string(doc), "## Adding a workload kind"),
		"docs/architecture.md's Adding a workload kind table (got) against workload.Kind's fields (want)")
}

// TestAddingASchedulerNamesEachSchedulersFiles checks the "Adding a
// scheduler" steps against the registries: each numbered step names a
// file, and for every registered scheduler the files a step names with
// <name> exist (scheduler/<name>.go for every scheduler but the
// Kubernetes default's, whose adapter is the common one in
// scheduler/scheduler.go; schedsync/<name>.go for those mandate sync
// configures), so a scheduler added the documented way is where the
// document says, and a step that names a file that is not there fails.
func TestAddingASchedulerNamesEachSchedulersFiles(t *testing.T) {
	root := envtest.RepoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	require.NoError(t, err)
	step := regexp.MustCompile("^[0-9]+\\. `([^`]+)`")
	var steps []string
	for _, line := range section(t, string(doc), "## Adding a scheduler") {
		if m := step.FindStringSubmatch(line); m != nil {
			steps = append(steps, m[1])
		}
	}
	require.GreaterOrEqual(t, len(steps), 3, "the section lists the files one touches, one numbered step each")
	synced := schedsync.AllSchedulers()
	checked := 0
	for _, path := range steps {
		if !strings.Contains(path, "/") {
			continue // a command (make chart-rules), not a file
		}
		if !strings.Contains(path, "<name>") {
			_, err := os.Stat(filepath.Join(root, path))
			assert.NoError(t, err, "step %q names no file", path)
			checked++
			continue
		}
		for _, name := range facts.Names() {
			if name == facts.Default.Name || (strings.HasPrefix(path, "schedsync/") && !slices.Contains(synced, name)) {
				continue
			}
			_, err := os.Stat(filepath.Join(root, strings.ReplaceAll(path, "<name>", name)))
			assert.NoError(t, err, "scheduler %s has no %s", name, path)
			checked++
		}
	}
	assert.Greater(t, checked, len(facts.Names()), "the steps name each scheduler's files")
}
