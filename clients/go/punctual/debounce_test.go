package punctual_test

// Scenario 13 of clients/SCENARIOS.md: debounce. Guards against a client that drops
// ScheduleParams.Debounce or sends it in a shape the server does not read: then the due
// times pass the burst's bound, the task fires more than once, or max_wait 0 is accepted.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

func TestS13Debounce(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s13")
	debounce := &punctual.Debounce{MaxWait: 3 * time.Second}
	var answers []*punctual.ScheduleResult
	for _, step := range []struct {
		status int
		delay  time.Duration
	}{{1, 2 * time.Second}, {2, 2 * time.Second}, {3, 5 * time.Second}} {
		// The last delay would pass the burst's bound without debounce.
		p := punctual.ScheduleParams{Delay: step.delay, Payload: map[string]int{"status": step.status}, Debounce: debounce}
		r, err := c.Schedule(bg, q, "order-1", p)
		if err != nil {
			t.Fatalf("schedule status %d: %v", step.status, err)
		}
		answers = append(answers, r)
	}
	first, second, third := answers[0], answers[1], answers[2]
	if first.Outcome != punctual.ScheduleCreated || second.Outcome != punctual.ScheduleReplaced || third.Outcome != punctual.ScheduleReplaced {
		t.Fatalf("outcomes %s, %s, %s", first.Outcome, second.Outcome, third.Outcome)
	}
	bound := first.Task.CreatedAt.Add(3 * time.Second)
	for i := 1; i < 3; i++ {
		due, before := answers[i].Task.DueAt, answers[i-1].Task.DueAt
		if due.Before(before) || due.After(bound) {
			t.Fatalf("answer %d due %s: want between %s and the bound %s", i+1, due, before, bound)
		}
	}
	if string(third.Task.Payload) != `{"status":3}` {
		t.Fatalf("last answer's payload %s", third.Task.Payload)
	}

	var e *punctual.Error
	_, err := c.Schedule(bg, q, "order-1", punctual.ScheduleParams{
		Payload: map[string]int{"status": 4}, Debounce: &punctual.Debounce{MaxWait: 0},
	})
	if !errors.Is(err, punctual.ErrInvalidArgument) || !errors.As(err, &e) || e.Field != "debounce.max_wait" || e.Status != 400 {
		t.Fatalf("max_wait 0: %v", err)
	}
	if got, err := c.Get(bg, q, "order-1"); err != nil || string(got.Payload) != `{"status":3}` {
		t.Fatalf("the refused schedule changed order-1: %v %+v", err, got)
	}

	var ev events
	w := punctual.NewWorker(c, punctual.WorkerOptions{Wait: time.Second})
	w.Handle(q, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome { ev.add(d); return punctual.Done() }, 1)
	stop := runWorker(t, w)
	waitUntil(t, "the debounced delivery", 10*time.Second, func() bool { return ev.len() >= 1 })
	d, _ := ev.get(0)
	if d.Task.Key != "order-1" || string(d.Task.Payload) != `{"status":3}` {
		t.Fatalf("delivered %s with %s, want order-1 with status 3", d.Task.Key, d.Task.Payload)
	}
	waitUntil(t, "order-1 acked away", 10*time.Second, func() bool {
		_, err := c.Get(bg, q, "order-1")
		return errors.Is(err, punctual.ErrNotFound)
	})
	stop()
	if n := ev.len(); n != 1 {
		t.Fatalf("delivered %d times, want once", n)
	}
}

func TestDebounceInABatch(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("batch")
	maxWait := &punctual.Debounce{MaxWait: 10 * time.Minute}
	burst, err := c.ScheduleMany(bg, q, []punctual.BatchItem{
		{Key: "d1", ScheduleParams: punctual.ScheduleParams{Delay: time.Hour, Debounce: maxWait}},
	})
	if err != nil || len(burst) != 1 || burst[0].Outcome != punctual.ScheduleCreated {
		t.Fatalf("first batch: %v %+v", err, burst)
	}
	created, err := c.Get(bg, q, "d1")
	if err != nil {
		t.Fatal(err)
	}
	results, err := c.ScheduleMany(bg, q, []punctual.BatchItem{
		{Key: "d1", ScheduleParams: punctual.ScheduleParams{Delay: 2 * time.Hour, Payload: map[string]int{"n": 2}, Debounce: maxWait}},
		{Key: "d2", ScheduleParams: punctual.ScheduleParams{Delay: time.Hour, Debounce: &punctual.Debounce{}}},
		{Key: "d3", ScheduleParams: punctual.ScheduleParams{Delay: time.Hour, Debounce: maxWait, IfExists: punctual.IfExistsKeep}},
	})
	if err != nil || len(results) != 3 {
		t.Fatalf("second batch: %v %+v", err, results)
	}
	if results[0].Outcome != punctual.ScheduleReplaced {
		t.Fatalf("d1: %+v", results[0])
	}
	moved, err := c.Get(bg, q, "d1")
	if err != nil || string(moved.Payload) != `{"n":2}` || moved.DueAt.After(created.CreatedAt.Add(10*time.Minute)) {
		t.Fatalf("d1 after the debounced replace: %v %+v", err, moved)
	}
	if e := results[1].Error; e == nil || !errors.Is(e, punctual.ErrInvalidArgument) || e.Field != "tasks[1].debounce.max_wait" {
		t.Fatalf("d2: %+v", results[1].Error)
	}
	if e := results[2].Error; e == nil || !errors.Is(e, punctual.ErrInvalidArgument) || e.Field != "tasks[2].debounce" {
		t.Fatalf("d3: %+v", results[2].Error)
	}
}
