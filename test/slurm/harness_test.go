// Package slurm_test runs `mandate sync --target slurm`, `mandate eval` on
// sbatch scripts and `mandate explain` on Slurm jobs against a real Slurm
// 22.05 cluster: munged, MariaDB, slurmdbd, slurmctld and one slurmd with
// 8 GPUs declared (fake device files), all on private ports and
// directories of the test, torn down after. It needs Debian's slurmctld,
// slurmd, slurmdbd, slurm-client, munge and mariadb-server (make slurm
// installs them); without them and without root it is skipped.
package slurm_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	slurmsync "github.com/mandate-dev/mandate/schedsync/slurm"
	"github.com/mandate-dev/mandate/test/envtest"
)

// The cluster's one node and its GPUs.
const (
	clusterName = "mandatetest"
	nodeName    = "gpu-node-0"
	nodeGPUs    = 8
	// nodeProduct is the node's GPU product, as the model's products and
	// the node label name it.
	nodeProduct = "NVIDIA-H100-80GB-HBM3"
)

var daemons = []string{"munged", "mariadbd", "mariadb-install-db", "slurmdbd", "slurmctld", "slurmd", "sacctmgr", "scontrol", "sbatch", "squeue", "sinfo", "munge", "unmunge", "mariadb"}

// slurmCluster is a running Slurm cluster of the test.
type slurmCluster struct {
	dir  string
	conf string
	env  []string
}

// needSlurm skips the test when the Slurm packages are missing and the
// test cannot install them (not root); as root they must be there (make
// slurm installs them), so their absence fails.
func needSlurm(t *testing.T) {
	t.Helper()
	var missing []string
	for _, d := range daemons {
		if _, err := exec.LookPath(d); err != nil {
			missing = append(missing, d)
		}
	}
	if len(missing) == 0 {
		return
	}
	if os.Geteuid() != 0 {
		t.Skipf("SKIPPED: the real-Slurm test needs Debian's slurmctld slurmd slurmdbd slurm-client munge mariadb-server (missing: %s) and root to run them; run `make slurm` as root", strings.Join(missing, " "))
	}
	t.Fatalf("missing %s: run `make slurm` (hack/slurm.sh) to install Debian's Slurm packages", strings.Join(missing, " "))
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("unable to find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs a daemon in the foreground of the test, stopped at cleanup.
func (c *slurmCluster) start(t *testing.T, name string, args ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(c.dir, "log", name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = c.env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("unable to start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(envtest.Timeout(30 * time.Second)):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		log.Close()
	})
}

// run runs a Slurm command against the cluster and returns its output.
func (c *slurmCluster) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.env
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (c *slurmCluster) must(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(2*time.Minute))
	defer cancel()
	out, err := c.run(ctx, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eventually polls fn until it returns true, failing after a generous
// deadline (no timing is asserted).
func eventually(t *testing.T, what string, fn func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(envtest.Timeout(3 * time.Minute))
	last := ""
	for time.Now().Before(deadline) {
		ok, state := fn()
		if ok {
			return
		}
		last = state
		time.Sleep(time.Second)
	}
	t.Fatalf("%s did not happen; last state:\n%s", what, last)
}

func (c *slurmCluster) logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(c.dir, "log", "*"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(f), strings.Join(lines, "\n"))
	}
	return b.String()
}

// startSlurm starts munged (on the default socket, which Slurm 22.05's
// accounting connection always uses; a running munged is reused),
// MariaDB, slurmdbd, slurmctld and one slurmd with 8 GPUs of nodeProduct,
// with the configuration of the test's own directory.
func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	needSlurm(t)
	dir, err := os.MkdirTemp("", "mandate-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &slurmCluster{dir: dir, conf: filepath.Join(dir, "etc", "slurm.conf")}
	c.env = append(os.Environ(), "SLURM_CONF="+c.conf)
	for _, d := range []string{"etc", "log", "db", "state", "spool", "dev", "munge"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Slurm logs:\n%s", c.logs())
		}
	})

	// munge
	if _, err := c.run(context.Background(), "sh", "-c", "munge -n | unmunge"); err != nil {
		key := make([]byte, 1024)
		f, err := os.Open("/dev/urandom")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Read(key)
		f.Close()
		keyFile := filepath.Join(dir, "munge", "munge.key")
		if err := os.WriteFile(keyFile, key, 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll("/run/munge", 0o755); err != nil {
			t.Fatal(err)
		}
		c.start(t, "munged", "-F", "--force", "--key-file="+keyFile, "--pid-file="+filepath.Join(dir, "munge", "munged.pid"),
			"--log-file="+filepath.Join(dir, "log", "munged.log"), "--seed-file="+filepath.Join(dir, "munge", "seed"))
		eventually(t, "munged answering", func() (bool, string) {
			out, err := c.run(context.Background(), "sh", "-c", "munge -n | unmunge")
			return err == nil, out
		})
	}

	// MariaDB, private datadir, socket and port
	dbPort, dbdPort, ctldPort, slurmdPort := freePort(t), freePort(t), freePort(t), freePort(t)
	c.must(t, "mariadb-install-db", "--no-defaults", "--datadir="+filepath.Join(dir, "db"), "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db")
	dbSock := filepath.Join(dir, "mariadb.sock")
	c.start(t, "mariadbd", "--no-defaults", "--datadir="+filepath.Join(dir, "db"), "--user=root", "--socket="+dbSock,
		fmt.Sprintf("--port=%d", dbPort), "--bind-address=127.0.0.1", "--pid-file="+filepath.Join(dir, "mariadb.pid"),
		"--log-error="+filepath.Join(dir, "log", "mariadb.log"))
	eventually(t, "MariaDB answering", func() (bool, string) {
		out, err := c.run(context.Background(), "mariadb", "--no-defaults", "-uroot", "-S", dbSock, "-e", "select 1")
		return err == nil, out
	})

	// configuration
	for i := 0; i < nodeGPUs; i++ {
		if err := os.Symlink("/dev/null", filepath.Join(dir, "dev", fmt.Sprintf("gpu%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "spool", nodeName), 0o755); err != nil {
		t.Fatal(err)
	}
	gresType := strings.ToLower(nodeProduct)
	write := func(name, content string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, "etc", name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("slurmdbd.conf", fmt.Sprintf(`AuthType=auth/munge
DbdHost=localhost
DbdPort=%d
SlurmUser=root
PidFile=%[2]s/slurmdbd.pid
LogFile=%[2]s/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=%d
StorageUser=root
StorageLoc=slurm_acct_db
`, dbdPort, dir, dbPort), 0o600)
	write("slurm.conf", fmt.Sprintf(`ClusterName=%s
SlurmctldHost=localhost
SlurmctldPort=%d
SlurmdPort=%d
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[4]s/state
SlurmdSpoolDir=%[4]s/spool/%%n
SlurmctldPidFile=%[4]s/slurmctld.pid
SlurmdPidFile=%[4]s/slurmd-%%n.pid
SlurmctldLogFile=%[4]s/log/slurmctld.log
SlurmdLogFile=%[4]s/log/slurmd-%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PriorityType=priority/multifactor
PreemptType=preempt/qos
PreemptMode=REQUEUE
TopologyPlugin=topology/tree
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=%d
AccountingStorageEnforce=associations,limits,qos,safe
AccountingStorageTRES=gres/gpu,gres/gpu:%s,gres/gpu:nvidia-b200
NodeName=%s NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Gres=gpu:%[6]s:%[8]d State=UNKNOWN
EnforcePartLimits=ALL
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
Include %[4]s/etc/mandate-partitions.conf
`, clusterName, ctldPort, slurmdPort, dir, dbdPort, gresType, nodeName, nodeGPUs), 0o644)
	write("gres.conf", fmt.Sprintf("AutoDetect=off\nNodeName=%s Name=gpu Type=%s File=%s/dev/gpu[0-%d]\n", nodeName, gresType, dir, nodeGPUs-1), 0o644)
	// The files mandate sync writes start as Mandate's, empty, so that
	// slurmctld starts before the first sync.
	write("mandate-partitions.conf", slurmsync.Header, 0o644)
	write("topology.conf", slurmsync.Header, 0o644)

	c.start(t, "slurmdbd", "-D")
	eventually(t, "slurmdbd answering and the cluster added", func() (bool, string) {
		out, err := c.run(context.Background(), "sacctmgr", "-i", "add", "cluster", clusterName)
		if err != nil && strings.Contains(out, "already exists") {
			return true, out
		}
		return err == nil, out
	})
	c.start(t, "slurmctld", "-D")
	c.start(t, "slurmd", "-D", "-N", nodeName)
	// Before slurmd and slurmctld stop (cleanups run last first), cancel
	// every job and wait for them to end, so that no slurmstepd outlives
	// the cluster.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), envtest.Timeout(2*time.Minute))
		defer cancel()
		_, _ = c.run(ctx, "scancel", "--full", "-u", "root")
		for ctx.Err() == nil {
			out, err := c.run(ctx, "squeue", "-h", "-o", "%i")
			if err != nil || strings.TrimSpace(out) == "" {
				return
			}
			time.Sleep(time.Second)
		}
	})
	eventually(t, "the node idle", func() (bool, string) {
		out, err := c.run(context.Background(), "sinfo", "-h", "-n", nodeName, "-o", "%T")
		return err == nil && strings.TrimSpace(out) == "idle", out
	})
	return c
}
