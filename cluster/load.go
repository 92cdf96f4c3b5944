package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// LoadFile feeds the state from a snapshot file: what
// `kubectl get nodes,pods,namespaces -A -o yaml` prints (a List, or
// multi-document YAML or JSON). It streams, so a dump of a large cluster is
// never held whole. Objects other than Nodes, Pods, Namespaces and DRA
// claims and claim templates are skipped.
func (s *State) LoadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("unable to read cluster snapshot: %w", err)
	}
	defer f.Close()
	if err := s.Load(f); err != nil {
		return fmt.Errorf("cluster snapshot %s: %w", path, err)
	}
	return nil
}

// Load feeds the state from a stream of YAML or JSON documents.
func (s *State) Load(r io.Reader) error { return EachObject(r, s.Add) }

// EachObject calls fn with every object of a stream of YAML or JSON
// documents, expanding Lists into their items, in order. It streams, so a
// large snapshot is never held whole; the first error stops it.
func EachObject(r io.Reader, fn func(*unstructured.Unstructured) error) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 64<<10)
	for doc := 0; ; doc++ {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("document %d is not valid YAML or JSON: %w", doc, err)
		}
		if raw == nil {
			continue
		}
		if err := eachItem(&unstructured.Unstructured{Object: raw}, fn); err != nil {
			return fmt.Errorf("document %d: %w", doc, err)
		}
	}
}

func eachItem(obj *unstructured.Unstructured, fn func(*unstructured.Unstructured) error) error {
	if !obj.IsList() {
		return fn(obj)
	}
	return obj.EachListItem(func(item runtime.Object) error {
		u, ok := item.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("list item is %T", item)
		}
		return fn(u)
	})
}

// Add feeds the state one object: a Node, Pod or Namespace (core v1), a
// DRA ResourceClaim or ResourceClaimTemplate (Claims), ResourceSlice or
// DeviceClass (the GPUs DRA publishes); anything else is skipped.
func (s *State) Add(obj *unstructured.Unstructured) error {
	if s.claims.add(obj) {
		if obj.GetKind() == "ResourceClaim" {
			var c resourcev1.ResourceClaim
			if err := fromUnstructured(obj, &c); err != nil {
				return err
			}
			s.UpsertClaim(&c)
		} else {
			var t resourcev1.ResourceClaimTemplate
			if err := fromUnstructured(obj, &t); err != nil {
				return err
			}
			s.UpsertTemplate(&t)
		}
		return nil
	}
	if obj.GetAPIVersion() == resourcev1.SchemeGroupVersion.String() {
		switch obj.GetKind() {
		case "ResourceSlice":
			var sl resourcev1.ResourceSlice
			if err := fromUnstructured(obj, &sl); err != nil {
				return err
			}
			s.UpsertSlice(context.TODO(), &sl)
		case "DeviceClass":
			var c resourcev1.DeviceClass
			if err := fromUnstructured(obj, &c); err != nil {
				return err
			}
			s.UpsertDeviceClass(context.TODO(), &c)
		}
		return nil
	}
	if obj.GetAPIVersion() != "v1" {
		return nil
	}
	var err error
	switch obj.GetKind() {
	case "Node":
		var n corev1.Node
		if err = fromUnstructured(obj, &n); err == nil {
			s.UpsertNode(&n)
		}
	case "Pod":
		var p corev1.Pod
		if err = fromUnstructured(obj, &p); err == nil {
			s.UpsertPod(&p)
		}
	case "Namespace":
		var ns corev1.Namespace
		if err = fromUnstructured(obj, &ns); err == nil {
			s.UpsertNamespace(&ns)
		}
	}
	return err
}

func fromUnstructured(obj *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("malformed %s %q: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// EachFile calls fn with every object of a file of YAML or JSON documents
// (EachObject).
func EachFile(path string, fn func(*unstructured.Unstructured) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("unable to read %s: %w", path, err)
	}
	defer f.Close()
	if err := EachObject(f, fn); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
