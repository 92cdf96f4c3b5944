package topology

import "slices"

// aggKey names one kind of GPU capacity: a resource and a product, product
// "" standing for any product, within a pool, pool "" standing for every
// node.
type aggKey struct {
	resource, product, pool string
}

// aggView is what a snapshot reads for one aggKey: the cluster histograms and,
// per level, the persistent indexes of its domains by free GPUs and by
// allocatable GPUs. Published views are never changed: the model copies a
// view whose edit is not its current token before writing to it.
type aggView struct {
	edit                      uint64
	clusterFree, clusterAlloc hist
	free, alloc               []*tnode
}

// domState is the model's private record of one domain.
type domState struct {
	mask uint32
	aggs map[aggKey]*domAgg
}

// domAgg holds a domain's current histograms for one aggKey. Events change
// them at once; the level indexes catch up when the next snapshot is taken
// (flush), once per domain however many events touched it.
type domAgg struct {
	free, alloc hist
	// freeEdit and allocEdit are the model's token when the histogram's
	// buckets were last copied: while it is current they are not shared with
	// a snapshot and may change in place.
	freeEdit, allocEdit uint64
	// filedFree and filedAlloc are the sums the domain is filed under in the
	// indexes; 0 when it is not filed.
	filedFree, filedAlloc int
	// freeDirty and allocDirty mark histograms changed since the last flush
	// (their sum may not have); queued says the domain is in Model.dirty.
	freeDirty, allocDirty, queued bool
}

// shift moves one node from count from to count to in h, first copying
// h's buckets unless *owner says they were copied under token edit.
func shift(h *hist, owner *uint64, edit uint64, from, to int) {
	if *owner != edit {
		h.b = slices.Clone(h.b)
		*owner = edit
	}
	h.shift(from, to)
}

// dirtyRef names a domAgg whose histograms changed since the last flush.
type dirtyRef struct {
	level int // -1: the cluster
	key   string
	mask  uint32
	agg   aggKey
	dom   *domState // nil for the cluster
	a     *domAgg
}

// contrib is what one node adds to the aggregates of one aggKey.
type contrib struct {
	agg         aggKey
	free, alloc int
}

// contributions lists what the node adds to each aggKey: for every GPU
// resource it has, its free and allocatable counts under the any-product key
// and under its product's key. A node that is unknown or not usable adds
// nothing. Free is clamped at 0 when pods take more than is allocatable.
func (st *nodeState) contributions() []contrib {
	info := st.info
	if info == nil || !info.usable || len(info.alloc) == 0 {
		return nil
	}
	out := make([]contrib, 0, 2*len(info.alloc)*(1+len(info.pools)))
	for r, a := range info.alloc {
		// Shared pods pack onto devices: their milli-GPUs occupy
		// WholeGPUs(sum) whole devices of the node.
		shared := 0
		if r == SharedResource {
			shared = WholeGPUs(st.used[sharedGPUKey])
		}
		free := max(0, a-st.used[r]-shared)
		out = append(out, contrib{aggKey{resource: r}, free, a})
		if info.product != "" {
			out = append(out, contrib{aggKey{r, info.product, ""}, free, a})
		}
		for _, p := range info.pools {
			out = append(out, contrib{aggKey{r, "", p}, free, a})
			if info.product != "" {
				out = append(out, contrib{aggKey{r, info.product, p}, free, a})
			}
		}
	}
	return out
}

func levelKey(info *nodeInfo, level int) (string, uint32) {
	if info == nil {
		return "", 0
	}
	return info.keys[level], info.masks[level]
}

// transition moves a node's contribution from (oldInfo, oldC) to
// (newInfo, newC) in the cluster totals and in its domain at every level
// (domains may differ when labels changed). It reports whether anything
// changed.
func (m *Model) transition(oldInfo *nodeInfo, oldC []contrib, newInfo *nodeInfo, newC []contrib) bool {
	changed := false
	for i := range m.levels {
		oldKey, oldMask := levelKey(oldInfo, i)
		newKey, newMask := levelKey(newInfo, i)
		if oldKey == newKey {
			if oldKey != "" {
				changed = m.moveWithin(i, oldKey, oldMask, oldC, newC) || changed
			}
			continue
		}
		if oldKey != "" {
			changed = m.moveWithin(i, oldKey, oldMask, oldC, nil) || changed
		}
		if newKey != "" {
			changed = m.moveWithin(i, newKey, newMask, nil, newC) || changed
		}
	}
	return m.moveWithin(-1, ClusterDomain, 0, oldC, newC) || changed
}

// moveWithin replaces contributions oldC by newC in one domain (level -1: the
// cluster).
func (m *Model) moveWithin(level int, key string, mask uint32, oldC, newC []contrib) bool {
	changed := false
	for _, o := range oldC {
		var n contrib
		if j := slices.IndexFunc(newC, func(c contrib) bool { return c.agg == o.agg }); j >= 0 {
			n = newC[j]
		}
		changed = m.update(level, key, mask, o.agg, o.free, o.alloc, n.free, n.alloc) || changed
	}
	for _, n := range newC {
		if !slices.ContainsFunc(oldC, func(c contrib) bool { return c.agg == n.agg }) {
			changed = m.update(level, key, mask, n.agg, 0, 0, n.free, n.alloc) || changed
		}
	}
	return changed
}

// update moves one node from free count oldFree to newFree and allocatable
// count oldAlloc to newAlloc in one domain's histograms for agg (level -1:
// the cluster's), and marks them for the next flush.
func (m *Model) update(level int, key string, mask uint32, agg aggKey, oldFree, oldAlloc, newFree, newAlloc int) bool {
	if oldFree == newFree && oldAlloc == newAlloc {
		return false
	}
	var d *domState
	var a *domAgg
	if level < 0 {
		if a = m.cluster[agg]; a == nil {
			a = &domAgg{}
			m.cluster[agg] = a
		}
	} else {
		doms := m.domains[level]
		if d = doms[key]; d == nil {
			d = &domState{mask: mask, aggs: make(map[aggKey]*domAgg, 2)}
			doms[key] = d
		}
		if a = d.aggs[agg]; a == nil {
			a = &domAgg{}
			d.aggs[agg] = a
		}
	}
	if oldFree != newFree {
		shift(&a.free, &a.freeEdit, m.edit, oldFree, newFree)
		a.freeDirty = true
	}
	if oldAlloc != newAlloc {
		shift(&a.alloc, &a.allocEdit, m.edit, oldAlloc, newAlloc)
		a.allocDirty = true
	}
	if !a.queued {
		a.queued = true
		m.dirty = append(m.dirty, dirtyRef{level: level, key: key, mask: mask, agg: agg, dom: d, a: a})
	}
	return true
}

// flush brings the published structures up to date with the domains changed
// since the last flush: it re-files each in its level indexes, sets the
// cluster totals, and forgets what became empty. Levels go before the
// cluster, which drops the view of an aggKey no node has any more.
func (m *Model) flush() {
	for _, r := range m.dirty {
		if r.level < 0 {
			continue
		}
		a := r.a
		if a.freeDirty || a.allocDirty {
			v := m.ownView(r.agg)
			if a.freeDirty {
				v.free[r.level] = m.refile(v.free[r.level], r.key, r.mask, a.filedFree, a.free)
				a.filedFree = a.free.sum
			}
			if a.allocDirty {
				v.alloc[r.level] = m.refile(v.alloc[r.level], r.key, r.mask, a.filedAlloc, a.alloc)
				a.filedAlloc = a.alloc.sum
			}
		}
		a.freeDirty, a.allocDirty, a.queued = false, false, false
		if a.alloc.empty() {
			delete(r.dom.aggs, r.agg)
			if len(r.dom.aggs) == 0 {
				delete(m.domains[r.level], r.key)
			}
		}
	}
	for _, r := range m.dirty {
		if r.level >= 0 {
			continue
		}
		r.a.freeDirty, r.a.allocDirty, r.a.queued = false, false, false
		if r.a.alloc.empty() {
			delete(m.cluster, r.agg)
			delete(m.aggs, r.agg)
			continue
		}
		v := m.ownView(r.agg)
		v.clusterFree, v.clusterAlloc = r.a.free, r.a.alloc
	}
	clear(m.dirty)
	m.dirty = m.dirty[:0]
}

// refile moves the domain's entry, filed under sum was (0: not filed), to
// its histogram now in an index; an empty histogram is not filed.
func (m *Model) refile(t *tnode, key string, mask uint32, was int, now hist) *tnode {
	if was != 0 {
		t = treeDelete(t, was, key, m.edit)
	}
	if !now.empty() {
		t = treeInsert(t, entry{sum: now.sum, key: key, mask: mask, hist: now}, m.edit)
	}
	return t
}

// ownView returns the view of agg, copied first if a snapshot may hold it.
func (m *Model) ownView(agg aggKey) *aggView {
	v := m.aggs[agg]
	switch {
	case v == nil:
		v = &aggView{
			edit:  m.edit,
			free:  make([]*tnode, len(m.levels)),
			alloc: make([]*tnode, len(m.levels)),
		}
	case v.edit != m.edit:
		c := *v
		c.edit = m.edit
		c.free = slices.Clone(v.free)
		c.alloc = slices.Clone(v.alloc)
		v = &c
	default:
		return v
	}
	m.aggs[agg] = v
	return v
}
