//! The task record stored in a shard's `tasks` hash, as the scripts read and write it
//! (format in `lua/common.lua`): a header of numbers the scripts change, the last
//! error, the tags, and a JSON body the scripts never look into.

use punctual_core::store::corrupt;
use punctual_core::{
    Backoff, NewTask, QueueName, Repeat, Result, StoreId, Tag, Task, TaskKey, TaskMeta, TaskState, Timestamp,
};
use serde::{Deserialize, Serialize};

use crate::codes;

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

/// Decodes the record of `key` in `queue` of the store `store` (the record does not
/// hold it: every task of a store has the same).
pub(crate) fn decode(store: StoreId, queue: &QueueName, key: &str, record: &[u8]) -> Result<Task> {
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
    let meta = TaskMeta::new(store, unsigned(id)?, unsigned(fence)?, count(occ)?, Timestamp::from_millis(anchor));
    let key = TaskKey::new(key).map_err(corrupt)?;
    let mut task =
        Task::from_new(NewTask::new(queue.clone(), key, Timestamp::from_millis(due)), meta, Timestamp::EPOCH);
    task.state = codes::state_of(st).ok_or_else(|| corrupt(format!("unknown state {st}")))?;
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
    use std::time::Duration;

    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;

    const STORE: StoreId = StoreId::from_bits(0x5eed);

    #[test]
    fn a_record_decodes_with_error_tags_and_body() {
        let body = r#"{"p":{"order":7},"b":{"initial":"1s","factor":2.0,"max":"1h"}}"#;
        let record = format!("1,1000,31000,7,2,1,20,3,500,42,10,20,4,7|boom{}{body}", "a\nbc\nde");
        let q = QueueName::new("q").unwrap();
        let task = decode(STORE, &q, "k", record.as_bytes()).unwrap();
        assert_eq!(task.state, TaskState::Leased);
        assert_eq!(task.lease_expires_at, Some(Timestamp::from_millis(31_000)));
        assert_eq!(task.meta, TaskMeta::new(STORE, 42, 7, 3, Timestamp::from_millis(500)));
        assert_eq!(task.last_error.as_deref(), Some("boom"));
        assert_eq!(task.tags.iter().map(|t| t.as_str()).collect::<Vec<_>>(), ["a", "bc", "de"]);
        assert_eq!(task.payload, serde_json::json!({"order": 7}));
        assert_eq!((task.version, task.attempts, task.max_attempts), (2, 1, 20));
    }

    #[test]
    fn empty_fields_take_their_usual_values() {
        let record = "0,1000,,,,,20,,,42,10,,,0|{}";
        let task = decode(STORE, &QueueName::new("q").unwrap(), "k", record.as_bytes()).unwrap();
        assert_eq!(task.state, TaskState::Scheduled);
        assert_eq!(task.meta, TaskMeta::new(STORE, 42, 0, 1, Timestamp::from_millis(1000)));
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
            assert!(decode(STORE, &q, "k", bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_float_in_the_payload_comes_back_exactly() {
        // Was: serde_json's default float parser read -3.296395216018084e-143 back as
        // -3.2963952160180844e-143, one ulp off: a payload changed by being stored.
        let mut task = NewTask::new(QueueName::new("q").unwrap(), TaskKey::new("k").unwrap(), Timestamp::EPOCH);
        task.payload = serde_json::json!([-3.296395216018084e-143, 0.1, 5e-324, 1.7976931348623157e308]);
        let record = format!("0,0,,,,,20,,,1,0,,,0|{}", body_of(&task).unwrap());
        let decoded = decode(STORE, &task.queue, "k", record.as_bytes()).unwrap();
        assert_eq!(decoded.payload, task.payload);
    }

    /// The record of `task` exactly as `encode` in `lua/common.lua` writes it: fields at
    /// their usual value left empty, then the error, the tags and the body.
    fn encode_as_the_scripts_do(task: &Task) -> Vec<u8> {
        let unless = |n: i64, usual: i64| if n == usual { String::new() } else { n.to_string() };
        let state = codes::state(task.state);
        let (due, created) = (task.due_at.as_millis(), task.created_at.as_millis());
        let mut new = NewTask::new(task.queue.clone(), task.key.clone(), task.due_at);
        new.payload = task.payload.clone();
        new.backoff = task.backoff;
        new.repeat = task.repeat.clone();
        let error = task.last_error.as_deref();
        let tags = tags_of(&task.tags);
        let header = [
            state.to_string(),
            due.to_string(),
            unless(task.lease_expires_at.map_or(0, Timestamp::as_millis), 0),
            unless(task.meta.fence as i64, 0),
            unless(task.version as i64, 1),
            unless(i64::from(task.attempts), 0),
            task.max_attempts.to_string(),
            unless(i64::from(task.meta.occurrence), 1),
            unless(task.meta.anchor.as_millis(), due),
            task.meta.id.to_string(),
            created.to_string(),
            unless(task.updated_at.as_millis(), created),
            unless(error.map_or(-1, |e| e.len() as i64), -1),
            tags.len().to_string(),
        ]
        .join(",");
        let mut record = format!("{header}|{}{tags}", error.unwrap_or("")).into_bytes();
        record.extend_from_slice(body_of(&new).unwrap().as_bytes());
        record
    }

    fn any_time() -> impl Strategy<Value = Timestamp> {
        let max = Timestamp::MAX.as_millis();
        prop_oneof![Just(0), 0..=max, max - 1_000..=max].prop_map(Timestamp::from_millis)
    }

    /// Numbers the scripts keep: Lua numbers are doubles, exact up to 2^53.
    fn lua_integer() -> impl Strategy<Value = u64> {
        prop_oneof![Just(0), Just(1), 0..1_000u64, 0..=1u64 << 53]
    }

    fn small_count() -> impl Strategy<Value = u32> {
        prop_oneof![Just(0), Just(1), 0..30u32, any::<u32>()]
    }

    fn any_text_without_controls(max_bytes: usize) -> impl Strategy<Value = String> {
        let unicode = prop::collection::vec(any::<char>(), 1..80);
        prop_oneof!["[a-z0-9-]{1,12}".prop_map(|s| s.chars().collect::<Vec<_>>()), unicode].prop_map(move |chars| {
            let mut text = String::new();
            for c in chars.into_iter().filter(|c| !c.is_control()) {
                if text.len() + c.len_utf8() > max_bytes {
                    break;
                }
                text.push(c);
            }
            if text.is_empty() {
                text.push('x'); // every character drawn was a control character
            }
            text
        })
    }

    /// JSON as a handler might send it: deep, wide, odd numbers and odd strings.
    fn any_payload() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f).map(Value::Number)),
            prop_oneof![Just(0.1), Just(-0.0), Just(5e-324), Just(1.7976931348623157e308), Just(1e21)]
                .prop_map(Value::from),
            ".*".prop_map(Value::String),
            Just(Value::String("|,\n\u{0}\"\\\u{2028}订单 🦀".into())),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(".{0,8}", inner, 0..6)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    fn any_backoff() -> impl Strategy<Value = Backoff> {
        let ms = prop_oneof![0..100_000u64, any::<u64>()];
        let factor = prop_oneof![Just(1.0), Just(2.0), 1.0..10.0f64, 1.0..f64::MAX];
        prop_oneof![
            Just(Backoff::default()),
            (ms.clone(), factor, ms).prop_map(|(initial, factor, extra)| {
                let max = initial.saturating_add(extra);
                Backoff::new(Duration::from_millis(initial), factor, Duration::from_millis(max)).unwrap()
            }),
        ]
    }

    fn any_repeat() -> impl Strategy<Value = Option<Repeat>> {
        let rule = prop_oneof![
            prop_oneof![1..100_000u64, 1..=u64::MAX].prop_map(|ms| Repeat::every(Duration::from_millis(ms)).unwrap()),
            (
                prop::sample::select(vec![
                    "0 9 * * MON-FRI",
                    "*/5 * * * *",
                    "30 2 * * *",
                    "0 0 29 2 *",
                    "15 * * * * *"
                ]),
                prop::sample::select(vec!["UTC", "Asia/Shanghai", "America/New_York", "Australia/Lord_Howe"]),
            )
                .prop_map(|(expr, tz)| Repeat::cron(expr, tz).unwrap()),
        ];
        prop::option::of((rule, prop::option::of(1..=u32::MAX), prop::option::of(any_time())).prop_map(
            |(mut repeat, times, until)| {
                if let Some(n) = times {
                    repeat = repeat.times(n).unwrap();
                }
                if let Some(t) = until {
                    repeat = repeat.until(t);
                }
                repeat
            },
        ))
    }

    prop_compose! {
        fn any_task()(
            queue in "[A-Za-z0-9._:-]{1,20}",
            key in any_text_without_controls(TaskKey::MAX_BYTES),
            state in prop::sample::select(vec![TaskState::Scheduled, TaskState::Leased, TaskState::Dead]),
            (due_at, anchor, created_at, updated_at, lease_expires_at) in
                (any_time(), any_time(), any_time(), any_time(), any_time()),
            payload in any_payload(),
            (attempts, max_attempts, occurrence) in (small_count(), small_count(), small_count()),
            backoff in any_backoff(),
            repeat in any_repeat(),
            tags in prop::collection::vec(any_text_without_controls(Tag::MAX_BYTES), 0..5),
            (id, fence, version) in (lua_integer(), lua_integer(), lua_integer()),
            last_error in prop::option::of(prop_oneof![Just(String::new()), ".*", Just("a|b\n1,2".to_owned())]),
            same_times in any::<(bool, bool)>(),
        ) -> Task {
            let queue = QueueName::new(queue).unwrap();
            let key = TaskKey::new(key).unwrap();
            // The usual values (anchor = due, updated = created) often, to cover empty fields.
            let anchor = if same_times.0 { due_at } else { anchor };
            let updated_at = if same_times.1 { created_at } else { updated_at };
            let meta = TaskMeta::new(STORE, id, fence, occurrence, anchor);
            let mut task = Task::from_new(NewTask::new(queue, key, due_at), meta, created_at);
            task.state = state;
            task.payload = payload;
            task.attempts = attempts;
            task.max_attempts = max_attempts;
            task.backoff = backoff;
            task.repeat = repeat;
            task.tags = tags.into_iter().map(|t| Tag::new(t).unwrap()).collect();
            task.version = version;
            task.updated_at = updated_at;
            task.lease_expires_at = (state == TaskState::Leased).then_some(lease_expires_at);
            task.last_error = last_error;
            task
        }
    }

    /// A header of 12 to 16 fields, each empty, a number (in or out of range) or junk.
    fn any_header() -> impl Strategy<Value = String> {
        let field = prop_oneof![
            Just(String::new()),
            "-?[0-9]{1,3}",
            "-?[0-9]{1,20}",
            Just("1".into()),
            Just("-1".into()),
            ".{0,3}"
        ];
        prop::collection::vec(field, 12..=16).prop_map(|fields| fields.join(","))
    }

    /// Bodies close to valid ones: odd policies, odd JSON.
    fn any_body() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("{}".to_owned()),
            ".*",
            any_payload().prop_map(|p| p.to_string()),
            any_payload().prop_map(|p| format!(r#"{{"p":{p}}}"#)),
            ("[0-9a-z .]{0,12}", "-?[0-9.e]{1,8}", "[0-9a-z ]{0,12}")
                .prop_map(|(i, f, m)| format!(r#"{{"b":{{"initial":"{i}","factor":{f},"max":"{m}"}}}}"#)),
            ("[0-9*/,A-Z#L -]{0,20}", "[A-Za-z/_+-]{0,16}")
                .prop_map(|(c, tz)| format!(r#"{{"r":{{"cron":"{c}","tz":"{tz}"}}}}"#)),
            ("[0-9a-z ]{0,12}", "-?[0-9]{1,12}", "[0-9T:Z-]{0,24}")
                .prop_map(|(e, n, u)| format!(r#"{{"r":{{"every":"{e}","times":{n},"until":"{u}"}}}}"#)),
        ]
    }

    proptest! {
        #[test]
        fn any_task_round_trips_through_its_record(task in any_task()) {
            let record = encode_as_the_scripts_do(&task);
            let decoded = decode(STORE, &task.queue, task.key.as_str(), &record);
            prop_assert_eq!(decoded, Ok(task), "{}", String::from_utf8_lossy(&record));
        }

        #[test]
        fn decoding_any_bytes_is_an_error_or_a_task_never_a_panic(
            record in prop_oneof![
                prop::collection::vec(any::<u8>(), 0..200),
                (any_header(), prop::collection::vec(any::<u8>(), 0..40), any_body()).prop_map(|(h, middle, body)| {
                    let mut record = format!("{h}|").into_bytes();
                    record.extend_from_slice(&middle);
                    record.extend_from_slice(body.as_bytes());
                    record
                }),
                any_task().prop_map(|t| encode_as_the_scripts_do(&t)).prop_flat_map(|record| {
                    let len = record.len();
                    (Just(record), 0..len, any::<u8>())
                }).prop_map(|(mut record, at, byte)| {
                    record[at] = byte;
                    record
                }),
            ],
            key in prop_oneof![Just("k".to_owned()), ".{0,8}"],
        ) {
            let _ = decode(STORE, &QueueName::new("q").unwrap(), &key, &record);
        }
    }
}
