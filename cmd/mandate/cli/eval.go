package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/mandate-dev/mandate/cluster"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/evalview"
	"github.com/mandate-dev/mandate/policies"
	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/workload"
	"github.com/mandate-dev/mandate/workload/sbatch"
)

// Exit codes of `mandate eval`.
const (
	exitAdmitted = 0
	exitDenied   = 1
	exitBadInput = 2
)

type evalOptions struct {
	manifest string
	cluster  string
	policies string
	output   string
	// namespace is assumed for objects that name none.
	namespace string
	user      string
	groups    []string
	// sbatchJob turns a Slurm batch script into its Kubernetes Job; nil
	// reads every file as manifests.
	sbatchJob func(file string, data []byte) (*unstructured.Unstructured, error)
	// keepClaim keeps a DRA ResourceClaim or ResourceClaimTemplate of the
	// manifests for the workloads that reference it, as `kubectl apply -f`
	// of the same files would create it; false for other objects; nil
	// keeps none.
	keepClaim func(*unstructured.Unstructured) (bool, error)
}

func newEvalCommand() *cobra.Command {
	var o evalOptions
	cmd := &cobra.Command{
		Use:   "eval -f MANIFEST --cluster SNAPSHOT [--policies DIR] [-n NAMESPACE] [-o table|json|yaml]",
		Short: "Decide workloads offline, exactly as the webhook would",
		Long: `Decide every workload in MANIFEST (a file, a directory of YAML files and
Slurm batch scripts, or - for stdin) against a cluster snapshot: what ` + "`kubectl get nodes,pods,namespaces -A -o yaml`" + ` prints.
Prints whether each is admitted, every violation with its dimension and message,
warnings, the scheduler directives, the patch that would be applied, and a
per-dimension explanation (verdict, limit, current value). A workload that
names no namespace is taken to be in --namespace (default "default"), as
kubectl create -n would place it. Workloads are
decided in order, each admitted one counting against its tenant's quota for
the next, as consecutive creates would. Documents of kinds Mandate does not
govern (a Queue, a ConfigMap, …) are listed as "skipped: not a governed kind"
and not decided. A Deployment or StatefulSet is followed by a preview of its
pods: admitted with its directives, counted with it, not again.
A Slurm batch script (a file with #SBATCH lines: .sbatch, .slurm or .sh in a
directory) is decided as the Kubernetes Job it is equivalent to: -A/--account
is the tenant (the Job goes to a namespace of that tenant), --qos the priority
class, -N/--nodes the gang of pods, --gres=gpu[:type]:N or --gpus-per-node
each pod's GPUs, a partition or gres type naming a GPU product its product,
and --switches=1 the model's leaf topology level, required.

Exit status: 0 when every workload is admitted, 1 when any is denied, 2 on bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitStatus(runEval(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.manifest, "filename", "f", "", "workload manifest: a file, a directory of .yaml/.yml/.json files, or - for stdin")
	f.StringVar(&o.cluster, "cluster", "", "cluster snapshot (kubectl get nodes,pods,namespaces -A -o yaml)")
	f.StringVar(&o.policies, "policies", "", "policy directory (default: the embedded default authority model)")
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace of the workloads that name none (their tenant is that namespace's)")
	addOutputFlag(cmd, &o.output)
	f.StringVar(&o.user, "user", "mandate-eval", "user name the decision is made for")
	f.StringSliceVar(&o.groups, "groups", nil, "groups of that user")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}

// exitStatus turns a command's outcome into what main exits with: an
// error is bad input (2), any other code than 0 is returned bare.
func exitStatus(code int, err error) error {
	if err != nil {
		return &exitError{code: exitBadInput, err: err}
	}
	if code != exitAdmitted {
		return &exitError{code: code}
	}
	return nil
}

func runEval(ctx context.Context, out, errOut io.Writer, o evalOptions) (int, error) {
	policy, err := loadPolicy(o.policies)
	if err != nil {
		return 0, err
	}
	ev, err := evaluator.New(ctx, policy, offlineEvaluation)
	if err != nil {
		return 0, err
	}
	state, err := cluster.New(ev.Model())
	if err != nil {
		return 0, err
	}
	if err := state.LoadFile(o.cluster); err != nil {
		return 0, err
	}
	o.sbatchJob = func(file string, data []byte) (*unstructured.Unstructured, error) {
		return sbatchJob(file, data, ev.Model(), stateNamespaces(state), o.namespace)
	}
	o.keepClaim = func(obj *unstructured.Unstructured) (bool, error) {
		if !cluster.IsClaimObject(obj) {
			return false, nil
		}
		return true, state.Add(obj)
	}
	items, skipped, err := decideManifests(ctx, &review.Service{Decider: ev, State: state, Claims: state.Claims(), Explain: true}, o)
	if err != nil {
		return 0, err
	}
	// Skipped documents are not part of a machine-readable report.
	skipOut := errOut
	if o.output == "table" {
		skipOut = out
	}
	for _, s := range skipped {
		fmt.Fprintln(skipOut, s)
	}
	if err := render(out, o.output, items); err != nil {
		return 0, err
	}
	for _, it := range items {
		if !it.Review.Decision.Allowed {
			return exitDenied, nil
		}
	}
	return exitAdmitted, nil
}

// offlineEvaluation is how the commands a person runs at a terminal (eval,
// audit, explain, report) evaluate: the production deadline protects an
// API server waiting on the webhook, while a busy laptop or CI machine
// should make these slower, never fail them.
var offlineEvaluation = evaluator.Options{Timeout: time.Minute}

func loadPolicy(dir string) (*evaluator.Policy, error) {
	if dir == "" {
		return evaluator.LoadFS(policies.FS, "embedded")
	}
	return evaluator.LoadPaths([]string{dir}, "dev")
}

func decideManifests(ctx context.Context, r *review.Service, o evalOptions) ([]evalview.Item, []string, error) {
	files, err := manifestFiles(o.manifest)
	if err != nil {
		return nil, nil, err
	}
	req := evaluator.Request{Operation: "CREATE", User: o.user, Groups: o.groups}
	var (
		items   []evalview.Item
		skipped []string
	)
	byFile := make([][]*unstructured.Unstructured, len(files))
	for i, file := range files {
		data, err := readManifest(file)
		if err != nil {
			return nil, nil, err
		}
		if o.sbatchJob != nil && sbatch.IsScript(data) {
			job, err := o.sbatchJob(file, data)
			if err != nil {
				return nil, nil, err
			}
			byFile[i] = append(byFile[i], job)
		} else if byFile[i], err = workload.Decode(data); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		// The DRA claims and claim templates of the files exist before
		// any pod of their workloads does, wherever they stand in them.
		for _, obj := range byFile[i] {
			if obj.GetNamespace() == "" {
				obj.SetNamespace(o.namespace)
			}
			if o.keepClaim == nil {
				continue
			}
			if _, err := o.keepClaim(obj); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", file, err)
			}
		}
	}
	for i, file := range files {
		for _, obj := range byFile[i] {
			if cluster.IsClaimObject(obj) {
				continue // kept for the workloads that reference it
			}
			if _, governed := workload.Lookup(obj.GroupVersionKind()); !governed {
				skipped = append(skipped, fmt.Sprintf("%s: %s %s: skipped: not a governed kind",
					filepath.Base(file), obj.GetAPIVersion()+" "+obj.GetKind(), obj.GetName()))
				continue
			}
			if obj.GetNamespace() == "" {
				obj.SetNamespace(o.namespace)
			}
			rv, err := r.Review(ctx, obj, req)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", file, err)
			}
			items = append(items, evalview.Item{Source: filepath.Base(file), Review: rv})
			if preview, ok, err := podPreview(obj, rv, req); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", file, err)
			} else if ok {
				items = append(items, evalview.Item{Source: filepath.Base(file) + " (its pods)", Review: preview})
			}
		}
	}
	if len(items) == 0 {
		return nil, nil, fmt.Errorf("%s holds no workload of a governed kind (%d documents skipped)", o.manifest, len(skipped))
	}
	return items, skipped, nil
}

// podPreview is what a pod of an admitted Deployment or StatefulSet gets at
// its own admission: its owner's directives, without a decision of its own
// and without counting against quota again (review.Service.GangDirectives).
// ok is false for other kinds and for a denied owner.
func podPreview(obj *unstructured.Unstructured, rv review.Result, req evaluator.Request) (review.Result, bool, error) {
	gvk := obj.GroupVersionKind()
	if (gvk != workload.DeploymentGVK && gvk != workload.StatefulSetGVK) || !rv.Decision.Allowed || rv.Mutated == nil {
		return review.Result{}, false, nil
	}
	tmpl, found, err := unstructured.NestedMap(rv.Mutated.Object, "spec", "template")
	if err != nil || !found {
		return review.Result{}, false, nil
	}
	pod := &unstructured.Unstructured{Object: tmpl}
	pod.SetAPIVersion("v1")
	pod.SetKind("Pod")
	pod.SetNamespace(obj.GetNamespace())
	pod.SetGenerateName(rv.Mutated.GetName() + "-")
	pod.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Name: rv.Mutated.GetName(), Controller: ptr.To(true)}})
	mutated, patch, err := review.RenderGang(pod, rv.Decision.Directives, req)
	if err != nil {
		return review.Result{}, false, fmt.Errorf("unable to preview the pods of %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	w, err := workload.Normalize(mutated)
	if err != nil {
		return review.Result{}, false, fmt.Errorf("unable to preview the pods of %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	w.Tenant, w.Name = rv.Workload.Tenant, rv.Mutated.GetName()+"-*"
	d := evaluator.Decision{
		Allowed:    true,
		Directives: rv.Decision.Directives,
		Revision:   rv.Decision.Revision,
		Warnings: []string{fmt.Sprintf("each of the %d pods of %s %s is admitted with its directives and counted with it, not again",
			rv.Workload.Pods, gvk.Kind, obj.GetName())},
	}
	return review.Result{Workload: w, Decision: d, Patch: patch, Mutated: mutated}, true, nil
}

// manifestFiles expands a directory to its YAML and JSON files, sorted.
func manifestFiles(path string) ([]string, error) {
	if path == "-" {
		return []string{path}, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read manifest: %w", err)
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read manifest directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json" || slices.Contains(sbatchExtensions, ext)) {
			files = append(files, filepath.Join(path, e.Name()))
		}
	}
	sort.Strings(files)
	return files, nil
}

func readManifest(file string) ([]byte, error) {
	if file == "-" {
		data, err := io.ReadAll(io.LimitReader(os.Stdin, workload.MaxDecodeBytes+1))
		if err != nil {
			return nil, fmt.Errorf("unable to read stdin: %w", err)
		}
		return data, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("unable to read manifest: %w", err)
	}
	return data, nil
}

func render(out io.Writer, format string, items []evalview.Item) error {
	switch format {
	case "json":
		return evalview.WriteJSON(out, items)
	case "yaml":
		return evalview.WriteYAML(out, items)
	}
	if err := evalview.WriteSummary(out, items); err != nil {
		return err
	}
	return evalview.WriteDetails(out, items)
}
