package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// labels name the systems in the tables.
var labels = map[string]string{
	sysMandate:         "mandate /mutate (one tree)",
	sysChart:           "mandate /mutate (chart: 2 replicas, shared ledger)",
	sysThree:           "mandate /mutate (3 replicas, shared ledger)",
	sysIndependent:     "mandate /mutate (independent trees)",
	sysOPA:             "opa run --server (pure Rego)",
	sysGatekeeper:      "gatekeeper v3.23.1 /v1/admit (same checks)",
	sysGatekeeperLight: "gatekeeper v3.23.1 /v1/admit (tenancy, priority)",
}

func label(system string) string {
	if l, ok := labels[system]; ok {
		return l
	}
	return system
}

// printCells writes one line per measured cell, in the order measured.
func printCells(w io.Writer, cells []*cell) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tc\tsystem\treviews/s\tp50\tp99\tmax\tserver CPU/review\tserver cores\tloadgen CPU/review\terrors\twrong\t")
	for _, c := range cells {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%.0f\t%s\t%s\t%s\t%s\t%.2f\t%s\t%d\t%d\t\n",
			c.round, c.concurrency, c.system, c.rate(),
			ms(c.percentile(0.50)), ms(c.percentile(0.99)), ms(c.percentile(1)),
			ms(c.cpuPerReview(c.serverCPU)), cores(c.serverCPU, c.elapsed),
			ms(c.cpuPerReview(c.loadgenCPU)), c.errors, c.wrong)
	}
	tw.Flush()
}

// summary is one system at one concurrency over every round.
type summary struct {
	system      string
	concurrency int
	rates       []float64 // reviews/s per round
	p50, p99    []time.Duration
	max         time.Duration
	cpu         []time.Duration // server CPU per review per round
	loadgen     []time.Duration
	cores       []float64
	errors      int
	wrong       int
	errorKinds  map[string]int
}

func (s *summary) medianRate() float64 { return median(s.rates) }

// summarize groups the cells by system and concurrency, in the order of
// systems and concurrencies.
func summarize(cells []*cell, systems []string, concurrencies []int) []*summary {
	var out []*summary
	for _, sys := range systems {
		for _, conc := range concurrencies {
			s := &summary{system: sys, concurrency: conc, errorKinds: map[string]int{}}
			for _, c := range cells {
				if c.system != sys || c.concurrency != conc {
					continue
				}
				s.rates = append(s.rates, c.rate())
				s.p50 = append(s.p50, c.percentile(0.50))
				s.p99 = append(s.p99, c.percentile(0.99))
				s.max = max(s.max, c.percentile(1))
				s.cpu = append(s.cpu, c.cpuPerReview(c.serverCPU))
				s.loadgen = append(s.loadgen, c.cpuPerReview(c.loadgenCPU))
				s.cores = append(s.cores, cores(c.serverCPU, c.elapsed))
				s.errors += c.errors
				s.wrong += c.wrong
				for k, n := range c.errorCounts {
					s.errorKinds[k] += n
				}
			}
			if len(s.rates) > 0 {
				out = append(out, s)
			}
		}
	}
	return out
}

// printSummary writes, per system and concurrency, the range over rounds
// as "min–max (median)" where there are several rounds.
func printSummary(w io.Writer, sums []*summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "system\tc\treviews/s\tp50 ms\tp99 ms\tmax ms\tserver CPU/review ms\tserver cores\tloadgen CPU/review ms\terrors")
	for _, s := range sums {
		errs := fmt.Sprint(s.errors)
		if len(s.errorKinds) > 0 {
			errs += " (" + kinds(s.errorKinds) + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			label(s.system), s.concurrency,
			rangeOf(s.rates, func(f float64) string { return fmt.Sprintf("%.0f", f) }),
			durRange(s.p50), durRange(s.p99), msNumber(s.max),
			durRange(s.cpu),
			rangeOf(s.cores, func(f float64) string { return fmt.Sprintf("%.2f", f) }),
			durRange(s.loadgen), errs)
	}
	tw.Flush()
}

// ratioPairs are the ratios the acceptance reads, of median
// reviews/s at each concurrency.
var ratioPairs = []struct{ name, num, den string }{
	{"mandate/opa", sysMandate, sysOPA},
	{"mandate/gatekeeper", sysMandate, sysGatekeeper},
	{"mandate/gatekeeper-light", sysMandate, sysGatekeeperLight},
	{"chart/memory", sysChart, sysMandate},
	{"three/memory", sysThree, sysMandate},
	{"one-tree/independent", sysMandate, sysIndependent},
}

// ratios are the lines `c=N  mandate/opa 1.42x  …` for every concurrency
// where both systems of a pair were measured.
func ratios(sums []*summary, concurrencies []int) []string {
	rate := map[string]map[int]float64{}
	for _, s := range sums {
		if rate[s.system] == nil {
			rate[s.system] = map[int]float64{}
		}
		rate[s.system][s.concurrency] = s.medianRate()
	}
	var lines []string
	for _, conc := range concurrencies {
		var parts []string
		for _, p := range ratioPairs {
			num, ok1 := rate[p.num][conc]
			den, ok2 := rate[p.den][conc]
			if !ok1 || !ok2 {
				continue
			}
			if den == 0 {
				parts = append(parts, fmt.Sprintf("%s n/a (no %s reviews)", p.name, p.den))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %.2fx", p.name, num/den))
		}
		if len(parts) > 0 {
			lines = append(lines, fmt.Sprintf("c=%d  %s", conc, strings.Join(parts, "  ")))
		}
	}
	return lines
}

func ms(d time.Duration) string { return msNumber(d) + "ms" }

// msNumber is d in milliseconds with three significant digits or more.
func msNumber(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func cores(cpu, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return cpu.Seconds() / elapsed.Seconds()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// rangeOf is "v" for one value, "min–max (median)" for several.
func rangeOf(v []float64, f func(float64) string) string {
	if len(v) == 0 {
		return "-"
	}
	lo, hi := slices.Min(v), slices.Max(v)
	if len(v) == 1 || lo == hi {
		return f(lo)
	}
	return fmt.Sprintf("%s–%s (%s)", f(lo), f(hi), f(median(v)))
}

func durRange(d []time.Duration) string {
	v := make([]float64, len(d))
	for i, x := range d {
		v[i] = float64(x)
	}
	return rangeOf(v, func(f float64) string { return msNumber(time.Duration(f)) })
}

func kinds(m map[string]int) string {
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// printWrites writes, per system with the shared ledger and concurrency,
// the TenantLedger writes per admission that reserved GPUs (median over
// rounds) and how those admissions were committed.
func printWrites(w io.Writer, cells []*cell) {
	type key struct {
		system string
		conc   int
	}
	var order []key
	per := map[key][]*cell{}
	for _, cl := range cells {
		if cl.ledger == nil {
			continue
		}
		k := key{cl.system, cl.concurrency}
		if per[k] == nil {
			order = append(order, k)
		}
		per[k] = append(per[k], cl)
	}
	if len(order) == 0 {
		return
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].system != order[j].system {
			return order[i].system < order[j].system
		}
		return order[i].conc < order[j].conc
	})
	fmt.Fprintln(w)
	fmt.Fprintln(w, "TenantLedger writes per admitted GPU review (median over rounds; the admissions' paths summed):")
	for _, k := range order {
		var ratios []float64
		var sum ledgerCounts
		for _, cl := range per[k] {
			ratios = append(ratios, cl.ledger.writesPerReserving())
			sum.writes += cl.ledger.writes
			sum.grant += cl.ledger.grant
			sum.pool += cl.ledger.pool
			sum.reclaim += cl.ledger.reclaim
		}
		fmt.Fprintf(w, "  %-14s c=%-3d %.3f writes per GPU review (%.0f writes; %.0f from grants, %.0f to the pool, %.0f reclaims)\n",
			k.system, k.conc, median(ratios), sum.writes, sum.grant, sum.pool, sum.reclaim)
	}
}
