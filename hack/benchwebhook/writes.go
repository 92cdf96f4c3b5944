package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// ledgerCounts are counters of serve's shared quota ledger, summed over a
// system's replicas: TenantLedger writes committed, and reserving
// admissions by path (spent from a replica's grant, committed to the
// pool, or after a reclaim).
type ledgerCounts struct {
	writes, grant, pool, reclaim float64
}

// reserving counts the admissions that reserved GPUs.
func (c ledgerCounts) reserving() float64 { return c.grant + c.pool }

// writesPerReserving is TenantLedger writes per admission that reserved
// GPUs (NaN-free: 0 without any).
func (c ledgerCounts) writesPerReserving() float64 {
	if c.reserving() == 0 {
		return 0
	}
	return c.writes / c.reserving()
}

func (c ledgerCounts) minus(o ledgerCounts) ledgerCounts {
	return ledgerCounts{writes: c.writes - o.writes, grant: c.grant - o.grant, pool: c.pool - o.pool, reclaim: c.reclaim - o.reclaim}
}

// scrapeLedger sums the ledger counters of procs' metrics.
func scrapeLedger(ctx context.Context, c *http.Client, procs []*process) (ledgerCounts, error) {
	var sum ledgerCounts
	for _, p := range procs {
		if p.metricsURL == "" {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.metricsURL, nil)
		if err != nil {
			return sum, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return sum, fmt.Errorf("%s metrics: %w", p.name, err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			name, value, ok := strings.Cut(line, " ")
			if !ok || strings.HasPrefix(line, "#") {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				continue
			}
			switch name {
			case `mandate_quota_ledger_commits_total{result="committed"}`:
				sum.writes += v
			case `mandate_quota_grant_decisions_total{path="grant"}`:
				sum.grant += v
			case `mandate_quota_grant_decisions_total{path="pool"}`:
				sum.pool += v
			case `mandate_quota_grant_decisions_total{path="reclaim"}`:
				sum.reclaim += v
			}
		}
		resp.Body.Close()
		if err := sc.Err(); err != nil {
			return sum, fmt.Errorf("%s metrics: %w", p.name, err)
		}
	}
	return sum, nil
}
