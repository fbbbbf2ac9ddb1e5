package punctual_test

// Scenario 15 of clients/SCENARIOS.md: a dedupe window. Guards against a client that
// drops ScheduleParams.UniqueFor on the way to the server or Task.UniqueFor on the way
// back, and one that mistakes a schedule kept by a completion (no task, the completion
// instead) for a created one or for an error.

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

func TestS15DedupeWindow(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s15")
	hour := &punctual.UniqueFor{Window: time.Hour}
	first, err := c.Schedule(bg, q, "order-1", punctual.ScheduleParams{Payload: map[string]int{"n": 1}, UniqueFor: hour})
	if err != nil || first.Outcome != punctual.ScheduleCreated || first.Task == nil || first.Completed != nil {
		t.Fatalf("first schedule: %v %+v", err, first)
	}
	if task, err := c.Get(bg, q, "order-1"); err != nil || task.UniqueFor == nil || *task.UniqueFor != *hour {
		t.Fatalf("get order-1: %v %+v", err, task)
	}

	leases, err := c.Lease(bg, q, punctual.LeaseParams{Max: 10})
	if err != nil || len(leases) != 1 || leases[0].Task.Key != "order-1" || *leases[0].Task.UniqueFor != *hour {
		t.Fatalf("lease: %v %+v", err, leases)
	}
	if err := c.Ack(bg, leases[0].LeaseID, punctual.Done()); err != nil {
		t.Fatalf("ack: %v", err)
	}

	kept, err := c.Schedule(bg, q, "order-1", punctual.ScheduleParams{Payload: map[string]int{"n": 2}, UniqueFor: hour})
	if err != nil || kept.Outcome != punctual.ScheduleKept || kept.Task != nil || kept.Completed == nil {
		t.Fatalf("schedule within the window: %v %+v", err, kept)
	}
	done := *kept.Completed
	if done.Queue != q || done.Key != "order-1" || done.State != punctual.StateDone || done.Attempts != 0 || done.Occurrence != 1 {
		t.Fatalf("the completion: %+v", done)
	}
	if got := done.UniqueUntil.Sub(done.CompletedAt); got != time.Hour {
		t.Fatalf("unique_until - completed_at = %v, want 1h", got)
	}
	if _, err := c.Get(bg, q, "order-1"); !errors.Is(err, punctual.ErrNotFound) {
		t.Fatalf("a kept schedule stored a task: %v", err)
	}
	if none, err := c.Lease(bg, q, punctual.LeaseParams{Max: 10}); err != nil || len(none) != 0 {
		t.Fatalf("lease after the kept schedule: %v %+v", err, none)
	}

	batch, err := c.ScheduleMany(bg, q, []punctual.BatchItem{
		{Key: "order-1", ScheduleParams: punctual.ScheduleParams{Payload: map[string]int{"n": 3}, UniqueFor: hour}},
		{Key: "order-2", ScheduleParams: punctual.ScheduleParams{Payload: map[string]int{"n": 1}, UniqueFor: hour}},
	})
	want := []punctual.BatchResult{
		{Key: "order-1", Outcome: punctual.ScheduleKept, Completed: &done},
		{Key: "order-2", Outcome: punctual.ScheduleCreated},
	}
	if err != nil || !reflect.DeepEqual(batch, want) {
		t.Fatalf("batch: %v %+v, want %+v", err, batch, want)
	}

	countingDead := &punctual.UniqueFor{Window: time.Hour, Dead: true}
	if _, err := c.Schedule(bg, q, "order-3", punctual.ScheduleParams{Delay: time.Hour, UniqueFor: countingDead}); err != nil {
		t.Fatalf("schedule order-3: %v", err)
	}
	if task, err := c.Get(bg, q, "order-3"); err != nil || task.UniqueFor == nil || *task.UniqueFor != *countingDead {
		t.Fatalf("get order-3: %v %+v", err, task)
	}

	var e *punctual.Error
	_, err = c.Schedule(bg, q, "order-4", punctual.ScheduleParams{UniqueFor: &punctual.UniqueFor{}})
	if !errors.Is(err, punctual.ErrInvalidArgument) || !errors.As(err, &e) || e.Field != "unique_for" || e.Status != 400 {
		t.Fatalf("a window of 0: %v", err)
	}
	if _, err := c.Get(bg, q, "order-4"); !errors.Is(err, punctual.ErrNotFound) {
		t.Fatalf("the refused order-4 was stored: %v", err)
	}
}

func TestUniqueForInABatch(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("unique")
	results, err := c.ScheduleMany(bg, q, []punctual.BatchItem{
		{Key: "u1", ScheduleParams: punctual.ScheduleParams{Delay: time.Hour, UniqueFor: &punctual.UniqueFor{Window: 90 * time.Minute, Dead: true}}},
		{Key: "u2", ScheduleParams: punctual.ScheduleParams{Delay: time.Hour, UniqueFor: &punctual.UniqueFor{}}},
		{Key: "u3", ScheduleParams: punctual.ScheduleParams{Delay: time.Hour}},
	})
	if err != nil || results[0].Error != nil || results[0].Completed != nil || results[1].Error == nil || results[1].Error.Field != "tasks[1].unique_for" {
		t.Fatalf("batch: %v %+v", err, results)
	}
	if task, err := c.Get(bg, q, "u1"); err != nil || task.UniqueFor == nil || *task.UniqueFor != (punctual.UniqueFor{Window: 90 * time.Minute, Dead: true}) {
		t.Fatalf("get u1: %v %+v", err, task)
	}
	if task, err := c.Get(bg, q, "u3"); err != nil || task.UniqueFor != nil {
		t.Fatalf("get u3: %v %+v", err, task)
	}
}

func TestUniqueForJSON(t *testing.T) {
	for _, tc := range []struct {
		in   punctual.UniqueFor
		wire string
	}{
		{punctual.UniqueFor{Window: time.Hour}, `3600000`},
		{punctual.UniqueFor{Window: time.Second, Dead: true}, `{"dead":true,"window":1000}`},
	} {
		if out, err := json.Marshal(tc.in); err != nil || string(out) != tc.wire {
			t.Fatalf("marshal %+v: %s %v, want %s", tc.in, out, err, tc.wire)
		}
	}
	for wire, want := range map[string]punctual.UniqueFor{
		`"1h"`:                               {Window: time.Hour},
		`{"window": "1m 30s", "dead": true}`: {Window: 90 * time.Second, Dead: true},
		`1500`:                               {Window: 1500 * time.Millisecond},
	} {
		var got punctual.UniqueFor
		if err := json.Unmarshal([]byte(wire), &got); err != nil || got != want {
			t.Fatalf("unmarshal %s: %+v %v, want %+v", wire, got, err, want)
		}
	}
}
