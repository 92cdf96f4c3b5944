package readme

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/test/envtest"
)

// runBy names, for each README section whose sh lines are run verbatim,
// the test that runs them. Every line of these sections that is neither a
// synopsis nor in notRun is run; a new one is run too.
var runBy = map[string]string{
	"## The two commands":                          "TestTwoCommandsSection",
	"## The authority model":                       "TestAuthorityModelSection",
	"## From model to schedulers: `mandate sync`":  "TestSyncSection",
	"## Policy bundles":                            "TestPolicyBundlesSection",
	"## Installing with Helm":                      "TestHelmSection",
	"## What-if: `mandate simulate fgd`":           "TestWhatIfFGDSection",
	"## What-if over time: `mandate simulate run`": "TestWhatIfOverTimeSection",
}

// notRun are the README lines no test runs, exactly as written, with why.
var notRun = map[string]string{
	"mandate sync --target slurm --slurm-nodes nodes.yaml --diff    # what would change in accounts, QOS and the files (empty when in sync)": "needs a Slurm cluster; test/slurm (TestSyncConfiguresARealSlurm) runs sync, --diff, --check, explain slurm/ID and report --slurm against a real one",
	"mandate sync --target slurm --slurm-nodes nodes.yaml           # apply it: sacctmgr -i, the files, scontrol reconfigure":                "needs a Slurm cluster; test/slurm (TestSyncConfiguresARealSlurm) runs sync, --diff, --check, explain slurm/ID and report --slurm against a real one",
	"mandate sync --target slurm --slurm-nodes nodes.yaml --check   # exit 1 and a list when Slurm drifted from the model":                   "needs a Slurm cluster; test/slurm (TestSyncConfiguresARealSlurm) runs sync, --diff, --check, explain slurm/ID and report --slurm against a real one",
	"mandate explain slurm/1234                                     # why a Slurm job waits, by authority dimension":                         "needs a Slurm cluster; test/slurm (TestSyncConfiguresARealSlurm) runs sync, --diff, --check, explain slurm/ID and report --slurm against a real one",
	"mandate report --slurm                                         # every Slurm job's reason, by authority dimension":                      "needs a Slurm cluster; test/slurm (TestSyncConfiguresARealSlurm) runs sync, --diff, --check, explain slurm/ID and report --slurm against a real one",
	"mandate eval -f examples/slurm --cluster examples/cluster.yaml # decide sbatch scripts as their Kubernetes Jobs": "exits 1 by design (four of the scripts are denied); " +
		"TestSbatchScriptsAreDecidedAsTheirJobs (cmd/mandate/cli) decides each script and its Job",
	"make demo   # run Mandate as the webhook of a local API server, create the example workloads, print what happened, and why": "starts its own API server and serve " +
		"and creates every example, for people to watch: too slow inside `make test` (hack/demo's table is tested there)",
	"make test   # every test: Go unit, property and fuzz-seed tests, the Rego suites, a short fuzz run": "is the whole test suite, this test among it",
	"mandate bundle build policies --revision \"$(git rev-parse HEAD)\" --test -o bundle.tar.gz": "a step of the governance repository's CI, " +
		"in its own checkout; TestPolicyBundlesSection runs bundle build --test on this repository's policies",
	"mandate simulate run --trace demand.jsonl --cluster cluster.yaml     --policies main/policies --candidate policies     " +
		"--fail-if 'wait.p95[research-llm] > +20%' --fail-if 'denied[guaranteed] > +0'     --fail-if 'stranded_gpu_hours > +10%'": "a step of the " +
		"governance repository's CI, with its own demand and main's policies checked out beside; TestWhatIfOverTimeSection runs the same gate " +
		"on the example trace",
	`kubectl -n mandate-system logs deploy/mandate | grep '"logger":"decision"'`: "needs a kubelet running the chart's pod, which the test API server has not; " +
		"TestInstall (test/chart) checks that serve writes the dryrun decision line",
}

// synopses are the README's command syntax lines: `[optional]` parts are
// not meant to be typed.
var synopses = []string{
	"bin/mandate eval -f job.yaml --cluster snapshot.yaml [--policies DIR] [-o table|json|yaml]",
	"bin/mandate serve --kubeconfig ~/.kube/config --cert-dir /etc/mandate/tls " +
		"  [--port 9443] [--health-addr :8081] [--metrics-addr :8080] [--policies DIR] " +
		"  [--admin-groups system:masters,mandate-admins] [--namespace mandate-system]",
	"bin/mandate explain KIND/NAME [-n NS] [--kubeconfig FILE | --snapshot FILE] [-o table|json|yaml]",
	"kubectl mandate explain KIND/NAME [-n NS]",
	"bin/mandate report [--kubeconfig FILE | --snapshot FILE] [-o table|json|html]",
	"bin/mandate simulate fgd --pods FILE --nodes FILE [--policy best-fit|random] [--seeds 42-51] [--inflate 1.3] [-o table|json|yaml]",
}

// optionalPart is how a synopsis shows an optional flag or value.
var optionalPart = regexp.MustCompile(`\[(--?[a-z]|[A-Z]+\])`)

func isSynopsis(line string) bool { return optionalPart.MatchString(line) }

func isComment(line string) bool { return line == "" || strings.HasPrefix(line, "#") }

// readmeLine is one command of a ```sh block, continuation lines joined,
// with the "## " section it is in.
type readmeLine struct {
	section, line string
}

// allCommands returns every command of every ```sh block of the README.
func allCommands(t *testing.T, readme string) []readmeLine {
	t.Helper()
	data, err := os.ReadFile(readme)
	require.NoError(t, err)
	var lines []readmeLine
	section, block, pending := "", false, ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !block && strings.HasPrefix(line, "## "):
			section = line
		case !block && line == "```sh":
			block = true
		case block && line == "```":
			block = false
			require.Empty(t, pending, "a block of %s ends in a continuation line", section)
		case block:
			if cont, ok := strings.CutSuffix(line, "\\"); ok {
				pending += cont
				continue
			}
			lines = append(lines, readmeLine{section, strings.TrimSpace(pending + line)})
			pending = ""
		}
	}
	require.NoError(t, sc.Err())
	return lines
}

// runnable drops comments, synopses and the lines listed in notRun.
func runnable(cmds []string) []string {
	var out []string
	for _, c := range cmds {
		if _, skip := notRun[c]; !skip && !isComment(c) && !isSynopsis(c) {
			out = append(out, c)
		}
	}
	return out
}

// TestEveryReadmeLineIsRunOrListed: every command of the README's sh
// blocks is run by the test of its section (runBy), or is a synopsis, or
// is listed in notRun with a reason; a new line anywhere else fails here.
func TestEveryReadmeLineIsRunOrListed(t *testing.T) {
	root := envtest.RepoRoot(t)
	var gotSynopses []string
	seenNotRun := map[string]bool{}
	runSections := map[string]int{}
	for _, l := range allCommands(t, filepath.Join(root, "README.md")) {
		_, listed := notRun[l.line]
		switch {
		case isComment(l.line):
		case isSynopsis(l.line):
			gotSynopses = append(gotSynopses, l.line)
		case listed:
			seenNotRun[l.line] = true
		case runBy[l.section] != "":
			runSections[l.section]++
		default:
			t.Errorf("README line %q (section %q) is neither run by a test nor listed in notRun with a reason", l.line, l.section)
		}
	}
	assert.Equal(t, synopses, gotSynopses, "the README's synopses")
	for line := range notRun {
		assert.True(t, seenNotRun[line], "notRun lists %q, which the README no longer has", line)
	}
	for section, test := range runBy {
		assert.NotZero(t, runSections[section], "%s runs section %q, which has no runnable line", test, section)
	}
	t.Logf("run: %v; synopses: %d; not run: %d", runSections, len(gotSynopses), len(seenNotRun))
}

// TestTwoCommandsSection runs the offline eval of the example workloads:
// exit 1 (something is denied, as documented) and a decision for every
// example, each `…-denied.yaml` denied.
func TestTwoCommandsSection(t *testing.T) {
	root := envtest.RepoRoot(t)
	w := newWorkspace(t, root, nil, "examples")
	cmds := runnable(sectionCommands(t, filepath.Join(root, "README.md"), "## The two commands"))
	require.NotEmpty(t, cmds)
	examples, err := os.ReadDir(filepath.Join(root, "examples", "workloads"))
	require.NoError(t, err)
	require.NotEmpty(t, examples)
	ran := false
	for _, c := range cmds {
		out, code := w.run(t, c)
		if !strings.HasPrefix(c, "bin/mandate eval ") {
			require.Zero(t, code, "%s\n%s", c, out)
			continue
		}
		ran = true
		assert.Equal(t, 1, code, "eval exits 1 when any workload is denied:\n%s", out)
		for _, e := range examples {
			want := "(" + e.Name() + ")"
			if strings.HasSuffix(e.Name(), "-denied.yaml") {
				want += " — DENIED"
			}
			assert.Contains(t, out, want, "the output decides %s", e.Name())
		}
	}
	assert.True(t, ran, "the section evaluates the examples offline")
}

// TestWhatIfFGDSection runs the FGD protocol on the trace copied in
// simulate/testdata, for each policy: it exits 0, and the allocation at
// 100% and 130% arrived demand is the one the section's table quotes.
func TestWhatIfFGDSection(t *testing.T) {
	root := envtest.RepoRoot(t)
	w := newWorkspace(t, root, nil, "simulate/testdata")
	cmds := runnable(sectionCommands(t, filepath.Join(root, "README.md"), "## What-if: `mandate simulate fgd`"))
	want := map[string][]string{
		"best-fit": {`\n +100% +92\.9% +92\.5% +93\.1%`, `\n +130% +93\.1% +92\.7% +93\.3%`},
		"random":   {`\n +100% +86\.4% +85\.6% +87\.2%`, `\n +130% +87\.6% +86\.8% +88\.3%`},
	}
	ran := map[string]bool{}
	for _, c := range cmds {
		out, code := w.run(t, c)
		require.Zero(t, code, "%s\n%s", c, out)
		policy := "best-fit"
		if strings.Contains(c, "--policy random") {
			policy = "random"
		}
		assert.Contains(t, out, "policy "+policy+", seeds 42-51, 1213 nodes, 6212 GPUs")
		for _, line := range want[policy] {
			assert.Regexp(t, line, out, "the README's numbers for %s", policy)
		}
		ran[policy] = true
	}
	assert.Equal(t, map[string]bool{"best-fit": true, "random": true}, ran)
}

// TestWhatIfOverTimeSection lowers research-llm's ceiling in a copy of the
// policies and replays the example trace under both: the gate exits 1 with
// the p95 wait the section quotes.
func TestWhatIfOverTimeSection(t *testing.T) {
	root := envtest.RepoRoot(t)
	w := newWorkspace(t, root, nil, "policies", "examples")
	cmds := runnable(sectionCommands(t, filepath.Join(root, "README.md"), "## What-if over time: `mandate simulate run`"))
	require.Len(t, cmds, 3)
	var out string
	for _, c := range cmds {
		var code int
		out, code = w.run(t, c)
		if strings.HasPrefix(c, "bin/mandate simulate run ") {
			require.Equal(t, 1, code, "the gate holds: %s\n%s", c, out)
			continue
		}
		require.Zero(t, code, "%s\n%s", c, out)
	}
	assert.Contains(t, out, "fail-if held: wait.p95[research-llm] > +20%: 12000 → 23400 (+95.0%)")
	assert.Regexp(t, `\nresearch-llm +7 +7 +0 +7 +0 \(0/0\) +3\.3h +6\.5h +6\.5h`, out, "the candidate's research-llm row")
}

// TestAuthorityModelSection runs the model check and OPA's CLI on a copy of
// the repository's policies: every line exits 0, the builtin is in OPA's
// capabilities, and `opa fmt -w` finds nothing to rewrite.
func TestAuthorityModelSection(t *testing.T) {
	root := envtest.RepoRoot(t)
	w := newWorkspace(t, root, nil, "policies")
	before := treeHash(t, filepath.Join(w.dir, "policies"))
	cmds := runnable(sectionCommands(t, filepath.Join(root, "README.md"), "## The authority model"))
	require.NotEmpty(t, cmds)
	ran := map[string]bool{}
	for _, c := range cmds {
		out, code := w.run(t, c)
		require.Zero(t, code, "%s\n%s", c, out)
		switch {
		case strings.HasPrefix(c, "bin/mandate opa test "):
			assert.Contains(t, out, "PASS")
			ran["test"] = true
		case strings.HasPrefix(c, "bin/mandate opa fmt -w "):
			assert.Equal(t, before, treeHash(t, filepath.Join(w.dir, "policies")), "the repository's Rego is formatted")
			ran["fmt"] = true
		case strings.HasPrefix(c, "bin/mandate opa capabilities "):
			assert.Contains(t, out, "mandate.placement")
			ran["capabilities"] = true
		}
	}
	assert.Equal(t, map[string]bool{"test": true, "fmt": true, "capabilities": true}, ran)
}

// TestSyncSection runs the three `mandate sync` lines (mandate on PATH)
// against an API server with the Volcano, KAI and Kueue CRDs: the diff
// lists what to create, sync applies it, --check finds no drift, and the
// diff is then empty.
func TestSyncSection(t *testing.T) {
	env := envtest.Start(t, envtest.WithKueueCRDs())
	w := newWorkspace(t, env.RepoRoot, env)
	cmds := runnable(sectionCommands(t, filepath.Join(env.RepoRoot, "README.md"), "## From model to schedulers: `mandate sync`"))
	require.NotEmpty(t, cmds)
	var diff string
	ran := map[string]bool{}
	for _, c := range cmds {
		out, code := w.run(t, c)
		require.Zero(t, code, "%s\n%s", c, out)
		switch {
		case strings.Contains(c, " --diff"):
			assert.Contains(t, out, "research-llm", "the diff lists the model's queues to create")
			diff = c
			ran["diff"] = true
		case strings.Contains(c, " --check"):
			ran["check"] = true
		default:
			ran["apply"] = true
		}
	}
	assert.Equal(t, map[string]bool{"diff": true, "apply": true, "check": true}, ran)
	q := &unstructured.Unstructured{}
	q.SetGroupVersionKind(schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "Queue"})
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Name: "research-llm"}, q), "sync created the Volcano queue")
	out, code := w.run(t, diff)
	require.Zero(t, code, out)
	assert.Empty(t, strings.TrimSpace(out), "the diff is empty once in sync")
}

// TestHelmSection installs the chart with the pinned helm (on PATH) into
// the test API server, with a model of one's own: my-model-values.yaml and
// my-policies/ are made from the repository's model. Then labels, audits
// and upgrades to enforce, checking what each step changed.
func TestHelmSection(t *testing.T) {
	env := envtest.Start(t, envtest.WithCertManagerCRDs())
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(5*time.Minute))
	defer cancel()
	w := newWorkspace(t, env.RepoRoot, env, "charts")
	copyTree(t, filepath.Join(env.RepoRoot, "policies"), filepath.Join(w.dir, "my-policies"))
	writeModelValues(t, env.RepoRoot, filepath.Join(w.dir, "my-model-values.yaml"))
	for _, tool := range []string{"helm", "kubectl"} {
		_, err := os.Stat(filepath.Join(env.Environment.BinaryAssetsDirectory, tool))
		require.NoError(t, err, "%s: run `make envtest-assets` (or hack/envtest-assets.sh) from the repository root", tool)
	}
	// The README's example namespace, with a workload that ran before
	// Mandate arrived.
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml-team"}}))
	require.NoError(t, env.Client.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml-team", Name: "notebook"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "notebook", Image: "jupyter/base-notebook"}}},
	}))

	cmds := runnable(sectionCommands(t, filepath.Join(env.RepoRoot, "README.md"), "## Installing with Helm"))
	require.NotEmpty(t, cmds)
	ran := map[string]bool{}
	for _, c := range cmds {
		out, code := w.run(t, c)
		require.Zero(t, code, "%s\n%s", c, out)
		switch {
		case strings.HasPrefix(c, "helm install "):
			d := deployment(ctx, t, env)
			assert.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "--enforcement-override=dryrun", "a first install denies nothing")
			ran["install"] = true
		case strings.HasPrefix(c, "kubectl label namespace "):
			var ns corev1.Namespace
			require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "ml-team"}, &ns))
			assert.Equal(t, "research", ns.Labels["mandate.dev/tenant"])
			ran["label"] = true
		case strings.HasPrefix(c, "mandate audit "):
			assert.Contains(t, out, "Pod ml-team/notebook  research", "the labelled namespace's workload is decided for its tenant")
			assert.Contains(t, out, "0 would be denied")
			ran["audit"] = true
		case strings.HasPrefix(c, "helm upgrade "):
			for _, a := range deployment(ctx, t, env).Spec.Template.Spec.Containers[0].Args {
				assert.NotContains(t, a, "--enforcement-override", "the upgrade enforces the model")
			}
			ran["upgrade"] = true
		}
	}
	assert.Equal(t, map[string]bool{"install": true, "label": true, "audit": true, "upgrade": true}, ran)
}

func deployment(ctx context.Context, t *testing.T, env *envtest.Env) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: "mandate-system", Name: "mandate"}, &d))
	require.NotEmpty(t, d.Spec.Template.Spec.Containers)
	return &d
}

// writeModelValues writes the repository's model (its Rego and data.json,
// without tests) as policies.configMap.files: the reader's own model.
func writeModelValues(t *testing.T, root, path string) {
	t.Helper()
	files := map[string]string{}
	base := filepath.Join(root, "policies")
	require.NoError(t, filepath.WalkDir(filepath.Join(base, "mandate"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		if strings.HasSuffix(name, "_test.rego") || !(strings.HasSuffix(name, ".rego") || name == "data.json") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(base, p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	}))
	require.Contains(t, files, "mandate/model/data.json")
	out, err := yaml.Marshal(map[string]any{"policies": map[string]any{"configMap": map[string]any{"files": files}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, out, 0o600))
}

// workspace is the directory a reader types the README's commands in: a
// copy of some of the repository's folders, bin/mandate, and (with an API
// server) ~/.kube/config; mandate, helm and kubectl are on PATH.
type workspace struct {
	dir     string
	environ []string
}

func newWorkspace(t *testing.T, root string, env *envtest.Env, trees ...string) *workspace {
	t.Helper()
	w := &workspace{dir: t.TempDir()}
	for _, tree := range trees {
		copyTree(t, filepath.Join(root, tree), filepath.Join(w.dir, tree))
	}
	linkMandate(t, root, w.dir)
	home := filepath.Join(w.dir, "home")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".kube"), 0o755))
	// No user configuration (helm's, kubectl's) leaks into the test.
	w.environ = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"))
	for _, k := range []string{"HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME", "HELM_NAMESPACE", "HELM_KUBECONTEXT"} {
		w.environ = append(w.environ, k+"=")
	}
	w.environ = append(w.environ, "KUBECONFIG="+filepath.Join(home, ".kube", "config"))
	path := filepath.Join(w.dir, "bin")
	if env != nil {
		kubeconfig, err := os.ReadFile(env.WriteKubeconfig(t, "readme"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(home, ".kube", "config"), kubeconfig, 0o600))
		path += string(os.PathListSeparator) + env.Environment.BinaryAssetsDirectory
	}
	w.environ = append(w.environ, "PATH="+path+string(os.PathListSeparator)+os.Getenv("PATH"))
	return w
}

// run runs line by sh in the workspace and returns its combined output and
// exit status.
func (w *workspace) run(t *testing.T, line string) (string, int) {
	t.Helper()
	t.Logf("$ %s", line)
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(3*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir, cmd.Env = w.dir, w.environ
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	require.NoError(t, err, "%s\n%s", line, out)
	return string(out), 0
}

var (
	buildOnce        sync.Once
	builtMandate     string
	buildMandateErr  error
	buildMandateRoot string
)

// linkMandate puts bin/mandate in dir: the repository's cmd/mandate, built
// once per test binary.
func linkMandate(t *testing.T, root, dir string) {
	t.Helper()
	buildOnce.Do(func() {
		buildMandateRoot, buildMandateErr = os.MkdirTemp("", "mandate-readme-")
		if buildMandateErr != nil {
			return
		}
		builtMandate = filepath.Join(buildMandateRoot, "mandate")
		build := exec.Command("go", "build", "-o", builtMandate, "./cmd/mandate")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			buildMandateErr = fmt.Errorf("unable to build ./cmd/mandate: %w\n%s", err, out)
		}
	})
	require.NoError(t, buildMandateErr)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.Symlink(builtMandate, filepath.Join(dir, "bin", "mandate")))
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildMandateRoot != "" {
		_ = os.RemoveAll(buildMandateRoot)
	}
	os.Exit(code)
}

// treeHash hashes every file's path and content under dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	var names []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	}))
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		data, err := os.ReadFile(n)
		require.NoError(t, err)
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(data))
		h.Write(data)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
