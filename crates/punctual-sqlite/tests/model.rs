//! Random operation sequences against the embedded store, checked against the model;
//! below the property, the sequences it once found, kept as plain regression tests.

use punctual_testkit::model::ops::*;
use punctual_testkit::model::replay;

async fn fresh_store() -> (punctual_sqlite::SqliteStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = punctual_sqlite::SqliteStore::open(dir.path()).expect("open store");
    (store, dir)
}

punctual_testkit::store_model_test!(fresh_store);

/// Two leases expire at the same instant and `reap` may end only one (limit 1). The
/// other is expired, hence not live, so `next_expiry` ("the earliest
/// `lease_expires_at` among leases still live after this call") must be `None`; the
/// store answers the expired lease's expiry.
#[test]
fn reap_next_expiry_names_only_live_leases() {
    replay(
        fresh_store,
        vec![
            Schedule(vec![
                ScheduleItem {
                    queue: 1,
                    key: 3,
                    due_ms: -500,
                    payload: 0,
                    max_attempts: 1,
                    tags: 0,
                    repeat: None,
                    if_exists: Replace,
                    custom_backoff: false,
                },
                ScheduleItem {
                    queue: 1,
                    key: 0,
                    due_ms: -1000,
                    payload: 0,
                    max_attempts: 1,
                    tags: 0,
                    repeat: None,
                    if_exists: Replace,
                    custom_backoff: false,
                },
            ]),
            Lease { queue: 1, max: 2, lease_secs: 1 },
            Advance { ms: 1000 },
            Reap { limit: 1 },
        ],
    );
}
