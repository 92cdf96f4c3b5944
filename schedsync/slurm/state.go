package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Runner runs one Slurm command (sacctmgr, scontrol) and returns its
// standard output.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// Exec runs a command from PATH, with the environment of the process
// (SLURM_CONF names the cluster's configuration).
func Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		// sacctmgr says why on either stream (" Nothing modified" on its
		// standard output).
		why := strings.TrimSpace(stderr.String() + "\n" + string(out))
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, why)
	}
	return out, nil
}

// Cluster is one Slurm cluster Sync configures.
type Cluster struct {
	// Name is the cluster's ClusterName; "" asks scontrol.
	Name string
	// ConfDir is Slurm's configuration directory, where the files are
	// written; "" is the directory of $SLURM_CONF, else /etc/slurm.
	ConfDir string
	Run     Runner
}

// Live is what a Slurm cluster has: Mandate's accounts and QOS, the names
// of everyone else's, and the files.
type Live struct {
	Accounts map[string]Account
	QOS      map[string]QOS
	// Foreign are the accounts and QOS Mandate does not own.
	ForeignAccounts, ForeignQOS map[string]bool
	// Files maps a file's name to its content; absent when missing.
	Files map[string]string
}

func (c *Cluster) defaults(ctx context.Context) error {
	if c.Run == nil {
		c.Run = Exec
	}
	if c.ConfDir == "" {
		c.ConfDir = "/etc/slurm"
		if conf := os.Getenv("SLURM_CONF"); conf != "" {
			c.ConfDir = filepath.Dir(conf)
		}
	}
	if c.Name == "" {
		out, err := c.Run(ctx, "scontrol", "show", "config")
		if err != nil {
			return fmt.Errorf("unable to read the cluster name: %w", err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "ClusterName" {
				c.Name = strings.TrimSpace(v)
			}
		}
		if c.Name == "" {
			return errors.New("scontrol show config names no ClusterName")
		}
	}
	return nil
}

// rows runs sacctmgr -nP show … and splits its lines into fields.
func (c Cluster) rows(ctx context.Context, args ...string) ([][]string, error) {
	out, err := c.Run(ctx, "sacctmgr", append([]string{"-nP", "show"}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("unable to read Slurm's %s: %w", args[0], err)
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" {
			rows = append(rows, strings.Split(line, "|"))
		}
	}
	return rows, nil
}

// Read reads what the cluster has.
func (c *Cluster) Read(ctx context.Context) (Live, error) {
	l := Live{Accounts: map[string]Account{}, QOS: map[string]QOS{}, ForeignAccounts: map[string]bool{},
		ForeignQOS: map[string]bool{}, Files: map[string]string{}}
	if err := c.defaults(ctx); err != nil {
		return l, err
	}
	accounts, err := c.rows(ctx, "account", "format=Account,Descr,Org")
	if err != nil {
		return l, err
	}
	for _, r := range accounts {
		if len(r) < 3 {
			continue
		}
		if r[2] != Organization {
			l.ForeignAccounts[r[0]] = true
			continue
		}
		l.Accounts[r[0]] = Account{Name: r[0], Description: r[1], GrpTRES: map[string]int64{}}
	}
	assocs, err := c.rows(ctx, "assoc", "cluster="+c.Name, "format=Account,ParentName,User,Partition,GrpTRES,Fairshare,QOS,DefaultQOS")
	if err != nil {
		return l, err
	}
	for _, r := range assocs {
		if len(r) < 8 || r[2] != "" || r[3] != "" {
			continue // a user's or a partition's association
		}
		a, ok := l.Accounts[r[0]]
		if !ok {
			continue
		}
		a.Parent = r[1]
		a.GrpTRES = parseTRES(r[4])
		a.Fairshare, _ = strconv.ParseInt(r[5], 10, 64)
		a.QOS = splitList(r[6])
		a.DefaultQOS = r[7]
		l.Accounts[r[0]] = a
	}
	qos, err := c.rows(ctx, "qos", "format=Name,Priority,Preempt,PreemptMode,Description")
	if err != nil {
		return l, err
	}
	for _, r := range qos {
		if len(r) < 5 {
			continue
		}
		if !strings.HasPrefix(strings.ToLower(r[4]), strings.TrimSpace(DescriptionPrefix)) {
			l.ForeignQOS[r[0]] = true
			continue
		}
		p, _ := strconv.Atoi(r[1])
		l.QOS[r[0]] = QOS{Name: r[0], Priority: p, Preempt: splitList(r[2]), PreemptMode: r[3], Description: r[4]}
	}
	for _, f := range []string{PartitionsFile, TopologyFile} {
		b, err := os.ReadFile(filepath.Join(c.ConfDir, f))
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return l, fmt.Errorf("unable to read %s: %w", f, err)
		default:
			l.Files[f] = string(b)
		}
	}
	return l, nil
}

// parseTRES reads "gres/gpu=4,gres/gpu:h100=3".
func parseTRES(s string) map[string]int64 {
	out := map[string]int64{}
	for _, kv := range splitList(s) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				out[k] = n
			}
		}
	}
	return out
}

// formatTRES writes limits as sacctmgr reads them, sorted.
func formatTRES(m map[string]int64) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ",")
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.Split(s, ",")
	sort.Strings(out)
	return out
}
