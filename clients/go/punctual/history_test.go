package punctual_test

// A task's history and the audit log against the real server. Guards against a history
// or an audit entry read wrong (an event's kind, its state after the event, what a
// replace changed, a field the event leaves out that is not nil), a history of an
// unknown key that is not ErrNotFound, and an audit log whose pages or iterator lose or
// repeat an entry.

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

func TestHistoryOfAScheduledReplacedCancelledTask(t *testing.T) {
	c := startServer(t, serverOpts{}).client()
	q := uniqueQueue("history")
	before := time.Now().Add(-time.Second)
	if _, err := c.Schedule(bg, q, "order/1", punctual.ScheduleParams{Delay: time.Hour, Payload: map[string]int{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Schedule(bg, q, "order/1", punctual.ScheduleParams{Delay: 2 * time.Hour, Payload: map[string]int{"n": 2}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(bg, q, "order/1"); err != nil {
		t.Fatal(err)
	}

	h, err := c.History(bg, q, "order/1")
	if err != nil {
		t.Fatal(err)
	}
	if h.Queue != q || h.Key != "order/1" || h.RetentionMs != (7*24*time.Hour).Milliseconds() {
		t.Fatalf("history of %s/%s kept %d ms", h.Queue, h.Key, h.RetentionMs)
	}
	var kinds []punctual.HistoryEventKind
	var states []punctual.TaskState
	for _, e := range h.Events {
		kinds, states = append(kinds, e.Event), append(states, e.State)
		// A server without tokens names nobody; a schedule is neither a try nor a lease.
		if e.By != nil || e.Attempt != nil || e.Lease != nil || e.LeaseExpiresAt != nil || e.Outcome != nil ||
			e.Error != nil || e.Tag != nil || e.TookMs != nil || e.Status != nil || e.Answer != nil || e.Node != nil ||
			e.DeliveryID != nil {
			t.Errorf("%s: a field that does not apply is set: %+v", e.Event, e)
		}
	}
	wantKinds := []punctual.HistoryEventKind{punctual.HistoryCreated, punctual.HistoryReplaced, punctual.HistoryCancelled}
	wantStates := []punctual.TaskState{punctual.StateScheduled, punctual.StateScheduled, punctual.StateGone}
	if !reflect.DeepEqual(kinds, wantKinds) || !reflect.DeepEqual(states, wantStates) {
		t.Fatalf("events %v in states %v, want %v in %v", kinds, states, wantKinds, wantStates)
	}
	created, replaced, cancelled := h.Events[0], h.Events[1], h.Events[2]
	if !created.At.After(before) || cancelled.At.Before(created.At) {
		t.Errorf("created at %s, cancelled at %s (test began %s)", created.At, cancelled.At, before)
	}
	changed := append([]string(nil), replaced.Changed...)
	sort.Strings(changed)
	if len(created.Changed) != 0 || !reflect.DeepEqual(changed, []string{"due_at", "payload"}) {
		t.Errorf("changed: created %v, replaced %v", created.Changed, replaced.Changed)
	}
	if created.DueAt == nil || replaced.DueAt == nil || replaced.DueAt.Sub(*created.DueAt) < 59*time.Minute || cancelled.DueAt != nil {
		t.Errorf("due times: %v, %v, %v", created.DueAt, replaced.DueAt, cancelled.DueAt)
	}

	if _, err := c.Get(bg, q, "order/1"); !errors.Is(err, punctual.ErrNotFound) {
		t.Errorf("get of the cancelled task: %v, want ErrNotFound", err)
	}
	if _, err := c.History(bg, q, "never-scheduled"); !errors.Is(err, punctual.ErrNotFound) {
		t.Errorf("history of an unknown key: %v, want ErrNotFound", err)
	}
}

func TestHistoryOfAFailedTryAndACancelByTag(t *testing.T) {
	c := startServer(t, serverOpts{}).client()
	q := uniqueQueue("history")
	if _, err := c.Schedule(bg, q, "k", punctual.ScheduleParams{MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	leases, err := c.Lease(bg, q, punctual.LeaseParams{Max: 1, Lease: 30 * time.Second})
	if err != nil || len(leases) != 1 {
		t.Fatalf("lease: %v %v", leases, err)
	}
	if err := c.Ack(bg, leases[0].LeaseID, punctual.Fail("card declined")); err != nil {
		t.Fatal(err)
	}
	h, err := c.History(bg, q, "k")
	if err != nil || len(h.Events) != 3 {
		t.Fatalf("history: %+v %v", h, err)
	}
	leased, acked := h.Events[1], h.Events[2]
	if leased.Event != punctual.HistoryLeased || leased.State != punctual.StateLeased || leased.Attempt == nil || *leased.Attempt != 1 ||
		leased.Lease == nil || leased.LeaseExpiresAt == nil || !leased.LeaseExpiresAt.Equal(leases[0].ExpiresAt) {
		t.Errorf("leased: %+v (lease %+v)", leased, leases[0])
	}
	if acked.Event != punctual.HistoryAcked || acked.State != punctual.StateDead || acked.Attempt == nil || *acked.Attempt != 1 ||
		acked.Lease == nil || leased.Lease == nil || *acked.Lease != *leased.Lease ||
		acked.Outcome == nil || *acked.Outcome != punctual.AckedDead || acked.Error == nil || *acked.Error != "card declined" {
		t.Errorf("acked: %+v", acked)
	}

	due := time.Now().Add(time.Hour)
	for _, tag := range []string{"a", "b"} {
		if _, err := c.Schedule(bg, q, "t", punctual.ScheduleParams{DueAt: due, Tags: []string{tag}}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.CancelTag(bg, q, "b"); err != nil || n != 1 {
		t.Fatalf("cancel tag b: %d %v", n, err)
	}
	h, err = c.History(bg, q, "t")
	if err != nil || len(h.Events) != 3 {
		t.Fatalf("history: %+v %v", h, err)
	}
	if !reflect.DeepEqual(h.Events[1].Changed, []string{"tags"}) {
		t.Errorf("replaced changed %v, want [tags]", h.Events[1].Changed)
	}
	if e := h.Events[2]; e.Event != punctual.HistoryCancelled || e.State != punctual.StateGone || e.Tag == nil || *e.Tag != "b" {
		t.Errorf("cancelled by tag: %+v", e)
	}
}

// TestHistoryEventEveryField reads the fields the server tests do not reach (a token's
// name, a push delivery's answer) from the API's JSON.
func TestHistoryEventEveryField(t *testing.T) {
	var e punctual.HistoryEvent
	err := json.Unmarshal([]byte(`{"at": "2026-12-06T05:56:06.219Z", "event": "acked", "by": "shop", "state": "scheduled",
		"attempt": 2, "lease": 7, "due_at": "2026-12-06T06:00:00.000Z", "lease_expires_at": "2026-12-06T05:56:36.219Z",
		"outcome": "retry", "error": "HTTP 503", "changed": ["target"], "tag": "t", "took_ms": 1500, "status": 503,
		"answer": "busy"}`), &e)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 6, 5, 56, 6, 219e6, time.UTC)
	due, until := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC), at.Add(30*time.Second)
	by, attempt, lease, outcome, msg, tag, took, status, answer := "shop", 2, uint64(7), punctual.AckedRetry, "HTTP 503", "t", int64(1500), 503, "busy"
	want := punctual.HistoryEvent{At: at, Event: punctual.HistoryAcked, State: punctual.StateScheduled, By: &by,
		Attempt: &attempt, Lease: &lease, DueAt: &due, LeaseExpiresAt: &until, Outcome: &outcome, Error: &msg,
		Changed: []string{"target"}, Tag: &tag, TookMs: &took, Status: &status, Answer: &answer}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("read %+v, want %+v", e, want)
	}
	// Node and DeliveryID come on a leased event only (want leaves them nil on the acked one).
	var leased punctual.HistoryEvent
	err = json.Unmarshal([]byte(`{"at": "2026-12-06T05:56:06.219Z", "event": "leased", "state": "leased", "attempt": 2,
		"lease": 7, "lease_expires_at": "2026-12-06T05:56:36.219Z", "node": "web-1:7575 (pid 4242)",
		"delivery_id": "0000000000001-7f-1-1"}`), &leased)
	if err != nil {
		t.Fatal(err)
	}
	if leased.Event != punctual.HistoryLeased || leased.Node == nil || *leased.Node != "web-1:7575 (pid 4242)" ||
		leased.DeliveryID == nil || *leased.DeliveryID != "0000000000001-7f-1-1" {
		t.Errorf("read %+v, want its node and delivery id", leased)
	}
	var a punctual.AuditEntry
	if err := json.Unmarshal([]byte(`{"at": "2026-12-06T05:56:06.219Z", "by": "ops", "action": "calendar.set",
		"calendar": "cn-office", "detail": {"version": 2}}`), &a); err != nil {
		t.Fatal(err)
	}
	var detail struct{ Version int }
	if err := a.DecodeDetail(&detail); err != nil || a.Action != punctual.AuditCalendarSet || a.By == nil || *a.By != "ops" ||
		a.Calendar == nil || *a.Calendar != "cn-office" || a.Queue != nil || detail.Version != 2 {
		t.Errorf("read %+v (detail %+v, %v)", a, detail, err)
	}
}

func TestAuditOfAPauseAndAResume(t *testing.T) {
	// The audit log is the server's: a server of the test's own holds only its entries.
	c := startServer(t, serverOpts{}).client()
	q := uniqueQueue("audit")
	if page, err := c.Audit(bg, punctual.AuditParams{}); err != nil || len(page.Entries) != 0 || page.NextCursor != nil {
		t.Fatalf("the audit log of a new server: %+v %v", page, err)
	}
	if _, err := c.Pause(bg, q); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resume(bg, q); err != nil {
		t.Fatal(err)
	}

	first, err := c.Audit(bg, punctual.AuditParams{Limit: 1})
	if err != nil || len(first.Entries) != 1 || first.NextCursor == nil {
		t.Fatalf("first page: %+v %v", first, err)
	}
	resumed := first.Entries[0]
	if resumed.Action != punctual.AuditQueueResume || resumed.Queue == nil || *resumed.Queue != q {
		t.Errorf("newest entry: %+v", resumed)
	}
	second, err := c.Audit(bg, punctual.AuditParams{Limit: 1, Cursor: *first.NextCursor})
	if err != nil || len(second.Entries) != 1 {
		t.Fatalf("second page: %+v %v", second, err)
	}
	paused := second.Entries[0]
	if paused.Action != punctual.AuditQueuePause || paused.Queue == nil || *paused.Queue != q || paused.By != nil ||
		paused.Calendar != nil || paused.At.After(resumed.At) {
		t.Errorf("older entry: %+v", paused)
	}
	var detail map[string]any
	if err := paused.DecodeDetail(&detail); err != nil {
		t.Errorf("detail %s: %v", paused.Detail, err)
	}

	var walked []punctual.AuditEntry
	it := c.AuditEntries(punctual.AuditParams{Limit: 1})
	for it.Next(bg) {
		walked = append(walked, it.Entry())
	}
	if err := it.Err(); err != nil || !reflect.DeepEqual(walked, []punctual.AuditEntry{resumed, paused}) {
		t.Errorf("walked %+v (%v), want the two pages' entries", walked, err)
	}
	from := c.AuditEntries(punctual.AuditParams{Limit: 1, Cursor: *first.NextCursor})
	if !from.Next(bg) || from.Entry().Action != punctual.AuditQueuePause || from.Next(bg) || from.Err() != nil {
		t.Errorf("walk from the second page: %+v %v", from.Entry(), from.Err())
	}

	if _, err := c.PutSettings(bg, q, map[string]any{"group_concurrency": 2}, 0); err != nil {
		t.Fatal(err)
	}
	newest, err := c.Audit(bg, punctual.AuditParams{Limit: 1})
	if err != nil || len(newest.Entries) != 1 {
		t.Fatalf("newest entry: %+v %v", newest, err)
	}
	var settings struct {
		GroupConcurrency int `json:"group_concurrency"`
	}
	if e := newest.Entries[0]; e.Action != punctual.AuditQueueSettingsSet || e.Queue == nil || *e.Queue != q ||
		e.DecodeDetail(&settings) != nil || settings.GroupConcurrency != 2 {
		t.Errorf("settings entry: %+v (detail %s)", e, e.Detail)
	}
	var refused *punctual.Error
	if _, err := c.Audit(bg, punctual.AuditParams{Limit: 1001}); !errors.Is(err, punctual.ErrInvalidArgument) ||
		!errors.As(err, &refused) || refused.Field != "limit" {
		t.Errorf("a page of 1001: %v, want ErrInvalidArgument on limit", err)
	}
}
