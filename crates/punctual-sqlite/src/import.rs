//! Importing tasks and completion records as another store holds them
//! (`Store::import`, moving a deployment between stores): the whole request is one job
//! of the writer, so it is written whole or, on an error, not at all.
//!
//! Invariants: a task is written only where its (queue, key) holds no task, in any
//! state (a done task's kept row gives way, as to a schedule), and then as `transitions::imported` makes it: every column as the task gives
//! it (`schedule::IMPORT`, from the list of columns a schedule writes), an id that is
//! the next of `tasks`' sequence as a creation's, and fence 0. Its rows in `tags` are
//! written with it, and its group's row in `task_groups` by the triggers, as for any
//! insert: a leased task counts among its group's leases, and a group new here starts
//! at turn 0 (turns and rate slots are not carried). A completion record is written
//! only if it holds at the import's `now` and its key has no record that holds (one
//! that ended is replaced, as `completions::holding` deletes it).

use punctual_core::history::{HistoryEvent, encode};
use punctual_core::store::{ImportRequest, Imported};
use punctual_core::{Error, Result, Task, Timestamp};
use rusqlite::{Connection, OptionalExtension, ToSql, params};

use crate::codes::KEPT;
use crate::queues::queue_id_or_create;
use crate::schedule::{IMPORT, Written};
use crate::tasks::{retire_kept, write_tags};
use crate::{completions, map_err};

/// The id and state code of the row of key `?2` of queue `?1`, if any.
const PRESENT: &str = "SELECT id, state FROM tasks WHERE queue_id = ?1 AND key = ?2";

/// Writes `req`'s tasks and records as the module docs say; an answer per task, in order.
pub(crate) fn import(conn: &Connection, req: &ImportRequest) -> Result<Vec<Imported>> {
    let answers = req.tasks.iter().map(|task| import_task(conn, task, req.now)).collect::<Result<Vec<_>>>()?;
    for record in req.completions.iter().filter(|record| record.holds_at(req.now)) {
        let queue_id = queue_id_or_create(conn, &record.queue)?;
        if completions::holding(conn, queue_id, &record.queue, &record.key, req.now)?.is_none() {
            completions::write(conn, queue_id, record)?;
        }
    }
    Ok(answers)
}

fn import_task(conn: &Connection, task: &Task, now: Timestamp) -> Result<Imported> {
    let queue_id = queue_id_or_create(conn, &task.queue)?;
    let key = task.key.as_str();
    let present: Option<(i64, i64)> = conn
        .prepare_cached(PRESENT)
        .and_then(|mut stmt| stmt.query_row(params![queue_id, key], |row| Ok((row.get(0)?, row.get(1)?))).optional())
        .map_err(map_err)?;
    match present {
        Some((id, KEPT)) => retire_kept(conn, queue_id, key, id)?,
        Some(_) => return Ok(Imported::Present),
        None => {}
    }
    let version = i64::try_from(task.version)
        .map_err(|_| Error::invalid("version", format!("{} of task '{}' is out of range", task.version, task.key)))?;
    let created_at = task.created_at.as_millis();
    let lease_expires_at = task.lease_expires_at.map(|at| at.as_millis());
    let told = encode(&HistoryEvent::imported(task, now));
    let more: [(&str, &dyn ToSql); 9] = [
        (":queue_id", &queue_id),
        (":key", &key),
        (":version", &version),
        (":created_at", &created_at),
        (":lease_expires_at", &lease_expires_at),
        (":attempts", &task.attempts),
        (":occurrence", &task.meta.occurrence),
        (":last_error", &task.last_error),
        (":told", &told),
    ];
    let id = Written::of_task(task)?.run(conn, &IMPORT, &more, |stmt, bound| stmt.insert(bound))?;
    write_tags(conn, queue_id, id, &task.tags)?;
    Ok(Imported::Written)
}
