package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/buildinfo"
)

// TestUsageErrorsExit2: an unknown flag, a bad flag value, a missing
// required flag, a wrong number of arguments and an unknown subcommand
// exit 2 on every command (1 means denied or failed), before anything runs.
func TestUsageErrorsExit2(t *testing.T) {
	f := manifest(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n")
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"eval", "-f", f, "--cluster", exampleCluster, "--bogus"}, "unknown flag: --bogus"},
		{[]string{"eval", "-f", f}, `required flag(s) "cluster" not set`},
		{[]string{"eval", "--cluster", exampleCluster}, `required flag(s) "filename" not set`},
		{[]string{"eval", "-f", f, "--cluster", exampleCluster, "extra"}, `unknown command "extra" for "mandate eval"`},
		{[]string{"eval", "-f", f, "--cluster", exampleCluster, "-o", "xml"}, `invalid argument "xml" for "-o, --output" flag`},
		{[]string{"audit", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"audit", "-o", "wide"}, `invalid argument "wide"`},
		{[]string{"serve", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"serve", "--port", "many"}, `invalid argument "many" for "--port" flag`},
		{[]string{"serve", "extra"}, `unknown command "extra" for "mandate serve"`},
		{[]string{"bundle", "build"}, "accepts 1 arg(s), received 0"},
		{[]string{"bundle", "sign", "b.tar.gz", "-o", "s.tar.gz"}, `required flag(s) "signing-key" not set`},
		{[]string{"bundle", "verify", "b.tar.gz"}, `required flag(s) "verification-key" not set`},
		{[]string{"bundle", "inspect"}, "accepts 1 arg(s), received 0"},
		{[]string{"bundle", "status", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"bundle", "nope"}, `unknown command "nope" for "mandate bundle"`},
		{[]string{"webhook-configurations", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"version", "extra"}, `unknown command "extra" for "mandate version"`},
		{[]string{"version", "-o", "xml"}, `invalid argument "xml"`},
		{[]string{"nope"}, `unknown command "nope" for "mandate"`},
		{[]string{"completion", "tcsh"}, `unknown command "tcsh" for "mandate completion"`},
		{[]string{"completion", "bash", "extra"}, `unknown command "extra" for "mandate completion bash"`},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errText := run(t, tc.args...)
			assert.Equal(t, exitBadInput, code, errText)
			assert.Contains(t, errText, tc.wantErr)
		})
	}
}

// TestOutputFormats: every command that prints takes -o table|json|yaml,
// and the shell completes -o with exactly those (through cobra's
// __complete, what the completion scripts call).
func TestOutputFormats(t *testing.T) {
	for _, cmd := range [][]string{{"eval"}, {"audit"}, {"bundle", "inspect"}, {"bundle", "status"}, {"webhook-configurations"}, {"version"}} {
		t.Run(strings.Join(cmd, " "), func(t *testing.T) {
			want := []string{"table", "json", "yaml"}
			if cmd[0] == "audit" {
				want = append(want, outputOpenReports)
			}
			code, out, errText := run(t, append(append([]string{"__complete"}, cmd...), "-o", "")...)
			require.Equal(t, 0, code, errText)
			got := strings.Split(firstLines(out, len(want)+1), "\n")
			require.Len(t, got, len(want)+2, out)
			assert.ElementsMatch(t, want, got[:len(want)], "completions")
			assert.Equal(t, ":4", got[len(want)], "then :4, no file completion")
			code, out, errText = run(t, append(append([]string{"__complete"}, cmd...), "--output", "j")...)
			require.Equal(t, 0, code, errText)
			assert.Contains(t, out, "json\n")
		})
	}
	// The completion command writes where stdout was when it was added.
	script := captureStdout(t, func() {
		code, _, errText := run(t, "completion", "bash")
		require.Equal(t, 0, code, errText)
	})
	assert.Contains(t, script, "__start_mandate", "the bash completion script, which calls __complete")
	for _, format := range []string{"table", "json", "yaml"} {
		code, _, errText := run(t, "eval", "-f", "../../../examples/workloads/01-notebook-admitted.yaml", "--cluster", exampleCluster, "-o", format)
		assert.Equal(t, exitAdmitted, code, "eval -o %s: %s", format, errText)
		code, _, errText = run(t, "audit", "--snapshot", exampleCluster, "-o", format)
		assert.NotEqual(t, exitBadInput, code, "audit -o %s: %s", format, errText)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "")
}

// TestVersion: `mandate version` in its three forms and `mandate
// --version` print the facts of package buildinfo (the image test checks
// them in a binary built with -ldflags).
func TestVersion(t *testing.T) {
	info := buildinfo.Get()
	code, table, errText := run(t, "version")
	require.Equal(t, 0, code, errText)
	for _, want := range []string{"Version:     " + info.Version + "\n", "Commit:      " + info.Commit + "\n", "Build date:  " + info.BuildDate + "\n",
		"Go version:  " + info.GoVersion + "\n", "OPA version: " + info.OPAVersion + "\n", "Platform:    " + info.Platform + "\n"} {
		assert.Contains(t, table, want)
	}
	code, out, errText := run(t, "--version")
	require.Equal(t, 0, code, errText)
	assert.Equal(t, table, out, "--version prints what version does")
	code, out, errText = run(t, "version", "-o", "text")
	require.Equal(t, 0, code, errText)
	assert.Equal(t, table, out, "text is another name of table")

	var fromJSON, fromYAML buildinfo.Info
	code, out, errText = run(t, "version", "-o", "json")
	require.Equal(t, 0, code, errText)
	require.NoError(t, json.Unmarshal([]byte(out), &fromJSON))
	assert.Equal(t, info, fromJSON)
	code, out, errText = run(t, "version", "-o", "yaml")
	require.Equal(t, 0, code, errText)
	require.NoError(t, yaml.UnmarshalStrict([]byte(out), &fromYAML))
	assert.Equal(t, info, fromYAML)
}

// TestOPAVersionShowsMandatesCommit: `mandate opa version` prints
// Mandate's build first, and OPA's own "Build Commit" line is Mandate's.
func TestOPAVersionShowsMandatesCommit(t *testing.T) {
	out := captureStdout(t, func() {
		root := newRootCommand()
		root.SetArgs([]string{"opa", "version"})
		require.NoError(t, root.Execute())
	})
	info := buildinfo.Get()
	assert.Contains(t, out, "Commit:      "+info.Commit+"\n")
	assert.Contains(t, out, "Build Commit: "+info.Commit+"\n")
	assert.Contains(t, out, "Version: "+info.OPAVersion+"\n", "OPA's own lines follow")
}

// TestEvalNamespace: -n places the workloads that name no namespace
// (so decides them for that namespace's tenant); without it they are in
// "default", as kubectl would create them.
func TestEvalNamespace(t *testing.T) {
	f := manifest(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n")
	namespaceOf := func(args ...string) (string, string) {
		_, out, errText := run(t, append([]string{"eval", "-f", f, "--cluster", exampleCluster, "-o", "json"}, args...)...)
		var view struct {
			Workload struct{ Namespace, Tenant string }
		}
		require.NoError(t, json.Unmarshal([]byte(out), &view), "%s\n%s", out, errText)
		return view.Workload.Namespace, view.Workload.Tenant
	}
	ns, tenant := namespaceOf("-n", "research")
	assert.Equal(t, "research", ns)
	assert.Equal(t, "research", tenant)
	ns, tenant = namespaceOf("--namespace", "vision")
	assert.Equal(t, "vision", ns)
	assert.Equal(t, "research-vision", tenant)
	ns, _ = namespaceOf()
	assert.Equal(t, "default", ns)
}

// TestMissingKeyFilesSayNoSuchFile: a signing or verification key, token
// file or CA that does not exist is reported as such, not as a key that
// does not parse (OPA takes a missing path for the key itself).
func TestMissingKeyFilesSayNoSuchFile(t *testing.T) {
	dir := t.TempDir()
	b := filepath.Join(dir, "b.tar.gz")
	code, _, errText := run(t, "bundle", "build", "../../../policies", "-o", b, "--revision", "r1")
	require.Equal(t, 0, code, errText)
	missing := filepath.Join(dir, "missing")
	kubeconfig := unreachableKubeconfig(t)
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"signing key", []string{"bundle", "sign", b, "--signing-key", missing, "-o", b + ".signed"}, 2},
		{"signing key, ES256", []string{"bundle", "sign", b, "--signing-key", missing, "--signing-alg", "ES256", "-o", b + ".signed"}, 2},
		{"verification key", []string{"bundle", "verify", b, "--verification-key", missing}, 2},
		{"audit's verification key", []string{"audit", "--bundle", b, "--bundle-verification-key", missing, "--snapshot", exampleCluster}, 2},
		{"bundle status token", []string{"bundle", "status", "--addr", "https://127.0.0.1:1", "--token-file", missing}, 2},
		{"webhook CA bundle", []string{"webhook-configurations", "--url", "https://127.0.0.1:9443", "--ca-bundle", missing}, 2},
		{"serve's verification key", []string{"serve", "--kubeconfig", kubeconfig, "--bundle", b, "--bundle-verification-key", missing}, 1},
		{"serve's bundle CA", []string{"serve", "--kubeconfig", kubeconfig, "--bundle", "https://127.0.0.1:1/b.tar.gz", "--bundle-ca-file", missing}, 1},
		{"serve's bundle token", []string{"serve", "--kubeconfig", kubeconfig, "--bundle", "https://127.0.0.1:1/b.tar.gz", "--bundle-bearer-token-file", missing}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errText := run(t, tc.args...)
			assert.Equal(t, tc.wantCode, code, errText)
			assert.Contains(t, errText, missing+": no such file or directory")
		})
	}
}

// captureStdout is what f writes to os.Stdout, where OPA's commands and
// cobra's completion scripts write whatever the command's output is.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		read <- b
	}()
	stdout := os.Stdout
	os.Stdout = w
	defer func() {
		os.Stdout = stdout
	}()
	f()
	os.Stdout = stdout
	require.NoError(t, w.Close())
	return string(<-read)
}
