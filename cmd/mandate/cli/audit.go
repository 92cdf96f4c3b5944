package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	v1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mandate-dev/mandate/audit"
	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/inventory"
	"github.com/mandate-dev/mandate/openreports"
)

type auditOptions struct {
	bundle          string
	verificationKey string
	keyID           string
	scope           string
	policies        string
	snapshot        string
	kubeconfig      string
	kubeContext     string
	namespace       string
	exempt          []string
	output          string
}

func newAuditCommand() *cobra.Command {
	var o auditOptions
	cmd := &cobra.Command{
		Use:   "audit (--bundle FILE | --policies DIR) (--snapshot FILE | --kubeconfig FILE [--namespace NS]) [-o table|json|yaml|openreports]",
		Short: "Report what a candidate policy would deny or change among the workloads that already exist",
		Long: `Decide every workload that already exists (Pods, batch Jobs, PyTorchJobs and
Volcano Jobs, from a snapshot file or listed from the API server) against a
candidate policy, as each would be decided at admission now, and report the
ones it would deny (every violation), the ones whose directives it would
change (priority class, queue, preemptibility, scheduler keys, gang and
topology annotations) and the ones it leaves unchanged.

A workload's own pods are already counted in the cluster, so each is decided
with them taken out: their GPUs leave its tenant's usage and free their
nodes for placement. Pods controlled by a Job, PyTorchJob or Volcano Job are
audited through their owner. Nothing is reserved or written.

The snapshot is what ` + "`kubectl get nodes,namespaces,pods,jobs,pytorchjobs,vcjobs -A -o yaml`" + `
prints (the format of mandate eval --cluster). Without --bundle or --policies
the embedded default authority model is the candidate.

-o openreports prints what serve's background audit writes: one OpenReports
Report per namespace with a result per workload and violated rule, as a
YAML List that kubectl apply takes.

Exit status: 0 when nothing would be denied, 1 when some workload would be,
2 on bad input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitStatus(runAudit(cmd.Context(), cmd.OutOrStdout(), o))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.bundle, "bundle", "", "candidate bundle (.tar.gz, as mandate bundle build writes)")
	f.StringVar(&o.verificationKey, "bundle-verification-key", "", "PEM public key; when set, the bundle must be signed with it")
	f.StringVar(&o.keyID, "bundle-verification-key-id", "", "id of --bundle-verification-key; a signature naming another key id is rejected (default: \"default\")")
	f.StringVar(&o.scope, "bundle-scope", "", "scope the bundle's signature must carry (mandate bundle sign --scope)")
	f.StringVar(&o.policies, "policies", "", "candidate policy directory (default: the embedded default authority model)")
	f.StringVar(&o.snapshot, "snapshot", "", "cluster snapshot file (kubectl get nodes,namespaces,pods,jobs,pytorchjobs,vcjobs -A -o yaml)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster to list the workloads from")
	f.StringVar(&o.kubeContext, "context", "", "kubeconfig context (default: its current context)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "audit only this namespace's workloads (usage still counts the whole cluster)")
	f.StringSliceVar(&o.exempt, "exempt-namespace", nil, "namespaces Mandate does not govern, beside kube-system, kube-public and kube-node-lease (e.g. Mandate's own)")
	addOutputFlag(cmd, &o.output, outputTable, outputJSON, outputYAML, outputOpenReports)
	return cmd
}

func runAudit(ctx context.Context, out io.Writer, o auditOptions) (int, error) {
	if o.bundle != "" && o.policies != "" {
		return 0, errors.New("--bundle and --policies both name a candidate: give one")
	}
	if (o.snapshot == "") == (o.kubeconfig == "") {
		return 0, errors.New("give the workloads to audit with exactly one of --snapshot FILE or --kubeconfig FILE")
	}
	if o.verificationKey != "" && o.bundle == "" {
		return 0, errors.New("--bundle-verification-key verifies a --bundle; none was given")
	}
	if (o.keyID != "" || o.scope != "") && o.verificationKey == "" {
		return 0, errors.New("--bundle-verification-key-id and --bundle-scope need --bundle-verification-key")
	}
	policy, err := loadCandidate(o)
	if err != nil {
		return 0, err
	}
	ev, err := evaluator.New(ctx, policy, offlineEvaluation)
	if err != nil {
		return 0, fmt.Errorf("unable to prepare the candidate policy: %w", err)
	}
	inv, err := readInventory(ctx, o)
	if err != nil {
		return 0, err
	}
	rep, err := audit.Audit(ctx, inv, audit.Options{
		Decider:   ev,
		Model:     ev.Model(),
		Revision:  ev.Revision(),
		Namespace: o.namespace,
		Exempt:    o.exempt,
	})
	if err != nil {
		return 0, err
	}
	switch o.output {
	case outputJSON:
		err = audit.WriteJSON(out, rep)
	case outputYAML:
		err = writeStructured(out, outputYAML, rep)
	case outputOpenReports:
		err = writeOpenReports(out, rep)
	default:
		err = audit.WriteTable(out, rep)
	}
	if err != nil {
		return 0, err
	}
	if rep.Summary.Denied > 0 {
		return exitDenied, nil
	}
	return exitAdmitted, nil
}

// loadCandidate reads the candidate: a bundle (verified when a key is
// given), a policy directory, or the embedded default.
func loadCandidate(o auditOptions) (*evaluator.Policy, error) {
	if o.bundle == "" {
		return loadPolicy(o.policies)
	}
	var verify *bundles.VerifyOptions
	if o.verificationKey != "" {
		verify = &bundles.VerifyOptions{PublicKey: o.verificationKey, KeyID: o.keyID, Scope: o.scope}
	}
	p, err := bundles.Load(o.bundle, verify)
	if err != nil && verify != nil {
		return nil, fmt.Errorf("%w (verifying with --bundle-verification-key %s)", err, o.verificationKey)
	}
	return p, err
}

func readInventory(ctx context.Context, o auditOptions) (*inventory.Inventory, error) {
	if o.snapshot != "" {
		return inventory.ReadSnapshot(o.snapshot)
	}
	return inventory.ListKubeconfig(ctx, o.kubeconfig, o.kubeContext)
}

// outputOpenReports is audit's -o for OpenReports Reports.
const outputOpenReports = "openreports"

// writeOpenReports writes the audit as the Reports serve's background
// audit writes, in a YAML List.
func writeOpenReports(out io.Writer, rep *audit.Report) error {
	list := struct {
		metav1.TypeMeta `json:",inline"`
		Items           []*v1alpha1.Report `json:"items"`
	}{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"},
		Items: openreports.Build(rep, nil, openreports.Options{Now: time.Now()})}
	return writeStructured(out, outputYAML, list)
}
