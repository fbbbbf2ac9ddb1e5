// Working-time calendars: "#/calendars" lists them (GET /v1/calendars), with the years
// their holidays are entered for and the server's notice when those run out;
// "#/calendar/<name>" shows one: its week, holidays and extra working days.
//
// Every calendar route needs `admin` on every queue: a token without it gets the
// server's 403, said in place of the view (never a blank page). A calendar of the
// config file (`source: config`, version 0) is read-only here, as the API makes it
// (PUT and DELETE answer 409): it is changed in the file. One set through the API is
// edited as JSON and removed with its own button, both with If-Match, so a change made
// meanwhile is a 409 with a way to reload, never overwritten. A new calendar is
// created with If-Match: 0, so an existing one is never replaced from the list.

import { api } from "./api.js";
import { h, enc } from "./dom.js";
import { FormError, errorLine, field, parseJson, submitting } from "./forms.js";
import { relative } from "./format.js";
import { confirmThen, keepBannerOnce, render, showBanner } from "./page.js";

const WEEKDAYS = [["mon", "Monday"], ["tue", "Tuesday"], ["wed", "Wednesday"], ["thu", "Thursday"],
  ["fri", "Friday"], ["sat", "Saturday"], ["sun", "Sunday"]];
const DAY_MS = 86400e3;
const CALENDAR_EXAMPLE = '{"tz": "Asia/Shanghai", "hours": {"mon": ["09:00-12:00", "13:30-18:00"]}, '
  + '"holidays": ["2026-10-01/2026-10-07"], "workdays": ["2026-10-10"]}';

function calendarHash(name) {
  return `#/calendar/${enc(name)}`;
}

function title(name) {
  return h("h1", {}, name === undefined ? "Calendars" : [h("a", { href: "#/calendars" }, "Calendars"), " / ", name]);
}

// In place of a view the token may not see (the API's 403).
function lacksAdmin(err) {
  return h("div", { class: "panel muted", id: "calendars-forbidden" },
    "This token lacks the admin permission on every queue (queues = [\"*\"]), which calendars need. ",
    h("span", { class: "detail" }, `The server said: ${err.message}`));
}

// The answer of `load`, or the view's nodes when the token may not see it.
async function unlessForbidden(name, load) {
  try {
    return { answer: await load() };
  } catch (err) {
    if (err.status !== 403) throw err;
    return { nodes: [title(name), lacksAdmin(err)] };
  }
}

function sourceText(source) {
  return source === "config" ? "config file (change it there)" : "API";
}

function yearsText(calendar) {
  return calendar.holiday_years.length ? calendar.holiday_years.join(", ") : "none entered";
}

// A date with its year and time, in the browser's zone, and how far it is when that
// is within a year.
function dated(iso) {
  if (!iso) return "–";
  const text = new Date(iso).toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  return Math.abs(Date.parse(iso) - Date.now()) < 366 * DAY_MS ? `${text} (${relative(iso)})` : text;
}

// "2026-10-01/2026-10-07" as a range with its length; a date as itself.
function holidayText(holiday) {
  const [start, end] = holiday.split("/");
  if (!end) return start;
  const days = Math.round((Date.parse(end) - Date.parse(start)) / DAY_MS) + 1;
  return `${start} to ${end} (${days} days)`;
}

// An extra working date: a date, {date, as} or {date, hours}.
function workdayText(workday) {
  if (typeof workday === "string") return `${workday}: the usual working hours`;
  if (workday.as) {
    const day = WEEKDAYS.find(([key]) => key === workday.as);
    return `${workday.date}: ${day ? day[1] : workday.as}'s hours`;
  }
  return `${workday.date}: ${(workday.hours || []).join(", ") || "closed"}`;
}

function workdayDate(workday) {
  return typeof workday === "string" ? workday : workday.date;
}

export async function calendarsPage() {
  const { answer, nodes } = await unlessForbidden(undefined, () => api("GET", "/v1/calendars"));
  if (nodes) return nodes;
  const { calendars } = answer;
  const rows = calendars.map((c) => h("tr", { "data-calendar": c.name },
    h("td", {}, h("a", { href: calendarHash(c.name) }, c.name)),
    h("td", { class: "hide-narrow", "data-col": "tz" }, c.tz),
    h("td", { "data-col": "source" }, c.source === "config" ? "config file" : "API"),
    h("td", { class: "num hide-narrow", "data-col": "version" }, c.source === "config" ? "–" : c.version),
    h("td", { "data-col": "years" }, yearsText(c)),
    h("td", { class: c.notice ? "notice warn" : "notice", "data-col": "notice" }, c.notice || "–")));
  const warned = calendars.filter((c) => c.notice).length;
  return [
    title(),
    warned ? h("p", { class: "warn", id: "calendars-warned" },
      `${warned} of ${calendars.length} calendar(s) need holidays entered: until they are, delays count those days as working time.`) : null,
    calendars.length === 0
      ? h("div", { class: "panel muted", id: "no-calendars" }, "No calendars yet. Create one below, with PUT /v1/calendars/{name}, punctual calendar set or in the config file.")
      : h("div", { class: "panel" }, h("table", { id: "calendars" },
        h("thead", {}, h("tr", {}, h("th", {}, "Calendar"), h("th", { class: "hide-narrow" }, "Time zone"),
          h("th", {}, "Source"), h("th", { class: "num hide-narrow" }, "Version"), h("th", {}, "Holiday years"),
          h("th", {}, "Notice"))),
        h("tbody", {}, rows))),
    newCalendarForm(),
  ];
}

export async function calendarPage(name) {
  const loaded = await unlessForbidden(name, async () => {
    try {
      return await api("GET", `/v1/calendars/${enc(name)}`);
    } catch (err) {
      if (err.status === 404) return null;
      throw err;
    }
  });
  if (loaded.nodes) return loaded.nodes;
  const calendar = loaded.answer;
  if (!calendar) {
    return [title(name), h("div", { class: "panel", id: "calendar-missing" },
      "No such calendar: it was never set, or it was removed. ", h("a", { href: "#/calendars" }, "Every calendar"))];
  }
  const fromApi = calendar.source === "api";
  const row = (label, value, col) => h("tr", {}, h("th", {}, label), h("td", { "data-col": col }, value));
  const hours = new Map(Object.entries(calendar.hours || {}));
  const holidays = calendar.holidays || [];
  const workdays = calendar.workdays || [];
  return [
    title(name),
    calendar.notice ? h("p", { class: "warn", id: "calendar-notice" }, `Notice: ${calendar.notice}`) : null,
    h("div", { class: "panel", id: "calendar" }, h("table", { class: "settings" }, h("tbody", {},
      row("Source", sourceText(calendar.source), "source"),
      row("Time zone", calendar.tz, "tz"),
      row("Holiday years", yearsText(calendar), "years"),
      row("Entered until", dated(calendar.entered_until), "entered_until"),
      row("Version", fromApi ? calendar.version : "– (config file)", "version"),
      fromApi ? row("Updated", dated(calendar.updated_at), "updated") : null))),
    h("h2", {}, "Weekly hours"),
    h("div", { class: "panel" }, h("table", { class: "settings", id: "calendar-hours" }, h("tbody", {},
      WEEKDAYS.map(([day, label]) => {
        const open = hours.get(day) || [];
        return h("tr", {}, h("th", {}, label),
          h("td", { "data-day": day, class: open.length ? "" : "muted" }, open.length ? open.join(", ") : "closed"));
      })))),
    h("h2", {}, `Holidays (${holidays.length})`),
    holidays.length === 0
      ? h("div", { class: "panel muted", id: "calendar-holidays-empty" }, "No holidays entered: every working weekday counts as working time.")
      : h("div", { class: "panel" }, h("ul", { class: "dates", id: "calendar-holidays" },
        holidays.map((d) => h("li", { "data-date": d }, holidayText(d))))),
    h("h2", {}, `Extra working days (${workdays.length})`),
    workdays.length === 0
      ? h("div", { class: "panel muted", id: "calendar-workdays-empty" }, "None: only the weekly hours are worked.")
      : h("div", { class: "panel" }, h("ul", { class: "dates", id: "calendar-workdays" },
        workdays.map((w) => h("li", { "data-date": workdayDate(w) }, workdayText(w))))),
    fromApi ? calendarEditor(name, calendar)
      : h("p", { class: "muted", id: "calendar-readonly" }, "From the server's config file: change it there (the API does not change it)."),
  ];
}

// The calendar's document as the editor shows it: the fields PUT takes.
function calendarText(calendar) {
  const doc = { tz: calendar.tz, hours: calendar.hours, holidays: calendar.holidays || [], workdays: calendar.workdays || [] };
  return JSON.stringify(doc, null, 2);
}

// An API calendar as JSON, saved with If-Match; removed with its own button, then the
// list.
function calendarEditor(name, calendar) {
  const path = `/v1/calendars/${enc(name)}`;
  const ifMatch = { "If-Match": String(calendar.version) };
  const text = h("textarea", { id: "calendar-json", class: "json", rows: 14, spellcheck: "false" });
  text.value = calendarText(calendar);
  const line = errorLine("calendar-error");
  const reload = () => h("button", { type: "button", class: "secondary", id: "calendar-reload", onclick: () => render() }, "Reload");
  const save = h("button", { type: "submit", id: "calendar-save" }, "Save");
  const remove = h("button", { type: "button", class: "danger", id: "calendar-delete",
    onclick: () => confirmThen(`Remove the calendar ${name}? Tasks already scheduled keep their due times; new ones naming it are refused.`,
      () => submitting(remove, line, async () => {
        await api("DELETE", path, undefined, ifMatch);
        showBanner(`Removed calendar ${name}`, "info");
        keepBannerOnce();
        location.hash = "#/calendars";
      }, reload)) }, "Remove calendar");
  const form = h("form", { class: "edit", autocomplete: "off", onsubmit: (e) => {
    e.preventDefault();
    submitting(save, line, async () => {
      const saved = await api("PUT", path, parseJson(text.value, "calendar"), ifMatch);
      showBanner(`Saved calendar ${name} (version ${saved.version})`, "info");
      await render();
    }, reload);
  } },
  field("Calendar (JSON): tz, hours, holidays, workdays. Tasks already scheduled keep their due times.", text),
  h("div", { class: "actions" }, save, remove), line);
  return h("details", { class: "form", id: "edit-calendar" }, h("summary", {}, "Edit calendar"), form);
}

// A calendar created (PUT with If-Match: 0), then its page.
function newCalendarForm() {
  const name = h("input", { id: "new-calendar-name", placeholder: "cn-office", required: true, autocapitalize: "off" });
  const text = h("textarea", { id: "new-calendar-json", class: "json", rows: 5, spellcheck: "false", placeholder: CALENDAR_EXAMPLE });
  const line = errorLine("new-calendar-error");
  const create = h("button", { type: "submit", id: "new-calendar-create" }, "Create");
  const form = h("form", { class: "edit", autocomplete: "off", onsubmit: (e) => {
    e.preventDefault();
    submitting(create, line, async () => {
      const calendar = name.value.trim();
      const body = parseJson(text.value, "calendar");
      try {
        await api("PUT", `/v1/calendars/${enc(calendar)}`, body, { "If-Match": "0" });
      } catch (err) {
        if (err.status !== 409) throw err;
        throw new FormError("name", `${calendar} exists already (${err.message}):`,
          { href: calendarHash(calendar), text: "see it on its page" });
      }
      showBanner(`Created calendar ${calendar}`, "info");
      keepBannerOnce();
      location.hash = calendarHash(calendar);
    });
  } },
  field("Calendar name", name),
  field("Calendar (JSON): tz, hours (weekdays left out are closed), holidays, workdays.", text),
  h("div", { class: "actions" }, create), line);
  return h("details", { class: "form", id: "new-calendar" }, h("summary", {}, "New calendar"), form);
}
