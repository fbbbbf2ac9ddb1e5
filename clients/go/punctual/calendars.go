package punctual

// Working-time calendars: the resource (/v1/calendars) and its types. A calendar holds
// working hours per weekday in a zone ("HH:MM-HH:MM", ending after they start, "24:00"
// for midnight; a weekday absent is closed), holidays (ISO dates or inclusive ranges
// "start/end") and extra working dates. Tasks name one with ScheduleParams.Calendar.
// Everything is sent as given: the server checks it (ErrInvalidArgument naming the field).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// IfAbsent is the ifVersion of PutCalendar and PutSettings that makes a put apply only
// if the calendar or the queue's settings do not exist yet: sent as If-Match: 0
// (ErrConflict when they exist). Any other negative ifVersion is sent as it is, and
// refused (ErrInvalidArgument, field If-Match).
const IfAbsent int64 = -1

// Align says where a schedule's DueAt goes under its Calendar.
type Align string

// AlignNextOpen is ScheduleParams.Align's one value: with a Calendar, a DueAt outside
// working hours moves to the calendar's next opening.
const AlignNextOpen Align = "next_open"

// CronSyntax says how Repeat.Cron is read.
type CronSyntax string

// Cron syntaxes of Repeat.CronSyntax; "" is the server's default, CronVixie.
const (
	CronVixie  CronSyntax = "vixie"  // five fields, as cron(8)
	CronSpring CronSyntax = "spring" // six fields from seconds, as Spring's @Scheduled
	CronQuartz CronSyntax = "quartz" // six or seven fields, as Quartz's CronExpression
)

// weekdayNames are the API's names of the weekdays, indexed by time.Weekday.
var weekdayNames = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

func weekdayNamed(name string) (time.Weekday, error) {
	for day, n := range weekdayNames {
		if n == name {
			return time.Weekday(day), nil
		}
	}
	return 0, fmt.Errorf("punctual: %q is not a weekday of the API", name)
}

// Workday is an extra working date (a weekend day worked in exchange for a holiday,
// 调休), Date as "2026-09-27". With neither As nor Hours it takes the hours most open
// weekdays share; with As those of that weekday; with Hours its own. Make one with
// WorkdayOn, WorkdayAs or WorkdayHours.
type Workday struct {
	Date  string
	As    *time.Weekday
	Hours []string
}

// WorkdayOn is date on the hours most open weekdays share.
func WorkdayOn(date string) Workday { return Workday{Date: date} }

// WorkdayAs is date on the hours of weekday as.
func WorkdayAs(date string, as time.Weekday) Workday { return Workday{Date: date, As: &as} }

// WorkdayHours is date on hours of its own.
func WorkdayHours(date string, hours ...string) Workday { return Workday{Date: date, Hours: hours} }

// MarshalJSON sends the bare date, or {"date", "as"} or {"date", "hours"}.
func (w Workday) MarshalJSON() ([]byte, error) {
	if w.As == nil && w.Hours == nil {
		return json.Marshal(w.Date)
	}
	m := map[string]any{"date": w.Date}
	if w.As != nil {
		m["as"] = weekdayNames[*w.As]
	}
	if w.Hours != nil {
		m["hours"] = w.Hours
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the three forms MarshalJSON writes.
func (w *Workday) UnmarshalJSON(data []byte) error {
	var date string
	if json.Unmarshal(data, &date) == nil {
		*w = WorkdayOn(date)
		return nil
	}
	var raw struct {
		Date  string   `json:"date"`
		As    string   `json:"as"`
		Hours []string `json:"hours"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*w = Workday{Date: raw.Date, Hours: raw.Hours}
	if raw.As != "" {
		as, err := weekdayNamed(raw.As)
		if err != nil {
			return err
		}
		w.As = &as
	}
	return nil
}

// CalendarSpec is a calendar to put: its IANA zone TZ, working Hours per weekday,
// Holidays and extra Workdays.
type CalendarSpec struct {
	TZ       string
	Hours    map[time.Weekday][]string
	Holidays []string
	Workdays []Workday
}

func hoursJSON(hours map[time.Weekday][]string) map[string][]string {
	out := make(map[string][]string, len(hours))
	for day, ranges := range hours {
		out[weekdayNames[day]] = ranges
	}
	return out
}

// MarshalJSON sends the API's body, weekdays by their names ("mon").
func (s CalendarSpec) MarshalJSON() ([]byte, error) {
	m := map[string]any{"tz": s.TZ, "hours": hoursJSON(s.Hours)}
	if s.Holidays != nil {
		m["holidays"] = s.Holidays
	}
	if s.Workdays != nil {
		m["workdays"] = s.Workdays
	}
	return json.Marshal(m)
}

// Calendar is a working-time calendar as the server holds it. Source is SourceAPI, or
// SourceConfig for one of the server's config file (Version 0, changed only there).
// HolidayYears, EnteredUntil (nil: none entered) and Notice (nil unless the entered
// years run out within 30 days, ran out, or none are entered) say how far its holidays
// reach. Version is what PutCalendar and DeleteCalendar take as ifVersion.
type Calendar struct {
	Name         string
	Source       Source
	TZ           string
	Hours        map[time.Weekday][]string
	Holidays     []string
	Workdays     []Workday
	HolidayYears []int
	EnteredUntil *time.Time
	Notice       *string
	Version      int64
	UpdatedAt    time.Time
}

// Spec is the calendar's body, to put again changed.
func (c Calendar) Spec() CalendarSpec {
	return CalendarSpec{TZ: c.TZ, Hours: c.Hours, Holidays: c.Holidays, Workdays: c.Workdays}
}

// UnmarshalJSON reads the server's calendar, weekdays by their names.
func (c *Calendar) UnmarshalJSON(data []byte) error {
	var raw struct {
		Name         string              `json:"name"`
		Source       Source              `json:"source"`
		TZ           string              `json:"tz"`
		Hours        map[string][]string `json:"hours"`
		Holidays     []string            `json:"holidays"`
		Workdays     []Workday           `json:"workdays"`
		HolidayYears []int               `json:"holiday_years"`
		EnteredUntil *time.Time          `json:"entered_until"`
		Notice       *string             `json:"notice"`
		Version      int64               `json:"version"`
		UpdatedAt    time.Time           `json:"updated_at"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	hours := make(map[time.Weekday][]string, len(raw.Hours))
	for name, ranges := range raw.Hours {
		day, err := weekdayNamed(name)
		if err != nil {
			return err
		}
		hours[day] = ranges
	}
	*c = Calendar{Name: raw.Name, Source: raw.Source, TZ: raw.TZ, Hours: hours, Holidays: raw.Holidays,
		Workdays: raw.Workdays, HolidayYears: raw.HolidayYears, EnteredUntil: raw.EnteredUntil,
		Notice: raw.Notice, Version: raw.Version, UpdatedAt: raw.UpdatedAt}
	return nil
}

func calendarPath(name string) string { return "/v1/calendars/" + url.PathEscape(name) }

// Calendars lists every working-time calendar, by name (those of the config file too).
func (c *Client) Calendars(ctx context.Context) ([]Calendar, error) {
	var out struct {
		Calendars []Calendar `json:"calendars"`
	}
	if _, err := c.do(ctx, call{method: "GET", path: "/v1/calendars", out: &out, retry: true}); err != nil {
		return nil, err
	}
	return out.Calendars, nil
}

// GetCalendar reads a calendar; ErrNotFound when there is none.
func (c *Client) GetCalendar(ctx context.Context, name string) (*Calendar, error) {
	var out Calendar
	if _, err := c.do(ctx, call{method: "GET", path: calendarPath(name), out: &out, retry: true}); err != nil {
		return nil, err
	}
	return &out, nil
}

// PutCalendar creates or replaces a calendar and answers it as stored. A non-zero
// ifVersion makes it conditional: ErrConflict when the calendar is at another version
// (IfAbsent: when it exists). Tasks already scheduled keep their due times.
func (c *Client) PutCalendar(ctx context.Context, name string, spec CalendarSpec, ifVersion int64) (*Calendar, error) {
	var out Calendar
	if _, err := c.do(ctx, call{method: "PUT", path: calendarPath(name), body: spec, header: ifMatch(ifVersion), out: &out, retry: true}); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteCalendar removes a calendar; ErrNotFound when unknown, ErrConflict when a
// non-zero ifVersion names another version.
func (c *Client) DeleteCalendar(ctx context.Context, name string, ifVersion int64) error {
	_, err := c.do(ctx, call{method: "DELETE", path: calendarPath(name), header: ifMatch(ifVersion), retry: true})
	return err
}
