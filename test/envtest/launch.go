package envtest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mandate-dev/mandate/certs"
)

// VolcanoNamespace is the namespace Volcano's chart installs into, where
// its scheduler's ConfigMap lives (schedsync.DefaultVolcanoConfigNamespace;
// schedsync's tests hold the two equal, it cannot be imported here).
const VolcanoNamespace = "volcano-system"

// Launch starts the same environment as Start outside `go test` (for
// example for hack/demo): kube-apiserver and etcd with the upstream scheduler
// CRDs and whatever the options ask for. The caller must call stop, which
// stops the control plane and removes its temporary directories; on error
// nothing is left running.
func Launch(opts ...Option) (env *Env, stop func() error, err error) {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.scheme == nil {
		if o.scheme, err = newDefaultScheme(); err != nil {
			return nil, nil, err
		}
	}

	root, err := repoRoot()
	if err != nil {
		return nil, nil, err
	}
	assets, err := findBinaryAssets(root)
	if err != nil {
		return nil, nil, err
	}
	crdPaths, err := listCRDFiles(root, o)
	if err != nil {
		return nil, nil, err
	}

	ce := &crenvtest.Environment{
		Scheme:                o.scheme,
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdPaths,
		ErrorIfCRDPathMissing: true,
		CRDInstallOptions:     crenvtest.CRDInstallOptions{MaxTime: Timeout(defaultCRDTimeout)},
		// This helper is about a throwaway API server: never install CRDs
		// into whatever cluster USE_EXISTING_CLUSTER would point at.
		UseExistingCluster:       ptr.To(false),
		ControlPlaneStartTimeout: o.startTimeout,
	}
	if ce.ControlPlaneStartTimeout == 0 && os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		ce.ControlPlaneStartTimeout = Timeout(defaultStartTimeout)
	}
	if o.webhooks != nil {
		ce.WebhookInstallOptions = *o.webhooks
	}
	if len(o.etcdArgs) > 0 {
		ce.ControlPlane.Etcd = &crenvtest.Etcd{}
		for _, a := range o.etcdArgs {
			ce.ControlPlane.Etcd.Configure().Set(a[0], a[1])
		}
	}
	clientDir := ""
	var clientCA *certs.KeyPair
	if o.webhookClientCert {
		var args [][2]string
		if clientDir, clientCA, args, err = webhookClientDir(); err != nil {
			return nil, nil, err
		}
		o.apiServerArgs = append(o.apiServerArgs, args...)
	}
	apiServer := ce.ControlPlane.GetAPIServer()
	for _, a := range o.apiServerArgs {
		apiServer.Configure().Set(a[0], a[1])
	}
	// envtest removes and regenerates a certificate directory it made
	// itself on every stop: one of ours survives a restart.
	certDir := ""
	if o.restartable {
		if certDir, err = os.MkdirTemp("", "mandate-apiserver-"); err != nil {
			return nil, nil, errors.Join(fmt.Errorf("unable to create the API server's certificate directory: %w", err), removeAll(clientDir))
		}
		apiServer.CertDir = certDir
	}
	auditDir := ""
	if o.auditLog {
		var args [][2]string
		if auditDir, args, err = auditLogDir(); err != nil {
			return nil, nil, errors.Join(err, removeAll(certDir, clientDir))
		}
		for _, a := range args {
			apiServer.Configure().Set(a[0], a[1])
		}
	}

	cfg, err := ce.Start()
	if err != nil {
		// Start may fail after the processes are up: stop whatever runs.
		err = fmt.Errorf("unable to start kube-apiserver and etcd from %s: %w", assets, err)
		if stopErr := ce.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping after a failed start: %w", stopErr))
		}
		return nil, nil, errors.Join(err, removeAll(certDir, auditDir, clientDir))
	}
	stop = func() error {
		if err := ce.Stop(); err != nil {
			return errors.Join(fmt.Errorf("unable to stop the control plane: %w", err), removeAll(certDir, auditDir, clientDir))
		}
		return removeAll(certDir, auditDir, clientDir)
	}
	fail := func(err error) (*Env, func() error, error) {
		return nil, nil, errors.Join(err, stop())
	}
	if len(ce.CRDs) < len(crdPaths) {
		return fail(fmt.Errorf("only %d CRDs installed from %d files: %v", len(ce.CRDs), len(crdPaths), crdPaths))
	}

	c, err := client.New(cfg, client.Options{Scheme: o.scheme})
	if err != nil {
		return fail(fmt.Errorf("unable to create a client: %w", err))
	}
	// The Volcano CRDs are installed, so Volcano's namespace is there as
	// its chart makes it: mandate sync writes the scheduler's
	// configuration into it.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: VolcanoNamespace}}
	if err := c.Create(context.Background(), ns); err != nil {
		return fail(fmt.Errorf("unable to create namespace %s: %w", VolcanoNamespace, err))
	}
	return &Env{
		Config:          cfg,
		Client:          c,
		Scheme:          o.scheme,
		Environment:     ce,
		RepoRoot:        root,
		CRDs:            ce.CRDs,
		apiServerDir:    certDir,
		apiServerArgs:   o.apiServerArgs,
		AuditLog:        auditLogPath(auditDir),
		WebhookClientCA: clientCA,
	}, stop, nil
}

func removeAll(dirs ...string) error {
	var errs []error
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("unable to remove %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

func newDefaultScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("unable to build the scheme: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("unable to build the scheme: %w", err)
	}
	return s, nil
}

// findBinaryAssets returns the directory holding kube-apiserver and etcd:
// $KUBEBUILDER_ASSETS when set, else <repo>/bin/k8s.
func findBinaryAssets(root string) (string, error) {
	dir, fromEnv := os.LookupEnv("KUBEBUILDER_ASSETS")
	if !fromEnv || dir == "" {
		dir = filepath.Join(root, assetsDir)
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		path := filepath.Join(dir, name)
		info, err := os.Stat(path)
		switch {
		case err != nil && fromEnv:
			return "", fmt.Errorf("%s not found in KUBEBUILDER_ASSETS=%s (%v); point it at a directory holding "+
				"kube-apiserver and etcd, or unset it to use %s and %s", name, dir, err, assetsDir, assetsInstruction)
		case err != nil:
			return "", fmt.Errorf("%s not found (%v); %s", name, err, assetsInstruction)
		case info.IsDir() || info.Mode()&0o111 == 0:
			return "", fmt.Errorf("%s is not an executable file; %s", path, assetsInstruction)
		}
	}
	return dir, nil
}

// listCRDFiles lists every CRD file to install.
func listCRDFiles(root string, o options) ([]string, error) {
	upstream, err := upstreamCRDs(root)
	if err != nil {
		return nil, err
	}
	var files []string
	err = filepath.WalkDir(upstream, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && isManifest(path) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("unable to list the upstream CRDs in %s: %w", upstream, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRD files (*.yaml, *.yml, *.json) under %s", upstream)
	}

	// Mandate's own CRDs, as the chart installs them.
	own, err := filepath.Glob(filepath.Join(root, mandateCRDs, "*.yaml"))
	if err != nil || len(own) == 0 {
		return nil, fmt.Errorf("no Mandate CRDs in %s: %v", mandateCRDs, err)
	}
	files = append(files, own...)
	if o.pyTorchJob {
		files = append(files, filepath.Join(root, pyTorchJobCRD))
	}
	if o.certManager {
		if files, err = appendAssetCRDs(files, root, certManagerCRDs, "cert-manager"); err != nil {
			return nil, err
		}
	}
	if o.kueue {
		if files, err = appendAssetCRDs(files, root, kueueCRDs, "Kueue"); err != nil {
			return nil, err
		}
	}
	if o.workloadKinds {
		for _, c := range workloadCRDs {
			if files, err = appendAssetCRDs(files, root, c.dir, c.what); err != nil {
				return nil, err
			}
		}
	}
	if o.openReports {
		if files, err = appendAssetCRDs(files, root, openReportsCRDs, "OpenReports"); err != nil {
			return nil, err
		}
	}
	if o.promRule {
		crd := filepath.Join(root, prometheusRuleCRD)
		if _, err := os.Stat(crd); err != nil {
			return nil, fmt.Errorf("the Prometheus Operator's PrometheusRule CRD is missing (%w): %s", err, assetsInstruction)
		}
		files = append(files, crd)
	}
	for _, p := range o.crdPaths {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("CRD path: %w", err)
		}
	}
	return append(files, o.crdPaths...), nil
}

// appendAssetCRDs appends the manifests of an assets folder (copied out of a
// Go module by hack/envtest-assets.sh) to files; an empty or missing folder
// is an error naming the command that fills it.
func appendAssetCRDs(files []string, root, rel, what string) ([]string, error) {
	dir := filepath.Join(root, rel)
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return nil, fmt.Errorf("%s CRDs not found in %s (%v); %s", what, dir, err, assetsInstruction)
	}
	for _, e := range entries {
		if !e.IsDir() && isManifest(e.Name()) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files, nil
}
