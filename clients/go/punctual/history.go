package punctual

import (
	"encoding/json"
	"time"
)

// HistoryEventKind is what happened to a task, in its history.
type HistoryEventKind string

// The events of a task's history. HistoryRetried and HistoryDeleted are a dead task put
// back or removed (by hand, or deleted by the dead-task retention).
const (
	HistoryCreated   HistoryEventKind = "created"
	HistoryReplaced  HistoryEventKind = "replaced"
	HistoryCancelled HistoryEventKind = "cancelled"
	HistoryPurged    HistoryEventKind = "purged"
	HistoryLeased    HistoryEventKind = "leased"
	HistoryExtended  HistoryEventKind = "extended"
	HistoryReleased  HistoryEventKind = "released"
	HistoryAcked     HistoryEventKind = "acked"
	HistoryExpired   HistoryEventKind = "expired"
	HistoryRetried   HistoryEventKind = "retried"
	HistoryDeleted   HistoryEventKind = "deleted"
	HistoryImported  HistoryEventKind = "imported"
)

// AckedOutcome is how an acked try ended, in a task's history.
type AckedOutcome string

// The outcomes of an acked try.
const (
	AckedDone       AckedOutcome = "done"
	AckedRetry      AckedOutcome = "retry"
	AckedReschedule AckedOutcome = "reschedule"
	AckedDead       AckedOutcome = "dead"
)

// TaskHistory is what happened to a task, also once it is gone: its Events, oldest
// first (at most the latest 100), kept for RetentionMs milliseconds after the latest
// (the queue's history_retention).
type TaskHistory struct {
	Queue       string         `json:"queue"`
	Key         string         `json:"key"`
	RetentionMs int64          `json:"retention_ms"`
	Events      []HistoryEvent `json:"events"`
}

// HistoryEvent is one event of a task's history. A field that does not apply to the
// event is nil (Changed empty).
type HistoryEvent struct {
	At    time.Time        `json:"at"`
	Event HistoryEventKind `json:"event"`
	State TaskState        `json:"state"` // after the event: StateScheduled, StateLeased, StateDead or StateGone
	// By is the name of the token that made the change; nil for the server's own work
	// (an expiry) and on a server without tokens.
	By             *string       `json:"by"`
	Attempt        *int          `json:"attempt"`          // the try (leased, acked, expired)
	Lease          *uint64       `json:"lease"`            // the lease's number: each lease of the task raises it
	DueAt          *time.Time    `json:"due_at"`           // when the task is due after the event
	LeaseExpiresAt *time.Time    `json:"lease_expires_at"` // when the lease ends (leased, extended)
	Outcome        *AckedOutcome `json:"outcome"`          // how an acked try ended
	Error          *string       `json:"error"`            // the handler's error, or why the lease expired
	// Changed is what a replace changed: "due_at", "payload", "tags", "priority",
	// "group", "target", "policies".
	Changed []string `json:"changed"`
	Tag     *string  `json:"tag"` // a cancel by tag: the tag
	// A push delivery's ack: how long the delivery took, the HTTP status the far end
	// answered and the first bytes (at most 200) of its answer.
	TookMs *int64  `json:"took_ms"`
	Status *int    `json:"status"`
	Answer *string `json:"answer"`
	// A lease (leased only): Node is the name of the server node that handed it out,
	// e.g. "web-1:7575 (pid 4242)" (nil for a lease taken through the library without a
	// node name); DeliveryID is the lease's delivery id, the one its Lease and a push
	// delivery carry, the same for every try of one occurrence.
	Node       *string `json:"node"`
	DeliveryID *string `json:"delivery_id"`
}

// AuditAction is what an entry of the audit log records.
type AuditAction string

// The actions of the audit log.
const (
	AuditQueueSettingsSet   AuditAction = "queue.settings.set"
	AuditQueueSettingsClear AuditAction = "queue.settings.clear"
	AuditQueuePause         AuditAction = "queue.pause"
	AuditQueueResume        AuditAction = "queue.resume"
	AuditQueuePurge         AuditAction = "queue.purge"
	AuditCalendarSet        AuditAction = "calendar.set"
	AuditCalendarRemove     AuditAction = "calendar.remove"
	AuditAccessReload       AuditAction = "access.reload"
)

// AuditEntry is one entry of the server's audit log: an operator's change, when, and by
// which token's name (By; nil on a server without tokens and for a reload of the config
// file by SIGHUP). Queue or Calendar names what it changed (nil where it does not
// apply); Detail is the JSON object the server adds, as it wrote it (nil without one;
// DecodeDetail reads it into a value of yours).
type AuditEntry struct {
	At       time.Time       `json:"at"`
	By       *string         `json:"by"`
	Action   AuditAction     `json:"action"`
	Queue    *string         `json:"queue"`
	Calendar *string         `json:"calendar"`
	Detail   json.RawMessage `json:"detail"`
}

// DecodeDetail unmarshals the entry's detail into v (no detail leaves v as it is).
func (e *AuditEntry) DecodeDetail(v any) error {
	if len(e.Detail) == 0 {
		return nil
	}
	return json.Unmarshal(e.Detail, v)
}

// AuditParams pick a page of the audit log: at most Limit entries (1–1000; 0: the
// server's 100) from Cursor (a page's NextCursor; "": the newest).
type AuditParams struct {
	Limit  int
	Cursor string
}

// AuditPage is one page of the audit log, newest first; NextCursor is nil at the end.
type AuditPage struct {
	Entries    []AuditEntry `json:"entries"`
	NextCursor *string      `json:"next_cursor"`
}
