package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/webhook"
	"github.com/mandate-dev/mandate/workload"
)

type webhookConfigOptions struct {
	url, service, caBundle, namespace, failurePolicy string
	timeoutSeconds                                   int32
	output                                           string
	// namespaceSelector is a label selector; nil for the default.
	namespaceSelector *string
	// schedulerIdentities are the eviction guard's users (serve's
	// schedulerIdentities); empty registers no guard.
	schedulerIdentities []string
}

func newWebhookConfigurationsCommand() *cobra.Command {
	var o webhookConfigOptions
	cmd := &cobra.Command{
		Use:   "webhook-configurations (--url URL | --service NAMESPACE/NAME[:PORT]) --ca-bundle FILE [-o yaml|json|table]",
		Short: "Print the mutating and validating webhook configurations that route workloads to mandate serve",
		Long: `Print, as YAML for kubectl apply, the MutatingWebhookConfiguration and
ValidatingWebhookConfiguration that route every governed workload kind (and
namespaces, to guard their tenant label) to a running mandate serve: the same
rules, match conditions and namespace selectors the Helm chart installs. By
default only namespaces labelled with a tenant (mandate.dev/tenant) are
governed; --namespace-selector "" governs every namespace. Use it
to register a serve that runs outside the chart (a local API server, a test
cluster); the chart registers its own. -o json prints them as one v1 List
(kubectl apply takes it too), -o table one row per webhook.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWebhookConfigurations(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", "", "base URL of serve's webhook server, https://HOST:PORT (the paths are appended)")
	f.StringVar(&o.service, "service", "", "serve's Service instead of a URL: NAMESPACE/NAME[:PORT] (port 443 when omitted)")
	f.StringVar(&o.caBundle, "ca-bundle", "", "PEM file of the CA that signed serve's serving certificate")
	f.StringVar(&o.namespace, "namespace", "", "serve's own namespace, never governed")
	f.StringVar(&o.failurePolicy, "failure-policy", string(admissionregistrationv1.Fail), "Fail or Ignore")
	f.Int32Var(&o.timeoutSeconds, "timeout-seconds", webhook.DefaultTimeoutSeconds, "timeoutSeconds of every webhook, 1-30")
	f.StringSliceVar(&o.schedulerIdentities, "scheduler-identities", config.DefaultSchedulerIdentities,
		"users whose evictions of non-preemptible work the eviction guard refuses (serve's --scheduler-identities, the same list); \"\" registers no guard")
	addOutputFlag(cmd, &o.output, outputYAML, outputJSON, outputTable)
	selector := f.String("namespace-selector", workload.LabelTenant,
		`label selector of the governed namespaces (kubectl's syntax); the default governs only namespaces labelled with a tenant, "" every namespace`)
	cmd.PreRun = func(cmd *cobra.Command, _ []string) {
		if cmd.Flags().Changed("namespace-selector") {
			o.namespaceSelector = selector
		}
	}
	return cmd
}

func runWebhookConfigurations(out io.Writer, o webhookConfigOptions) error {
	ro, err := o.registration()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	mutating, validating := webhook.Configurations(ro)
	switch o.output {
	case outputJSON:
		return writeStructured(out, outputJSON, map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{mutating, validating}})
	case outputTable:
		return writeWebhookTable(out, mutating, validating)
	}
	for i, obj := range []any{mutating, validating} {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("unable to write the webhook configurations: %w", err)
		}
		if i > 0 {
			fmt.Fprintln(out, "---")
		}
		if _, err := out.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// registration checks the flags and turns them into the registration.
func (o webhookConfigOptions) registration() (webhook.RegistrationOptions, error) {
	ro := webhook.RegistrationOptions{Namespace: o.namespace, TimeoutSeconds: o.timeoutSeconds,
		SchedulerIdentities: slices.DeleteFunc(slices.Clone(o.schedulerIdentities), func(u string) bool { return u == "" })}
	if ro.SchedulerIdentities == nil {
		ro.SchedulerIdentities = []string{} // none: no guard, not the default
	}
	for _, u := range ro.SchedulerIdentities {
		if strings.ContainsAny(u, `'\`) {
			return ro, fmt.Errorf("--scheduler-identities %q: a user name without quotes or backslashes (it is written into a CEL matchCondition)", u)
		}
	}
	switch {
	case (o.url == "") == (o.service == ""):
		return ro, fmt.Errorf("give exactly one of --url and --service")
	case o.url != "" && !strings.HasPrefix(o.url, "https://"):
		return ro, fmt.Errorf("--url %q: the API server calls webhooks over https only", o.url)
	case o.caBundle == "":
		return ro, fmt.Errorf("--ca-bundle is required: the API server verifies serve's certificate with it")
	case o.timeoutSeconds < 1 || o.timeoutSeconds > 30:
		return ro, fmt.Errorf("--timeout-seconds %d is out of range (1-30)", o.timeoutSeconds)
	}
	switch fp := admissionregistrationv1.FailurePolicyType(o.failurePolicy); fp {
	case admissionregistrationv1.Fail, admissionregistrationv1.Ignore:
		ro.FailurePolicy = &fp
	default:
		return ro, fmt.Errorf("--failure-policy %q: want Fail or Ignore", o.failurePolicy)
	}
	ca, err := os.ReadFile(o.caBundle)
	if err != nil {
		return ro, fmt.Errorf("unable to read --ca-bundle: %w", err)
	}
	if !strings.Contains(string(ca), "-----BEGIN CERTIFICATE-----") {
		return ro, fmt.Errorf("--ca-bundle %s holds no PEM certificate", o.caBundle)
	}
	ro.CABundle, ro.URL = ca, o.url
	if o.namespaceSelector != nil {
		sel, err := metav1.ParseToLabelSelector(*o.namespaceSelector)
		if err != nil {
			return ro, fmt.Errorf("--namespace-selector %q: %w", *o.namespaceSelector, err)
		}
		ro.NamespaceSelector = compact(sel)
	}
	if o.service != "" {
		svc, err := parseService(o.service)
		if err != nil {
			return ro, err
		}
		ro.Service = svc
	}
	return ro, nil
}

// compact drops a selector's empty lists, as the API server stores it.
func compact(sel *metav1.LabelSelector) *metav1.LabelSelector {
	out := &metav1.LabelSelector{}
	if len(sel.MatchLabels) > 0 {
		out.MatchLabels = sel.MatchLabels
	}
	for _, r := range sel.MatchExpressions {
		if len(r.Values) == 0 {
			r.Values = nil
		}
		out.MatchExpressions = append(out.MatchExpressions, r)
	}
	return out
}

// parseService reads NAMESPACE/NAME[:PORT].
func parseService(s string) (*webhook.ServiceReference, error) {
	ns, rest, ok := strings.Cut(s, "/")
	name, port, hasPort := strings.Cut(rest, ":")
	if !ok || ns == "" || name == "" {
		return nil, fmt.Errorf("--service %q: want NAMESPACE/NAME[:PORT]", s)
	}
	ref := &webhook.ServiceReference{Namespace: ns, Name: name}
	if hasPort {
		p, err := strconv.ParseInt(port, 10, 32)
		if err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("--service %q: port %q is not 1-65535", s, port)
		}
		ref.Port = int32(p)
	}
	return ref, nil
}

// writeWebhookTable is one row per webhook: its configuration, where the
// API server calls it, what it matches, and how it fails.
func writeWebhookTable(out io.Writer, m *admissionregistrationv1.MutatingWebhookConfiguration, v *admissionregistrationv1.ValidatingWebhookConfiguration) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONFIGURATION\tWEBHOOK\tCALLS\tOPERATIONS\tRESOURCES\tFAILURE POLICY\tTIMEOUT")
	row := func(config, name string, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations,
		fp *admissionregistrationv1.FailurePolicyType, timeout *int32) {
		calls := ""
		switch {
		case cc.URL != nil:
			calls = *cc.URL
		case cc.Service != nil:
			calls = "service " + cc.Service.Namespace + "/" + cc.Service.Name
			if cc.Service.Path != nil {
				calls += *cc.Service.Path
			}
		}
		var ops, resources []string
		for _, r := range rules {
			for _, op := range r.Operations {
				if !slices.Contains(ops, string(op)) {
					ops = append(ops, string(op))
				}
			}
			for _, res := range r.Resources {
				for _, g := range r.APIGroups {
					if g != "" {
						resources = append(resources, res+"."+g)
					} else {
						resources = append(resources, res)
					}
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%ds\n", config, name, calls, strings.Join(ops, ","),
			strings.Join(resources, ","), ptrString(fp), ptrInt(timeout))
	}
	for _, w := range m.Webhooks {
		row("mutating/"+m.Name, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.TimeoutSeconds)
	}
	for _, w := range v.Webhooks {
		row("validating/"+v.Name, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.TimeoutSeconds)
	}
	return tw.Flush()
}

func ptrString[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func ptrInt(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
