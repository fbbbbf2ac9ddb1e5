//! The proptest strategies of the record tests: tasks of every shape, each format's,
//! and headers and bodies close to valid ones.

use std::time::Duration;

use proptest::prelude::*;
use serde_json::Value;

use super::super::*;
use super::STORE;
use punctual_core::calendar::CalendarName;
use punctual_core::policy::{Misfire, Overlap};
use punctual_core::{CronSyntax, TargetMethod};

pub(super) fn any_time() -> impl Strategy<Value = Timestamp> {
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

pub(super) fn any_text_without_controls(max_bytes: usize) -> impl Strategy<Value = String> {
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
pub(super) fn any_payload() -> impl Strategy<Value = Value> {
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

/// Targets of every shape: odd URLs, each method, headers in any order with odd
/// values, any timeout, any body.
pub(super) fn any_target() -> impl Strategy<Value = Option<Target>> {
    let url = prop_oneof![
        Just("http://127.0.0.1:9/hook".to_owned()),
        "https://[a-z]{1,12}\\.example(:[0-9]{1,5})?/[a-zA-Z0-9%|,;?=&~é]{0,24}",
    ];
    let method = prop::sample::select(vec![
        TargetMethod::Post,
        TargetMethod::Put,
        TargetMethod::Patch,
        TargetMethod::Get,
        TargetMethod::Delete,
    ]);
    let headers = prop::collection::vec(("[A-Za-z][A-Za-z0-9-]{0,10}", "[^\\x00-\\x1f\\x7f]{0,16}"), 0..4);
    let timeout = prop_oneof![Just(10_000u64), 1_000..=60_000u64];
    let target = (url, method, headers, timeout, prop::option::of(any_payload())).prop_filter_map(
        "a valid target",
        |(url, method, headers, timeout_ms, body)| {
            let mut target = Target::new(url).ok()?.method(method).timeout(Duration::from_millis(timeout_ms)).ok()?;
            for (name, value) in headers {
                target = target.header(name, value).ok()?;
            }
            Some(match body {
                Some(body) => target.body(body),
                None => target,
            })
        },
    );
    prop::option::of(target)
}

pub(super) fn any_backoff() -> impl Strategy<Value = Backoff> {
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

pub(super) fn any_repeat() -> impl Strategy<Value = Option<Repeat>> {
    let rule = prop_oneof![
        prop_oneof![1..100_000u64, 1..=u64::MAX].prop_map(|ms| Repeat::every(Duration::from_millis(ms)).unwrap()),
        (
            prop::sample::select(vec!["0 9 * * MON-FRI", "*/5 * * * *", "30 2 * * *", "0 0 29 2 *", "15 * * * * *"]),
            prop::sample::select(vec!["UTC", "Asia/Shanghai", "America/New_York", "Australia/Lord_Howe"]),
        )
            .prop_map(|(expr, tz)| Repeat::cron(expr, tz).unwrap()),
        (
            prop::sample::select(vec![
                ("0 0 9 ? * MON-FRI", CronSyntax::Spring),
                ("0 0 18 L * ?", CronSyntax::Spring),
                ("0 0 9 ? * 2-6", CronSyntax::Quartz),
                ("0 15 10 ? * 6L 2027-2030", CronSyntax::Quartz),
            ]),
            prop::sample::select(vec!["UTC", "Asia/Shanghai", "Australia/Lord_Howe"]),
        )
            .prop_map(|((expr, syntax), tz)| Repeat::cron_with_syntax(expr, tz, syntax).unwrap()),
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

/// Timing policies, often the defaults (nothing stored), else any mix of them: the
/// record keeps what it is given, whether or not the policies go together.
pub(super) fn any_timing() -> impl Strategy<Value = Timing> {
    let ms = prop_oneof![1..100_000u64, 1..=86_400_000u64].prop_map(Duration::from_millis);
    let misfire = prop::sample::select(vec![Misfire::FireOnce, Misfire::FireAll, Misfire::Skip]);
    let overlap = prop::sample::select(vec![Overlap::Skip, Overlap::Queue]);
    let policies = (
        prop::option::of("[A-Za-z0-9._:-]{1,30}"),
        misfire,
        prop::option::of(ms.clone()),
        prop::option::of(1..=1000u32),
        overlap,
        prop::option::of(ms),
    );
    prop_oneof![
        Just(Timing::default()),
        policies.prop_map(|(calendar, misfire, misfire_after, catch_up_max, overlap, jitter)| {
            let mut timing = Timing::default();
            timing.calendar = calendar.map(|name| CalendarName::new(name).unwrap());
            timing.misfire = misfire;
            timing.misfire_after = misfire_after;
            timing.catch_up_max = catch_up_max;
            timing.overlap = overlap;
            timing.jitter = jitter;
            timing
        }),
    ]
}

prop_compose! {
    pub(super) fn any_task()(
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
        // The fields that came after format 2's first version, in one boxed tree: inline,
        // the task's value tree overflowed a test thread's stack.
        (target, priority, debounce_until, group, unique, timing, traceparent) in (
            any_target(),
            prop_oneof![Just(0u8), 0..=9u8],
            prop::option::of(prop_oneof![any_time(), Just(Timestamp::EPOCH)]),
            prop::option::of(any_text_without_controls(Group::MAX_BYTES)),
            prop::option::of((1..=Timestamp::MAX.as_millis().unsigned_abs(), any::<bool>())),
            any_timing(),
            prop::option::of("00-[0-9a-f]{31}[1-9a-f]-[0-9a-f]{15}[1-9a-f]-[0-9a-f]{2}"),
        ).boxed(),
    ) -> Task {
        let queue = QueueName::new(queue).unwrap();
        let key = TaskKey::new(key).unwrap();
        // The usual values (anchor = due, updated = created) often, to cover empty fields.
        let anchor = if same_times.0 { due_at } else { anchor };
        let updated_at = if same_times.1 { created_at } else { updated_at };
        let mut meta = TaskMeta::new(STORE, id, fence, occurrence, anchor);
        // Any time, the due time itself (a distance of 0) among them.
        meta.debounce_until = debounce_until.map(|until| if until == Timestamp::EPOCH { due_at } else { until });
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
        task.target = target;
        task.priority = Priority::new(priority.into()).unwrap();
        task.group = group.map(|group| Group::new(group).unwrap());
        task.unique_for = unique.map(|(ms, dead)| {
            let window = Unique::new(Duration::from_millis(ms));
            if dead { window.counting_dead() } else { window }
        });
        task.timing = timing;
        task.traceparent = traceparent.map(|text| TraceContext::new(text).unwrap());
        task
    }
}

/// A task as format 1 can hold it: without a target, of priority 0, no debounce bound,
/// no group, no dedupe window, the default timing.
pub(super) fn any_task_of_format_1() -> impl Strategy<Value = Task> {
    any_task().prop_map(|mut task| {
        task.target = None;
        task.priority = Priority::LOWEST;
        task.meta.debounce_until = None;
        task.group = None;
        task.unique_for = None;
        task.timing = Timing::default();
        task.traceparent = None;
        task
    })
}

/// A header of either format: 12 to 16 decimal fields, or a mark (or another byte)
/// and 0 to 18 base-36 fields, each empty, a number (in or out of range) or junk.
pub(super) fn any_header() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        Just(String::new()),
        "-?[0-9]{1,3}",
        "-?[0-9]{1,20}",
        Just("1".into()),
        Just("-1".into()),
        ".{0,3}"
    ];
    let b36_field = prop_oneof![
        Just(String::new()),
        "-?[0-9a-z]{1,3}",
        "-?[0-9a-zA-Z]{1,14}",
        Just("k".into()),
        Just("-1".into()),
        ".{0,3}"
    ];
    prop_oneof![
        prop::collection::vec(field, 12..=16).prop_map(|fields| fields.join(",")),
        ("[SLDX0]", prop::collection::vec(b36_field, 0..=18))
            .prop_map(|(mark, fields)| format!("{mark}{}", fields.join(","))),
    ]
}

/// Bodies close to valid ones of either format: odd policies, odd JSON.
pub(super) fn any_body() -> impl Strategy<Value = String> {
    let policies = prop_oneof![
        ("[0-9a-z .]{0,12}", "-?[0-9.e]{1,8}", "[0-9a-z ]{0,12}")
            .prop_map(|(i, f, m)| format!(r#"{{"b":{{"initial":"{i}","factor":{f},"max":"{m}"}}}}"#)),
        ("[0-9*/,A-Z#L -]{0,20}", "[A-Za-z/_+-]{0,16}")
            .prop_map(|(c, tz)| format!(r#"{{"r":{{"cron":"{c}","tz":"{tz}"}}}}"#)),
    ];
    let format_2 = (prop_oneof![Just(String::new()), any_payload().prop_map(|p| p.to_string())], policies)
        .prop_map(|(payload, policies)| format!("{payload}\n{policies}"));
    prop_oneof![
        format_2,
        Just(String::new()),
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
