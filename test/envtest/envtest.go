// Package envtest starts a real kube-apiserver and etcd for Go tests, through
// controller-runtime's envtest, with the upstream Volcano and KAI scheduler CRDs
// installed (and, opt-in, Kueue's) so every object Mandate writes is checked against
// the real schemas, and runs the controllers a test needs beside it
// (kube-controller-manager's, kube-scheduler, Kueue's: StartControllers,
// StartScheduler, StartKueue).
// The binaries are the pinned ones built by hack/envtest-assets.sh into bin/k8s
// (or those in $KUBEBUILDER_ASSETS when set); a test fails, never skips, when
// they are missing.
package envtest

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mandate-dev/mandate/certs"
)

const (
	modulePath = "github.com/mandate-dev/mandate"

	// assetsDir is where hack/envtest-assets.sh puts the binaries, relative
	// to the repository root.
	assetsDir = "bin/k8s"

	// upstreamCRDsDir holds the schedulers' upstream CRDs. It lives in a
	// "shared" directory beside the repository (or above it).
	upstreamCRDsDir = "shared/upstream/crds"
	// mandateCRDs holds Mandate's own CRDs (the chart's crds folder).
	mandateCRDs = "charts/mandate/crds"

	// UpstreamCRDsEnv overrides where the upstream scheduler CRDs are read from.
	UpstreamCRDsEnv = "MANDATE_UPSTREAM_CRDS"

	pyTorchJobCRD     = "test/envtest/testdata/crds/kubeflow.org_pytorchjobs.yaml"
	certManagerCRDs   = assetsDir + "/crds/cert-manager"
	kueueCRDs         = assetsDir + "/crds/kueue"
	openReportsCRDs   = assetsDir + "/crds/openreports"
	prometheusRuleCRD = assetsDir + "/crds/prometheus-operator/monitoring.coreos.com_prometheusrules.yaml"
	assetsInstruction = "run `make envtest-assets` (or hack/envtest-assets.sh) from the repository root"

	// defaultStartTimeout bounds etcd's and kube-apiserver's start, and
	// defaultCRDTimeout the wait for the CRDs to be served (envtest's own
	// default, 10s, is too short for a busy 2-core machine); both scaled
	// by TimeoutScaleEnv.
	defaultStartTimeout = 2 * time.Minute
	defaultCRDTimeout   = 2 * time.Minute
)

// Env is a running API server. It is stopped by t.Cleanup (Start) or by the
// stop function Launch returns.
type Env struct {
	// Config is an admin (system:masters) config for the API server.
	Config *rest.Config
	// Client is a controller-runtime client using the Env's scheme.
	Client client.Client
	// Scheme is the scheme Client was built with.
	Scheme *runtime.Scheme
	// Environment is the underlying controller-runtime environment. After
	// Start, Environment.WebhookInstallOptions carries the serving host, port
	// and certificate directory a webhook server must use.
	Environment *crenvtest.Environment
	// RepoRoot is the absolute path of the repository root.
	RepoRoot string
	// CRDs are the CustomResourceDefinitions installed at start.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// AuditLog is the path of the API server's audit log, when started
	// WithAuditLog.
	AuditLog string
	// WebhookClientCA signed the client certificate the API server
	// presents to admission webhooks; nil unless WithWebhookClientCert.
	WebhookClientCA *certs.KeyPair

	// apiServerDir is the certificate directory of a restartable API server.
	apiServerDir string
	// apiServerArgs are the flags the options set, which a second API
	// server (StartSecondAPIServer) is given too.
	apiServerArgs [][2]string
}

// Option configures Start.
type Option func(*options)

type options struct {
	scheme        *runtime.Scheme
	pyTorchJob    bool
	certManager   bool
	kueue         bool
	workloadKinds bool
	promRule      bool
	openReports   bool
	crdPaths      []string
	webhooks      *crenvtest.WebhookInstallOptions
	apiServerArgs [][2]string
	etcdArgs      [][2]string
	startTimeout  time.Duration
	restartable   bool
	auditLog      bool
	// webhookClientCert: WithWebhookClientCert.
	webhookClientCert bool
}

// WithScheme sets the scheme of the client (and of envtest's conversion
// webhook detection). The default holds client-go's built-in types and
// apiextensions/v1.
func WithScheme(s *runtime.Scheme) Option {
	return func(o *options) { o.scheme = s }
}

// WithPyTorchJobCRD also installs Kubeflow's PyTorchJob CRD (kubeflow.org/v1).
func WithPyTorchJobCRD() Option {
	return func(o *options) { o.pyTorchJob = true }
}

// WithCertManagerCRDs also installs cert-manager's CRDs, copied into
// bin/k8s/crds/cert-manager by hack/envtest-assets.sh.
func WithCertManagerCRDs() Option {
	return func(o *options) { o.certManager = true }
}

// WithKueueCRDs also installs Kueue's CRDs (kueue.x-k8s.io), copied into
// bin/k8s/crds/kueue by hack/envtest-assets.sh. Opt-in: eleven large CRDs
// that only the scheduler-sync and Kueue tests (StartKueue) need.
func WithKueueCRDs() Option {
	return func(o *options) { o.kueue = true }
}

// workloadCRDs are the folders of the governed workload kinds' CRDs,
// copied out of their Go modules by `hack/envtest-assets.sh workload-crds`.
var workloadCRDs = []struct{ dir, what string }{
	{assetsDir + "/crds/jobset", "JobSet"},
	{assetsDir + "/crds/lws", "LeaderWorkerSet"},
	{assetsDir + "/crds/trainer", "Kubeflow Trainer"},
	{assetsDir + "/crds/mpi-operator", "MPI operator"},
	{assetsDir + "/crds/kuberay", "KubeRay"},
}

// WithWorkloadCRDs also installs the upstream CRDs of the workload kinds
// Mandate governs beyond core, Volcano and PyTorchJob: JobSet, TrainJob
// (and its runtimes), LeaderWorkerSet, MPIJob, RayJob and RayCluster
// (and RayService), copied into bin/k8s/crds/<project> by
// hack/envtest-assets.sh.
func WithWorkloadCRDs() Option {
	return func(o *options) { o.workloadKinds = true }
}

// WithPrometheusRuleCRD also installs the Prometheus Operator's
// PrometheusRule CRD (monitoring.coreos.com/v1), copied into
// bin/k8s/crds/prometheus-operator by hack/envtest-assets.sh.
func WithPrometheusRuleCRD() Option {
	return func(o *options) { o.promRule = true }
}

// WithOpenReportsCRDs also installs OpenReports' Report and ClusterReport
// CRDs (openreports.io/v1alpha1), copied into bin/k8s/crds/openreports by
// hack/envtest-assets.sh from the module the root go.mod requires.
func WithOpenReportsCRDs() Option {
	return func(o *options) { o.openReports = true }
}

// WithCRDPaths also installs the CRDs in these files or directories
// (non-recursive). A missing path fails the test.
func WithCRDPaths(paths ...string) Option {
	return func(o *options) { o.crdPaths = append(o.crdPaths, paths...) }
}

// WithWebhooks registers admission webhooks with the API server, served over
// TLS by a server the test starts on Env.Environment.WebhookInstallOptions'
// LocalServingHost, LocalServingPort and LocalServingCertDir.
func WithWebhooks(w crenvtest.WebhookInstallOptions) Option {
	return func(o *options) { o.webhooks = &w }
}

// WithAPIServerArg sets a kube-apiserver flag, e.g. ("feature-gates", "X=true").
func WithAPIServerArg(name, value string) Option {
	return func(o *options) { o.apiServerArgs = append(o.apiServerArgs, [2]string{name, value}) }
}

// WithEtcdArg sets an etcd flag, e.g. ("quota-backend-bytes", "8589934592")
// for a benchmark that loads a large cluster.
func WithEtcdArg(name, value string) Option {
	return func(o *options) { o.etcdArgs = append(o.etcdArgs, [2]string{name, value}) }
}

// WithStartTimeout bounds how long etcd and kube-apiserver may each take to
// start (default two minutes scaled by $MANDATE_TEST_TIMEOUT_SCALE, or
// $KUBEBUILDER_CONTROLPLANE_START_TIMEOUT).
func WithStartTimeout(d time.Duration) Option {
	return func(o *options) { o.startTimeout = d }
}

// WithRestartableAPIServer keeps kube-apiserver's certificates in a
// directory of the Env's own, so that Env.RestartAPIServer can stop it and
// start it again on the same port, with the same etcd, certificates and
// users.
func WithRestartableAPIServer() Option {
	return func(o *options) { o.restartable = true }
}

// Start runs kube-apiserver and etcd, installs the upstream scheduler CRDs (and
// those the options ask for) and registers t.Cleanup to stop everything.
// Launch does the same outside tests.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	env, stop, err := Launch(opts...)
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("envtest: %v", err)
		}
	})
	return env
}

func isManifest(name string) bool {
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// upstreamCRDs finds shared/upstream/crds in the repository root or one of
// its parents, unless $MANDATE_UPSTREAM_CRDS names the directory.
func upstreamCRDs(root string) (string, error) {
	if dir := os.Getenv(UpstreamCRDsEnv); dir != "" {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			return "", fmt.Errorf("%s=%s is not a directory", UpstreamCRDsEnv, dir)
		}
		return dir, nil
	}
	for dir := root; ; dir = filepath.Dir(dir) {
		candidate := filepath.Join(dir, upstreamCRDsDir)
		if info, err := os.Stat(candidate); err == nil && info.IsDir() {
			return candidate, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", fmt.Errorf("upstream scheduler CRDs not found: no %s in %s or any parent directory "+
		"(the Volcano and KAI CRDs live in the shared directory beside the repository); "+
		"set %s to their directory", upstreamCRDsDir, root, UpstreamCRDsEnv)
}

// RepoRoot is this module's root, found from the working directory up (a
// test runs in its package's folder); it fails the test when there is none.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// repoRoot walks up from the working directory to the go.mod of this module.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("unable to get the working directory: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		mod, err := modulePathOf(filepath.Join(dir, "go.mod"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if mod == modulePath {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod of module %s in %s or any parent directory", modulePath, wd)
		}
	}
}

func modulePathOf(goMod string) (string, error) {
	f, err := os.Open(goMod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", s.Err()
}
