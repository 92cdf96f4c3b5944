package ledger

import "slices"

// DRA claims: a pod whose GPUs come from ResourceClaims counts the devices
// of the claims it holds, for as long as it holds them, as it counts its
// extended resources.
//
// A claim shared by several pods counts once: for one of its holders, the
// counter (claimCounter), the first by namespace/name of the holders that
// are not terminal, else of all. The counter is a pod, not the claim's
// namespace, so a shared claim's devices take the preemptibility of a pod
// that holds them and consume, as that pod's GPUs, the reservation its
// workload's admission made for the claim (admission counts a shared
// claim once for the whole workload, review.resolveClaims), never twice.
// The first by name keeps the choice deterministic whatever order the
// informers deliver the pods in, and on every replica.

// A pod holds its claims' demand before the claims exist: until the
// resource claim controller has made the claim of a pod's
// ResourceClaimTemplate (and named it in the pod's status), the pod
// counts the template's requests, whatever the reservation window, so
// that pods whose claims are late never leave their GPUs uncounted.

// UpsertTemplate records the GPUs a DRA ResourceClaimTemplate requests,
// by quota resource (topology.RequestedDevices), and recounts the pods
// that count it. nil or empty gpus count nothing.
func (l *Ledger) UpsertTemplate(namespace, name string, gpus map[string]int) {
	key := namespace + "/" + name
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(gpus) == 0 {
		delete(l.draTemplates, key)
	} else {
		l.draTemplates[key] = gpus
	}
	for k, in := range l.holding {
		if slices.Contains(in.templates, key) {
			l.count(k, in)
		}
	}
}

// DeleteTemplate forgets a DRA ResourceClaimTemplate: pods whose claims
// from it are not made yet count nothing for them.
func (l *Ledger) DeleteTemplate(namespace, name string) { l.UpsertTemplate(namespace, name, nil) }

// UpsertClaim records the GPUs a DRA ResourceClaim holds, by quota
// resource (topology.ClaimGPUs: its allocated devices, or what it requests
// while not allocated, the pending demand its admission reserved), and
// recounts the pod that counts them. nil or empty gpus count nothing.
func (l *Ledger) UpsertClaim(namespace, name string, gpus map[string]int) {
	key := namespace + "/" + name
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(gpus) == 0 {
		delete(l.draClaims, key)
	} else {
		l.draClaims[key] = gpus
	}
	l.recountHolders([]string{key}, nil, "")
}

// DeleteClaim forgets a DRA ResourceClaim: its pods count its devices no
// more.
func (l *Ledger) DeleteClaim(namespace, name string) { l.UpsertClaim(namespace, name, nil) }

// setPod counts the pod of key as in says (nil: deleted), keeps its input
// while it holds claims, and recounts the other holders whose counter
// changed. Callers hold the lock.
func (l *Ledger) setPod(key string, in *podInput) {
	var claims []string
	if old := l.holding[key]; old != nil {
		claims = append(claims, old.claims...)
	}
	if in != nil {
		claims = append(claims, in.claims...)
	}
	before := make(map[string]string, len(claims))
	for _, c := range claims {
		before[c] = l.claimCounter(c)
	}
	if old := l.holding[key]; old != nil {
		for _, c := range old.claims {
			delete(l.holders[c], key)
			if len(l.holders[c]) == 0 {
				delete(l.holders, c)
			}
		}
		delete(l.holding, key)
	}
	if in != nil && len(in.claims)+len(in.templates) > 0 {
		l.holding[key] = in
		for _, c := range in.claims {
			if l.holders[c] == nil {
				l.holders[c] = map[string]*podInput{}
			}
			l.holders[c][key] = in
		}
	}
	if in == nil {
		l.forget(key)
		l.unattribute(key)
	} else {
		l.count(key, in)
	}
	l.recountHolders(claims, before, key)
}

// recountHolders recounts, for each claim, its counter before (when it was
// not the counter now) and now, but the pod of key except (counted by the
// caller). Callers hold the lock.
func (l *Ledger) recountHolders(claims []string, before map[string]string, except string) {
	done := map[string]bool{except: true, "": true}
	for _, c := range claims {
		for _, k := range []string{before[c], l.claimCounter(c)} {
			if done[k] {
				continue
			}
			done[k] = true
			if in := l.holding[k]; in != nil {
				l.count(k, in)
			}
		}
	}
}

// claimCounter is the key of the pod that counts claim's devices: the
// first by key of its holders that are not terminal, else of all; "" for
// none. Callers hold the lock.
func (l *Ledger) claimCounter(claim string) string {
	live, first := "", ""
	for k, in := range l.holders[claim] {
		if first == "" || k < first {
			first = k
		}
		if !in.terminal && (live == "" || k < live) {
			live = k
		}
	}
	if live != "" {
		return live
	}
	return first
}

// claimDemand is the devices of the claims in holds that the pod of key
// counts, and the requests of the templates of its claims not made yet.
// Callers hold the lock.
func (l *Ledger) claimDemand(key string, in *podInput) map[string]int {
	var out map[string]int
	for _, t := range in.templates {
		for res, n := range l.draTemplates[t] {
			if out == nil {
				out = map[string]int{}
			}
			out[res] += n
		}
	}
	for _, c := range in.claims {
		gpus := l.draClaims[c]
		if len(gpus) == 0 || l.claimCounter(c) != key {
			continue
		}
		if out == nil {
			out = map[string]int{}
		}
		for res, n := range gpus {
			out[res] += n
		}
	}
	return out
}
