package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// What a Change is of, and what it does.
const (
	KindQOS     = "qos"
	KindAccount = "account"
	KindFile    = "file"

	ActionCreate = "create"
	ActionUpdate = "update"
	ActionDelete = "delete"
)

// Field is one differing field: what the cluster has, what the model wants.
type Field struct {
	Name string `json:"name"`
	Have string `json:"have"`
	Want string `json:"want"`
}

// Change is one difference between the model and the cluster, and what
// Apply does about it.
type Change struct {
	Kind   string  `json:"kind"`
	Name   string  `json:"name"`
	Action string  `json:"action"`
	Fields []Field `json:"fields,omitempty"`

	account Account
	qos     QOS
	file    File
}

// Plan is every change that makes the cluster match the model, in the
// order Apply makes them.
type Plan struct {
	Cluster string   `json:"cluster"`
	Changes []Change `json:"changes"`
	// Unexpressed is what of the model Slurm cannot hold.
	Unexpressed []string `json:"unexpressed,omitempty"`
}

// Drift is the plan's changes: empty when the cluster matches the model.
func (p Plan) Drift() []Change { return p.Changes }

// ErrNotMandates is returned when the model wants an account or QOS of a
// name someone else's account or QOS has: Sync never takes one over.
var ErrNotMandates = errors.New("not Mandate's")

// Diff plans the changes from live to desired.
func Diff(d Desired, l Live) (Plan, error) {
	var p Plan
	p.Unexpressed = d.Unexpressed
	var errs []error
	wantQOS := map[string]bool{}
	for _, q := range d.QOS {
		wantQOS[q.Name] = true
		if l.ForeignQOS[q.Name] {
			errs = append(errs, fmt.Errorf("QOS %s exists and is %w (its description does not start %q)", q.Name, ErrNotMandates, DescriptionPrefix))
			continue
		}
		have, ok := l.QOS[q.Name]
		if !ok {
			p.Changes = append(p.Changes, Change{Kind: KindQOS, Name: q.Name, Action: ActionCreate, Fields: qosFields(QOS{}, q), qos: q})
			continue
		}
		if f := qosFields(have, q); len(f) > 0 {
			p.Changes = append(p.Changes, Change{Kind: KindQOS, Name: q.Name, Action: ActionUpdate, Fields: f, qos: q})
		}
	}
	wantAccount := map[string]bool{}
	for _, a := range d.Accounts {
		wantAccount[a.Name] = true
		if l.ForeignAccounts[a.Name] {
			errs = append(errs, fmt.Errorf("account %s exists and is %w (its organization is not %q)", a.Name, ErrNotMandates, Organization))
			continue
		}
		have, ok := l.Accounts[a.Name]
		if !ok {
			p.Changes = append(p.Changes, Change{Kind: KindAccount, Name: a.Name, Action: ActionCreate, Fields: accountFields(Account{}, a), account: a})
			continue
		}
		if f := accountFields(have, a); len(f) > 0 {
			p.Changes = append(p.Changes, Change{Kind: KindAccount, Name: a.Name, Action: ActionUpdate, Fields: f, account: a})
		}
	}
	// Deletions: children before parents, accounts before the QOS they use.
	var gone []Account
	for name, a := range l.Accounts {
		if !wantAccount[name] {
			gone = append(gone, a)
		}
	}
	slices.SortFunc(gone, func(x, y Account) int { return strings.Compare(x.Name, y.Name) })
	for len(gone) > 0 {
		next := gone[:0:0]
		for _, a := range gone {
			if slices.ContainsFunc(gone, func(o Account) bool { return o.Parent == a.Name }) {
				next = append(next, a)
				continue
			}
			p.Changes = append(p.Changes, Change{Kind: KindAccount, Name: a.Name, Action: ActionDelete, account: a})
		}
		if len(next) == len(gone) {
			break // a cycle cannot be in Slurm; stop rather than loop
		}
		gone = next
	}
	for _, name := range sortedKeys(l.QOS) {
		if !wantQOS[name] {
			p.Changes = append(p.Changes, Change{Kind: KindQOS, Name: name, Action: ActionDelete, qos: l.QOS[name]})
		}
	}
	for _, f := range d.Files {
		have, ok := l.Files[f.Name]
		switch {
		case ok && have == f.Content:
		case ok && have != "" && !strings.HasPrefix(have, Header):
			errs = append(errs, fmt.Errorf("%s exists and is %w (it lacks Mandate's header)", f.Name, ErrNotMandates))
		default:
			action := ActionUpdate
			if !ok {
				action = ActionCreate
			}
			p.Changes = append(p.Changes, Change{Kind: KindFile, Name: f.Name, Action: action,
				Fields: []Field{{Name: "content", Have: have, Want: f.Content}}, file: f})
		}
	}
	return p, errors.Join(errs...)
}

func qosFields(have, want QOS) []Field {
	var out []Field
	add := func(name, h, w string) {
		if h != w {
			out = append(out, Field{Name: name, Have: h, Want: w})
		}
	}
	add("Priority", strconv.Itoa(have.Priority), strconv.Itoa(want.Priority))
	add("Preempt", strings.Join(have.Preempt, ","), strings.Join(want.Preempt, ","))
	add("PreemptMode", strings.ToLower(have.PreemptMode), want.PreemptMode)
	add("Description", strings.ToLower(have.Description), want.Description)
	return out
}

func accountFields(have, want Account) []Field {
	var out []Field
	add := func(name, h, w string) {
		if h != w {
			out = append(out, Field{Name: name, Have: h, Want: w})
		}
	}
	add("Parent", have.Parent, want.Parent)
	add("Description", strings.ToLower(have.Description), want.Description)
	add("Fairshare", strconv.FormatInt(have.Fairshare, 10), strconv.FormatInt(want.Fairshare, 10))
	add("GrpTRES", formatTRES(have.GrpTRES), formatTRES(want.GrpTRES))
	add("QOS", strings.Join(have.QOS, ","), strings.Join(want.QOS, ","))
	add("DefaultQOS", have.DefaultQOS, want.DefaultQOS)
	return out
}

// Plan reads the cluster and plans the changes that make it match d.
func (c *Cluster) Plan(ctx context.Context, d Desired) (Plan, error) {
	l, err := c.Read(ctx)
	if err != nil {
		return Plan{}, err
	}
	p, err := Diff(d, l)
	p.Cluster = c.Name
	return p, err
}

// Apply makes the plan's changes: QOS first (without Preempt, which may
// name a QOS created after it, then Preempt), accounts parents first,
// deletions, then the files and, when a file changed, `scontrol
// reconfigure`. Every sacctmgr call is non-interactive (-i). dryRun runs
// nothing.
func (c *Cluster) Apply(ctx context.Context, p Plan, dryRun bool) error {
	if dryRun {
		return nil
	}
	sacctmgr := func(args ...string) error {
		_, err := c.Run(ctx, "sacctmgr", append([]string{"-i"}, args...)...)
		return err
	}
	reconfigure := false
	for _, ch := range p.Changes {
		if ch.Kind == KindQOS && ch.Action == ActionCreate {
			q := ch.qos
			if err := sacctmgr("add", "qos", q.Name, "Priority="+strconv.Itoa(q.Priority), "PreemptMode="+preemptModeArg(q.PreemptMode),
				"Description="+q.Description); err != nil {
				return fmt.Errorf("unable to create QOS %s: %w", q.Name, err)
			}
		}
	}
	for _, ch := range p.Changes {
		var err error
		switch {
		case ch.Kind == KindQOS && ch.Action != ActionDelete:
			q := ch.qos
			err = sacctmgr("modify", "qos", "where", "name="+q.Name, "set", "Priority="+strconv.Itoa(q.Priority),
				"Preempt="+listArg(q.Preempt), "PreemptMode="+preemptModeArg(q.PreemptMode), "Description="+q.Description)
		case ch.Kind == KindAccount && ch.Action == ActionCreate:
			a := ch.account
			err = sacctmgr(append([]string{"add", "account", a.Name, "Cluster=" + c.Name, "Organization=" + Organization, "Parent=" + a.Parent},
				accountArgs(a, nil)...)...)
		case ch.Kind == KindAccount && ch.Action == ActionUpdate:
			a := ch.account
			l, _ := c.Read(ctx) // the limits to clear and the parent are the live ones
			live := l.Accounts[a.Name]
			where := []string{"modify", "account", "where", "name=" + a.Name, "cluster=" + c.Name, "set"}
			// A move to another parent is a command of its own: with a
			// Parent= in it, sacctmgr 22.05 changes nothing else of the
			// association, and with the parent it already has it changes
			// nothing at all ("Nothing modified").
			if live.Parent != a.Parent {
				err = sacctmgr(append(where, "Parent="+a.Parent)...)
			}
			if err == nil {
				err = sacctmgr(append(where, accountArgs(a, live.GrpTRES)...)...)
			}
		case ch.Kind == KindAccount && ch.Action == ActionDelete:
			err = sacctmgr("delete", "account", "where", "name="+ch.Name, "cluster="+c.Name)
		case ch.Kind == KindFile:
			err = os.WriteFile(filepath.Join(c.ConfDir, ch.file.Name), []byte(ch.file.Content), 0o644)
			reconfigure = true
		}
		if err != nil {
			return fmt.Errorf("unable to %s %s %s: %w", ch.Action, ch.Kind, ch.Name, err)
		}
	}
	for _, ch := range p.Changes {
		if ch.Kind == KindQOS && ch.Action == ActionDelete {
			if err := sacctmgr("delete", "qos", "where", "name="+ch.Name); err != nil {
				return fmt.Errorf("unable to delete QOS %s: %w", ch.Name, err)
			}
		}
	}
	if reconfigure {
		if _, err := c.Run(ctx, "scontrol", "reconfigure"); err != nil {
			return fmt.Errorf("unable to make slurmctld read the written files: %w", err)
		}
	}
	return nil
}

// accountArgs are the sacctmgr settings of an account but its parent; the
// limits live has that a no longer wants are cleared (-1).
func accountArgs(a Account, live map[string]int64) []string {
	tres := map[string]int64{}
	for k := range live {
		tres[k] = -1
	}
	for k, v := range a.GrpTRES {
		tres[k] = v
	}
	args := []string{"Description=" + a.Description, "Fairshare=" + strconv.FormatInt(a.Fairshare, 10),
		"QOS=" + listArg(a.QOS), "DefaultQOS=" + orNone(a.DefaultQOS)}
	if len(tres) > 0 {
		args = append(args, "GrpTRES="+formatTRES(tres))
	}
	return args
}

func listArg(l []string) string {
	return strings.Join(l, ",") // empty clears the list
}

func orNone(s string) string {
	if s == "" {
		return "-1"
	}
	return s
}

func preemptModeArg(m string) string {
	if m == PreemptCluster {
		return "off"
	}
	return m
}
