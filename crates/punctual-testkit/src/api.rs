//! Facts of `API.md` that the server's in-process tests and the binary's end-to-end
//! tests both check, written once.

/// The fields of API.md's task object, exactly.
pub const TASK_FIELDS: [&str; 15] = [
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
    "version",
    "created_at",
    "updated_at",
    "lease_expires_at",
    "last_error",
];

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
