package punctual_test

// Scenario 12 of clients/SCENARIOS.md: priorities. Guards against a client that drops
// the priority on the way to the server (schedule and batch) or back (Task.Priority),
// and against a refused priority that still changes the task.

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

func TestS12Priorities(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s12")
	for _, task := range []struct {
		key      string
		priority int
	}{{"low", 0}, {"high", 9}, {"mid", 5}} {
		p := punctual.ScheduleParams{Payload: map[string]string{"p": task.key}, Priority: task.priority}
		if _, err := c.Schedule(bg, q, task.key, p); err != nil {
			t.Fatalf("schedule %s: %v", task.key, err)
		}
	}
	if high, err := c.Get(bg, q, "high"); err != nil || high.Priority != 9 {
		t.Fatalf("get high: %v %+v", err, high)
	}
	low, err := c.Get(bg, q, "low")
	if err != nil || low.Priority != 0 || low.State != punctual.StateScheduled {
		t.Fatalf("get low: %v %+v", err, low)
	}

	var e *punctual.Error
	_, err = c.Schedule(bg, q, "low", punctual.ScheduleParams{Payload: map[string]string{"p": "changed"}, Priority: 10})
	if !errors.Is(err, punctual.ErrInvalidArgument) || !errors.As(err, &e) || e.Field != "priority" || e.Status != 400 {
		t.Fatalf("priority 10: %v", err)
	}
	unchanged, err := c.Get(bg, q, "low")
	if err != nil || unchanged.Priority != 0 || string(unchanged.Payload) != `{"p":"low"}` || unchanged.Version != low.Version {
		t.Fatalf("the refused replacement changed low: %v %+v", err, unchanged)
	}
	if _, err := c.Schedule(bg, q, "urgent", punctual.ScheduleParams{Priority: 10}); !errors.Is(err, punctual.ErrInvalidArgument) {
		t.Fatalf("priority 10 on a new key: %v", err)
	}
	if _, err := c.Get(bg, q, "urgent"); !errors.Is(err, punctual.ErrNotFound) {
		t.Fatalf("a refused new key was stored: %v", err)
	}

	var ev events
	w := punctual.NewWorker(c, punctual.WorkerOptions{Wait: time.Second})
	w.Handle(q, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome { ev.add(d); return punctual.Done() }, 1)
	runWorker(t, w)
	waitUntil(t, "three deliveries", 10*time.Second, func() bool { return ev.len() == 3 })
	var keys []string
	var priorities []int
	for i := 0; i < 3; i++ {
		d, _ := ev.get(i)
		keys = append(keys, d.Task.Key)
		priorities = append(priorities, d.Task.Priority)
	}
	if !reflect.DeepEqual(keys, []string{"high", "mid", "low"}) || !reflect.DeepEqual(priorities, []int{9, 5, 0}) {
		t.Fatalf("delivered %v with priorities %v, want high, mid, low with 9, 5, 0", keys, priorities)
	}
	for _, key := range keys {
		waitUntil(t, key+" acked away", 10*time.Second, func() bool {
			_, err := c.Get(bg, q, key)
			return errors.Is(err, punctual.ErrNotFound)
		})
	}
}

func TestPriorityInABatch(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("batch")
	results, err := c.ScheduleMany(bg, q, []punctual.BatchItem{
		{Key: "p7", ScheduleParams: punctual.ScheduleParams{Delay: time.Hour, Priority: 7}},
		{Key: "p10", ScheduleParams: punctual.ScheduleParams{Delay: time.Hour, Priority: 10}},
	})
	if err != nil || len(results) != 2 {
		t.Fatalf("batch: %v %+v", err, results)
	}
	if results[0].Outcome != punctual.ScheduleCreated || results[0].Error != nil {
		t.Fatalf("p7: %+v", results[0])
	}
	if got, err := c.Get(bg, q, "p7"); err != nil || got.Priority != 7 {
		t.Fatalf("get p7: %v %+v", err, got)
	}
	if e := results[1].Error; e == nil || !errors.Is(e, punctual.ErrInvalidArgument) || e.Field != "tasks[1].priority" {
		t.Fatalf("p10: %+v", results[1].Error)
	}
}
