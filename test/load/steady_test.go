//go:build load

package load

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mandate-dev/mandate/webhook"
	"github.com/mandate-dev/mandate/webhook/scheduler"
)

// created is one create of a steady load.
type created struct {
	namespace, name string
	start, end      time.Time
	revision        string // mandate.dev/policy-revision of the stored pod
	queue           string // its KAI queue
	err             error
}

// steadyLoad is a steady stream of pod creates; wait returns them.
type steadyLoad struct {
	mu      sync.Mutex
	results []created
	done    chan struct{}
}

// steadyLoad creates one-GPU pods of a priority class across the tenants
// at rate per second with workers in parallel, until stop is closed. The
// load is open loop: each create has its own schedule, and a slow server
// slows the offered rate only once every worker is busy, which then shows
// as a lower measured rate.
func (h *harness) steadyLoad(prefix, class string, rate float64, workers int, stop <-chan struct{}) *steadyLoad {
	l := &steadyLoad{done: make(chan struct{})}
	tokens := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range tokens {
				pod := gpuPod(fmt.Sprintf("team-%d", i%tenants), fmt.Sprintf("%s-%06d", prefix, i), class)
				c := created{namespace: pod.Namespace, name: pod.Name, start: time.Now()}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				c.err = h.env.Client.Create(ctx, pod)
				cancel()
				c.end = time.Now()
				c.revision = pod.Annotations[webhook.AnnotationPolicyRevision]
				c.queue = pod.Labels[scheduler.LabelKAIQueue]
				l.mu.Lock()
				l.results = append(l.results, c)
				l.mu.Unlock()
			}
		}()
	}
	go func() {
		defer close(l.done)
		defer func() {
			close(tokens)
			wg.Wait()
		}()
		began := time.Now()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for sent := 0; ; {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for due := int(time.Since(began).Seconds() * rate); sent < due; sent++ {
				select {
				case tokens <- sent:
				case <-stop:
					return
				}
			}
		}
	}()
	return l
}

// wait returns every create once the last has finished.
func (l *steadyLoad) wait() []created {
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.results
}

// loadSummary sums up a steady load.
type loadSummary struct {
	ok, failed int
	// elapsed runs from the first create's start to the last one's end.
	elapsed   time.Duration
	rate      float64 // creates per second over elapsed
	latencies []time.Duration
	errs      []error // the first few
}

func summarize(results []created) loadSummary {
	var s loadSummary
	var from, to time.Time
	for _, c := range results {
		if from.IsZero() || c.start.Before(from) {
			from = c.start
		}
		if c.end.After(to) {
			to = c.end
		}
		if c.err != nil {
			s.failed++
			if len(s.errs) < 5 {
				s.errs = append(s.errs, fmt.Errorf("%s/%s: %w", c.namespace, c.name, c.err))
			}
			continue
		}
		s.ok++
		s.latencies = append(s.latencies, c.end.Sub(c.start))
	}
	s.elapsed = to.Sub(from)
	if s.elapsed > 0 {
		s.rate = float64(len(results)) / s.elapsed.Seconds()
	}
	return s
}
