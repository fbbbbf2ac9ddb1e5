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
