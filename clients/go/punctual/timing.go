package punctual

// Timing policies of a task (README "Misfires, overlaps and jitter"): what becomes of
// occurrences missed while no server ran or the queue was paused (Misfire, with
// MisfireAfter under MisfireSkip and CatchUpMax under MisfireFireAll), of a repeat's
// occurrences due while its firing is leased (Overlap), and Jitter. ScheduleParams
// sends them as given, the server judging them (ErrInvalidArgument naming the field);
// Task shows each with its effective value; Lease and Delivery say which occurrence a
// firing stands for (ScheduledFor) and how many it stands in for (Missed).

import "encoding/json"

// Misfire says what becomes of occurrences missed while no server ran or the queue was
// paused.
type Misfire string

const (
	// MisfireFireOnce (the server's default): one firing for all that were missed, then
	// on from now.
	MisfireFireOnce Misfire = "fire_once"
	// MisfireFireAll: each missed occurrence, oldest first, at most CatchUpMax of them.
	MisfireFireAll Misfire = "fire_all"
	// MisfireSkip: a first try leased later than MisfireAfter past its due time does not
	// fire; a repeat moves to its next occurrence after now, a one-off task ends.
	MisfireSkip Misfire = "skip"
)

// Overlap says what becomes of a repeat's occurrences that fall due while its firing is
// still leased.
type Overlap string

const (
	// OverlapSkip (the server's default): the next occurrence is the first after the
	// firing ends.
	OverlapSkip Overlap = "skip"
	// OverlapQueue: the latest of them fires as soon as the firing ends.
	OverlapQueue Overlap = "queue"
	// OverlapAllow: each occurrence fires as a task of its own, keyed
	// "<key>@<scheduled_for>" (RFC 3339 in UTC with milliseconds, e.g.
	// "tick@2026-10-03T10:00:00.000Z"), with the repeat's payload and tags, and the repeat
	// moves to its next occurrence at once, so occurrences fire side by side. The server
	// refuses a key longer than 487 bytes under it (field "overlap").
	OverlapAllow Overlap = "allow"
)

// timingBody adds the set timing policies to a schedule's body.
func (p ScheduleParams) timingBody(m map[string]any) {
	if p.Misfire != "" {
		m["misfire"] = p.Misfire
	}
	if p.MisfireAfter != 0 {
		m["misfire_after"] = p.MisfireAfter.Milliseconds()
	}
	if p.CatchUpMax != 0 {
		m["catch_up_max"] = p.CatchUpMax
	}
	if p.Overlap != "" {
		m["overlap"] = p.Overlap
	}
	if p.Jitter != 0 {
		m["jitter"] = p.Jitter.Milliseconds()
	}
}

// taskFields is Task without its methods, for its JSON conversions.
type taskFields Task

// UnmarshalJSON reads a task, its durations as the server writes them ("1m", "30s").
func (t *Task) UnmarshalJSON(data []byte) error {
	var raw struct {
		*taskFields
		MisfireAfter json.RawMessage `json:"misfire_after"`
		Jitter       json.RawMessage `json:"jitter"`
	}
	raw.taskFields = (*taskFields)(t)
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	var err error
	if t.MisfireAfter, err = decodeDuration(raw.MisfireAfter); err != nil {
		return err
	}
	t.Jitter, err = decodeDuration(raw.Jitter)
	return err
}

// MarshalJSON writes a task as UnmarshalJSON reads it: MisfireAfter and Jitter as
// milliseconds, a Jitter of 0 as null.
func (t Task) MarshalJSON() ([]byte, error) {
	var jitter *int64
	if t.Jitter != 0 {
		ms := t.Jitter.Milliseconds()
		jitter = &ms
	}
	return json.Marshal(struct {
		taskFields
		MisfireAfter int64  `json:"misfire_after"`
		Jitter       *int64 `json:"jitter"`
	}{taskFields(t), t.MisfireAfter.Milliseconds(), jitter})
}
