package punctual_test

// Scenario 14 of clients/SCENARIOS.md: groups. Guards against a client that drops
// ScheduleParams.Group on the way to the server or Task.Group on the way back, and
// against a groups listing that loses a count or the cursor. An empty Group is "no
// group" in Go (zero values are not sent), so the refusal is checked with a control
// character, which the server refuses the same way (field "group").

import (
	"errors"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

func groupOf(task punctual.Task) string {
	if task.Group == nil {
		return "<none>"
	}
	return *task.Group
}

func TestS14Groups(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s14")
	settings, err := c.PutSettings(bg, q, map[string]any{"group_concurrency": 1}, 0)
	if err != nil || settings.GroupConcurrency == nil || *settings.GroupConcurrency != 1 {
		t.Fatalf("put group_concurrency 1: %v %+v", err, settings)
	}
	now := time.Now()
	for n, key := range []string{"a1", "a2", "a3"} {
		p := punctual.ScheduleParams{Payload: map[string]int{"n": n}, Group: "customer-a", DueAt: now.Add(time.Duration(n-3) * time.Second)}
		if _, err := c.Schedule(bg, q, key, p); err != nil {
			t.Fatalf("schedule %s: %v", key, err)
		}
	}
	batch, err := c.ScheduleMany(bg, q, []punctual.BatchItem{{Key: "b1", ScheduleParams: punctual.ScheduleParams{Group: "customer-b"}}})
	if err != nil || batch[0].Error != nil {
		t.Fatalf("schedule b1: %v %+v", err, batch)
	}
	for key, want := range map[string]string{"a2": "customer-a", "b1": "customer-b"} {
		if task, err := c.Get(bg, q, key); err != nil || groupOf(*task) != want {
			t.Fatalf("get %s: %v, group %s, want %s", key, err, groupOf(*task), want)
		}
	}

	leases, err := c.Lease(bg, q, punctual.LeaseParams{Max: 10})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	var got []string
	for _, l := range leases {
		got = append(got, l.Task.Key+"@"+groupOf(l.Task))
	}
	sort.Strings(got)
	if want := []string{"a1@customer-a", "b1@customer-b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("leased %v, want %v", got, want)
	}

	page, err := c.Groups(bg, q, punctual.GroupsParams{Limit: 10})
	if err != nil {
		t.Fatalf("groups: %v", err)
	}
	want := []punctual.GroupCounts{
		{Group: "customer-a", Scheduled: 2, Leased: 1},
		{Group: "customer-b", Scheduled: 0, Leased: 1},
	}
	if !reflect.DeepEqual(page.Groups, want) || page.NextCursor != nil {
		t.Fatalf("groups %+v next %v, want %+v and no cursor", page.Groups, page.NextCursor, want)
	}

	for _, l := range leases {
		if l.Task.Key == "a1" {
			if err := c.Ack(bg, l.LeaseID, punctual.Done()); err != nil {
				t.Fatalf("ack a1: %v", err)
			}
		}
	}
	next, err := c.Lease(bg, q, punctual.LeaseParams{Max: 10})
	if err != nil || len(next) != 1 || next[0].Task.Key != "a2" {
		t.Fatalf("lease after a1's ack: %v %+v, want a2 alone", err, next)
	}

	var e *punctual.Error
	_, err = c.Schedule(bg, q, "c1", punctual.ScheduleParams{Group: "customer\x07"})
	if !errors.Is(err, punctual.ErrInvalidArgument) || !errors.As(err, &e) || e.Field != "group" || e.Status != 400 {
		t.Fatalf("a control character in group: %v", err)
	}
	if _, err := c.Get(bg, q, "c1"); !errors.Is(err, punctual.ErrNotFound) {
		t.Fatalf("the refused c1 was stored: %v", err)
	}
}

func TestGroupsPageByPage(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("groups")
	var items []punctual.BatchItem
	for n, group := range []string{"gamma", "alpha", "beta", "alpha"} {
		items = append(items, punctual.BatchItem{Key: "k" + string(rune('0'+n)), ScheduleParams: punctual.ScheduleParams{Delay: time.Hour, Group: group}})
	}
	items = append(items, punctual.BatchItem{Key: "bad", ScheduleParams: punctual.ScheduleParams{Delay: time.Hour, Group: "tenant\x07"}})
	results, err := c.ScheduleMany(bg, q, items)
	if err != nil || results[0].Error != nil || results[4].Error == nil || results[4].Error.Field != "tasks[4].group" {
		t.Fatalf("batch: %v %+v", err, results)
	}
	first, err := c.Groups(bg, q, punctual.GroupsParams{Limit: 2})
	if err != nil || first.NextCursor == nil {
		t.Fatalf("first page: %v %+v", err, first)
	}
	if want := []punctual.GroupCounts{{Group: "alpha", Scheduled: 2}, {Group: "beta", Scheduled: 1}}; !reflect.DeepEqual(first.Groups, want) {
		t.Fatalf("first page %+v, want %+v", first.Groups, want)
	}
	last, err := c.Groups(bg, q, punctual.GroupsParams{Limit: 2, Cursor: *first.NextCursor})
	if err != nil || last.NextCursor != nil || !reflect.DeepEqual(last.Groups, []punctual.GroupCounts{{Group: "gamma", Scheduled: 1}}) {
		t.Fatalf("last page: %v %+v", err, last)
	}
	if task, err := c.Get(bg, q, "k0"); err != nil || task.Group == nil || *task.Group != "gamma" {
		t.Fatalf("get k0: %v %+v", err, task)
	}
	if none, err := c.Groups(bg, q+".none", punctual.GroupsParams{}); err != nil || len(none.Groups) != 0 {
		t.Fatalf("a queue without groups: %v %+v", err, none)
	}
}
