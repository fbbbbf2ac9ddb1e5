//! Facts of `API.md` that the server's in-process tests and the binary's end-to-end
//! tests both check, written once.

/// The fields of API.md's task object, exactly.
pub const TASK_FIELDS: [&str; 25] = [
    "queue",
    "key",
    "state",
    "due_at",
    "payload",
    "attempts",
    "max_attempts",
    "backoff",
    "repeat",
    "tags",
    "priority",
    "group",
    "version",
    "created_at",
    "updated_at",
    "lease_expires_at",
    "last_error",
    "target",
    "unique_for",
    // Wave 3's timing policies, each with its effective value.
    "calendar",
    "misfire",
    "misfire_after",
    "catch_up_max",
    "overlap",
    "jitter",
];

/// The fields of the task object that are left out when the task has none: its trace
/// context (`traceparent`, a W3C traceparent string).
pub const OPTIONAL_TASK_FIELDS: [&str; 1] = ["traceparent"];

/// Whether `text` has API.md's form of a time: RFC 3339 UTC with exactly three
/// fractional digits and `Z` (`2026-11-30T12:00:00.000Z`).
pub fn is_api_time(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T',
            13 | 16 => c == b':',
            19 => c == b'.',
            23 => c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// Asserts `task` has exactly API.md's fields ([`TASK_FIELDS`], and those of
/// [`OPTIONAL_TASK_FIELDS`] it has, each valid), reading each of its times with
/// `read_time`, which asserts the time's form (each test kit reads the wire its own way).
#[track_caller]
pub fn assert_task_shape<T>(task: &serde_json::Value, read_time: impl Fn(&serde_json::Value) -> T) {
    let object = task.as_object().unwrap_or_else(|| panic!("a task must be a JSON object, got {task}"));
    if let Some(traceparent) = object.get("traceparent") {
        let valid = traceparent.as_str().is_some_and(|text| punctual_core::TraceContext::new(text).is_ok());
        assert!(valid, "a task's traceparent is a W3C traceparent: {task}");
    }
    let mut got: Vec<&str> =
        object.keys().map(String::as_str).filter(|name| !OPTIONAL_TASK_FIELDS.contains(name)).collect();
    got.sort_unstable();
    let mut want = TASK_FIELDS.to_vec();
    want.sort_unstable();
    assert_eq!(got, want, "the task object's fields differ from API.md: {task}");
    for field in ["due_at", "created_at", "updated_at"] {
        read_time(&task[field]);
    }
    if !task["lease_expires_at"].is_null() {
        read_time(&task["lease_expires_at"]);
    }
}
