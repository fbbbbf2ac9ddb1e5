package punctual_test

// Scenario 16 of clients/SCENARIOS.md: business time. Guards against a client that drops
// ScheduleParams.Calendar, Align or Repeat.CronSyntax on the way to the server (the task
// would be due 8 plain hours on, or its Spring cron refused as Vixie), one that loses the
// If-Match of a calendar's put or delete (IfAbsent included), and one that misreads a
// calendar's answer (weekdays by name, workdays in their three forms).

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
	_ "time/tzdata" // Asia/Shanghai without relying on the system's zone files

	"github.com/punctual-rs/punctual/clients/go/punctual"
)

var officeHours = map[time.Weekday][]string{
	time.Monday: {"09:00-12:00", "13:30-18:00"}, time.Tuesday: {"09:00-12:00", "13:30-18:00"},
	time.Wednesday: {"09:00-12:00", "13:30-18:00"}, time.Thursday: {"09:00-12:00", "13:30-18:00"},
	time.Friday: {"09:00-12:00", "13:30-18:00"},
}

func shanghai(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// inOfficeHours: Monday to Friday, 09:00-12:00 or 13:30-18:00 in loc, the ends included.
func inOfficeHours(at time.Time, loc *time.Location) bool {
	local := at.In(loc)
	clock := local.Format("15:04:05.000")
	morning := "09:00:00.000" <= clock && clock <= "12:00:00.000"
	afternoon := "13:30:00.000" <= clock && clock <= "18:00:00.000"
	weekday := local.Weekday() >= time.Monday && local.Weekday() <= time.Friday
	return weekday && (morning || afternoon)
}

func TestS16BusinessTime(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("s16")
	loc := shanghai(t)
	name := fmt.Sprintf("go-office-%d", time.Now().UnixNano())
	office := punctual.CalendarSpec{TZ: "Asia/Shanghai", Hours: officeHours}
	created, err := c.PutCalendar(bg, name, office, punctual.IfAbsent)
	if err != nil || created.Name != name || created.Source != "api" || created.TZ != "Asia/Shanghai" || created.Version != 1 {
		t.Fatalf("put calendar: %v %+v", err, created)
	}
	if !reflect.DeepEqual(created.Hours, officeHours) {
		t.Fatalf("hours read back: %v", created.Hours)
	}
	if _, err := c.PutCalendar(bg, name, office, punctual.IfAbsent); !errors.Is(err, punctual.ErrConflict) {
		t.Fatalf("put IfAbsent of an existing calendar: %v, want ErrConflict", err)
	}
	if all, err := c.Calendars(bg); err != nil || !hasCalendar(all, name) {
		t.Fatalf("list calendars: %v %+v", err, all)
	}

	// A working day holds 7.5 working hours, so 8 of them always span more than 8 hours.
	before := time.Now()
	res, err := c.Schedule(bg, q, "remind", punctual.ScheduleParams{Delay: 8 * time.Hour, Calendar: name})
	if err != nil || res.Task == nil {
		t.Fatalf("schedule with the calendar: %v %+v", err, res)
	}
	due := res.Task.DueAt
	if !inOfficeHours(due, loc) || !due.After(before.Add(8*time.Hour)) {
		t.Fatalf("due %s (%s), asked at %s", due, due.In(loc).Format("Mon 15:04:05"), before)
	}
	if task, err := c.Get(bg, q, "remind"); err != nil || !task.DueAt.Equal(due) {
		t.Fatalf("get remind: %v %+v", err, task)
	}

	asked := time.Now()
	aligned, err := c.Schedule(bg, q, "standup", punctual.ScheduleParams{DueAt: asked, Calendar: name, Align: punctual.AlignNextOpen})
	if err != nil || !inOfficeHours(aligned.Task.DueAt, loc) || aligned.Task.DueAt.Before(asked.Truncate(time.Millisecond)) {
		t.Fatalf("aligned: %v %+v, asked at %s", err, aligned, asked)
	}

	_, err = c.Schedule(bg, q, "nowhere", punctual.ScheduleParams{Delay: 8 * time.Hour, Calendar: name + "-none"})
	var apiErr *punctual.Error
	if !errors.Is(err, punctual.ErrInvalidArgument) || !errors.As(err, &apiErr) || apiErr.Field != "calendar" {
		t.Fatalf("unknown calendar: %v, want invalid_argument on field calendar", err)
	}

	withHolidays := office
	withHolidays.Holidays = []string{"2026-10-01/2026-10-07"}
	withHolidays.Workdays = []punctual.Workday{punctual.WorkdayOn("2026-09-27"), punctual.WorkdayAs("2026-10-10", time.Friday)}
	replaced, err := c.PutCalendar(bg, name, withHolidays, created.Version)
	if err != nil || replaced.Version != 2 || !reflect.DeepEqual(replaced.Spec(), withHolidays) || !reflect.DeepEqual(replaced.HolidayYears, []int{2026}) {
		t.Fatalf("replace: %v %+v", err, replaced)
	}

	stale := punctual.CalendarSpec{TZ: "UTC", Hours: map[time.Weekday][]string{time.Monday: {"09:00-17:00"}}}
	if _, err := c.PutCalendar(bg, name, stale, created.Version); !errors.Is(err, punctual.ErrConflict) {
		t.Fatalf("put with a stale version: %v, want ErrConflict", err)
	}
	if err := c.DeleteCalendar(bg, name, created.Version); !errors.Is(err, punctual.ErrConflict) {
		t.Fatalf("delete with a stale version: %v, want ErrConflict", err)
	}
	if got, err := c.GetCalendar(bg, name); err != nil || !reflect.DeepEqual(got, replaced) {
		t.Fatalf("after the refusals: %v %+v, want %+v", err, got, replaced)
	}

	if err := c.DeleteCalendar(bg, name, replaced.Version); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := c.GetCalendar(bg, name); !errors.Is(err, punctual.ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
	if all, err := c.Calendars(bg); err != nil || hasCalendar(all, name) {
		t.Fatalf("list after delete: %v %+v", err, all)
	}

	spring := &punctual.Repeat{Cron: "0 0 9 ? * MON-FRI", TZ: "Asia/Shanghai", CronSyntax: punctual.CronSpring}
	if _, err := c.Schedule(bg, q, "weekday", punctual.ScheduleParams{Repeat: spring}); err != nil {
		t.Fatalf("schedule the spring cron: %v", err)
	}
	weekday, err := c.Get(bg, q, "weekday")
	if err != nil || weekday.Repeat == nil || weekday.Repeat.CronSyntax != punctual.CronSpring {
		t.Fatalf("get weekday: %v %+v", err, weekday)
	}
	next := weekday.DueAt.In(loc)
	if next.Weekday() < time.Monday || next.Weekday() > time.Friday || next.Format("15:04:05") != "09:00:00" {
		t.Fatalf("next weekday run at %s", next.Format("Mon 2006-01-02 15:04:05"))
	}
}

func hasCalendar(all []punctual.Calendar, name string) bool {
	for _, c := range all {
		if c.Name == name {
			return true
		}
	}
	return false
}

func TestCronSyntaxAndCalendarInABatch(t *testing.T) {
	s := startServer(t, serverOpts{})
	c := s.client()
	q := uniqueQueue("cron")
	results, err := c.ScheduleMany(bg, q, []punctual.BatchItem{
		{Key: "vixie", ScheduleParams: punctual.ScheduleParams{Repeat: &punctual.Repeat{Cron: "0 9 * * 1-5", TZ: "UTC"}}},
		{Key: "quartz", ScheduleParams: punctual.ScheduleParams{Repeat: &punctual.Repeat{Cron: "0 0 18 L * ?", TZ: "Europe/Berlin", CronSyntax: punctual.CronQuartz}}},
		{Key: "refused", ScheduleParams: punctual.ScheduleParams{Repeat: &punctual.Repeat{Cron: "0 0 9 ? * MON-FRI", TZ: "UTC", CronSyntax: punctual.CronVixie}}},
		{Key: "no-calendar", ScheduleParams: punctual.ScheduleParams{Delay: 8 * time.Hour, Calendar: "none"}},
	})
	if err != nil || len(results) != 4 || results[0].Error != nil || results[1].Error != nil {
		t.Fatalf("batch: %v %+v", err, results)
	}
	for i, field := range map[int]string{2: "tasks[2].repeat.cron", 3: "tasks[3].calendar"} {
		if e := results[i].Error; e == nil || e.Field != field {
			t.Fatalf("item %d: %+v, want an error on %s", i, results[i], field)
		}
	}
	for key, want := range map[string]punctual.CronSyntax{"vixie": "", "quartz": punctual.CronQuartz} {
		if task, err := c.Get(bg, q, key); err != nil || task.Repeat == nil || task.Repeat.CronSyntax != want {
			t.Fatalf("get %s: %v %+v, want cron syntax %q", key, err, task, want)
		}
	}
}

func TestCalendarJSONForms(t *testing.T) {
	spec := punctual.CalendarSpec{TZ: "Europe/Berlin", Hours: map[time.Weekday][]string{time.Sunday: {"10:00-11:00"}},
		Workdays: []punctual.Workday{punctual.WorkdayOn("2026-12-19"), punctual.WorkdayAs("2026-12-20", time.Monday),
			punctual.WorkdayHours("2026-12-27", "10:00-14:00")}}
	body, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"hours":{"sun":["10:00-11:00"]},"tz":"Europe/Berlin","workdays":["2026-12-19",{"as":"mon","date":"2026-12-20"},{"date":"2026-12-27","hours":["10:00-14:00"]}]}`
	if string(body) != want {
		t.Fatalf("body %s, want %s", body, want)
	}
	var back punctual.Calendar
	if err := json.Unmarshal(body, &back); err != nil || !reflect.DeepEqual(back.Spec(), spec) {
		t.Fatalf("read back: %v %+v", err, back)
	}
}
