package punctual

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TaskState is where a task stands.
type TaskState string

// The states of a task (docs/state-machine.md).
const (
	StateScheduled TaskState = "scheduled" // waiting for its due time, or due and not yet leased
	StateLeased    TaskState = "leased"    // handed to a worker or being delivered
	StateDead      TaskState = "dead"      // out of attempts, or failed: kept for inspection and RetryDead
	StateDone      TaskState = "done"      // completed; seen only in Completed (a dedupe window's answer)
	StateGone      TaskState = "gone"      // no task any more; seen only in a HistoryEvent
)

// Task is a task as the server shows it. Payload is kept as the JSON the server sent
// (DecodePayload reads it into a value of yours).
type Task struct {
	Queue          string          `json:"queue"`
	Key            string          `json:"key"`
	State          TaskState       `json:"state"` // StateScheduled, StateLeased or StateDead
	DueAt          time.Time       `json:"due_at"`
	Payload        json.RawMessage `json:"payload"`
	Attempts       int             `json:"attempts"`
	MaxAttempts    int             `json:"max_attempts"`
	Backoff        Backoff         `json:"backoff"`
	Repeat         *Repeat         `json:"repeat"`
	Tags           []string        `json:"tags"`
	Version        int64           `json:"version"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	LeaseExpiresAt *time.Time      `json:"lease_expires_at"`
	LastError      *string         `json:"last_error"`
	Target         *Target         `json:"target"`
	Priority       int             `json:"priority"`   // 0–9; higher first among the queue's due tasks
	Group          *string         `json:"group"`      // nil when the task has no group
	UniqueFor      *UniqueFor      `json:"unique_for"` // nil when the task has no dedupe window
	// The timing policies with their effective values (timing.go).
	Calendar     *string       `json:"calendar"` // the working-time calendar; nil without one
	Misfire      Misfire       `json:"misfire"`
	MisfireAfter time.Duration `json:"misfire_after"` // it applies under MisfireSkip
	CatchUpMax   int           `json:"catch_up_max"`  // it applies under MisfireFireAll
	Overlap      Overlap       `json:"overlap"`
	Jitter       time.Duration `json:"jitter"` // 0 without jitter
	// The W3C trace context the task was scheduled with (see WithTraceparent); "" without one.
	Traceparent string `json:"traceparent,omitempty"`
}

// DecodePayload unmarshals the task's payload into v (a JSON null leaves v as it is).
func (t *Task) DecodePayload(v any) error {
	if len(t.Payload) == 0 {
		return nil
	}
	return json.Unmarshal(t.Payload, v)
}

// Backoff is a retry policy: Initial, then ×Factor each attempt, up to Max.
type Backoff struct {
	Initial time.Duration
	Factor  float64
	Max     time.Duration
}

// MarshalJSON sends durations as integer milliseconds; zero fields are left out.
func (b Backoff) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	if b.Initial != 0 {
		m["initial"] = b.Initial.Milliseconds()
	}
	if b.Factor != 0 {
		m["factor"] = b.Factor
	}
	if b.Max != 0 {
		m["max"] = b.Max.Milliseconds()
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the server's duration strings ("1s", "1h 30m") or milliseconds.
func (b *Backoff) UnmarshalJSON(data []byte) error {
	var raw struct {
		Initial json.RawMessage `json:"initial"`
		Factor  float64         `json:"factor"`
		Max     json.RawMessage `json:"max"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	var err error
	if b.Initial, err = decodeDuration(raw.Initial); err != nil {
		return err
	}
	if b.Max, err = decodeDuration(raw.Max); err != nil {
		return err
	}
	b.Factor = raw.Factor
	return nil
}

// Debounce makes a schedule part of a burst: each debounced schedule of a key replaces
// the scheduled task (payload, due time), but the task is never due later than the
// burst's first schedule + MaxWait; a lease ends the burst.
type Debounce struct {
	MaxWait time.Duration
}

// MarshalJSON sends {"max_wait": milliseconds}, 0 included: the server judges it.
func (d Debounce) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"max_wait": d.MaxWait.Milliseconds()})
}

// UniqueFor is a dedupe window: for Window after the key's task completed (done; with
// Dead, also after it went dead), a schedule of the key creates nothing and answers
// kept: after done with the Completed that kept it and no task, while a dead task
// holds its key with that task, untouched.
type UniqueFor struct {
	Window time.Duration
	Dead   bool
}

// MarshalJSON sends Window as milliseconds, or {"window": ms, "dead": true} with Dead;
// a Window of 0 is sent too: the server refuses it (field "unique_for").
func (u UniqueFor) MarshalJSON() ([]byte, error) {
	if u.Dead {
		return json.Marshal(map[string]any{"window": u.Window.Milliseconds(), "dead": true})
	}
	return json.Marshal(u.Window.Milliseconds())
}

// UnmarshalJSON reads the task's form: a duration when held after done only, else
// {"window": …, "dead": true}.
func (u *UniqueFor) UnmarshalJSON(data []byte) error {
	var object struct {
		Window json.RawMessage `json:"window"`
		Dead   bool            `json:"dead"`
	}
	raw := json.RawMessage(data)
	if strings.HasPrefix(strings.TrimSpace(string(data)), "{") {
		if err := json.Unmarshal(data, &object); err != nil {
			return err
		}
		raw = object.Window
	}
	window, err := decodeDuration(raw)
	if err != nil {
		return err
	}
	*u = UniqueFor{Window: window, Dead: object.Dead}
	return nil
}

// Repeat makes a task fire again: every Every, or on a Cron expression in TZ; Times
// counts occurrences in all (0: no limit). CronSyntax reads Cron as CronSpring or
// CronQuartz ("0 0 9 ? * MON-FRI" as their CronExpression reads it); "" is the server's
// default, CronVixie, and a task read back shows "" for it.
type Repeat struct {
	Every      time.Duration
	Cron       string
	TZ         string
	Times      int
	CronSyntax CronSyntax
}

// MarshalJSON sends the set fields, Every as milliseconds.
func (r Repeat) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	if r.Every != 0 {
		m["every"] = r.Every.Milliseconds()
	}
	if r.Cron != "" {
		m["cron"] = r.Cron
	}
	if r.TZ != "" {
		m["tz"] = r.TZ
	}
	if r.Times != 0 {
		m["times"] = r.Times
	}
	if r.CronSyntax != "" {
		m["cron_syntax"] = r.CronSyntax
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the server's form of a repeat.
func (r *Repeat) UnmarshalJSON(data []byte) error {
	var raw struct {
		Every      json.RawMessage `json:"every"`
		Cron       string          `json:"cron"`
		TZ         string          `json:"tz"`
		Times      int             `json:"times"`
		CronSyntax CronSyntax      `json:"cron_syntax"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	every, err := decodeDuration(raw.Every)
	if err != nil {
		return err
	}
	*r = Repeat{Every: every, Cron: raw.Cron, TZ: raw.TZ, Times: raw.Times, CronSyntax: raw.CronSyntax}
	return nil
}

// Target is a task's own HTTP delivery.
type Target struct {
	URL     string
	Method  string
	Headers map[string]string
	Timeout time.Duration
	Body    any // any JSON; nil: the standard delivery body
}

// MarshalJSON sends the set fields, Timeout as milliseconds.
func (t Target) MarshalJSON() ([]byte, error) {
	m := map[string]any{"url": t.URL}
	if t.Method != "" {
		m["method"] = t.Method
	}
	if len(t.Headers) > 0 {
		m["headers"] = t.Headers
	}
	if t.Timeout != 0 {
		m["timeout"] = t.Timeout.Milliseconds()
	}
	if t.Body != nil {
		m["body"] = t.Body
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the server's form of a target.
func (t *Target) UnmarshalJSON(data []byte) error {
	var raw struct {
		URL     string            `json:"url"`
		Method  string            `json:"method"`
		Headers map[string]string `json:"headers"`
		Timeout json.RawMessage   `json:"timeout"`
		Body    json.RawMessage   `json:"body"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	timeout, err := decodeDuration(raw.Timeout)
	if err != nil {
		return err
	}
	*t = Target{URL: raw.URL, Method: raw.Method, Headers: raw.Headers, Timeout: timeout}
	if len(raw.Body) > 0 && string(raw.Body) != "null" {
		t.Body = raw.Body
	}
	return nil
}

// decodeDuration reads a duration as the server writes it: a string such as "1500ms",
// "30s", "1h 30m", "7d", or an integer of milliseconds. Absent or null is zero.
func decodeDuration(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var ms int64
	if json.Unmarshal(raw, &ms) == nil {
		return time.Duration(ms) * time.Millisecond, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("punctual: duration %s: %w", raw, err)
	}
	return ParseDuration(s)
}

// ParseDuration parses the API's duration strings: parts such as "1500ms", "30s",
// "30m", "2h", "7d", optionally separated by spaces ("1h 30m").
func ParseDuration(s string) (time.Duration, error) {
	var total time.Duration
	rest := strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	if rest == "" {
		return 0, fmt.Errorf("punctual: empty duration")
	}
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		j := i
		for j < len(rest) && (rest[j] < '0' || rest[j] > '9') {
			j++
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("punctual: duration %q: %w", s, err)
		}
		var unit time.Duration
		switch rest[i:j] {
		case "ms":
			unit = time.Millisecond
		case "s":
			unit = time.Second
		case "m":
			unit = time.Minute
		case "h":
			unit = time.Hour
		case "d":
			unit = 24 * time.Hour
		default:
			return 0, fmt.Errorf("punctual: duration %q: unknown unit %q", s, rest[i:j])
		}
		total += time.Duration(n * float64(unit))
		rest = rest[j:]
	}
	return total, nil
}

// IfExists says what a schedule does when its key already has a task.
type IfExists string

// The values of ScheduleParams.IfExists; "" is the server's default, IfExistsReplace.
const (
	IfExistsReplace IfExists = "replace" // the task is replaced (outcome ScheduleReplaced)
	IfExistsKeep    IfExists = "keep"    // the task is kept as it is (outcome ScheduleKept)
	IfExistsError   IfExists = "error"   // the schedule fails with ErrConflict
)

// ScheduleParams are the fields of a schedule. Zero values are not sent: neither
// Delay nor DueAt means due now; unset policies take the queue's defaults.
type ScheduleParams struct {
	Delay       time.Duration
	DueAt       time.Time
	Payload     any
	Repeat      *Repeat
	Tags        []string
	MaxAttempts int
	Backoff     *Backoff
	IfExists    IfExists // "": IfExistsReplace
	Target      *Target
	// Priority 0–9: among the queue's tasks already due, higher ones are leased
	// first. 0 is the server's default and is not sent; the server refuses values
	// outside 0–9 (ErrInvalidArgument, field "priority").
	Priority int
	// Debounce (nil: none) sends {"max_wait": …}; the server refuses a MaxWait of 0
	// (field "debounce.max_wait") and a debounce with IfExists keep or error
	// (field "debounce").
	Debounce *Debounce
	// Group puts the task in a group of its queue: due tasks are handed out round
	// robin between groups, and the queue's group_concurrency limits each group's
	// live leases. "" (no group) is not sent; the server refuses control characters
	// (ErrInvalidArgument, field "group").
	Group string
	// UniqueFor (nil: none) is the task's dedupe window: within it after the key's task
	// completed, a schedule of the key stores nothing and answers kept with the
	// completion (ScheduleResult.Completed, BatchResult.Completed).
	UniqueFor *UniqueFor
	// Calendar names a working-time calendar (PutCalendar): Delay counts its working
	// time (a whole number of days counts working days), DueAt needs Align, neither is
	// its next opening; the answer's DueAt is the instant resolved. With Repeat, the
	// repeat runs in its working time. The server refuses a calendar it does not serve
	// (ErrInvalidArgument, field "calendar").
	Calendar string
	// Align (AlignNextOpen): with Calendar, a DueAt outside working hours moves to the
	// next opening.
	Align Align
	// Misfire ("": the server's default, MisfireFireOnce) says what becomes of
	// occurrences missed while no server ran or the queue was paused.
	Misfire Misfire
	// MisfireAfter (MisfireSkip only; 0 is not sent: the server's default, 1 minute):
	// a first try leased later than this past its due time does not fire.
	MisfireAfter time.Duration
	// CatchUpMax (MisfireFireAll only, 1–1000; 0 is not sent: the server's default,
	// 10): at most this many missed occurrences fire.
	CatchUpMax int
	// Overlap ("": the server's default, OverlapSkip) says what becomes of a repeat's
	// occurrences due while its firing is leased.
	Overlap Overlap
	// Jitter (0: none; at most 12h, shorter than a repeat's Every) moves each due time
	// later by a uniform draw in [0, Jitter).
	Jitter time.Duration
}

// MarshalJSON is the body of PUT /v1/queues/{queue}/tasks/{key} for these params, the
// one place their fields become the API's: Client.Schedule sends it, and
// outbox.Table.Schedule stores it as its row's body.
func (p ScheduleParams) MarshalJSON() ([]byte, error) { return json.Marshal(p.body()) }

func (p ScheduleParams) body() map[string]any {
	m := map[string]any{}
	if p.Delay != 0 {
		m["delay"] = p.Delay.Milliseconds()
	}
	if !p.DueAt.IsZero() {
		m["due_at"] = p.DueAt.UTC().Format(time.RFC3339Nano)
	}
	if p.Payload != nil {
		m["payload"] = p.Payload
	}
	if p.Repeat != nil {
		m["repeat"] = p.Repeat
	}
	if p.Tags != nil {
		m["tags"] = p.Tags
	}
	if p.MaxAttempts != 0 {
		m["max_attempts"] = p.MaxAttempts
	}
	if p.Backoff != nil {
		m["backoff"] = p.Backoff
	}
	if p.IfExists != "" {
		m["if_exists"] = p.IfExists
	}
	if p.Target != nil {
		m["target"] = p.Target
	}
	if p.Priority != 0 {
		m["priority"] = p.Priority
	}
	if p.Debounce != nil {
		m["debounce"] = p.Debounce
	}
	if p.Group != "" {
		m["group"] = p.Group
	}
	if p.UniqueFor != nil {
		m["unique_for"] = p.UniqueFor
	}
	if p.Calendar != "" {
		m["calendar"] = p.Calendar
	}
	if p.Align != "" {
		m["align"] = p.Align
	}
	p.timingBody(m)
	return m
}

// ScheduleOutcome is what a schedule did.
type ScheduleOutcome string

// The outcomes of a schedule.
const (
	ScheduleCreated  ScheduleOutcome = "created"  // a new task (HTTP 201)
	ScheduleReplaced ScheduleOutcome = "replaced" // the key's task replaced
	ScheduleKept     ScheduleOutcome = "kept"     // nothing changed: IfExistsKeep, or a dedupe window
)

// ScheduleResult is the answer to a schedule: Outcome created, replaced or kept, and
// the Task. Kept by the dedupe window of a task of the key that completed, Task is nil
// and Completed says what completed; otherwise Completed is nil.
type ScheduleResult struct {
	Outcome   ScheduleOutcome `json:"outcome"`
	Task      *Task           `json:"task"`
	Completed *Completed      `json:"completed"`
}

// Completed is the task that completed under a key within its dedupe window, and so
// kept a schedule of the key: until UniqueUntil (CompletedAt + the window) schedules
// of the key create nothing.
type Completed struct {
	Queue       string    `json:"queue"`
	Key         string    `json:"key"`
	ID          uint64    `json:"id"`
	State       TaskState `json:"state"` // StateDone
	CompletedAt time.Time `json:"completed_at"`
	Attempts    int       `json:"attempts"`   // of its last occurrence, failed or expired
	Occurrence  int       `json:"occurrence"` // the occurrence that completed, from 1
	UniqueUntil time.Time `json:"unique_until"`
}

// BatchItem is one task of ScheduleMany.
type BatchItem struct {
	Key string
	ScheduleParams
}

// MarshalJSON is the item as ScheduleMany sends it: the schedule's body with its key
// (without it, the embedded ScheduleParams' MarshalJSON would drop the key).
func (it BatchItem) MarshalJSON() ([]byte, error) {
	m := it.body()
	m["key"] = it.Key
	return json.Marshal(m)
}

// BatchResult is the answer for one item of ScheduleMany: an Outcome (with Completed
// when a dedupe window kept it), or an Error.
type BatchResult struct {
	Key       string          `json:"key"`
	Outcome   ScheduleOutcome `json:"outcome,omitempty"`
	Completed *Completed      `json:"completed,omitempty"`
	Error     *Error          `json:"error,omitempty"`
}

// ListParams filter and page a list of tasks.
type ListParams struct {
	State  TaskState // "": every state
	Tag    string
	Limit  int
	Cursor string
}

// Page is one page of a task list; NextCursor is empty at the end.
type Page struct {
	Tasks      []Task  `json:"tasks"`
	NextCursor *string `json:"next_cursor"`
}

// GroupsParams page a queue's groups.
type GroupsParams struct {
	Limit  int
	Cursor string
}

// GroupCounts is one group of a queue with its tasks by state; Leased is what the
// queue's group_concurrency counts (an expired lease until the reaper ends it).
type GroupCounts struct {
	Group     string `json:"group"`
	Scheduled int64  `json:"scheduled"`
	Leased    int64  `json:"leased"`
	Dead      int64  `json:"dead"`
}

// GroupsPage is one page of a queue's groups, by name; NextCursor is nil at the end.
type GroupsPage struct {
	Groups     []GroupCounts `json:"groups"`
	NextCursor *string       `json:"next_cursor"`
}

// QueueStats are a queue's counts; Queue (one queue) adds how overdue it is, its recent
// fire lag and its outbox rows.
type QueueStats struct {
	Name      string     `json:"name"`
	Scheduled int64      `json:"scheduled"`
	Leased    int64      `json:"leased"`
	Dead      int64      `json:"dead"`
	NextDueAt *time.Time `json:"next_due_at"`
	Paused    bool       `json:"paused"`
	// OldestOverdueMs: how long the earliest scheduled task has been due, in
	// milliseconds (0 when none is due); nil in Queues.
	OldestOverdueMs *int64 `json:"oldest_overdue_ms,omitempty"`
	// LagMs: the recent fire lag; nil in Queues.
	LagMs *FireLag `json:"lag_ms,omitempty"`
	// Outbox: the queue's rows in the outboxes the server drains; nil when it drains
	// none, and in Queues.
	Outbox *OutboxLag `json:"outbox,omitempty"`
}

// FireLag is how late a queue's recent firings were, in milliseconds, at the 50th and
// 99th percentiles; nil when none fired recently.
type FireLag struct {
	P50 *float64 `json:"p50"`
	P99 *float64 `json:"p99"`
}

// OutboxLag is a queue's rows waiting in the outboxes a server drains, as it last
// counted them: how many, and the age of the oldest in milliseconds (nil when none).
type OutboxLag struct {
	RowsWaiting int64  `json:"rows_waiting"`
	OldestAgeMs *int64 `json:"oldest_age_ms"`
}

// Source says where a queue's settings or a calendar come from.
type Source string

// The sources of settings and calendars.
const (
	SourceAPI    Source = "api"    // put through the API
	SourceConfig Source = "config" // the server's config file (changed only there)
)

// Settings are a queue's stored settings. A Settings read back may be given to
// PutSettings again (Queue, Source, Paused, Version and UpdatedAt are ignored there).
type Settings struct {
	Queue       string        `json:"queue"`
	Source      Source        `json:"source"`
	Defaults    QueueDefaults `json:"defaults"`
	Action      *Action       `json:"action"` // nil: pull workers drain the queue
	Concurrency int           `json:"concurrency"`
	Rate        *string       `json:"rate"` // the action's rate, "20/1m"; nil: none
	// GroupConcurrency: at most this many tasks of one group leased at once; nil for
	// no limit. Set it with PutSettings(ctx, q, map[string]any{"group_concurrency": 1}, 0).
	GroupConcurrency *int `json:"group_concurrency"`
	// GroupRate: at most this many leases of each group's tasks per duration
	// ("10/1m"); nil for no rate.
	GroupRate *string   `json:"group_rate"`
	Shards    int       `json:"shards"`
	Paused    bool      `json:"paused"`
	Targets   *bool     `json:"targets,omitempty"` // false: tasks with a Target are refused
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
}

// QueueDefaults are the policies a queue's tasks take unless their schedule gives them.
type QueueDefaults struct {
	MaxAttempts int     `json:"max_attempts"`
	Backoff     Backoff `json:"backoff"`
	Repeat      *Repeat `json:"repeat"`
}

// ActionKind is the kind of a queue's push action.
type ActionKind string

// The kinds of push action (README "Push actions").
const (
	ActionWebhook     ActionKind = "webhook"
	ActionEmail       ActionKind = "email"
	ActionWeCom       ActionKind = "wecom"
	ActionDingTalk    ActionKind = "dingtalk"
	ActionFeishu      ActionKind = "feishu"
	ActionSlack       ActionKind = "slack"
	ActionRabbitMQ    ActionKind = "rabbitmq"
	ActionNATS        ActionKind = "nats"
	ActionRedisStream ActionKind = "redis-stream"
)

// Action is a queue's push action as its settings show it, with no secret in it: its
// Kind, and JSON, the whole object, whose other fields depend on the kind (the keys of
// the config file's action table; Decode reads them into a struct of yours).
type Action struct {
	Kind ActionKind
	JSON json.RawMessage
}

// Decode unmarshals the action's JSON into v.
func (a Action) Decode(v any) error { return json.Unmarshal(a.JSON, v) }

// MarshalJSON sends JSON as it is (its kind with it); an Action without JSON sends
// only its Kind.
func (a Action) MarshalJSON() ([]byte, error) {
	if len(a.JSON) == 0 {
		return json.Marshal(map[string]any{"kind": a.Kind})
	}
	return a.JSON, nil
}

// UnmarshalJSON keeps the object and reads its kind.
func (a *Action) UnmarshalJSON(data []byte) error {
	var head struct {
		Kind ActionKind `json:"kind"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	*a = Action{Kind: head.Kind, JSON: append(json.RawMessage(nil), data...)}
	return nil
}

// LeaseParams ask for up to Max tasks, leased for Lease, waiting up to Wait for one.
type LeaseParams struct {
	Max   int
	Lease time.Duration
	Wait  time.Duration
}

// Lease is a leased task. ScheduledFor is the time the occurrence it stands for was
// scheduled for (before jitter, retries and misfires); Missed counts the later
// occurrences of a repeat already due that will not fire of their own, this firing
// standing in for them (0 when on time).
type Lease struct {
	LeaseID      string    `json:"lease_id"`
	ExpiresAt    time.Time `json:"expires_at"`
	Attempt      int       `json:"attempt"`
	DeliveryID   string    `json:"delivery_id"`
	ScheduledFor time.Time `json:"scheduled_for"`
	Missed       int       `json:"missed"`
	Task         Task      `json:"task"`
}
