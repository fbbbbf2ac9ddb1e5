package punctual_test

// Scenario 17 of clients/SCENARIOS.md: missed occurrences. Guards against a client that
// drops a timing policy on the way to the server (a repeat that catches up nothing, a
// late task that fires anyway), one that misreads the policies a task shows (durations
// as the server writes them), a repeat under OverlapAllow whose occurrences do not fire
// as tasks of their own, and a Lease or a Delivery that does not say which
// occurrence it stands for (ScheduledFor) and how many it stands in for (Missed).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

// policies are a task's timing policies, to compare in one go.
type policies struct {
	Calendar     string
	Misfire      punctual.Misfire
	MisfireAfter time.Duration
	CatchUpMax   int
	Overlap      punctual.Overlap
	Jitter       time.Duration
}

func policiesOf(t *punctual.Task) policies {
	p := policies{"", t.Misfire, t.MisfireAfter, t.CatchUpMax, t.Overlap, t.Jitter}
	if t.Calendar != nil {
		p.Calendar = *t.Calendar
	}
	return p
}

// ticksDue: the occurrences of a repeat every second after due that are due at at.
func ticksDue(due, at time.Time) int {
	if at.Before(due) {
		return 0
	}
	return int(at.Sub(due) / time.Second)
}

func TestS17MissedOccurrences(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s17")
	office := fmt.Sprintf("go-office-%d", time.Now().UnixNano())
	hours := map[time.Weekday][]string{}
	for day := time.Monday; day <= time.Friday; day++ {
		hours[day] = []string{"09:00-18:00"}
	}
	if _, err := c.PutCalendar(bg, office, punctual.CalendarSpec{TZ: "Asia/Shanghai", Hours: hours}, punctual.IfAbsent); err != nil {
		t.Fatalf("put calendar: %v", err)
	}
	daily, err := c.Schedule(bg, q, "daily", punctual.ScheduleParams{
		Repeat: &punctual.Repeat{Every: 24 * time.Hour}, Calendar: office, Misfire: punctual.MisfireFireAll,
		CatchUpMax: 3, Overlap: punctual.OverlapQueue, Jitter: 30 * time.Second,
	})
	want := policies{office, punctual.MisfireFireAll, time.Minute, 3, punctual.OverlapQueue, 30 * time.Second}
	if err != nil || policiesOf(daily.Task) != want {
		t.Fatalf("schedule daily: %v %+v", err, daily)
	}
	if got, err := c.Get(bg, q, "daily"); err != nil || !reflect.DeepEqual(got, daily.Task) {
		t.Fatalf("get daily: %v %+v, want %+v", err, got, daily.Task)
	}

	batch, err := c.ScheduleMany(bg, q, []punctual.BatchItem{{Key: "digest", ScheduleParams: punctual.ScheduleParams{
		Repeat: &punctual.Repeat{Every: 24 * time.Hour}, Misfire: punctual.MisfireSkip, MisfireAfter: 2 * time.Hour,
		Jitter: 30 * time.Second,
	}}})
	if err != nil || batch[0].Outcome != punctual.ScheduleCreated {
		t.Fatalf("batch: %v %+v", err, batch)
	}
	digest, err := c.Get(bg, q, "digest")
	if err != nil || digest.Misfire != punctual.MisfireSkip || digest.MisfireAfter != 2*time.Hour || digest.Jitter != 30*time.Second {
		t.Fatalf("get digest: %v %+v", err, digest)
	}

	plain, err := c.Schedule(bg, q, "plain", punctual.ScheduleParams{Delay: time.Hour})
	defaults := policies{"", punctual.MisfireFireOnce, time.Minute, 10, punctual.OverlapSkip, 0}
	if err != nil || plain.Task.Calendar != nil || policiesOf(plain.Task) != defaults {
		t.Fatalf("schedule plain: %v %+v", err, plain)
	}

	var e *punctual.Error
	_, err = c.Schedule(bg, q, "sometimes", punctual.ScheduleParams{
		Repeat: &punctual.Repeat{Every: time.Hour}, Overlap: punctual.Overlap("sometimes"),
	})
	if !errors.Is(err, punctual.ErrInvalidArgument) || !errors.As(err, &e) || e.Field != "overlap" {
		t.Fatalf("overlap sometimes: %v", err)
	}
	if _, err := c.Get(bg, q, "sometimes"); !errors.Is(err, punctual.ErrNotFound) {
		t.Fatalf("the refused overlap was stored: %v", err)
	}

	// Under allow each occurrence fires as a task of its own, and the repeat moves on.
	allowQueue := q + ".allow"
	allowed, err := c.Schedule(bg, allowQueue, "tick", punctual.ScheduleParams{
		Repeat: &punctual.Repeat{Every: time.Second}, Payload: map[string]int{"n": 1}, Overlap: punctual.OverlapAllow,
	})
	if err != nil || allowed.Task.Overlap != punctual.OverlapAllow {
		t.Fatalf("schedule under allow: %v %+v", err, allowed)
	}
	if got, err := c.Get(bg, allowQueue, "tick"); err != nil || got.Overlap != punctual.OverlapAllow {
		t.Fatalf("get under allow: %v %+v", err, got)
	}
	var occurrence punctual.Lease
	waitUntil(t, "an occurrence", 5*time.Second, func() bool {
		leases, err := c.Lease(bg, allowQueue, punctual.LeaseParams{Wait: time.Second})
		if err != nil || len(leases) == 0 {
			return false
		}
		occurrence = leases[0]
		return true
	})
	if occurrence.ScheduledFor.Before(allowed.Task.DueAt) || occurrence.Missed != 0 {
		t.Fatalf("occurrence %+v of a repeat due at %v", occurrence, allowed.Task.DueAt)
	}
	if want := "tick@" + occurrence.ScheduledFor.UTC().Format("2006-01-02T15:04:05.000Z07:00"); occurrence.Task.Key != want {
		t.Fatalf("occurrence key %q, want %q", occurrence.Task.Key, want)
	}
	var payload map[string]int
	if err := json.Unmarshal(occurrence.Task.Payload, &payload); err != nil || payload["n"] != 1 || len(payload) != 1 {
		t.Fatalf("occurrence payload %s: %v", occurrence.Task.Payload, err)
	}
	if repeat, err := c.Get(bg, allowQueue, "tick"); err != nil || repeat.State != punctual.StateScheduled || !repeat.DueAt.After(occurrence.ScheduledFor) {
		t.Fatalf("the repeat after its occurrence: %v %+v", err, repeat)
	}

	// A due_at in the past means now: lateness takes real time, so the clock is waited on.
	late := q + ".late"
	schedule := func(key string, p punctual.ScheduleParams) *punctual.Task {
		r, err := c.Schedule(bg, late, key, p)
		if err != nil {
			t.Fatalf("schedule %s: %v", key, err)
		}
		return r.Task
	}
	tick := schedule("tick", punctual.ScheduleParams{
		Repeat: &punctual.Repeat{Every: time.Second}, Misfire: punctual.MisfireFireAll, CatchUpMax: 2,
	})
	skipped := schedule("late", punctual.ScheduleParams{Misfire: punctual.MisfireSkip, MisfireAfter: time.Second})
	once := schedule("once", punctual.ScheduleParams{})
	if skipped.Misfire != punctual.MisfireSkip || skipped.MisfireAfter != time.Second {
		t.Fatalf("late: %+v", skipped)
	}
	ready := once.DueAt.Add(3*time.Second + 20*time.Millisecond)
	waitUntil(t, "3 s past the due times", 10*time.Second, func() bool { return time.Now().After(ready) })

	before := time.Now()
	leased, err := c.Lease(bg, late, punctual.LeaseParams{Max: 10})
	after := time.Now()
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	leases := map[string]punctual.Lease{}
	for _, l := range leased {
		leases[l.Task.Key] = l
	}
	if _, fired := leases["late"]; fired || len(leases) != 2 {
		t.Fatalf("want tick and once, the late one under skip not firing: %+v", leased)
	}
	if _, err := c.Get(bg, late, "late"); !errors.Is(err, punctual.ErrNotFound) {
		t.Fatalf("a one-off skipped ends: %v", err)
	}
	if l := leases["once"]; !l.ScheduledFor.Equal(once.DueAt) || l.Missed != 0 {
		t.Fatalf("once: scheduled_for %v missed %d, want %v and 0", l.ScheduledFor, l.Missed, once.DueAt)
	}
	first := leases["tick"]
	low, high := ticksDue(tick.DueAt, before)-2, ticksDue(tick.DueAt, after)-2
	if !first.ScheduledFor.Equal(tick.DueAt) || first.Attempt != 1 || first.Missed < low || first.Missed < 1 || first.Missed > high {
		t.Fatalf("tick: scheduled_for %v attempt %d missed %d, want %v, 1 and [%d, %d]",
			first.ScheduledFor, first.Attempt, first.Missed, tick.DueAt, low, high)
	}
	if err := c.Ack(bg, leases["once"].LeaseID, punctual.Done()); err != nil {
		t.Fatalf("ack once: %v", err)
	}
	if err := c.Ack(bg, first.LeaseID, punctual.Retry(errors.New("again"))); err != nil {
		t.Fatalf("ack tick: %v", err)
	}

	var seen events
	w := punctual.NewWorker(c, punctual.WorkerOptions{Wait: time.Second})
	w.Handle(late, func(ctx context.Context, d *punctual.Delivery) punctual.Outcome {
		seen.add(d)
		return punctual.Fail("seen") // dead: the repeat stops here
	}, 1)
	stop := runWorker(t, w)
	waitUntil(t, "the retry's delivery", 10*time.Second, func() bool { return seen.len() >= 1 })
	stop()
	again, _ := seen.get(0)
	if again.Task.Key != "tick" || again.Attempt != 2 || again.DeliveryID != first.DeliveryID {
		t.Fatalf("the retry: %+v", again)
	}
	if !again.ScheduledFor.Equal(tick.DueAt) || again.Missed != 0 {
		t.Fatalf("a retry stands for the same occurrence: scheduled_for %v missed %d", again.ScheduledFor, again.Missed)
	}
}

// A task's timing policies read from the server's form, and through a task's own JSON.
func TestTimingPoliciesJSON(t *testing.T) {
	task := punctual.Task{Key: "k", Misfire: punctual.MisfireSkip, MisfireAfter: 2 * time.Hour, Jitter: 30 * time.Second}
	data, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	var back punctual.Task
	if err := json.Unmarshal(data, &back); err != nil || policiesOf(&back) != policiesOf(&task) {
		t.Fatalf("round trip: %v %s %+v", err, data, back)
	}
	var shown punctual.Task
	wire := `{"key":"k","calendar":"office","misfire":"fire_all","misfire_after":"1m","catch_up_max":3,"overlap":"queue","jitter":null}`
	if err := json.Unmarshal([]byte(wire), &shown); err != nil {
		t.Fatal(err)
	}
	if want := (policies{"office", punctual.MisfireFireAll, time.Minute, 3, punctual.OverlapQueue, 0}); policiesOf(&shown) != want {
		t.Fatalf("read %+v", policiesOf(&shown))
	}
}
