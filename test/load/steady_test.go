//go:build load

package load

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mandate-dev/mandate/review"
	"github.com/mandate-dev/mandate/scheduler"
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
	go func() {
		defer close(tokens)
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
	go func() {
		defer close(l.done)
		h.createPods(workers, tokens, func(i int) *corev1.Pod {
			return gpuPod(fmt.Sprintf("team-%d", i%tenants), fmt.Sprintf("%s-%06d", prefix, i), class)
		}, func(pod *corev1.Pod, start, end time.Time, err error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.results = append(l.results, created{namespace: pod.Namespace, name: pod.Name, start: start, end: end, err: err,
				revision: pod.Annotations[review.AnnotationPolicyRevision], queue: pod.Labels[scheduler.LabelKAIQueue]})
		})
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
