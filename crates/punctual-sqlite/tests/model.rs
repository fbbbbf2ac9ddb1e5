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
            Schedule(vec![ScheduleItem::once(1, 3, -500), ScheduleItem::once(1, 0, -1000)]),
            Lease { queue: 1, max: 2, lease_secs: 1, group_limit: None, group_rate: None },
            Advance { ms: 1000 },
            Reap { limit: 1 },
        ],
    );
}

/// Found by the model: a bulk retry by keys naming one dead task twice read it twice,
/// dead both times, and counted it twice (`retried` 2 for one task).
#[test]
fn a_bulk_retry_by_keys_counts_a_key_given_twice_once() {
    replay(
        fresh_store,
        vec![
            Schedule(vec![ScheduleItem::once(0, 0, -1000)]),
            FailDue { queue: 0, max: 1 },
            RetryDeadMany { queue: 0, which: DeadKeys(vec![Existing(0), Existing(0)]), limit: 2 },
        ],
    );
}
