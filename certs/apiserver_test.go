package certs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/certs"
	"github.com/mandate-dev/mandate/test/envtest"
)

// TestAPIServerReplicasRace: against a real API server, two replicas start
// at the same instant, five times over (the Secret deleted in between).
// Each time exactly one CA Secret results, both replicas serve certificates
// signed by it, and every webhook of both configurations carries it as
// caBundle, written with optimistic concurrency.
func TestAPIServerReplicasRace(t *testing.T) {
	env := envtest.Start(t)
	c := env.Client
	ctx := context.Background()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	for _, o := range configurations() {
		require.NoError(t, c.Create(ctx, o))
	}
	clk := &clock{now: time.Now()}
	key := types.NamespacedName{Namespace: namespace, Name: secretName}
	for round := range 5 {
		dirs := []string{t.TempDir(), t.TempDir()}
		rots := []*certs.Rotator{newRotator(t, c, clk, dirs[0]), newRotator(t, c, clk, dirs[1])}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		startLine := make(chan struct{})
		for i := range rots {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-startLine
				_, errs[i] = rots[i].Sync(ctx)
			}()
		}
		close(startLine)
		wg.Wait()
		require.NoError(t, errs[0], "round %d, replica 0", round)
		require.NoError(t, errs[1], "round %d, replica 1", round)

		var secrets corev1.SecretList
		require.NoError(t, c.List(ctx, &secrets, client.InNamespace(namespace)))
		require.Len(t, secrets.Items, 1, "one CA Secret")
		ca, err := certs.ParseKeyPair(secrets.Items[0].Data[certs.SecretCACert], secrets.Items[0].Data[certs.SecretCAKey])
		require.NoError(t, err)
		for _, b := range bundles(t, c) {
			cas, err := certs.ParseBundle(b)
			require.NoError(t, err)
			require.Len(t, cas, 1, "round %d: the caBundle holds the one CA", round)
			require.True(t, cas[0].Equal(ca.Cert), "round %d: the caBundle is the Secret's CA", round)
		}
		for i, dir := range dirs {
			kp, err := certs.ReadFiles(dir)
			require.NoError(t, err)
			require.NoError(t, certs.Verify(kp.Cert, ca.Cert, hosts, time.Now()), "round %d: replica %d's serving certificate", round, i)
		}
		require.NoError(t, c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}))
	}
}
