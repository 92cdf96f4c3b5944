package topology

import (
	"slices"
	"strings"
)

// Counts are a few counts by resource, sorted by resource: what one pod
// takes (almost always one GPU resource). The model and the ledger keep one
// per pod; a slice of pairs is a fraction of a map's memory, which is most
// of what they hold at 100,000s of pods.
type Counts []Count

// Count is a count of one resource.
type Count struct {
	Resource string
	N        int
}

// CountsOf is m as Counts; nil when m is empty.
func CountsOf(m map[string]int) Counts {
	if len(m) == 0 {
		return nil
	}
	out := make(Counts, 0, len(m))
	for r, n := range m {
		out = append(out, Count{Resource: r, N: n})
	}
	slices.SortFunc(out, func(a, b Count) int { return strings.Compare(a.Resource, b.Resource) })
	return out
}

// Map is c as a map; nil when c is empty.
func (c Counts) Map() map[string]int {
	if len(c) == 0 {
		return nil
	}
	out := make(map[string]int, len(c))
	for _, x := range c {
		out[x.Resource] += x.N
	}
	return out
}

// Get is the count of resource r (0 when c has none).
func (c Counts) Get(r string) int {
	for _, x := range c {
		if x.Resource == r {
			return x.N
		}
	}
	return 0
}
