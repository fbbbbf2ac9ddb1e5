//! The task record stored in a shard's `tasks` hash, as the scripts read and write it
//! (both formats in `lua/common.lua`): a header of numbers the scripts change, the last
//! error, the tags, the target, and a body the scripts never look into.
//!
//! Every new task is written in format 2: a state mark, base-36 numbers, times other
//! than `due` and `anchor` as distances (created from due, updated from created, the
//! lease's expiry from updated), usual values and trailing fields left out, and a body
//! that is the payload's JSON alone unless the policies differ from the defaults. A pending
//! task with a small payload then takes one 48-byte allocation in Redis where format 1
//! took 80 (see BENCHMARKS.md). Records of format 1, written before, are still read here
//! and by the scripts, which write them back in format 1 (their body untouched) until
//! the task ends or is replaced.
//!
//! A task's HTTP target ([`Target::to_stored`]; not [`crate::Target`], which names a
//! Redis) is kept between the tags and the body, its length in a 14th header field
//! left out when there is none, so a task without one (most tasks) has the record it
//! had before targets. The scripts keep the target as opaque text and tell a task's
//! lane by whether it has one. Only format 2 holds a target.
//!
//! A task's [`Priority`] is the 15th header field, left out when it is 0: a task of
//! priority 0 has the record it had before priorities (no byte more), and a record
//! written before (format 1, or format 2 of up to 14 fields) is of priority 0. Only
//! format 2 holds a priority above 0.
//!
//! A task's debounce bound ([`TaskMeta::debounce_until`]) is the 16th header field,
//! its distance from `due`, left out when there is none: a task outside a debounce
//! burst (every leased or dead task, nearly every scheduled one) has the record it had
//! before debounce, and a record written before has no bound. Only format 2 holds one.
//!
//! A task's [`Group`] is kept between the target and the body, its length in a 17th
//! header field left out when there is none: a task without a group has the record it
//! had before groups, and a record written before has no group. Only format 2 holds one.
//! A task's dedupe window ([`Unique`]) is the 18th header field, its length in ms,
//! negative when it holds a dead task too, left out when there is none (the 17th is then
//! written empty when the task has a window and no group): a task without one has the
//! record it had before windows, and a record written before has none.
//!
//! A task's [`Timing`] is one more policy in the body (`"t"`), left out when every
//! timing policy is the default: a task without timing has the body it had before
//! timing, and a body written before reads with the default timing. The scripts never
//! look into it. Its anchor ([`TaskMeta::anchor`]) is the header's 13th field, as it was:
//! the schedule script writes `transitions::anchor` there, a reschedule the anchor the
//! completion gives.

use punctual_core::policy::Timing;
use punctual_core::store::{Completed, corrupt};
use punctual_core::{
    Backoff, Group, NewTask, Priority, QueueName, Repeat, Result, StoreId, Tag, Target, Task, TaskKey, TaskMeta,
    TaskState, Timestamp, TraceContext, Unique,
};
use serde::{Deserialize, Serialize};

use crate::codes;

/// What only the Rust side reads: payload and policies. Format 1's body is this object;
/// format 2's the payload's JSON, then this object without the payload after a `\n`
/// when the policies are not the defaults. Each policy is left out at its default, so a
/// body written before a policy existed reads with that policy's default, and a task
/// with the default writes the body it wrote before.
#[derive(Default, Serialize, Deserialize)]
struct Body {
    #[serde(rename = "p", default, skip_serializing_if = "serde_json::Value::is_null")]
    payload: serde_json::Value,
    /// Left out when it is the default backoff, as most tasks' is.
    #[serde(rename = "b", default, skip_serializing_if = "is_default_backoff")]
    backoff: Backoff,
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    repeat: Option<Repeat>,
    /// The timing policies (calendar, misfire, overlap, jitter), left out when all are
    /// the defaults, as most tasks' are.
    #[serde(rename = "t", default, skip_serializing_if = "Timing::is_default")]
    timing: Timing,
    /// The W3C traceparent the task was scheduled with, left out when there is none.
    #[serde(rename = "tp", default, skip_serializing_if = "Option::is_none")]
    traceparent: Option<TraceContext>,
}

fn is_default_backoff(backoff: &Backoff) -> bool {
    *backoff == Backoff::default()
}

/// The usual `max_attempts` of format 2, which an empty field holds. Part of the
/// format, so fixed: it was `DEFAULT_MAX_ATTEMPTS` when the format was made, and a later
/// default must not change what stored records mean.
const USUAL_MAX_ATTEMPTS: i64 = 20;

/// The body (format 2) of a new or replacing task.
pub(crate) fn body_of(task: &NewTask) -> Result<String> {
    body(&task.payload, &task.backoff, task.repeat.as_ref(), &task.timing, task.traceparent.as_ref())
}

/// The body (format 2) of a task with this payload, these policies and this trace
/// context.
pub(crate) fn body(
    payload: &serde_json::Value,
    backoff: &Backoff,
    repeat: Option<&Repeat>,
    timing: &Timing,
    traceparent: Option<&TraceContext>,
) -> Result<String> {
    let mut body = if payload.is_null() { String::new() } else { json(payload)? };
    if !is_default_backoff(backoff) || repeat.is_some() || !timing.is_default() || traceparent.is_some() {
        // serde_json escapes every control character in strings: the payload has no `\n`.
        let policies = Body {
            payload: serde_json::Value::Null,
            backoff: *backoff,
            repeat: repeat.cloned(),
            timing: timing.clone(),
            traceparent: traceparent.cloned(),
        };
        body.push('\n');
        body.push_str(&json(&policies)?);
    }
    Ok(body)
}

fn json(value: &impl Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|e| punctual_core::Error::Internal(e.to_string()))
}

/// The target as the record keeps it: its stored text, empty for none.
pub(crate) fn target_of(task: &NewTask) -> String {
    target_text(task.target.as_ref())
}

/// [`target_of`] of a target.
pub(crate) fn target_text(target: Option<&Target>) -> String {
    target.map(Target::to_stored).unwrap_or_default()
}

/// A debounced schedule's `max_wait` in ms as the schedule script takes it, empty when
/// the task is not debounced; at most [`Timestamp::MAX`]'s ms, so the script's bound
/// (now + max_wait, capped at that) is exact.
pub(crate) fn debounce_of(task: &NewTask) -> String {
    let latest = Timestamp::MAX.as_millis().unsigned_abs();
    task.debounce.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX).min(latest).to_string()).unwrap_or_default()
}

/// A task's dedupe window as the schedule script takes it and the record keeps it: its
/// length in ms, `-` before it when it holds a dead task too, empty for none; at most
/// [`Timestamp::MAX`]'s ms (a longer window ends at that instant all the same).
pub(crate) fn unique_of(task: &NewTask) -> String {
    window_text(task.unique_for)
}

/// [`unique_of`] of a window.
pub(crate) fn window_text(unique: Option<Unique>) -> String {
    let Some(unique) = unique else { return String::new() };
    let latest = Timestamp::MAX.as_millis().unsigned_abs();
    let window = u64::try_from(unique.window.as_millis()).unwrap_or(u64::MAX).min(latest);
    if unique.dead { format!("-{window}") } else { window.to_string() }
}

/// The dedupe window a record's 17th field holds (see [`unique_of`]).
fn window_of(field: i64) -> Result<Unique> {
    let window = Unique::new(std::time::Duration::from_millis(field.unsigned_abs()));
    match field {
        0 => Err(corrupt("a dedupe window of 0")),
        ..0 => Ok(window.counting_dead()),
        _ => Ok(window),
    }
}

/// The completion record of `key` in `queue` as `lua/complete.lua` writes it:
/// `"<completed_at>,<id>,<attempts>,<occurrence>,<unique_until>"`, decimal.
pub(crate) fn completed(queue: &QueueName, key: &TaskKey, record: &[u8]) -> Result<Completed> {
    let text = std::str::from_utf8(record).map_err(corrupt)?;
    let bad = || corrupt(format!("completion record '{text}'"));
    let numbers: Vec<i64> =
        text.split(',').map(str::parse).collect::<std::result::Result<_, _>>().map_err(|_| bad())?;
    let [completed_at, id, attempts, occurrence, until] = numbers[..] else { return Err(bad()) };
    let count = |n: i64| u32::try_from(n).map_err(|_| bad());
    let id = u64::try_from(id).map_err(|_| bad())?;
    let mut done = Completed::new(
        queue.clone(),
        key.clone(),
        id,
        Timestamp::from_millis(completed_at),
        Timestamp::from_millis(until),
    );
    done.attempts = count(attempts)?;
    done.occurrence = count(occurrence)?;
    Ok(done)
}

/// The text of `done` as `lua/complete.lua` writes a completion record, which
/// [`completed`] reads back.
pub(crate) fn completion_text(done: &Completed) -> String {
    format!(
        "{},{},{},{},{}",
        done.completed_at.as_millis(),
        done.id,
        done.attempts,
        done.occurrence,
        done.unique_until.as_millis()
    )
}

/// Tags as the scripts keep them.
pub(crate) fn tags_of(tags: &[Tag]) -> String {
    let mut joined = String::new();
    for (i, tag) in tags.iter().enumerate() {
        if i > 0 {
            joined.push('\n');
        }
        joined.push_str(tag.as_str());
    }
    joined
}

/// A record's header, in either format, with the usual values filled in.
struct Header {
    state: TaskState,
    due: i64,
    exp: i64,
    fence: i64,
    ver: i64,
    att: i64,
    max: i64,
    occ: i64,
    anchor: i64,
    id: i64,
    created: i64,
    updated: i64,
    /// Negative: no last error.
    errlen: i64,
    taglen: i64,
    /// 0: no target.
    targetlen: i64,
    priority: i64,
    /// The debounce bound, ms; `None` outside a burst.
    debounce_until: Option<i64>,
    /// 0: no group.
    grouplen: i64,
    /// The dedupe window, ms, negative when it holds a dead task too; `None`: none.
    unique: Option<i64>,
}

/// Format 1's header (without its `|`): 14 decimal fields.
fn header_v1(header: &str) -> Result<Header> {
    // An empty field holds its usual value, which may be another field's; `None` until then.
    let numbers = header
        .split(',')
        .map(|n| if n.is_empty() { Ok(None) } else { n.parse::<i64>().map(Some) })
        .collect::<std::result::Result<Vec<Option<i64>>, _>>();
    let n = numbers.map_err(|e| corrupt(format!("record header '{header}': {e}")))?;
    let [st, due, exp, fence, ver, att, max, occ, anchor, id, created, updated, errlen, taglen] = n[..] else {
        return Err(corrupt(format!("record header '{header}' has {} fields, not 14", n.len())));
    };
    let required = |v: Option<i64>| v.ok_or_else(|| corrupt(format!("record header '{header}' lacks a field")));
    let st = required(st)?;
    let (due, created) = (required(due)?, required(created)?);
    Ok(Header {
        state: codes::state_of(st).ok_or_else(|| corrupt(format!("unknown state {st}")))?,
        due,
        exp: exp.unwrap_or(0),
        fence: fence.unwrap_or(0),
        ver: ver.unwrap_or(1),
        att: att.unwrap_or(0),
        max: required(max)?,
        occ: occ.unwrap_or(1),
        anchor: anchor.unwrap_or(due),
        id: required(id)?,
        created,
        updated: updated.unwrap_or(created),
        errlen: errlen.unwrap_or(-1),
        taglen: required(taglen)?,
        targetlen: 0,
        priority: 0,
        debounce_until: None,
        grouplen: 0,
        unique: None,
    })
}

/// Format 2's header after its mark (without its `|`): up to 18 base-36 fields (13
/// before targets, 14 before priorities, 15 before debounce, 16 before groups, 17
/// before windows).
fn header_v2(state: TaskState, header: &str) -> Result<Header> {
    let bad = |what: &str| corrupt(format!("record header '{header}': {what}"));
    let fields: Vec<&str> = header.split(',').collect();
    if fields.len() > 18 {
        return Err(bad("more than 18 fields"));
    }
    let number = |i: usize| -> Result<Option<i64>> {
        match fields.get(i) {
            None | Some(&"") => Ok(None),
            Some(digits) => i64::from_str_radix(digits, 36).map(Some).map_err(|e| bad(&e.to_string())),
        }
    };
    let or = |i: usize, usual: i64| number(i).map(|n| n.unwrap_or(usual));
    let due = number(0)?.ok_or_else(|| bad("no due time"))?;
    // Distances: created from due, updated from created, the lease's expiry from updated.
    let created = due.checked_sub(or(2, 0)?).ok_or_else(|| bad("created out of range"))?;
    let updated = created.checked_add(or(7, 0)?).ok_or_else(|| bad("updated out of range"))?;
    let exp = match number(5)? {
        None => 0,
        Some(lease) => updated.checked_add(lease).ok_or_else(|| bad("lease expiry out of range"))?,
    };
    let debounce_until = match number(15)? {
        None => None,
        Some(distance) => Some(due.checked_add(distance).ok_or_else(|| bad("debounce bound out of range"))?),
    };
    Ok(Header {
        state,
        due,
        id: number(1)?.ok_or_else(|| bad("no id"))?,
        created,
        max: or(3, USUAL_MAX_ATTEMPTS)?,
        taglen: or(4, 0)?,
        exp,
        fence: or(6, 0)?,
        updated,
        att: or(8, 0)?,
        errlen: or(9, -1)?,
        ver: or(10, 1)?,
        occ: or(11, 1)?,
        anchor: or(12, due)?,
        targetlen: or(13, 0)?,
        priority: or(14, 0)?,
        debounce_until,
        grouplen: or(16, 0)?,
        unique: number(17)?,
    })
}

/// Format 2's body: the payload's JSON (empty: null), then the policies after a `\n`.
fn body_v2(body: &[u8]) -> Result<Body> {
    let (payload, policies) = match body.iter().position(|&b| b == b'\n') {
        Some(newline) => (&body[..newline], Some(&body[newline + 1..])),
        None => (body, None),
    };
    let mut body: Body = match policies {
        Some(policies) => serde_json::from_slice(policies).map_err(corrupt)?,
        None => Body::default(),
    };
    if !body.payload.is_null() {
        return Err(corrupt("a payload among the policies"));
    }
    if !payload.is_empty() {
        body.payload = serde_json::from_slice(payload).map_err(corrupt)?;
    }
    Ok(body)
}

/// Decodes the record of `key` in `queue` of the store `store` (the record does not
/// hold it: every task of a store has the same), in either format.
pub(crate) fn decode(store: StoreId, queue: &QueueName, key: &str, record: &[u8]) -> Result<Task> {
    let bar = record.iter().position(|&b| b == b'|').ok_or_else(|| corrupt("a record without a header"))?;
    let header = std::str::from_utf8(&record[..bar]).map_err(corrupt)?;
    // Format 1 opens with its state's number, format 2 with its state's mark.
    let (h, format_2) = match record[0] {
        b'0'..=b'9' => (header_v1(header)?, false),
        mark => {
            let state = codes::state_of_mark(mark).ok_or_else(|| corrupt(format!("record header '{header}'")))?;
            (header_v2(state, &header[1..])?, true)
        }
    };
    let count = |v: i64| u32::try_from(v).map_err(corrupt);
    let unsigned = |v: i64| u64::try_from(v).map_err(corrupt);
    let mut rest = &record[bar + 1..];
    let mut take = |len: usize| -> Result<&[u8]> {
        if len > rest.len() {
            return Err(corrupt("a record shorter than its header says"));
        }
        let (head, tail) = rest.split_at(len);
        rest = tail;
        Ok(head)
    };
    let last_error = match usize::try_from(h.errlen) {
        Ok(len) => Some(String::from_utf8(take(len)?.to_vec()).map_err(corrupt)?),
        Err(_) => None,
    };
    let tags_text = std::str::from_utf8(take(usize::try_from(h.taglen).map_err(corrupt)?)?).map_err(corrupt)?;
    let tags = if tags_text.is_empty() {
        Vec::new()
    } else {
        tags_text.split('\n').map(|t| Tag::new(t).map_err(corrupt)).collect::<Result<Vec<_>>>()?
    };
    let target = match usize::try_from(h.targetlen).map_err(corrupt)? {
        0 => None,
        len => Some(Target::from_stored(std::str::from_utf8(take(len)?).map_err(corrupt)?)?),
    };
    let group = match usize::try_from(h.grouplen).map_err(corrupt)? {
        0 => None,
        len => Some(Group::new(std::str::from_utf8(take(len)?).map_err(corrupt)?).map_err(corrupt)?),
    };
    let body: Body = if format_2 { body_v2(rest)? } else { serde_json::from_slice(rest).map_err(corrupt)? };
    let mut meta =
        TaskMeta::new(store, unsigned(h.id)?, unsigned(h.fence)?, count(h.occ)?, Timestamp::from_millis(h.anchor));
    meta.debounce_until = h.debounce_until.map(Timestamp::from_millis);
    let key = TaskKey::new(key).map_err(corrupt)?;
    let mut task =
        Task::from_new(NewTask::new(queue.clone(), key, Timestamp::from_millis(h.due)), meta, Timestamp::EPOCH);
    task.state = h.state;
    task.payload = body.payload;
    task.attempts = count(h.att)?;
    task.max_attempts = count(h.max)?;
    task.backoff = body.backoff;
    task.repeat = body.repeat;
    task.timing = body.timing;
    task.traceparent = body.traceparent;
    task.tags = tags;
    task.version = unsigned(h.ver)?;
    task.created_at = Timestamp::from_millis(h.created);
    task.updated_at = Timestamp::from_millis(h.updated);
    task.lease_expires_at = (task.state == TaskState::Leased).then(|| Timestamp::from_millis(h.exp));
    task.last_error = last_error;
    task.target = target;
    task.group = group;
    task.priority = u32::try_from(h.priority)
        .ok()
        .and_then(|p| Priority::new(p).ok())
        .ok_or_else(|| corrupt(format!("priority {} is not 0 to 9", h.priority)))?;
    task.unique_for = h.unique.map(window_of).transpose()?;
    Ok(task)
}

#[cfg(test)]
mod tests;
