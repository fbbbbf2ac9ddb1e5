package punctual_test

// A schedule's trace. Guards against a client that drops the traceparent on the way to
// the server (Schedule and ScheduleMany) or back (Task.Traceparent, a leased task's).

import (
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

func TestATraceparentIsKeptWithTheTaskAndALeasedTaskShowsIt(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("trace")
	const given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced := punctual.WithTraceparent(bg, given)
	created, err := c.Schedule(traced, q, "traced", punctual.ScheduleParams{Payload: 1})
	if err != nil || created.Task == nil || created.Task.Traceparent != given {
		t.Fatalf("schedule: %v %+v", err, created)
	}
	if task, err := c.Get(bg, q, "traced"); err != nil || task.Traceparent != given {
		t.Fatalf("get: %v %+v", err, task)
	}
	plain, err := c.Schedule(bg, q, "plain", punctual.ScheduleParams{Delay: time.Hour})
	if err != nil || plain.Task.Traceparent != "" {
		t.Fatalf("a task scheduled without one has none: %v %+v", err, plain)
	}
	const other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	items := []punctual.BatchItem{{Key: "b1", ScheduleParams: punctual.ScheduleParams{Delay: time.Hour}}}
	if _, err := c.ScheduleMany(punctual.WithTraceparent(bg, other), q, items); err != nil {
		t.Fatalf("schedule many: %v", err)
	}
	if task, err := c.Get(bg, q, "b1"); err != nil || task.Traceparent != other {
		t.Fatalf("a batch's task: %v %+v", err, task)
	}
	leases, err := c.Lease(bg, q, punctual.LeaseParams{})
	if err != nil || len(leases) != 1 || leases[0].Task.Key != "traced" || leases[0].Task.Traceparent != given {
		t.Fatalf("lease: %v %+v", err, leases)
	}
}
