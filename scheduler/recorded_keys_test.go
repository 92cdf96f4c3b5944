package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mandate-dev/mandate/evaluator"
	"github.com/mandate-dev/mandate/workload"
)

func TestUnrecordedKeys(t *testing.T) {
	keys := []workload.SchedulerKey{
		{Key: "label kai.scheduler/queue", Asks: workload.AsksQueue, Value: "product"},
		{Key: "label kai.scheduler/queue", Asks: workload.AsksQueue, Value: "root-eng-prod"},
		{Key: "annotation kai.scheduler/batch-min-member", Asks: workload.AsksGangMin, Value: "6"},
		{Key: "spec.minAvailable", Asks: workload.AsksGangMin, Value: "2"},
		{Key: "label priorityClassName", Asks: workload.AsksPriorityClass, Value: "train"},
	}
	got := UnrecordedKeys(keys, evaluator.Directives{Queue: "product", GangMin: 6, PriorityClass: "train"})
	assert.Equal(t, []workload.SchedulerKey{keys[1], keys[3], keys[4]}, got,
		"only the keys repeating Mandate's recorded queue and gang minimum are its marks")
}
