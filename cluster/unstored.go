package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/mandate-dev/mandate/ledger"
	"github.com/mandate-dev/mandate/workload"
)

// Reservations and gang claims whose objects the API server never stored
// are released here; holds (holds.go) come only from stored objects.

// Defaults of ReleaseUnstored.
const (
	// StoredGrace is how long after an admission its object may take to
	// be stored before the API server is asked: the rest of the
	// admission chain (other webhooks, validation) runs in between.
	StoredGrace = 2 * time.Second
	// storedCheckEvery is how often the reservations are looked at.
	storedCheckEvery = time.Second
)

// ReleaseUnstored frees, until ctx ends, the quota of the creates the API
// server refused after Mandate admitted them (an invalid field, another
// webhook's denial, a name taken): every second it asks the API server
// (reader, uncached) about each reservation and gang claim made at least
// grace ago whose object no informer has shown yet, and releases those
// whose object it does not hold (or holds at an older generation than
// the change admitted), in the shared ledger too: those of one tenant
// tree by one commit. A reservation admitted under a request key names no
// object to ask for: it leaves when its object is seen, or at its expiry.
func (s *State) ReleaseUnstored(ctx context.Context, reader client.Reader, grace time.Duration) error {
	t := time.NewTicker(storedCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		s.releaseUnstored(ctx, reader, s.ledger.Unverified(grace))
	}
}

// storedCheckers bounds the API server reads of one round of
// ReleaseUnstored in flight at once.
const storedCheckers = 8

// releaseUnstored asks the API server about each of us (storedCheckers at
// a time) and releases those it does not hold: without a shared ledger
// one by one, with it all of a tree's by one commit.
func (s *State) releaseUnstored(ctx context.Context, reader client.Reader, us []ledger.Unstored) {
	// The namespace of each one the API server does not hold ("" for the
	// rest).
	unstored := make([]string, len(us))
	sem := make(chan struct{}, storedCheckers)
	var wg sync.WaitGroup
	for i, u := range us {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			namespace, err := s.unstored(ctx, reader, u)
			if err != nil {
				log.FromContext(ctx).Error(err, "unable to check whether an admitted object was stored", "reservation", u.Key)
			}
			unstored[i] = namespace
		}()
	}
	wg.Wait()
	trees := map[string][]ledger.Unstored{}
	for i, u := range us {
		if unstored[i] == "" {
			continue
		}
		tenant := s.ledger.TenantOf(unstored[i])
		if s.shared == nil || tenant == "" {
			s.ledger.ReleaseUnstored(u)
			continue
		}
		root := s.ledger.RootOf(tenant)
		trees[root] = append(trees[root], u)
	}
	for root, tree := range trees {
		err := s.transactShared(ctx, root, func() (bool, error) {
			released := false
			for _, u := range tree {
				released = s.ledger.ReleaseUnstored(u) || released
			}
			return released, nil
		})
		if err != nil {
			log.FromContext(ctx).Error(err, "unable to release the quota of objects the API server did not store", "tree", root, "reservations", len(tree))
			continue
		}
		log.FromContext(ctx).V(1).Info("released the quota of objects the API server did not store", "tree", root, "reservations", len(tree))
	}
}

// unstored asks the API server for the object of reservation u (as
// ledger.Ledger.Unverified lists it): its namespace when it is not there,
// or not at the generation it was made for; "" otherwise. A stored one is
// marked verified. A reservation made again under the same key meanwhile
// (the workload changed) is not the one asked about: releasing u leaves
// it alone.
func (s *State) unstored(ctx context.Context, reader client.Reader, u ledger.Unstored) (string, error) {
	objKey := strings.TrimPrefix(u.Key, ledger.ClaimKeyPrefix)
	gvk, namespace, name, ok := parseWorkloadKey(objKey)
	if !ok {
		s.ledger.VerifiedStored(u) // nothing to ask for; it expires
		return "", nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := reader.Get(cctx, client.ObjectKey{Namespace: namespace, Name: name}, m)
	cancel()
	switch {
	case apierrors.IsNotFound(err):
		return namespace, nil
	case err != nil:
		return "", fmt.Errorf("unable to read %s %s/%s: %w", gvk.Kind, namespace, name, err)
	}
	if want, ok := s.ledger.UnstoredGeneration(u); !ok || m.GetGeneration() >= want {
		s.ledger.VerifiedStored(u)
		return "", nil
	}
	return namespace, nil
}

// parseWorkloadKey reads a ledger.WorkloadKey (group/Kind/namespace/name)
// of a registered kind.
func parseWorkloadKey(key string) (schema.GroupVersionKind, string, string, bool) {
	group, kind, namespace, name, ok := ledger.SplitWorkloadKey(key)
	if !ok {
		return schema.GroupVersionKind{}, "", "", false
	}
	k, ok := workload.LookupGroupKind(schema.GroupKind{Group: group, Kind: kind})
	if !ok {
		return schema.GroupVersionKind{}, "", "", false
	}
	return k.GVK, namespace, name, true
}
