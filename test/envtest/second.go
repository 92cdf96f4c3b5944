package envtest

import (
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// StartSecondAPIServer starts another kube-apiserver on the Env's etcd, with
// the same serving and service-account certificates, the same client CA (so
// every user of the Env is a user of both) and the same flags, as a highly
// available control plane runs several behind a load balancer. Each API
// server keeps its own connections to webhooks, so calls for one object
// kind reach different webhook replicas at once. It returns an admin
// config and client of the second API server, which t.Cleanup stops.
func (e *Env) StartSecondAPIServer(t testing.TB) (*rest.Config, client.Client) {
	t.Helper()
	first := e.Environment.ControlPlane.GetAPIServer()
	second := &crenvtest.APIServer{
		EtcdURL:       first.EtcdURL,
		Path:          first.Path,
		CertDir:       first.CertDir,
		StartTimeout:  first.StartTimeout,
		StopTimeout:   first.StopTimeout,
		SecureServing: crenvtest.SecureServing{Authn: first.SecureServing.Authn},
		Out:           first.Out,
		Err:           first.Err,
	}
	for _, a := range e.apiServerArgs {
		second.Configure().Set(a[0], a[1])
	}
	if err := second.Start(); err != nil {
		t.Fatalf("envtest: unable to start a second kube-apiserver on etcd %s: %v", first.EtcdURL, err)
	}
	t.Cleanup(func() {
		// The certificate directory is the first API server's: Stop
		// removes only directories it made itself.
		if err := second.Stop(); err != nil {
			t.Errorf("envtest: unable to stop the second kube-apiserver: %v", err)
		}
	})
	cfg := rest.CopyConfig(e.Config)
	cfg.Host = second.SecureServing.URL("https", "").String()
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatalf("envtest: unable to create a client of the second kube-apiserver: %v", err)
	}
	return cfg, c
}
