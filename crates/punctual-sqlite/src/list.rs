//! Listing a queue's tasks a page at a time, in (due, id) order, by state and by tag.
//!
//! Invariants: a page holds the first `limit` tasks after the cursor in (due, id)
//! order, and one row more is read to know whether more follow. A page reads index
//! ranges already in that order, never the whole queue sorted (checked in
//! `query_plans`): its cost is its limit, or with a tag the tag's tasks in the queue.

use std::sync::LazyLock;

use punctual_core::store::{ListRequest, Page};
use punctual_core::{Error, Result, StoreId, Tag, TaskState};
use rusqlite::{Connection, params};

use crate::codes::{ANY_TASK, DEAD, LEASED, SCHEDULED_CODES, SCHEDULED_HANDLER_LANE};
use crate::map_err;
use crate::queues::queue_id;
use crate::row::{RawTask, TASK_COLUMNS};

pub(crate) fn bad_cursor() -> Error {
    Error::invalid("cursor", "this cursor was not issued by this store; start again without one")
}

/// Cursors are `<due_at>.<id>` of the last task of the page.
fn parse_cursor(cursor: &str) -> Result<(i64, i64)> {
    let (due, id) = cursor.split_once('.').ok_or_else(bad_cursor)?;
    Ok((due.parse().map_err(|_| bad_cursor())?, id.parse().map_err(|_| bad_cursor())?))
}

/// The tasks a listing reads, by their state codes.
#[derive(Clone, Copy, Debug)]
enum Codes {
    /// Every code.
    Any,
    /// Every scheduled code (both lanes, with and without a group).
    Scheduled,
    /// The one code bound as `?5`.
    Bound,
}

/// A page of a listing: the tasks of queue `?1` after the cursor `(?2, ?3)` in due
/// order, at most `?4`; `?5` the state code and `?6` the tag, each used only when
/// listing by it (the others are compared with themselves, so every statement takes
/// the same parameters).
///
/// One state code is a range of `tasks_by_due` already in due order. Scheduled is four
/// codes, one per lane with and without a group: the ranges are merged (a compound `ORDER BY` that SQLite
/// runs as a merge of two ordered searches), so a page reads at most `?4` rows of each,
/// where one search of both codes (`state IN`) would need a sort (a temporary B-tree
/// in the plan). With a tag, the tag's index rows drive the query (CROSS JOIN keeps
/// them outer): a page costs the tag's tasks in the queue, however many others it
/// holds.
fn listing(codes: Codes, tagged: bool) -> String {
    let (from, tag_filter) = if tagged {
        ("tags g CROSS JOIN tasks ON tasks.id = g.task_id", "AND g.queue_id = ?1 AND g.tag = ?6")
    } else {
        ("tasks", "AND ?6 = ?6")
    };
    let select = |state_filter: &str| {
        format!(
            "SELECT {TASK_COLUMNS} FROM {from} WHERE tasks.queue_id = ?1 {tag_filter} {state_filter} \
             AND (due_at, tasks.id) > (?2, ?3)"
        )
    };
    match (codes, tagged) {
        (Codes::Scheduled, false) => {
            let ranges: Vec<String> = SCHEDULED_CODES
                .iter()
                .enumerate()
                .map(|(i, code)| select(&format!("AND state = {code}{}", if i == 0 { " AND ?5 = ?5" } else { "" })))
                .collect();
            format!("{} ORDER BY due_at, id LIMIT ?4", ranges.join(" UNION ALL "))
        }
        (Codes::Scheduled, true) => {
            let codes: Vec<String> = SCHEDULED_CODES.iter().map(i64::to_string).collect();
            format!(
                "{} ORDER BY due_at, tasks.id LIMIT ?4",
                select(&format!("AND state IN ({}) AND ?5 = ?5", codes.join(", ")))
            )
        }
        (Codes::Bound, _) => format!("{} ORDER BY due_at, tasks.id LIMIT ?4", select("AND state = ?5")),
        (Codes::Any, _) => {
            format!("{} ORDER BY due_at, tasks.id LIMIT ?4", select(&format!("AND {ANY_TASK} AND ?5 = ?5")))
        }
    }
}

/// Every listing statement, by the codes it reads, each `[untagged, by tag]`.
struct Listings {
    any: [String; 2],
    scheduled: [String; 2],
    bound: [String; 2],
}

static LISTINGS: LazyLock<Listings> = LazyLock::new(|| {
    let by_tag = |codes| [false, true].map(|tagged| listing(codes, tagged));
    Listings { any: by_tag(Codes::Any), scheduled: by_tag(Codes::Scheduled), bound: by_tag(Codes::Bound) }
});

/// The statement of a listing of the tasks in `state` (any when `None`), by tag or not.
pub(crate) fn list_sql(state: Option<TaskState>, tagged: bool) -> &'static str {
    let by_tag = match state {
        None => &LISTINGS.any,
        Some(TaskState::Scheduled) => &LISTINGS.scheduled,
        Some(TaskState::Leased | TaskState::Dead) => &LISTINGS.bound,
    };
    &by_tag[usize::from(tagged)]
}

pub(crate) fn list(conn: &Connection, store: StoreId, req: &ListRequest) -> Result<Page> {
    let (after_due, after_id) = match &req.cursor {
        Some(cursor) => parse_cursor(cursor)?,
        None => (i64::MIN, i64::MIN),
    };
    let Some(queue_id) = queue_id(conn, &req.queue)? else { return Ok(Page::new(Vec::new(), None)) };
    let limit = i64::from(req.limit.max(1));
    let state = match req.state {
        Some(TaskState::Leased) => LEASED,
        Some(TaskState::Dead) => DEAD,
        // Unused: scheduled is several codes, written in the SQL.
        Some(TaskState::Scheduled) | None => SCHEDULED_HANDLER_LANE,
    };
    let tag = req.tag.as_ref().map_or("", Tag::as_str);
    let raws: Vec<RawTask> = conn
        .prepare_cached(list_sql(req.state, req.tag.is_some()))
        .and_then(|mut stmt| {
            stmt.query_map(params![queue_id, after_due, after_id, limit + 1, state, tag], RawTask::from_row)?.collect()
        })
        .map_err(map_err)?;
    let more = raws.len() as i64 > limit;
    let tasks =
        raws.into_iter().take(limit as usize).map(|raw| raw.decode(store, &req.queue)).collect::<Result<Vec<_>>>()?;
    let next_cursor = match tasks.last() {
        Some(last) if more => Some(format!("{}.{}", last.due_at.as_millis(), last.meta.id)),
        _ => None,
    };
    Ok(Page::new(tasks, next_cursor))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
mod tests {
    use punctual_core::{NewTask, QueueName, Target, TaskKey, Timestamp};

    use super::*;
    use crate::schedule::schedule;

    /// Listing the scheduled tasks merges the lanes in due order, ties by id, and pages
    /// through them visiting each once, ties across lanes and page ends included.
    #[test]
    fn listing_scheduled_tasks_pages_through_both_lanes_in_due_order() {
        let conn = crate::schema::in_memory();
        let store = StoreId::from_bits(7);
        let queue = QueueName::new("mixed").unwrap();
        let at = |s: i64| Timestamp::from_millis(s * 1000);
        let target = Target::new("https://hooks.example.com/x").unwrap();
        // Keys in creation (id) order; targets on every other, due times colliding.
        let dues = [3, 1, 1, 2, 3, 1, 5, 2];
        let tasks = dues
            .iter()
            .enumerate()
            .map(|(i, due)| {
                let mut task = NewTask::new(queue.clone(), TaskKey::new(format!("k{i}")).unwrap(), at(*due));
                task.target = (i % 2 == 1).then(|| target.clone());
                task
            })
            .collect();
        for result in schedule(&conn, store, tasks, at(0)).unwrap() {
            result.unwrap();
        }
        let mut expected: Vec<(i64, String)> =
            dues.iter().enumerate().map(|(i, due)| (*due, format!("k{i}"))).collect();
        expected.sort();
        let expected: Vec<String> = expected.into_iter().map(|(_, key)| key).collect();
        for limit in 1..=9 {
            let (mut seen, mut cursor) = (Vec::new(), None);
            loop {
                let request = ListRequest::new(queue.clone(), Some(TaskState::Scheduled), limit, cursor);
                let page = list(&conn, store, &request).unwrap();
                seen.extend(page.tasks.iter().map(|task| task.key.to_string()));
                let Some(next) = page.next_cursor else { break };
                cursor = Some(next);
            }
            assert_eq!(seen, expected, "pages of {limit}");
        }
    }
}
