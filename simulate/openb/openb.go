// Package openb reads the CSV files of the Alibaba GPU cluster trace v2023
// ("openb", published with Weng et al., "Beware of Fragmentation", USENIX
// ATC'23): the GPU node list and the pod (task) list. Columns are found by
// their header name; a bad row is an error naming the file, the line and
// the column. It owns the translation of a row into what the simulated
// cluster allocates (simulate/alloc), and nothing of what is done with it.
package openb

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/mandate-dev/mandate/simulate/alloc"
	"github.com/mandate-dev/mandate/topology"
)

// Node is one row of a node list (openb_node_list_*.csv).
type Node struct {
	Name      string // sn
	CPUMilli  int64  // cpu_milli
	MemoryMiB int64  // memory_mib
	GPUs      int    // gpu
	Model     string // model: the GPU type (T4, V100M16, G2, …)
}

// Unset is a time column left empty in the trace (a pod never scheduled
// has no scheduled_time).
const Unset int64 = -1

// Pod is one row of a pod list (openb_pod_list_*.csv): a task.
type Pod struct {
	Name      string // name
	CPUMilli  int64  // cpu_milli
	MemoryMiB int64  // memory_mib
	NumGPU    int    // num_gpu
	// GPUMilli is gpu_milli: for NumGPU 1, the share of one GPU in
	// thousandths (1000 is the whole GPU); a multi-GPU pod takes whole GPUs.
	GPUMilli int64
	// GPUSpec is gpu_spec: the GPU types the pod may run on; empty, any.
	GPUSpec []string
	QoS     string // qos: LS, BE, Burstable, Guaranteed
	Phase   string // pod_phase
	// CreationTime, DeletionTime and ScheduledTime are in seconds from the
	// trace's start; Unset when the row leaves them empty.
	CreationTime, DeletionTime, ScheduledTime int64
}

// Spec is the node as the simulated cluster allocates it.
func (n Node) Spec() alloc.NodeSpec {
	return alloc.NodeSpec{Name: n.Name, Model: n.Model, CPUMilli: n.CPUMilli, MemoryMiB: n.MemoryMiB, GPUs: n.GPUs}
}

// Request is what the pod asks of one node.
func (p Pod) Request() alloc.Request {
	return alloc.Request{CPUMilli: p.CPUMilli, MemoryMiB: p.MemoryMiB, GPUs: p.NumGPU, GPUMilli: p.GPUMilli, Models: p.GPUSpec}
}

// ReadNodesFile reads a node list.
func ReadNodesFile(path string) ([]Node, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read the node list: %w", err)
	}
	defer f.Close()
	return ReadNodes(f, path)
}

// ReadPodsFile reads a pod list.
func ReadPodsFile(path string) ([]Pod, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("unable to read the pod list: %w", err)
	}
	defer f.Close()
	return ReadPods(f, path)
}

// ReadNodes reads a node list from r; name is the file's name in errors.
func ReadNodes(r io.Reader, name string) ([]Node, error) {
	t, err := newTable(r, name, []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}, nil)
	if err != nil {
		return nil, err
	}
	var nodes []Node
	seen := map[string]int{}
	for t.next() {
		n := Node{
			Name:      t.text("sn", true),
			CPUMilli:  t.int("cpu_milli", 0, maxInt),
			MemoryMiB: t.int("memory_mib", 0, maxInt),
			GPUs:      int(t.int("gpu", 0, 1024)),
			Model:     t.text("model", false),
		}
		if t.err == nil {
			if line, dup := seen[n.Name]; dup {
				t.fail("sn", fmt.Errorf("node %q is listed again (first on line %d)", n.Name, line))
			}
			seen[n.Name] = t.line("sn")
		}
		if t.err != nil {
			return nil, t.err
		}
		nodes = append(nodes, n)
	}
	if t.err != nil {
		return nil, t.err
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s: the node list has no nodes", name)
	}
	return nodes, nil
}

// ReadPods reads a pod list from r; name is the file's name in errors.
func ReadPods(r io.Reader, name string) ([]Pod, error) {
	optional := []string{"gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}
	t, err := newTable(r, name, []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}, optional)
	if err != nil {
		return nil, err
	}
	var pods []Pod
	for t.next() {
		p := Pod{
			Name:          t.text("name", true),
			CPUMilli:      t.int("cpu_milli", 0, maxInt),
			MemoryMiB:     t.int("memory_mib", 0, maxInt),
			NumGPU:        int(t.int("num_gpu", 0, 1024)),
			GPUMilli:      t.int("gpu_milli", 0, topology.MilliPerGPU),
			GPUSpec:       t.list("gpu_spec"),
			QoS:           t.text("qos", false),
			Phase:         t.text("pod_phase", false),
			CreationTime:  t.time("creation_time"),
			DeletionTime:  t.time("deletion_time"),
			ScheduledTime: t.time("scheduled_time"),
		}
		if t.err == nil {
			switch {
			case p.NumGPU == 0 && p.GPUMilli != 0:
				t.fail("gpu_milli", fmt.Errorf("a pod without GPUs (num_gpu 0) asks for %d thousandths of one", p.GPUMilli))
			case p.NumGPU > 0 && p.GPUMilli == 0:
				t.fail("gpu_milli", fmt.Errorf("a pod of %d GPUs asks for none of them (gpu_milli 0)", p.NumGPU))
			case p.NumGPU > 1 && p.GPUMilli != topology.MilliPerGPU:
				t.fail("gpu_milli", fmt.Errorf("a pod of %d GPUs takes whole GPUs (gpu_milli %d), not shares", p.NumGPU, topology.MilliPerGPU))
			}
		}
		if t.err != nil {
			return nil, t.err
		}
		pods = append(pods, p)
	}
	if t.err != nil {
		return nil, t.err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("%s: the pod list has no pods", name)
	}
	return pods, nil
}

const maxInt = 1 << 53

// table walks the rows of a CSV file by column name, keeping the first
// error with its file, line and column.
type table struct {
	r      *csv.Reader
	name   string
	column map[string]int
	row    []string
	err    error
}

func newTable(r io.Reader, name string, required, optional []string) (*table, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty, want a header line naming the columns %s", name, strings.Join(required, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t := &table{r: cr, name: name, column: map[string]int{}}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := t.column[h]; dup {
			return nil, fmt.Errorf("%s:1: column %q appears twice", name, h)
		}
		t.column[h] = i
	}
	var missing []string
	for _, c := range required {
		if _, ok := t.column[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s:1: the header lacks the column(s) %s", name, strings.Join(missing, ", "))
	}
	for _, c := range optional {
		if _, ok := t.column[c]; !ok {
			t.column[c] = -1
		}
	}
	return t, nil
}

// next reads the next row; false at the end or after an error.
func (t *table) next() bool {
	if t.err != nil {
		return false
	}
	row, err := t.r.Read()
	if errors.Is(err, io.EOF) {
		return false
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			t.err = fmt.Errorf("%s:%d: %w", t.name, pe.Line, pe.Err)
		} else {
			t.err = fmt.Errorf("%s: %w", t.name, err)
		}
		return false
	}
	t.row = row
	return true
}

func (t *table) line(column string) int {
	line, _ := t.r.FieldPos(t.column[column])
	return line
}

func (t *table) fail(column string, err error) {
	if t.err == nil {
		t.err = fmt.Errorf("%s:%d: column %s: %w", t.name, t.line(column), column, err)
	}
}

// cell is the trimmed value of column in the current row; "" for an
// optional column the file lacks.
func (t *table) cell(column string) string {
	i := t.column[column]
	if i < 0 || i >= len(t.row) {
		return ""
	}
	return strings.TrimSpace(t.row[i])
}

func (t *table) text(column string, required bool) string {
	v := t.cell(column)
	if required && v == "" {
		t.fail(column, errors.New("empty"))
	}
	return v
}

func (t *table) int(column string, lo, hi int64) int64 {
	v := t.cell(column)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		t.fail(column, fmt.Errorf("want an integer from %d to %d, got %q", lo, hi, v))
		return 0
	}
	return n
}

func (t *table) time(column string) int64 {
	if t.cell(column) == "" {
		return Unset
	}
	return t.int(column, 0, maxInt)
}

// list is a |-separated cell, empty entries dropped.
func (t *table) list(column string) []string {
	var out []string
	for _, v := range strings.Split(t.cell(column), "|") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
