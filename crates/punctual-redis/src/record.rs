//! The task record stored in a shard's `tasks` hash, as the scripts read and write it
//! (format in `lua/common.lua`): a header of numbers the scripts change, the last
//! error, the tags, and a JSON body the scripts never look into.

use punctual_core::store::corrupt;
use punctual_core::{Backoff, NewTask, QueueName, Repeat, Result, Tag, Task, TaskKey, TaskMeta, TaskState, Timestamp};
use serde::{Deserialize, Serialize};

/// What only the Rust side reads: payload and policies.
#[derive(Serialize, Deserialize)]
struct Body {
    #[serde(rename = "p", default, skip_serializing_if = "serde_json::Value::is_null")]
    payload: serde_json::Value,
    /// Left out when it is the default backoff, as most tasks' is.
    #[serde(rename = "b", default, skip_serializing_if = "is_default_backoff")]
    backoff: Backoff,
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    repeat: Option<Repeat>,
}

fn is_default_backoff(backoff: &Backoff) -> bool {
    *backoff == Backoff::default()
}

/// The body of a new or replacing task.
pub(crate) fn body_of(task: &NewTask) -> Result<String> {
    let body = Body { payload: task.payload.clone(), backoff: task.backoff, repeat: task.repeat.clone() };
    serde_json::to_string(&body).map_err(|e| punctual_core::Error::Internal(e.to_string()))
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

/// Decodes the record of `key` in `queue`.
pub(crate) fn decode(queue: &QueueName, key: &str, record: &[u8]) -> Result<Task> {
    let bar = record.iter().position(|&b| b == b'|').ok_or_else(|| corrupt("a record without a header"))?;
    let header = std::str::from_utf8(&record[..bar]).map_err(corrupt)?;
    // An empty field holds its usual value, which may be another field's (see
    // `lua/common.lua`); `None` until then.
    let numbers = header
        .split(',')
        .map(|n| if n.is_empty() { Ok(None) } else { n.parse::<i64>().map(Some) })
        .collect::<std::result::Result<Vec<Option<i64>>, _>>();
    let n = numbers.map_err(|e| corrupt(format!("record header '{header}': {e}")))?;
    let [st, due, exp, fence, ver, att, max, occ, anchor, id, created, updated, errlen, taglen] = n[..] else {
        return Err(corrupt(format!("record header '{header}' has {} fields, not 14", n.len())));
    };
    let required = |v: Option<i64>| v.ok_or_else(|| corrupt(format!("record header '{header}' lacks a field")));
    let (st, due, max, id, created, taglen) =
        (required(st)?, required(due)?, required(max)?, required(id)?, required(created)?, required(taglen)?);
    let (exp, fence, ver, att, occ) =
        (exp.unwrap_or(0), fence.unwrap_or(0), ver.unwrap_or(1), att.unwrap_or(0), occ.unwrap_or(1));
    let (anchor, updated, errlen) = (anchor.unwrap_or(due), updated.unwrap_or(created), errlen.unwrap_or(-1));
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
    let last_error = match usize::try_from(errlen) {
        Ok(len) => Some(String::from_utf8(take(len)?.to_vec()).map_err(corrupt)?),
        Err(_) => None,
    };
    let tags_text = std::str::from_utf8(take(usize::try_from(taglen).map_err(corrupt)?)?).map_err(corrupt)?;
    let tags = if tags_text.is_empty() {
        Vec::new()
    } else {
        tags_text.split('\n').map(|t| Tag::new(t).map_err(corrupt)).collect::<Result<Vec<_>>>()?
    };
    let body: Body = serde_json::from_slice(rest).map_err(corrupt)?;
    let meta = TaskMeta::new(unsigned(id)?, unsigned(fence)?, count(occ)?, Timestamp::from_millis(anchor));
    let key = TaskKey::new(key).map_err(corrupt)?;
    let mut task =
        Task::from_new(NewTask::new(queue.clone(), key, Timestamp::from_millis(due)), meta, Timestamp::EPOCH);
    task.state = match st {
        0 => TaskState::Scheduled,
        1 => TaskState::Leased,
        2 => TaskState::Dead,
        other => return Err(corrupt(format!("unknown state {other}"))),
    };
    task.payload = body.payload;
    task.attempts = count(att)?;
    task.max_attempts = count(max)?;
    task.backoff = body.backoff;
    task.repeat = body.repeat;
    task.tags = tags;
    task.version = unsigned(ver)?;
    task.created_at = Timestamp::from_millis(created);
    task.updated_at = Timestamp::from_millis(updated);
    task.lease_expires_at = (task.state == TaskState::Leased).then(|| Timestamp::from_millis(exp));
    task.last_error = last_error;
    Ok(task)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_decodes_with_error_tags_and_body() {
        let body = r#"{"p":{"order":7},"b":{"initial":"1s","factor":2.0,"max":"1h"}}"#;
        let record = format!("1,1000,31000,7,2,1,20,3,500,42,10,20,4,7|boom{}{body}", "a\nbc\nde");
        let q = QueueName::new("q").unwrap();
        let task = decode(&q, "k", record.as_bytes()).unwrap();
        assert_eq!(task.state, TaskState::Leased);
        assert_eq!(task.lease_expires_at, Some(Timestamp::from_millis(31_000)));
        assert_eq!(task.meta, TaskMeta::new(42, 7, 3, Timestamp::from_millis(500)));
        assert_eq!(task.last_error.as_deref(), Some("boom"));
        assert_eq!(task.tags.iter().map(|t| t.as_str()).collect::<Vec<_>>(), ["a", "bc", "de"]);
        assert_eq!(task.payload, serde_json::json!({"order": 7}));
        assert_eq!((task.version, task.attempts, task.max_attempts), (2, 1, 20));
    }

    #[test]
    fn empty_fields_take_their_usual_values() {
        let record = "0,1000,,,,,20,,,42,10,,,0|{}";
        let task = decode(&QueueName::new("q").unwrap(), "k", record.as_bytes()).unwrap();
        assert_eq!(task.state, TaskState::Scheduled);
        assert_eq!(task.meta, TaskMeta::new(42, 0, 1, Timestamp::from_millis(1000)));
        assert_eq!((task.version, task.attempts, task.last_error), (1, 0, None));
        assert_eq!((task.created_at, task.updated_at), (Timestamp::from_millis(10), Timestamp::from_millis(10)));
        assert_eq!((task.payload, task.backoff), (serde_json::Value::Null, Backoff::default()));
    }

    #[test]
    fn a_small_task_has_a_small_body() {
        let task = NewTask::new(QueueName::new("q").unwrap(), TaskKey::new("k").unwrap(), Timestamp::from_millis(5));
        let mut with_payload = task.clone();
        with_payload.payload = serde_json::json!({"n": 1});
        assert_eq!(body_of(&task).unwrap(), "{}");
        assert_eq!(body_of(&with_payload).unwrap(), r#"{"p":{"n":1}}"#);
    }

    #[test]
    fn a_damaged_record_is_an_error_not_a_panic() {
        let q = QueueName::new("q").unwrap();
        for bad in ["", "1,2,3|", "9,0,0,0,1,0,20,1,0,1,0,0,-1,0|{}", "0,0,0,0,1,0,20,1,0,1,0,0,50,0|short"] {
            assert!(decode(&q, "k", bad.as_bytes()).is_err(), "{bad:?}");
        }
    }
}
