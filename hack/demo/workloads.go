package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mandate-dev/mandate/hack/internal/examples"
	"github.com/mandate-dev/mandate/test/envtest"
	kinds "github.com/mandate-dev/mandate/workload"
)

// workload is one example file, with the outcome its name promises.
type workload struct {
	file     string
	obj      *unstructured.Unstructured
	expected examples.Expectation
}

// loadWorkloads reads examples/workloads/*.yaml in name order.
func loadWorkloads(dir string) ([]workload, error) {
	ws, err := examples.LoadWorkloads(dir)
	if err != nil {
		return nil, err
	}
	out := make([]workload, len(ws))
	for i, w := range ws {
		out[i] = workload{file: w.File, obj: w.Object, expected: w.Expected}
	}
	return out, nil
}

// createWorkloads creates each workload as `kubectl create -f` would (a
// dynamic client, a fresh one per request so its warnings are its own) and
// records what the API server answered.
func createWorkloads(ctx context.Context, env *envtest.Env, workloads []workload) ([]row, error) {
	mapper := env.Client.RESTMapper()
	tenants := map[string]string{}
	var rows []row
	for _, w := range workloads {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		obj := w.obj.DeepCopy()
		ns := obj.GetNamespace()
		if ns == "" {
			ns = "default"
			obj.SetNamespace(ns)
		}
		tenant, ok := tenants[ns]
		if !ok {
			var err error
			if tenant, err = tenantOf(ctx, env.Client, ns); err != nil {
				return nil, err
			}
			tenants[ns] = tenant
		}
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.file, err)
		}
		warnings := &warningCollector{}
		cfg := rest.CopyConfig(env.Config)
		cfg.WarningHandler = warnings
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		stored, err := dyn.Resource(mapping.Resource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{FieldManager: "kubectl-create"})
		if _, governed := kinds.Lookup(gvk); !governed {
			// What a workload stands on (a DRA ResourceClaimTemplate):
			// created for it, not decided.
			if err != nil {
				return nil, fmt.Errorf("%s: unable to create %s %s: %w", w.file, gvk.Kind, obj.GetName(), err)
			}
			continue
		}
		r := row{
			file:     w.file,
			workload: kinds.Describe(gvk.GroupVersion().String(), gvk.Kind, ns, obj.GetName()),
			tenant:   tenant,
			expected: w.expected,
			warnings: warnings.list(),
		}
		if err != nil {
			r.fromError(err)
		} else {
			r.fromStored(w.obj, stored)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func tenantOf(ctx context.Context, c client.Client, ns string) (string, error) {
	var n corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("namespace %s: %w", ns, err)
	}
	return n.Labels[kinds.LabelTenant], nil
}

// fromError records a denial, or an error that is not one.
func (r *row) fromError(err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		r.decision, r.message = decisionError, err.Error()
		return
	}
	st := status.Status()
	msg, denied := denialMessage(st.Message)
	if !denied {
		r.decision, r.message = decisionError, err.Error()
		return
	}
	r.decision, r.message = decisionDenied, msg
	r.dimension = denialDimensions(st)
}

// fromStored records an admission: whatever Mandate injected into the
// submitted object, and the first warning.
func (r *row) fromStored(submitted, stored *unstructured.Unstructured) {
	r.injected = injected(submitted.Object, stored.Object)
	r.decision = decisionAdmitted
	if r.injected != "" {
		r.decision = decisionMutated
	}
	r.message = "within every limit"
	if len(r.warnings) > 0 {
		r.message = strings.Join(r.warnings, "; ")
		r.dimension = warningDimension(r.warnings[0])
	}
}

// warningCollector is a rest.WarningHandler keeping one request's warnings.
type warningCollector struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningCollector) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warningCollector) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}
