package envtest

import (
	"errors"
	"fmt"
	"time"
)

// RestartAPIServer stops kube-apiserver, leaves it down for the given
// time and starts it again on the same address with the same etcd,
// certificates and users, as a control-plane upgrade or crash would. etcd
// keeps running, so every object survives. The Env must have been started
// WithRestartableAPIServer.
func (e *Env) RestartAPIServer(down time.Duration) error {
	if !e.restartable {
		return errors.New("the API server cannot be restarted: start the Env WithRestartableAPIServer")
	}
	apiServer := e.Environment.ControlPlane.GetAPIServer()
	if err := apiServer.Stop(); err != nil {
		return fmt.Errorf("unable to stop kube-apiserver: %w", err)
	}
	time.Sleep(down)
	if err := apiServer.Start(); err != nil {
		return fmt.Errorf("unable to start kube-apiserver again: %w", err)
	}
	return nil
}
