package topology

import "slices"

// bucket counts the nodes that have exactly gpus GPUs (free, or allocatable).
type bucket struct {
	gpus  int
	nodes int
}

// hist is a domain's nodes by GPU count, for one (resource, product): the
// aggregate every query reads instead of walking nodes. Buckets are sorted by
// gpus, and only positive counts are kept since a node with no GPU holds no
// pod. A hist is immutable once published in a snapshot; the model changes
// only the ones it created since (copy on write).
type hist struct {
	b   []bucket
	sum int
}

// shift moves one node from count from to count to, a count of 0 meaning
// "not in the histogram". It changes h's buckets in place: the caller must
// own them (see the shift function).
func (h *hist) shift(from, to int) {
	if from == to {
		return
	}
	if from > 0 {
		i, found := slices.BinarySearchFunc(h.b, from, cmpBucket)
		if !found {
			panic("topology: histogram out of sync with its nodes")
		}
		if h.b[i].nodes--; h.b[i].nodes == 0 {
			h.b = slices.Delete(h.b, i, i+1)
		}
	}
	if to > 0 {
		i, found := slices.BinarySearchFunc(h.b, to, cmpBucket)
		if found {
			h.b[i].nodes++
		} else {
			h.b = slices.Insert(h.b, i, bucket{gpus: to, nodes: 1})
		}
	}
	h.sum += to - from
}

func cmpBucket(b bucket, gpus int) int { return b.gpus - gpus }

// empty reports whether no node has any GPU counted here.
func (h hist) empty() bool { return len(h.b) == 0 }

// slots is how many pods of g GPUs fit: the sum over nodes of floor(gpus/g).
// g must be positive.
func (h hist) slots(g int) int {
	n := 0
	for i := len(h.b) - 1; i >= 0 && h.b[i].gpus >= g; i-- {
		n += h.b[i].nodes * (h.b[i].gpus / g)
	}
	return n
}

// hasSlots reports whether slots(g) >= pods, stopping as soon as it is known.
func (h hist) hasSlots(g, pods int) bool {
	n := 0
	for i := len(h.b) - 1; i >= 0 && h.b[i].gpus >= g; i-- {
		if n += h.b[i].nodes * (h.b[i].gpus / g); n >= pods {
			return true
		}
	}
	return false
}
