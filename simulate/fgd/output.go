package fgd

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// ParseSeeds reads a list of seeds: comma-separated seeds or inclusive
// ranges, such as "42-51" or "1,5,7-9".
func ParseSeeds(s string) ([]int64, error) {
	var seeds []int64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		if part == "" || (isRange && (lo == "" || hi == "")) {
			return nil, fmt.Errorf("seeds %q: want seeds or ranges such as 42-51, separated by commas", s)
		}
		first, err := strconv.ParseInt(lo, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seeds %q: %q is no integer", s, lo)
		}
		last := first
		if isRange {
			if last, err = strconv.ParseInt(hi, 10, 64); err != nil {
				return nil, fmt.Errorf("seeds %q: %q is no integer", s, hi)
			}
		}
		if last < first || last-first >= 10000 {
			return nil, fmt.Errorf("seeds %q: the range %s runs backwards or past 10,000 seeds", s, part)
		}
		for seed := first; seed <= last; seed++ {
			seeds = append(seeds, seed)
		}
	}
	if len(seeds) == 0 {
		return nil, errors.New("no seeds")
	}
	return seeds, nil
}

// SeedsText writes seeds as ParseSeeds reads them, consecutive ones as a
// range.
func SeedsText(seeds []int64) string {
	var parts []string
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", seeds[i], seeds[j]))
		} else {
			parts = append(parts, strconv.FormatInt(seeds[i], 10))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// WriteTable writes a summary for a terminal: the setting, the tasks, and
// the allocation at every tenth percent of arrived demand and at the last.
func WriteTable(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "FGD protocol (Weng et al., USENIX ATC'23): policy %s, seeds %s, %d nodes, %d GPUs, arrivals up to %g%% of the GPUs\n",
		r.Policy, SeedsText(r.Seeds), r.Nodes, r.GPUs, r.Inflate*100)
	n := float64(len(r.Runs))
	fmt.Fprintf(&b, "tasks per seed (mean): %.0f arrived, %.0f placed, %.0f failed, drawn from %d pods\n\n",
		float64(r.Tasks.Arrived)/n, float64(r.Tasks.Placed)/n, float64(r.Tasks.Failed)/n, r.Pods)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ARRIVED GPU DEMAND\tGPUS ALLOCATED (MEAN)\tMIN\tMAX\t")
	for _, p := range r.Points {
		if p.Arrived%10 != 0 && p.Arrived != len(r.Points)-1 {
			continue
		}
		fmt.Fprintf(tw, "%d%%\t%.1f%%\t%.1f%%\t%.1f%%\t\n", p.Arrived, p.Allocated.Mean, p.Allocated.Min, p.Allocated.Max)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
