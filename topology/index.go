package topology

import (
	"cmp"
	"hash/fnv"
	"math"
	"strings"
)

// entry is one domain in a level index: its histogram for one (resource,
// product) and the histogram's GPU sum, which orders the index.
type entry struct {
	sum  int
	key  string
	mask uint32
	hist hist
}

// tnode is a node of a persistent treap of entries ordered by (sum, key); the
// heap priority is a hash of the key, so the shape depends only on the set of
// entries. Updates copy the path from the root (path copying), so a published
// root never changes and any number of snapshots share all untouched nodes.
// A node whose edit equals the writer's current edit token was created since
// the last snapshot was published and is updated in place instead (a
// "transient"), which makes bulk loads cheap.
type tnode struct {
	e           entry
	prio        uint64
	left, right *tnode
	edit        uint64
}

func cmpKey(sum int, key string, e *entry) int {
	if c := cmp.Compare(sum, e.sum); c != 0 {
		return c
	}
	return strings.Compare(key, e.key)
}

func keyPriority(key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key)) // hash.Hash never fails
	x := h.Sum64()
	// splitmix64 finaliser: spread FNV's low-entropy high bits.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func own(n *tnode, edit uint64) *tnode {
	if n.edit == edit {
		return n
	}
	c := *n
	c.edit = edit
	return &c
}

// treeInsert returns t with e added; e's (sum, key) must not be in t.
func treeInsert(t *tnode, e entry, edit uint64) *tnode {
	return insertNode(t, &tnode{e: e, prio: keyPriority(e.key), edit: edit}, edit)
}

func insertNode(t, n *tnode, edit uint64) *tnode {
	if t == nil {
		return n
	}
	if n.prio > t.prio {
		n.left, n.right = split(t, n.e.sum, n.e.key, edit)
		return n
	}
	t = own(t, edit)
	if cmpKey(n.e.sum, n.e.key, &t.e) < 0 {
		t.left = insertNode(t.left, n, edit)
	} else {
		t.right = insertNode(t.right, n, edit)
	}
	return t
}

// split returns the entries of t below (sum, key) and those at or above it.
func split(t *tnode, sum int, key string, edit uint64) (lo, hi *tnode) {
	if t == nil {
		return nil, nil
	}
	t = own(t, edit)
	if cmpKey(sum, key, &t.e) <= 0 {
		lo, t.left = split(t.left, sum, key, edit)
		return lo, t
	}
	t.right, hi = split(t.right, sum, key, edit)
	return t, hi
}

// merge joins a and b, every entry of a being below every entry of b.
func merge(a, b *tnode, edit uint64) *tnode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a = own(a, edit)
		a.right = merge(a.right, b, edit)
		return a
	default:
		b = own(b, edit)
		b.left = merge(a, b.left, edit)
		return b
	}
}

// treeDelete returns t without the entry (sum, key); it must be in t.
func treeDelete(t *tnode, sum int, key string, edit uint64) *tnode {
	if t == nil {
		panic("topology: index entry to delete is missing")
	}
	c := cmpKey(sum, key, &t.e)
	if c == 0 {
		return merge(t.left, t.right, edit)
	}
	t = own(t, edit)
	if c < 0 {
		t.left = treeDelete(t.left, sum, key, edit)
	} else {
		t.right = treeDelete(t.right, sum, key, edit)
	}
	return t
}

// ascend calls fn on the entries at or above (sum, key) in order until fn
// returns false; it reports whether it ran to the end.
func ascend(t *tnode, sum int, key string, fn func(*entry) bool) bool {
	for t != nil {
		if cmpKey(sum, key, &t.e) <= 0 {
			return ascend(t.left, sum, key, fn) && fn(&t.e) && ascendAll(t.right, fn)
		}
		t = t.right
	}
	return true
}

func ascendAll(t *tnode, fn func(*entry) bool) bool {
	for t != nil {
		if !ascendAll(t.left, fn) || !fn(&t.e) {
			return false
		}
		t = t.right
	}
	return true
}

// maxSumBelow returns the largest sum in t that is below bound.
func maxSumBelow(t *tnode, bound int) (int, bool) {
	best, ok := 0, false
	for t != nil {
		if t.e.sum < bound {
			best, ok = t.e.sum, true
			t = t.right
		} else {
			t = t.left
		}
	}
	return best, ok
}

// bestFit returns the entry with the smallest sum holding at least pods
// slots of g GPUs, ties broken by key, skipping entries whose mask meets
// skip. It starts at the first entry with pods×g GPUs, so for single-node
// domains the first entry it looks at is the answer.
func bestFit(t *tnode, g, pods int, skip uint32) (*entry, bool) {
	need := math.MaxInt
	if pods <= math.MaxInt/g {
		need = pods * g
	}
	var found *entry
	ascend(t, need, "", func(e *entry) bool {
		if e.mask&skip == 0 && e.hist.hasSlots(g, pods) {
			found = e
			return false
		}
		return true
	})
	return found, found != nil
}

// mostSlots returns the entry with the most slots of g GPUs (at least one),
// ties broken by key. It visits sums from the largest down and stops when
// floor(sum/g), an upper bound of the slots, drops below the best found;
// inside one sum it stops at the first entry reaching that bound.
func mostSlots(t *tnode, g int) (best *entry, bestSlots int) {
	bound := math.MaxInt
	for {
		sum, ok := maxSumBelow(t, bound)
		upper := sum / g
		if !ok || upper == 0 || upper < bestSlots {
			return best, bestSlots
		}
		ascend(t, sum, "", func(e *entry) bool {
			if e.sum != sum {
				return false
			}
			s := e.hist.slots(g)
			if s > bestSlots || (s == bestSlots && s > 0 && e.key < best.key) {
				best, bestSlots = e, s
			}
			return s < upper
		})
		bound = sum
	}
}
