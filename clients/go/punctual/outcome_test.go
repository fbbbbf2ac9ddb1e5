package punctual_test

// Outcomes as the server reads them. Guards against an outcome constructor whose ack
// body the server reads as another outcome or without its delay, due time or reason
// (a retry after an hour acked as a retry by backoff, a reschedule at a time acked as
// one now), and against a handler's panic or its zero Outcome acked as anything but
// what the worker's doc says.

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

func TestOutcomeBodies(t *testing.T) {
	at := time.Date(2026, 10, 3, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		outcome punctual.Outcome
		kind    punctual.OutcomeKind
		body    string
	}{
		{punctual.Outcome{}, punctual.OutcomeDone, `{"outcome":"done"}`},
		{punctual.Done(), punctual.OutcomeDone, `{"outcome":"done"}`},
		{punctual.DoneOrRetry(nil), punctual.OutcomeDone, `{"outcome":"done"}`},
		{punctual.DoneOrRetry(errors.New("smtp timeout")), punctual.OutcomeRetry, `{"error":"smtp timeout","outcome":"retry"}`},
		{punctual.Retry(nil), punctual.OutcomeRetry, `{"outcome":"retry"}`},
		{punctual.RetryAfter(5*time.Minute, errors.New("busy")), punctual.OutcomeRetry, `{"delay":300000,"error":"busy","outcome":"retry"}`},
		{punctual.Reschedule(24 * time.Hour), punctual.OutcomeReschedule, `{"delay":86400000,"outcome":"reschedule"}`},
		{punctual.RescheduleAt(at), punctual.OutcomeReschedule, `{"due_at":"2026-10-03T10:00:00Z","outcome":"reschedule"}`},
		{punctual.Fail("order not found"), punctual.OutcomeFail, `{"error":"order not found","outcome":"fail"}`},
	} {
		body, err := json.Marshal(c.outcome)
		if err != nil || string(body) != c.body || c.outcome.Kind() != c.kind {
			t.Errorf("%s: body %s (%v) kind %s, want %s and %s", c.outcome, body, err, c.outcome.Kind(), c.body, c.kind)
		}
	}
	ack, _ := json.Marshal(punctual.Ack{LeaseID: "l1", Outcome: punctual.Fail("gone")})
	if string(ack) != `{"error":"gone","lease_id":"l1","outcome":"fail"}` {
		t.Errorf("ack %s", ack)
	}
}

func TestOutcomesAppliedByTheServer(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("outcomes")
	lease := func(key string) punctual.Lease {
		t.Helper()
		if _, err := c.Schedule(bg, q, key, punctual.ScheduleParams{}); err != nil {
			t.Fatal(err)
		}
		leases, err := c.Lease(bg, q, punctual.LeaseParams{Max: 1})
		if err != nil || len(leases) != 1 || leases[0].Task.Key != key {
			t.Fatalf("lease %s: %v %+v", key, err, leases)
		}
		return leases[0]
	}

	before := time.Now()
	if err := c.Ack(bg, lease("retry-after").LeaseID, punctual.RetryAfter(time.Hour, errors.New("busy"))); err != nil {
		t.Fatal(err)
	}
	task, err := c.Get(bg, q, "retry-after")
	if err != nil || task.State != punctual.StateScheduled || task.Attempts != 1 || task.LastError == nil || *task.LastError != "busy" ||
		task.DueAt.Before(before.Add(59*time.Minute)) || task.DueAt.After(time.Now().Add(time.Hour)) {
		t.Fatalf("after RetryAfter(1h): %v %+v", err, task)
	}

	at := time.Now().Add(48 * time.Hour).Truncate(time.Millisecond)
	if err := c.Ack(bg, lease("reschedule-at").LeaseID, punctual.RescheduleAt(at)); err != nil {
		t.Fatal(err)
	}
	if task, err := c.Get(bg, q, "reschedule-at"); err != nil || task.State != punctual.StateScheduled || !task.DueAt.Equal(at) || task.Attempts != 0 {
		t.Fatalf("after RescheduleAt(%s): %v %+v", at, err, task)
	}

	results, err := c.Acks(bg, []punctual.Ack{
		{LeaseID: lease("failed").LeaseID, Outcome: punctual.Fail("order not found")},
		{LeaseID: "not-a-lease", Outcome: punctual.Done()},
	})
	if err != nil || len(results) != 2 || !results[0].Applied() || results[1].Applied() || results[1].Error == nil {
		t.Fatalf("acks: %v %+v", err, results)
	}
	if task, err := c.Get(bg, q, "failed"); err != nil || task.State != punctual.StateDead || task.LastError == nil || *task.LastError != "order not found" {
		t.Fatalf("after Fail: %v %+v", err, task)
	}

	// A handler's zero Outcome is done; a panic is a retry with the panic's text.
	for _, key := range []string{"zero", "panics"} {
		if _, err := c.Schedule(bg, q, key, punctual.ScheduleParams{}); err != nil {
			t.Fatal(err)
		}
	}
	w := punctual.NewWorker(c, punctual.WorkerOptions{Wait: time.Second})
	w.Handle(q, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome {
		if d.Task.Key == "panics" {
			panic("boom")
		}
		return punctual.Outcome{}
	}, 2)
	stop := runWorker(t, w)
	waitUntil(t, "zero acked done and panics retried", 10*time.Second, func() bool {
		_, gone := c.Get(bg, q, "zero")
		retried, err := c.Get(bg, q, "panics")
		return errors.Is(gone, punctual.ErrNotFound) && err == nil && retried.Attempts >= 1 &&
			retried.LastError != nil && *retried.LastError == "handler panicked: boom"
	})
	stop()
}
