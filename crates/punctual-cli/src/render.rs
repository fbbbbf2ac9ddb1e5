//! Human output: aligned tables, the task as a readable block, and times shown both
//! as RFC 3339 and relative to now ("in 29m 58s", "3m ago").
//!
//! Every function here is pure: it takes the server's JSON and `now` (epoch
//! milliseconds) and returns text, so the formatting is unit-tested without a clock or
//! a server. Fields a server leaves out show as `-` rather than failing: the JSON is
//! the contract, this is only a view of it.

use crate::client::output::table;
use jiff::tz::TimeZone;
use punctual_core::Timestamp;
use serde_json::Value;

/// Longest text shown in a table cell for free text (errors), in characters.
const CELL_TEXT_MAX: usize = 60;
/// A payload this short (compact JSON, in characters) stays on the line of its label.
const INLINE_PAYLOAD_MAX: usize = 60;

/// What times are shown against: now, and the zone to show them in.
#[derive(Debug, Clone)]
pub(crate) struct Now {
    /// The wall clock, in epoch milliseconds.
    pub(crate) ms: i64,
    /// `None`: times as the server wrote them (UTC).
    zone: Option<TimeZone>,
}

impl Now {
    /// The wall clock; times in the zone of `TZ` when it is set (an IANA name such as
    /// `Asia/Shanghai`, or any form jiff reads), else in UTC as the server wrote them.
    pub(crate) fn read() -> anyhow::Result<Now> {
        let zone = match std::env::var_os("TZ") {
            Some(name) if !name.is_empty() => Some(TimeZone::try_system().map_err(|e| {
                anyhow::anyhow!(
                    "TZ={} is not a time zone ({e}): use an IANA name such as Asia/Shanghai",
                    name.display()
                )
            })?),
            _ => None,
        };
        Ok(Now { ms: now_millis(), zone })
    }

    /// `ms`, showing times in UTC.
    #[cfg(test)]
    pub(crate) const fn utc(ms: i64) -> Now {
        Now { ms, zone: None }
    }

    /// An API time in the zone shown (`2026-11-30T20:00:00.000+08:00`); the server's
    /// text when no zone is set or it is not a time; `-` when absent.
    fn time(&self, value: &Value) -> String {
        let (Some(zone), Some(ms)) = (&self.zone, millis(value)) else { return plain(value) };
        match jiff::Timestamp::from_millisecond(ms) {
            Ok(at) => at.to_zoned(zone.clone()).strftime("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string(),
            Err(_) => plain(value),
        }
    }
}

/// The wall clock, in epoch milliseconds.
// The only clock read in the CLI: a client showing "in 29m 58s" needs the local wall
// clock, and none of the engine's timing depends on it.
#[allow(clippy::disallowed_methods)]
pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A span in at most two units, largest first: `29m 58s`, `1d 2h`, `45s`, `3m`.
/// Below one second: `0s`.
pub(crate) fn short_span(ms: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)];
    let secs = ms / 1000;
    let Some(i) = UNITS.iter().position(|&(_, size)| secs >= size) else {
        return "0s".into();
    };
    let (unit, size) = UNITS[i];
    let mut text = format!("{}{unit}", secs / size);
    if let Some(&(next_unit, next_size)) = UNITS.get(i + 1) {
        let next = secs % size / next_size;
        if next > 0 {
            text.push_str(&format!(" {next}{next_unit}"));
        }
    }
    text
}

/// `at` relative to `now`: `in 29m 58s`, `3m ago`, or `now` within a second.
pub(crate) fn relative(at_ms: i64, now_ms: i64) -> String {
    let delta = at_ms.saturating_sub(now_ms);
    if delta.abs() < 1000 {
        return "now".into();
    }
    let span = short_span(delta.unsigned_abs());
    if delta > 0 { format!("in {span}") } else { format!("{span} ago") }
}

/// Epoch milliseconds of an API time (RFC 3339 string or integer milliseconds).
fn millis(value: &Value) -> Option<i64> {
    match value {
        Value::String(text) => Timestamp::parse(text).ok().map(Timestamp::as_millis),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

/// A time relative to now only (`in 5m`), `-` when absent.
fn relative_cell(value: &Value, now: &Now) -> String {
    millis(value).map_or_else(|| "-".into(), |ms| relative(ms, now.ms))
}

/// A time as the server wrote it followed by its relative form:
/// `2026-11-30T12:00:00.000Z (in 29m 58s)`.
pub(crate) fn time_with_relative(value: &Value, now: &Now) -> String {
    match (value, millis(value)) {
        (Value::Null, _) => "-".into(),
        (value, Some(ms)) => format!("{} ({})", now.time(value), relative(ms, now.ms)),
        (value, None) => plain(value),
    }
}

/// A scalar as text without JSON quotes; `-` for null or absent.
pub(crate) fn plain(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Free text made safe for one table cell: one line, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// A milliseconds figure: `850ms`, `1.2s`, `3m 12s`; `-` when absent.
fn millis_figure(value: &Value) -> String {
    let Some(ms) = value.as_f64().filter(|ms| ms.is_finite() && *ms >= 0.0) else {
        return "-".into();
    };
    if ms < 1000.0 {
        format!("{}ms", ms.round())
    } else if ms < 60_000.0 {
        format!("{:.1}s", ms / 1000.0)
    } else {
        short_span(ms as u64)
    }
}

fn tags(task: &Value) -> String {
    match task["tags"].as_array() {
        Some(tags) if !tags.is_empty() => tags.iter().map(plain).collect::<Vec<_>>().join(", "),
        _ => "-".into(),
    }
}

fn attempts(task: &Value) -> String {
    format!("{}/{}", plain(&task["attempts"]), plain(&task["max_attempts"]))
}

/// `every 24h, 3 times in all`, `cron '0 9 * * MON-FRI' (Asia/Shanghai)`,
/// `spring cron '0 0 9 ? * MON-FRI' (UTC)`, `-`.
pub(crate) fn repeat(repeat: &Value, now: &Now) -> String {
    if !repeat.is_object() {
        return "-".into();
    }
    let mut text = if let Some(every) = repeat.get("every").filter(|v| !v.is_null()) {
        format!("every {}", plain(every))
    } else if let Some(cron) = repeat.get("cron").filter(|v| !v.is_null()) {
        let tz = repeat.get("tz").filter(|v| !v.is_null()).map_or_else(|| "UTC".into(), plain);
        let syntax = repeat.get("cron_syntax").and_then(Value::as_str).filter(|syntax| *syntax != "vixie");
        format!("{}cron '{}' ({tz})", syntax.map_or_else(String::new, |syntax| format!("{syntax} ")), plain(cron))
    } else {
        repeat.to_string()
    };
    if let Some(times) = repeat.get("times").and_then(Value::as_u64) {
        text.push_str(&format!(", {times} time{} in all", if times == 1 { "" } else { "s" }));
    }
    if let Some(until) = repeat.get("until").filter(|v| !v.is_null()) {
        text.push_str(&format!(", until {}", now.time(until)));
    }
    text
}

/// `1s ×2 up to 1h`.
fn backoff(backoff: &Value) -> String {
    if !backoff.is_object() {
        return "-".into();
    }
    let factor = match backoff["factor"].as_f64() {
        // 2.0 reads as ×2, 1.5 as ×1.5.
        Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
        _ => plain(&backoff["factor"]),
    };
    format!("{} ×{factor} up to {}", plain(&backoff["initial"]), plain(&backoff["max"]))
}

/// Tasks of one queue in due order.
pub(crate) fn task_table(tasks: &[Value], now: &Now) -> String {
    let rows = tasks
        .iter()
        .map(|t| {
            vec![
                plain(&t["key"]),
                plain(&t["state"]),
                relative_cell(&t["due_at"], now),
                now.time(&t["due_at"]),
                attempts(t),
                repeat(&t["repeat"], now),
                tags(t),
            ]
        })
        .collect();
    table(&["KEY", "STATE", "DUE", "DUE AT", "ATTEMPTS", "REPEAT", "TAGS"], rows, &[4])
}

/// A task's history, from `GET /v1/queues/{queue}/tasks/{key}/history`: one row per
/// event, oldest first, with what the event carries.
pub(crate) fn history_table(history: &Value, now: &Now) -> String {
    let events = history["events"].as_array().map(Vec::as_slice).unwrap_or_default();
    let rows = events
        .iter()
        .map(|e| {
            let mut details = Vec::new();
            let mut add = |label: &str, value: &Value| {
                if !value.is_null() {
                    details.push(format!("{label} {}", plain(value)));
                }
            };
            add("try", &e["attempt"]);
            add("lease", &e["lease"]);
            add("outcome", &e["outcome"]);
            add("due", &Value::from(e["due_at"].as_str().map(|_| now.time(&e["due_at"]))));
            add("until", &Value::from(e["lease_expires_at"].as_str().map(|_| now.time(&e["lease_expires_at"]))));
            add("on", &e["node"]);
            add("delivery", &e["delivery_id"]);
            add("tag", &e["tag"]);
            add("status", &e["status"]);
            add("took ms", &e["took_ms"]);
            if let Some(changed) = e["changed"].as_array() {
                let names: Vec<String> = changed.iter().map(plain).collect();
                details.push(format!("changed {}", names.join(", ")));
            }
            for text in ["error", "answer"] {
                if let Some(said) = e[text].as_str() {
                    details.push(format!("{text}: {}", one_line(said, CELL_TEXT_MAX)));
                }
            }
            vec![
                now.time(&e["at"]),
                plain(&e["event"]),
                e["by"].as_str().unwrap_or_default().to_owned(),
                plain(&e["state"]),
                details.join("; "),
            ]
        })
        .collect();
    let retention = history["retention_ms"].as_u64().map_or_else(String::new, short_span);
    let key = format!("{} in {}", plain(&history["key"]), plain(&history["queue"]));
    if events.is_empty() {
        return format!("No events of task {key} within the history retention ({retention}).");
    }
    table(&["AT", "EVENT", "BY", "STATE", "DETAILS"], rows, &[])
}

/// Dead tasks: when each died (its last update) and why.
pub(crate) fn dead_table(tasks: &[Value], now: &Now) -> String {
    let rows = tasks
        .iter()
        .map(|t| {
            vec![
                plain(&t["key"]),
                relative_cell(&t["updated_at"], now),
                attempts(t),
                t["last_error"].as_str().map_or_else(|| "-".into(), |e| one_line(e, CELL_TEXT_MAX)),
                tags(t),
            ]
        })
        .collect();
    table(&["KEY", "DIED", "ATTEMPTS", "LAST ERROR", "TAGS"], rows, &[2])
}

/// A queue's groups, from `GET /v1/queues/{queue}/groups`.
pub(crate) fn groups_table(groups: &[Value]) -> String {
    let rows = groups
        .iter()
        .map(|g| vec![plain(&g["group"]), plain(&g["scheduled"]), plain(&g["leased"]), plain(&g["dead"])])
        .collect();
    table(&["GROUP", "SCHEDULED", "LEASED", "DEAD"], rows, &[1, 2, 3])
}

/// The queues overview of `GET /v1/queues`.
pub(crate) fn queue_table(queues: &[Value], now: &Now) -> String {
    let rows = queues
        .iter()
        .map(|q| {
            vec![
                plain(&q["name"]),
                plain(&q["scheduled"]),
                plain(&q["leased"]),
                plain(&q["dead"]),
                relative_cell(&q["next_due_at"], now),
                now.time(&q["next_due_at"]),
                yes_no(&q["paused"]),
            ]
        })
        .collect();
    table(&["QUEUE", "SCHEDULED", "LEASED", "DEAD", "NEXT DUE", "NEXT DUE AT", "PAUSED"], rows, &[1, 2, 3])
}

/// `yes` or `no` for a boolean, `-` when absent (an older server).
fn yes_no(value: &Value) -> String {
    match value.as_bool() {
        Some(true) => "yes".into(),
        Some(false) => "no".into(),
        None => plain(value),
    }
}

/// Per-queue detail (`GET /v1/queues/{queue}` objects) with a total row when there is
/// more than one queue.
pub(crate) fn stats_table(queues: &[Value], now: &Now) -> String {
    let count = |q: &Value, field: &str| q[field].as_u64().unwrap_or(0);
    let mut rows: Vec<Vec<String>> = queues
        .iter()
        .map(|q| {
            vec![
                plain(&q["name"]),
                plain(&q["scheduled"]),
                plain(&q["leased"]),
                plain(&q["dead"]),
                relative_cell(&q["next_due_at"], now),
                overdue(&q["oldest_overdue_ms"]),
                millis_figure(&q["lag_ms"]["p50"]),
                millis_figure(&q["lag_ms"]["p99"]),
            ]
        })
        .collect();
    if queues.len() > 1 {
        let sum = |field: &str| queues.iter().map(|q| count(q, field)).sum::<u64>().to_string();
        let next = queues.iter().filter_map(|q| millis(&q["next_due_at"])).min();
        rows.push(vec![
            format!("total ({} queues)", queues.len()),
            sum("scheduled"),
            sum("leased"),
            sum("dead"),
            next.map_or_else(|| "-".into(), |ms| relative(ms, now.ms)),
            String::new(),
            String::new(),
            String::new(),
        ]);
    }
    table(
        &["QUEUE", "SCHEDULED", "LEASED", "DEAD", "NEXT DUE", "OLDEST OVERDUE", "LAG P50", "LAG P99"],
        rows,
        &[1, 2, 3, 5, 6, 7],
    )
}

fn overdue(value: &Value) -> String {
    match value.as_f64() {
        Some(ms) if ms > 0.0 => millis_figure(value),
        _ => "-".into(),
    }
}

/// Label–value lines with the values aligned.
pub(crate) fn block(lines: &[(&str, String)]) -> String {
    let width = lines.iter().map(|(label, _)| label.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    for (label, value) in lines {
        let mut value_lines = value.lines();
        let first = value_lines.next().unwrap_or("");
        out.push_str(format!("{label:<width$}  {first}").trim_end());
        out.push('\n');
        for more in value_lines {
            out.push_str(&format!("{:width$}  {more}\n", ""));
        }
    }
    out.pop();
    out
}

/// One task as a readable block (`punctual get`).
pub(crate) fn task_block(task: &Value, now: &Now) -> String {
    let mut lines = vec![
        ("Queue", plain(&task["queue"])),
        ("Key", plain(&task["key"])),
        ("State", plain(&task["state"])),
        ("Due", time_with_relative(&task["due_at"], now)),
        ("Attempts", format!("{} of {}", plain(&task["attempts"]), plain(&task["max_attempts"]))),
        ("Backoff", backoff(&task["backoff"])),
        ("Repeat", repeat(&task["repeat"], now)),
    ];
    if !task["target"].is_null() {
        lines.push(("Target", target(&task["target"])));
    }
    lines.push(("Tags", tags(task)));
    // Shown when it is not the default, 0.
    if task["priority"].as_u64().is_some_and(|level| level > 0) {
        lines.push(("Priority", plain(&task["priority"])));
    }
    if task["group"].is_string() {
        lines.push(("Group", plain(&task["group"])));
    }
    match &task["unique_for"] {
        Value::Null => {}
        Value::Object(unique) => lines.push(("Unique for", format!("{} (also once dead)", plain(&unique["window"])))),
        window => lines.push(("Unique for", plain(window))),
    }
    lines.extend([
        ("Version", plain(&task["version"])),
        ("Created", time_with_relative(&task["created_at"], now)),
        ("Updated", time_with_relative(&task["updated_at"], now)),
    ]);
    if !task["lease_expires_at"].is_null() {
        lines.push(("Lease expires", time_with_relative(&task["lease_expires_at"], now)));
    }
    if !task["last_error"].is_null() {
        lines.push(("Last error", plain(&task["last_error"])));
    }
    // Left out by the server when the task has none.
    if task["traceparent"].is_string() {
        lines.push(("Trace", plain(&task["traceparent"])));
    }
    lines.push(("Payload", payload(&task["payload"])));
    block(&lines)
}

/// The answer of `schedule` in a sentence: what happened and when the task is due.
pub(crate) fn schedule_outcome(answer: &Value, now: &Now) -> String {
    let completed = &answer["completed"];
    if completed.is_object() {
        let (key, queue) = (plain(&completed["key"]), plain(&completed["queue"]));
        return format!(
            "Kept: task '{key}' in queue {queue} completed {}, and its dedupe window holds the key until {}; \
             nothing scheduled.",
            time_with_relative(&completed["completed_at"], now),
            time_with_relative(&completed["unique_until"], now)
        );
    }
    let task = &answer["task"];
    let (key, queue) = (plain(&task["key"]), plain(&task["queue"]));
    let due = time_with_relative(&task["due_at"], now);
    let mut text = match answer["outcome"].as_str() {
        Some("created") => format!("Created task '{key}' in queue {queue}, due {due}."),
        Some("replaced") => {
            format!("Replaced task '{key}' in queue {queue} (now version {}), due {due}.", plain(&task["version"]))
        }
        Some("kept") => format!("Kept the existing task '{key}' in queue {queue}, due {due}; nothing changed."),
        other => format!("Scheduled task '{key}' in queue {queue} ({}), due {due}.", other.unwrap_or("no outcome")),
    };
    if task["repeat"].is_object() {
        text.push_str(&format!("\nRepeats {}.", repeat(&task["repeat"], now)));
    }
    if !task["target"].is_null() {
        text.push_str(&format!("\nDelivered by the server to {}.", target(&task["target"])));
    }
    text
}

/// A task's HTTP target on one line: `PUT https://… (2 headers, timeout 10s, custom
/// body)`. Header values are left out, as they often hold credentials; `--json` shows
/// the whole target. The URL came from an API caller: control characters are escaped
/// so it cannot break the block or write to the terminal.
fn target(target: &Value) -> String {
    if !target.is_object() {
        return plain(target);
    }
    let url: String = plain(&target["url"])
        .chars()
        .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect();
    let mut notes = Vec::new();
    match target["headers"].as_object().map_or(0, serde_json::Map::len) {
        0 => {}
        1 => notes.push("1 header".to_owned()),
        n => notes.push(format!("{n} headers")),
    }
    if !target["timeout"].is_null() {
        notes.push(format!("timeout {}", plain(&target["timeout"])));
    }
    if !target["body"].is_null() {
        notes.push("custom body".to_owned());
    }
    let line = format!("{} {url}", plain(&target["method"]));
    if notes.is_empty() { line } else { format!("{line} ({})", notes.join(", ")) }
}

/// One queue's detail as a block (`punctual stats QUEUE`).
pub(crate) fn queue_block(queue: &Value, now: &Now) -> String {
    block(&[
        ("Queue", plain(&queue["name"])),
        ("Scheduled", plain(&queue["scheduled"])),
        ("Leased", plain(&queue["leased"])),
        ("Dead", plain(&queue["dead"])),
        ("Next due", time_with_relative(&queue["next_due_at"], now)),
        ("Oldest overdue", overdue(&queue["oldest_overdue_ms"])),
        ("Fire lag p50", millis_figure(&queue["lag_ms"]["p50"])),
        ("Fire lag p99", millis_figure(&queue["lag_ms"]["p99"])),
    ])
}

/// A queue's settings as a readable block (`punctual queue get`, after `queue set`).
pub(crate) fn settings_block(settings: &Value, now: &Now) -> String {
    let defaults = &settings["defaults"];
    let pull = settings["action"].is_null();
    // Without an action the server keeps concurrency and rate but nothing uses them.
    let unused = |text: String| if pull && text != "-" { format!("{text} (unused without an action)") } else { text };
    let source = match settings["source"].as_str() {
        Some("config") => "config (the server's config file: change it there)".to_owned(),
        Some("api") => "api (stored by the server)".to_owned(),
        _ => plain(&settings["source"]),
    };
    let targets = match settings["targets"].as_bool() {
        Some(true) => "allowed (tasks may carry their own HTTP target)".to_owned(),
        Some(false) => "refused (a task with a target is 400)".to_owned(),
        None => plain(&settings["targets"]),
    };
    // Version 0: nothing stored yet (a config file's queue never changed).
    let updated =
        if settings["version"] == 0 { "-".to_owned() } else { time_with_relative(&settings["updated_at"], now) };
    block(&[
        ("Queue", plain(&settings["queue"])),
        ("Source", source),
        ("Max attempts", plain(&defaults["max_attempts"])),
        ("Backoff", backoff(&defaults["backoff"])),
        ("Repeat", repeat(&defaults["repeat"], now)),
        ("Action", action(&settings["action"])),
        ("Concurrency", unused(plain(&settings["concurrency"]))),
        ("Rate", unused(plain(&settings["rate"]))),
        ("Shards", plain(&settings["shards"])),
        ("Targets", targets),
        ("Paused", yes_no(&settings["paused"])),
        ("Version", plain(&settings["version"])),
        ("Updated", updated),
    ])
}

/// A queue's action: its kind on the first line, then each other field on a line of
/// its own (`url: https://…`), a nested table's fields with dotted names
/// (`smtp.host: …`), in name order.
fn action(action: &Value) -> String {
    let Some(fields) = action.as_object() else {
        return if action.is_null() { "none: pull workers lease its tasks".into() } else { plain(action) };
    };
    let mut lines = vec![plain(&action["kind"])];
    push_fields("", fields, &mut lines);
    lines.join("\n")
}

/// `name: value` lines of an action's fields under `prefix`, one line each.
fn push_fields(prefix: &str, fields: &serde_json::Map<String, Value>, lines: &mut Vec<String>) {
    for (name, value) in fields {
        let name = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        let text = match value {
            _ if name == "kind" => continue,
            Value::Null => continue,
            Value::Object(inner) => {
                push_fields(&name, inner, lines);
                continue;
            }
            Value::Array(items) if items.iter().all(|item| !item.is_object() && !item.is_array()) => {
                items.iter().map(plain).collect::<Vec<_>>().join(", ")
            }
            Value::Array(_) => value.to_string(),
            scalar => plain(scalar),
        };
        lines.push(format!("{name}: {}", one_line(&text, CELL_TEXT_MAX)));
    }
}

/// A payload on one line when short, otherwise pretty-printed.
fn payload(payload: &Value) -> String {
    let compact = payload.to_string();
    if compact.chars().count() <= INLINE_PAYLOAD_MAX {
        compact
    } else {
        serde_json::to_string_pretty(payload).unwrap_or(compact)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW_MS: i64 = 1_764_504_000_000; // 2025-11-30T12:00:00Z
    const NOW: Now = Now::utc(NOW_MS);

    fn task() -> Value {
        json!({
            "queue": "order.cancel", "key": "order-1234", "state": "scheduled",
            "due_at": "2025-11-30T12:29:58.000Z", "payload": {"order_id": 1234},
            "attempts": 0, "max_attempts": 20,
            "backoff": {"initial": "1s", "factor": 2.0, "max": "1h"},
            "repeat": null, "tags": ["pi-9"], "version": 1,
            "created_at": "2025-11-30T11:57:00.000Z", "updated_at": "2025-11-30T11:57:00.000Z",
            "lease_expires_at": null, "last_error": null
        })
    }

    #[test]
    fn a_priority_other_than_the_default_is_shown() {
        let mut urgent = task();
        urgent["priority"] = json!(7);
        assert!(
            task_block(&urgent, &NOW).contains("\nTags      pi-9\nPriority  7\nVersion"),
            "{}",
            task_block(&urgent, &NOW)
        );
        urgent["priority"] = json!(0);
        assert!(!task_block(&urgent, &NOW).contains("Priority"), "the default is not shown");
    }

    #[test]
    fn a_dedupe_window_is_shown_when_there_is_one() {
        let mut receipt = task();
        receipt["unique_for"] = json!("1h");
        assert!(
            task_block(&receipt, &NOW).contains("\nTags        pi-9\nUnique for  1h\n"),
            "{}",
            task_block(&receipt, &NOW)
        );
        receipt["unique_for"] = json!({"window": "10m", "dead": true});
        assert!(
            task_block(&receipt, &NOW).contains("Unique for  10m (also once dead)"),
            "{}",
            task_block(&receipt, &NOW)
        );
        receipt["unique_for"] = Value::Null;
        assert!(!task_block(&receipt, &NOW).contains("Unique"), "none: not shown");
        assert!(!task_block(&task(), &NOW).contains("Unique"), "a server from before windows sends none");
    }

    #[test]
    fn a_trace_is_shown_when_there_is_one() {
        let mut traced = task();
        traced["traceparent"] = json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        let shown = task_block(&traced, &NOW);
        assert!(shown.contains("\nTrace     00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n"), "{shown}");
        assert!(!task_block(&task(), &NOW).contains("Trace"), "none: not shown");
    }

    #[test]
    fn spans_use_the_two_largest_units() {
        assert_eq!(short_span(0), "0s");
        assert_eq!(short_span(999), "0s");
        assert_eq!(short_span(45_000), "45s");
        assert_eq!(short_span(180_000), "3m");
        assert_eq!(short_span(1_798_000), "29m 58s");
        assert_eq!(short_span(93_784_000), "1d 2h");
        assert_eq!(short_span(86_400_000 + 59_000), "1d");
    }

    #[test]
    fn groups_are_a_table_of_counts() {
        let groups = [json!({"group": "customer-42", "scheduled": 12, "leased": 1, "dead": 0})];
        let table = groups_table(&groups);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 2, "{table}");
        assert!(lines[0].starts_with("GROUP") && lines[0].contains("SCHEDULED"), "{table}");
        assert!(lines[1].starts_with("customer-42") && lines[1].trim_end().ends_with('0'), "{table}");
    }

    #[test]
    fn relative_times_read_forwards_and_backwards() {
        assert_eq!(relative(NOW_MS + 1_798_000, NOW_MS), "in 29m 58s");
        assert_eq!(relative(NOW_MS - 180_000, NOW_MS), "3m ago");
        assert_eq!(relative(NOW_MS + 400, NOW_MS), "now");
        let at = json!("2025-11-30T12:29:58.000Z");
        assert_eq!(time_with_relative(&at, &NOW), "2025-11-30T12:29:58.000Z (in 29m 58s)");
        assert_eq!(time_with_relative(&Value::Null, &NOW), "-");
        assert_eq!(time_with_relative(&json!("not a time"), &NOW), "not a time");
    }

    #[test]
    fn times_show_in_the_zone_asked_for() {
        let shanghai = Now { ms: NOW_MS, zone: Some(TimeZone::get("Asia/Shanghai").unwrap()) };
        let at = json!("2025-11-30T12:29:58.000Z");
        assert_eq!(time_with_relative(&at, &shanghai), "2025-11-30T20:29:58.000+08:00 (in 29m 58s)");
        assert_eq!(
            time_with_relative(&json!(1_764_505_798_000i64), &shanghai),
            "2025-11-30T20:29:58.000+08:00 (in 29m 58s)"
        );
        assert_eq!(time_with_relative(&json!("not a time"), &shanghai), "not a time");
        assert!(task_table(&[task()], &shanghai).contains("2025-11-30T20:29:58.000+08:00"));
    }

    #[test]
    fn a_task_reads_as_a_block() {
        let text = task_block(&task(), &NOW);
        assert_eq!(
            text,
            "Queue     order.cancel\n\
             Key       order-1234\n\
             State     scheduled\n\
             Due       2025-11-30T12:29:58.000Z (in 29m 58s)\n\
             Attempts  0 of 20\n\
             Backoff   1s ×2 up to 1h\n\
             Repeat    -\n\
             Tags      pi-9\n\
             Version   1\n\
             Created   2025-11-30T11:57:00.000Z (3m ago)\n\
             Updated   2025-11-30T11:57:00.000Z (3m ago)\n\
             Payload   {\"order_id\":1234}"
        );
    }

    #[test]
    fn a_target_shows_on_a_line_of_its_own_without_header_values() {
        let mut t = task();
        t["target"] = json!({"url": "https://shop.example.com/hooks/cancel", "method": "PUT",
                             "headers": {"X-Tenant": "acme", "Authorization": "Bearer s3cret"}, "timeout": "10s"});
        let text = task_block(&t, &NOW);
        assert!(
            text.contains(
                "\nRepeat    -\nTarget    PUT https://shop.example.com/hooks/cancel (2 headers, timeout 10s)\n"
            ),
            "{text}"
        );
        assert!(!text.contains("s3cret") && !text.contains("acme"), "header values stay out: {text}");
        let answer = json!({"outcome": "created", "task": t});
        assert!(
            schedule_outcome(&answer, &NOW).ends_with(
                "\nDelivered by the server to PUT https://shop.example.com/hooks/cancel (2 headers, timeout 10s)."
            ),
            "{}",
            schedule_outcome(&answer, &NOW)
        );

        let one = json!({"url": "https://h.example/x", "method": "POST", "headers": {"X-A": "1"}, "timeout": "3s",
                         "body": {"a": 1}});
        assert_eq!(target(&one), "POST https://h.example/x (1 header, timeout 3s, custom body)");
        let bare = json!({"url": "https://h.example/x\n\u{1b}[2J", "method": "GET", "headers": {}});
        assert_eq!(target(&bare), "GET https://h.example/x\\n\\u{1b}[2J", "control characters escaped");
        // Without a target, the block has no Target line (a_task_reads_as_a_block).
        t["target"] = Value::Null;
        assert!(!task_block(&t, &NOW).contains("Target"));
    }

    #[test]
    fn long_payloads_and_leases_get_their_own_lines() {
        let mut t = task();
        t["payload"] = json!({"text": "x".repeat(80)});
        t["state"] = json!("leased");
        t["lease_expires_at"] = json!("2025-11-30T12:00:25.000Z");
        t["last_error"] = json!("smtp timeout");
        let text = task_block(&t, &NOW);
        assert!(text.contains("\nLease expires  2025-11-30T12:00:25.000Z (in 25s)\n"), "{text}");
        assert!(text.contains("\nLast error     smtp timeout\n"), "{text}");
        assert!(
            text.ends_with(&format!(
                "Payload        {{\n                 \"text\": \"{}\"\n               }}",
                "x".repeat(80)
            )),
            "{text}"
        );
    }

    #[test]
    fn task_tables_align_columns() {
        let mut second = task();
        second["key"] = json!("订单/2");
        second["due_at"] = json!("2025-11-30T11:57:00.000Z");
        second["repeat"] = json!({"every": "24h", "times": 3});
        second["tags"] = json!([]);
        let text = task_table(&[task(), second], &NOW);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(
            lines[0],
            "KEY          STATE       DUE          DUE AT                     ATTEMPTS   REPEAT                      TAGS"
        );
        assert_eq!(
            lines[1],
            "order-1234   scheduled   in 29m 58s   2025-11-30T12:29:58.000Z       0/20   -                           pi-9"
        );
        assert_eq!(
            lines[2],
            "订单/2       scheduled   3m ago       2025-11-30T11:57:00.000Z       0/20   every 24h, 3 times in all   -"
        );
    }

    #[test]
    fn a_cron_repeat_names_its_syntax_unless_vixie() {
        let spring = json!({"cron": "0 0 9 ? * MON-FRI", "tz": "UTC", "cron_syntax": "spring"});
        assert_eq!(repeat(&spring, &NOW), "spring cron '0 0 9 ? * MON-FRI' (UTC)");
        let vixie = json!({"cron": "0 9 * * *", "tz": "UTC", "cron_syntax": "vixie"});
        assert_eq!(repeat(&vixie, &NOW), "cron '0 9 * * *' (UTC)");
    }

    #[test]
    fn repeats_read_as_words() {
        assert_eq!(
            repeat(&json!({"cron": "0 9 * * MON-FRI", "tz": "Asia/Shanghai"}), &NOW),
            "cron '0 9 * * MON-FRI' (Asia/Shanghai)"
        );
        assert_eq!(
            repeat(&json!({"every": "1h", "times": 1, "until": "2026-01-01T00:00:00.000Z"}), &NOW),
            "every 1h, 1 time in all, until 2026-01-01T00:00:00.000Z"
        );
        assert_eq!(repeat(&Value::Null, &NOW), "-");
    }

    #[test]
    fn dead_tasks_show_their_error_on_one_line() {
        let mut t = task();
        t["state"] = json!("dead");
        t["attempts"] = json!(20);
        t["last_error"] = json!(format!("smtp\ntimeout {}", "y".repeat(100)));
        let text = dead_table(&[t], &NOW);
        let row = text.lines().nth(1).unwrap();
        assert!(row.starts_with("order-1234   3m ago      20/20   smtp timeout yyy"), "{row}");
        assert!(row.contains("y…"), "{row}");
    }

    #[test]
    fn queue_tables_and_stats_totals() {
        let queues = vec![
            json!({"name": "a", "scheduled": 3, "leased": 1, "dead": 0, "next_due_at": "2025-11-30T12:05:00.000Z",
                   "paused": false, "oldest_overdue_ms": 0, "lag_ms": {"p50": 4, "p99": 1250}}),
            json!({"name": "b.long", "scheduled": 10, "leased": 0, "dead": 2, "next_due_at": null,
                   "paused": true, "oldest_overdue_ms": 95000, "lag_ms": {"p50": null, "p99": null}}),
        ];
        let overview = queue_table(&queues, &NOW);
        assert_eq!(
            overview.lines().nth(1),
            Some("a                3        1      0   in 5m      2025-11-30T12:05:00.000Z   no")
        );
        assert_eq!(
            overview.lines().nth(2),
            Some("b.long          10        0      2   -          -                          yes")
        );
        let stats = stats_table(&queues, &NOW);
        let lines: Vec<&str> = stats.lines().collect();
        assert_eq!(
            lines[1],
            "a                          3        1      0   in 5m                   -       4ms      1.2s"
        );
        assert_eq!(
            lines[2],
            "b.long                    10        0      2   -                  1m 35s         -         -"
        );
        assert_eq!(lines[3], "total (2 queues)          13        1      2   in 5m");
    }

    #[test]
    fn schedule_outcomes_read_as_sentences() {
        let answer = json!({"outcome": "created", "task": task()});
        assert_eq!(
            schedule_outcome(&answer, &NOW),
            "Created task 'order-1234' in queue order.cancel, due 2025-11-30T12:29:58.000Z (in 29m 58s)."
        );
        let mut t = task();
        t["version"] = json!(2);
        t["repeat"] = json!({"every": "24h"});
        let answer = json!({"outcome": "replaced", "task": t});
        assert_eq!(
            schedule_outcome(&answer, &NOW),
            "Replaced task 'order-1234' in queue order.cancel (now version 2), due 2025-11-30T12:29:58.000Z \
             (in 29m 58s).\nRepeats every 24h."
        );
        let answer = json!({"outcome": "kept", "task": task()});
        assert!(schedule_outcome(&answer, &NOW).starts_with("Kept the existing task 'order-1234'"));
    }

    #[test]
    fn a_schedule_kept_by_a_dedupe_window_names_the_completion() {
        let completed = json!({"queue": "order.receipt", "key": "order-1234", "id": 7, "state": "done",
            "completed_at": "2025-11-30T11:59:00.000Z", "attempts": 0, "occurrence": 1,
            "unique_until": "2025-11-30T12:59:00.000Z"});
        let answer = json!({"outcome": "kept", "completed": completed});
        assert_eq!(
            schedule_outcome(&answer, &NOW),
            "Kept: task 'order-1234' in queue order.receipt completed 2025-11-30T11:59:00.000Z (1m ago), and its \
             dedupe window holds the key until 2025-11-30T12:59:00.000Z (in 59m); nothing scheduled."
        );
    }

    /// API.md's example of a queue's settings.
    fn settings() -> Value {
        json!({
            "queue": "order.cancel", "source": "api",
            "defaults": {"max_attempts": 10, "backoff": {"initial": "1s", "factor": 2.0, "max": "1h"}, "repeat": null},
            "action": {"kind": "webhook", "url": "https://shop.example.com/hooks/cancel",
                       "secret_env": "ORDER_HOOK_SECRET", "timeout": "10s"},
            "concurrency": 16, "rate": "20/1m", "shards": 1, "targets": true, "paused": false,
            "version": 3, "updated_at": "2025-11-30T11:57:00.000Z"
        })
    }

    #[test]
    fn settings_read_as_a_block_with_the_action_field_by_field() {
        assert_eq!(
            settings_block(&settings(), &NOW),
            "Queue         order.cancel\n\
             Source        api (stored by the server)\n\
             Max attempts  10\n\
             Backoff       1s ×2 up to 1h\n\
             Repeat        -\n\
             Action        webhook\n\
             \x20             secret_env: ORDER_HOOK_SECRET\n\
             \x20             timeout: 10s\n\
             \x20             url: https://shop.example.com/hooks/cancel\n\
             Concurrency   16\n\
             Rate          20/1m\n\
             Shards        1\n\
             Targets       allowed (tasks may carry their own HTTP target)\n\
             Paused        no\n\
             Version       3\n\
             Updated       2025-11-30T11:57:00.000Z (3m ago)"
        );
    }

    #[test]
    fn settings_without_an_action_or_from_the_config_file_say_so() {
        let mut s = settings();
        s["action"] = Value::Null;
        s["rate"] = Value::Null;
        s["targets"] = json!(false);
        s["paused"] = json!(true);
        let text = settings_block(&s, &NOW);
        for line in [
            "Action        none: pull workers lease its tasks",
            "Concurrency   16 (unused without an action)",
            "Rate          -",
            "Targets       refused (a task with a target is 400)",
            "Paused        yes",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
        s["source"] = json!("config");
        s["version"] = json!(0);
        s["updated_at"] = json!("1970-01-01T00:00:00.000Z");
        let text = settings_block(&s, &NOW);
        assert!(text.contains("\nSource        config (the server's config file: change it there)\n"), "{text}");
        assert!(text.ends_with("\nVersion       0\nUpdated       -"), "never stored: no update time\n{text}");
    }

    #[test]
    fn nested_and_listed_action_fields_are_one_line_each() {
        let email = json!({"kind": "email", "smtp": {"host": "smtp.example.com", "port": 587, "password_env": "SMTP_PW"},
                           "from": "a@example.com", "to": ["b@example.com", "c@example.com"], "subject": null});
        assert_eq!(
            action(&email),
            "email\nfrom: a@example.com\nsmtp.host: smtp.example.com\nsmtp.password_env: SMTP_PW\nsmtp.port: 587\n\
             to: b@example.com, c@example.com"
        );
        let long = json!({"kind": "slack", "url_env": "SLACK_URL", "text": format!("line one\n{}", "x".repeat(100))});
        let text = action(&long);
        assert!(text.lines().count() == 3 && text.contains("text: line one xxx") && text.contains("x…"), "{text}");
    }

    #[test]
    fn a_queue_reads_as_a_block() {
        let q = json!({"name": "a", "scheduled": 3, "leased": 1, "dead": 0, "next_due_at": null,
                       "oldest_overdue_ms": 0, "lag_ms": {"p50": 4, "p99": 1250}});
        assert_eq!(
            queue_block(&q, &NOW),
            "Queue           a\nScheduled       3\nLeased          1\nDead            0\nNext due        -\n\
             Oldest overdue  -\nFire lag p50    4ms\nFire lag p99    1.2s"
        );
    }
}
