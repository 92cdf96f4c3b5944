// Package chartqueries reads the PromQL the chart ships, the
// PrometheusRule's alert expressions (rendered by the pinned helm) and the
// Grafana dashboard's panel queries, parses each with Prometheus' own
// parser and says which metrics it names. test/chart checks them against
// the metrics Mandate registers and runs promtool on the rendered rule;
// test/e2e checks them against a scrape of a running serve.
package chartqueries

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

const (
	// ChartDir, HelmBinary and DashboardFile are relative to the
	// repository root.
	ChartDir      = "charts/mandate"
	HelmBinary    = "bin/k8s/helm"
	DashboardFile = ChartDir + "/dashboards/mandate.json"
	// RuleTemplate is the template that renders the PrometheusRule.
	RuleTemplate = "templates/prometheusrule.yaml"
)

// Query is one PromQL expression the chart ships.
type Query struct {
	// Source says where it is: "alert <name>" or "panel <title>".
	Source string
	// Expr is the expression as a Prometheus would evaluate it (Grafana's
	// variables substituted).
	Expr string
}

// RuleFile renders the chart's PrometheusRule with the pinned helm (extra
// are more `helm template` arguments, such as --set) and returns its spec
// as a Prometheus rule file: `groups:` with the alerts, exactly what the
// Prometheus Operator hands to Prometheus.
func RuleFile(ctx context.Context, root string, extra ...string) ([]byte, error) {
	bin := filepath.Join(root, HelmBinary)
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("helm not found (run `hack/envtest-assets.sh helm` from the repository root): %w", err)
	}
	args := append([]string{"template", "mandate", ChartDir, "--namespace", "mandate-system",
		"--show-only", RuleTemplate,
		"--set", "policies.source=embedded-demo", "--set", "prometheusRule.enabled=true"}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = root
	// No user configuration, plugins or repositories leak in.
	home, err := os.MkdirTemp("", "chartqueries-helm-")
	if err != nil {
		return nil, fmt.Errorf("unable to make a helm home: %w", err)
	}
	defer os.RemoveAll(home)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var rule struct {
		Kind string         `json:"kind"`
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(stdout.Bytes(), &rule); err != nil {
		return nil, fmt.Errorf("unable to decode the rendered PrometheusRule: %w", err)
	}
	if rule.Kind != "PrometheusRule" || rule.Spec["groups"] == nil {
		return nil, fmt.Errorf("%s rendered no PrometheusRule with groups:\n%s", RuleTemplate, stdout.String())
	}
	out, err := yaml.Marshal(rule.Spec)
	if err != nil {
		return nil, fmt.Errorf("unable to encode the rule file: %w", err)
	}
	return out, nil
}

// Rules are the alerting rules of a rule file, decoded strictly: a field
// this does not know (keep_firing_for, a recording rule's record) is an
// error until it is added here.
type Rules struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for,omitempty"`
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"rules"`
	} `json:"groups"`
}

// ParseRules decodes a rule file.
func ParseRules(file []byte) (*Rules, error) {
	var r Rules
	if err := yaml.UnmarshalStrict(file, &r); err != nil {
		return nil, fmt.Errorf("unable to decode the rule file: %w", err)
	}
	return &r, nil
}

// Alerts are the names of the rule file's alerts, in order.
func (r *Rules) Alerts() []string {
	var out []string
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			out = append(out, rule.Alert)
		}
	}
	return out
}

// Load returns every query the chart ships: the alerts of the rendered
// PrometheusRule, then the dashboard's panel queries.
func Load(ctx context.Context, root string) ([]Query, error) {
	file, err := RuleFile(ctx, root)
	if err != nil {
		return nil, err
	}
	rules, err := ParseRules(file)
	if err != nil {
		return nil, err
	}
	var out []Query
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			out = append(out, Query{Source: "alert " + r.Alert, Expr: r.Expr})
		}
	}
	dash, err := os.ReadFile(filepath.Join(root, DashboardFile))
	if err != nil {
		return nil, fmt.Errorf("unable to read the dashboard: %w", err)
	}
	panels, err := DashboardQueries(dash)
	if err != nil {
		return nil, err
	}
	return append(out, panels...), nil
}

// DashboardQueries are the Prometheus queries of a Grafana dashboard's
// panels (rows' nested panels included), with Grafana's variables
// substituted (see Substitute).
func DashboardQueries(dashboard []byte) ([]Query, error) {
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var dash struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(dashboard, &dash); err != nil {
		return nil, fmt.Errorf("unable to decode the dashboard: %w", err)
	}
	var variables []string
	for _, v := range dash.Templating.List {
		variables = append(variables, v.Name)
	}
	var out []Query
	var walk func(raw []json.RawMessage) error
	walk = func(raw []json.RawMessage) error {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				return fmt.Errorf("unable to decode a dashboard panel: %w", err)
			}
			for _, t := range p.Targets {
				if t.Expr == "" {
					continue
				}
				expr, err := Substitute(t.Expr, variables)
				if err != nil {
					return fmt.Errorf("panel %q: %w", p.Title, err)
				}
				out = append(out, Query{Source: "panel " + p.Title, Expr: expr})
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(dash.Panels)
}

// grafanaIntervals are Grafana's built-in duration variables, replaced by
// a plausible duration so that range selectors parse.
var grafanaIntervals = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "30s",
	"__range":         "1h",
}

// grafanaVariable matches $name, ${name} and ${name:format}.
var grafanaVariable = regexp.MustCompile(`\$(?:\{(\w+)(?::\w+)?\}|(\w+))`)

// Substitute replaces Grafana's variables in a query as Grafana would
// before sending it: the interval variables by a duration, the
// dashboard's own (declared in its templating) by a plausible label value.
// A variable that is neither is an error, so a new one gets a substitution
// here rather than being parsed as something it is not.
func Substitute(expr string, dashboardVariables []string) (string, error) {
	var unknown []string
	out := grafanaVariable.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVariable.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		if d, ok := grafanaIntervals[name]; ok {
			return d
		}
		if slices.Contains(dashboardVariables, name) {
			return "value"
		}
		unknown = append(unknown, m)
		return m
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("query %q uses Grafana variables %v with no substitution", expr, unknown)
	}
	return out, nil
}

// Selector is a vector selector of a query: the metric it names and the
// labels it matches on besides the name.
type Selector struct {
	Metric string
	Labels []string
}

// Selectors parses expr with Prometheus' PromQL parser and returns its
// vector selectors. A selector that names no metric (matching on labels
// only, or on a __name__ pattern) is an error: what it reads cannot be
// checked.
func Selectors(expr string) ([]Selector, error) {
	node, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("unable to parse %q: %w", expr, err)
	}
	var out []Selector
	for _, matchers := range parser.ExtractSelectors(node) {
		var sel Selector
		for _, m := range matchers {
			switch {
			case m.Name == labels.MetricName && m.Type == labels.MatchEqual:
				sel.Metric = m.Value
			case m.Name != labels.MetricName:
				sel.Labels = append(sel.Labels, m.Name)
			}
		}
		if sel.Metric == "" {
			return nil, fmt.Errorf("%q: a selector names no metric: %v", expr, matchers)
		}
		out = append(out, sel)
	}
	return out, nil
}

// Metrics are the metric names expr's selectors name (see Selectors),
// sorted and without duplicates.
func Metrics(expr string) ([]string, error) {
	sels, err := Selectors(expr)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, s := range sels {
		seen[s.Metric] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}
