package punctual

// Outcomes: what becomes of a leased task, as a handler answers it (HandlerFunc) and as
// an ack sends it (Client.Ack, Client.Acks). The set is closed: an Outcome is made only
// by its constructors (Done, Retry, RetryAfter, Reschedule, RescheduleAt, Fail, and
// DoneOrRetry for a plain error), and its zero value is Done.

import (
	"encoding/json"
	"time"
)

// OutcomeKind is an Outcome's kind, named as the API's ack names it.
type OutcomeKind string

// The kinds of Outcome.
const (
	// OutcomeDone: the task is deleted, or a repeat moves to its next occurrence.
	OutcomeDone OutcomeKind = "done"
	// OutcomeRetry: another try of the same occurrence, after the task's backoff or
	// the Outcome's Delay; dead after max_attempts.
	OutcomeRetry OutcomeKind = "retry"
	// OutcomeReschedule: a new occurrence after the Outcome's Delay or at its DueAt
	// (attempts start again).
	OutcomeReschedule OutcomeKind = "reschedule"
	// OutcomeFail: the task is dead now, with the reason as its last_error.
	OutcomeFail OutcomeKind = "fail"
)

// Outcome is what becomes of a leased task. Make one with Done, Retry, RetryAfter,
// Reschedule, RescheduleAt, Fail or DoneOrRetry; the zero Outcome is Done.
type Outcome struct {
	kind  OutcomeKind   // "" is done
	delay time.Duration // retry, reschedule: after this long (0: not sent)
	dueAt time.Time     // reschedule: at this time (zero: not sent)
	text  string        // retry, fail: kept as the task's last_error ("": not sent)
}

// Done: the task is deleted, or a repeat moves to its next occurrence.
func Done() Outcome { return Outcome{kind: OutcomeDone} }

// Retry tries the occurrence again after the task's backoff, keeping err's text as
// the task's last_error (nil: none).
func Retry(err error) Outcome { return RetryAfter(0, err) }

// RetryAfter tries the occurrence again after delay (0: the task's backoff), keeping
// err's text as the task's last_error (nil: none).
func RetryAfter(delay time.Duration, err error) Outcome {
	o := Outcome{kind: OutcomeRetry, delay: delay}
	if err != nil {
		o.text = err.Error()
	}
	return o
}

// Reschedule fires the task again after `after`, as a new occurrence ("still pending:
// remind again tomorrow").
func Reschedule(after time.Duration) Outcome {
	return Outcome{kind: OutcomeReschedule, delay: after}
}

// RescheduleAt fires the task again at `at`, as a new occurrence.
func RescheduleAt(at time.Time) Outcome { return Outcome{kind: OutcomeReschedule, dueAt: at} }

// Fail makes the task dead now, with reason as its last_error.
func Fail(reason string) Outcome { return Outcome{kind: OutcomeFail, text: reason} }

// DoneOrRetry is Done when err is nil, else Retry(err): for a handler whose work
// answers an error, `return punctual.DoneOrRetry(send(ctx, order))`.
func DoneOrRetry(err error) Outcome {
	if err != nil {
		return Retry(err)
	}
	return Done()
}

// Kind is the outcome's kind.
func (o Outcome) Kind() OutcomeKind {
	if o.kind == "" {
		return OutcomeDone
	}
	return o.kind
}

// Delay is how long a retry or reschedule waits (0: a retry's backoff, or a
// reschedule at DueAt).
func (o Outcome) Delay() time.Duration { return o.delay }

// DueAt is when a reschedule fires (zero unless made by RescheduleAt).
func (o Outcome) DueAt() time.Time { return o.dueAt }

// Reason is the text a retry or fail keeps as the task's last_error ("" for none).
func (o Outcome) Reason() string { return o.text }

// String is the outcome for logs: "retry after 5s: smtp timeout".
func (o Outcome) String() string {
	s := string(o.Kind())
	if o.delay != 0 {
		s += " after " + o.delay.String()
	}
	if !o.dueAt.IsZero() {
		s += " at " + o.dueAt.UTC().Format(time.RFC3339Nano)
	}
	if o.text != "" {
		s += ": " + o.text
	}
	return s
}

// MarshalJSON is the body of an ack with this outcome: {"outcome", "delay", "due_at",
// "error"}, the unset ones left out.
func (o Outcome) MarshalJSON() ([]byte, error) { return json.Marshal(o.body()) }

func (o Outcome) body() map[string]any {
	m := map[string]any{"outcome": o.Kind()}
	if o.delay != 0 {
		m["delay"] = o.delay.Milliseconds()
	}
	if !o.dueAt.IsZero() {
		m["due_at"] = o.dueAt.UTC().Format(time.RFC3339Nano)
	}
	if o.text != "" {
		m["error"] = o.text
	}
	return m
}

// Ack is one lease's outcome, an item of Client.Acks.
type Ack struct {
	LeaseID string
	Outcome Outcome
}

// MarshalJSON sends the outcome's body with the lease id.
func (a Ack) MarshalJSON() ([]byte, error) {
	m := a.Outcome.body()
	m["lease_id"] = a.LeaseID
	return json.Marshal(m)
}

// AckResult is the answer for one ack of Acks: Status 204 when applied, else the
// Error (400: malformed, 404: unknown lease, 409: the lease expired or the task
// changed meanwhile). LeaseID is nil only for an item whose lease_id was not a string.
type AckResult struct {
	LeaseID *string `json:"lease_id"`
	Status  int     `json:"status"`
	Error   *Error  `json:"error,omitempty"`
}

// Applied reports whether the ack was applied (Status 204).
func (r AckResult) Applied() bool { return r.Status == 204 }
