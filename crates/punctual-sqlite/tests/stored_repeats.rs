//! Repeats as the embedded store keeps them: JSON in the `repeat` column.
//!
//! Guards against `cron_syntax` changing what is on disk: a Vixie cron repeat must be
//! written as before the field existed (so an older punctual still reads the store),
//! one written by an older punctual must read back as the same Vixie repeat, and a
//! Spring or Quartz repeat must keep its syntax across a reopen (read as Vixie, its
//! expression would be refused or mean other times).

use punctual_core::{CronSyntax, NewTask, QueueName, Repeat, Store, TaskKey, Timestamp};
use punctual_sqlite::{DB_FILE, SqliteStore};

const NOW: Timestamp = Timestamp::from_millis(1_796_040_000_000);

fn queue() -> QueueName {
    QueueName::new("report.daily").expect("a queue name")
}

fn task(key: &str, repeat: Repeat) -> NewTask {
    let mut task = NewTask::new(queue(), TaskKey::new(key).expect("a key"), NOW);
    task.repeat = Some(repeat);
    task
}

async fn repeat_of(store: &SqliteStore, key: &str) -> Option<Repeat> {
    let task = store.get(&queue(), &TaskKey::new(key).expect("a key")).await.expect("get");
    task.expect("the task is kept").repeat
}

#[tokio::test]
async fn repeats_keep_their_syntax_and_vixie_ones_their_old_json() {
    let dir = tempfile::tempdir().expect("temp dir");
    let vixie = Repeat::cron("0 9 * * MON-FRI", "Asia/Shanghai").expect("a Vixie repeat");
    let spring = Repeat::cron_with_syntax("0 0 9 ? * MON-FRI", "Asia/Shanghai", CronSyntax::Spring).expect("Spring's");
    let quartz = Repeat::cron_with_syntax("0 0 18 L * ? 2027", "Europe/Berlin", CronSyntax::Quartz).expect("Quartz's");
    let store = SqliteStore::open(dir.path()).expect("open");
    let tasks = vec![task("vixie", vixie.clone()), task("spring", spring.clone()), task("quartz", quartz.clone())];
    for result in store.schedule(tasks, NOW).await.expect("schedule") {
        result.expect("scheduled");
    }
    store.close().await.expect("close");
    drop(store);

    let db = rusqlite::Connection::open(dir.path().join(DB_FILE)).expect("open the database");
    let column = |key: &str| -> String {
        db.query_row("SELECT repeat FROM tasks WHERE key = ?1", [key], |row| row.get(0)).expect("the repeat column")
    };
    assert_eq!(column("vixie"), r#"{"cron":"0 9 * * MON-FRI","tz":"Asia/Shanghai"}"#, "as written before cron_syntax");
    assert_eq!(column("spring"), r#"{"cron":"0 0 9 ? * MON-FRI","tz":"Asia/Shanghai","cron_syntax":"spring"}"#);
    // A repeat as an older punctual wrote it, with a limit.
    let old = r#"{"cron":"30 2 * * *","tz":"America/New_York","times":3}"#;
    db.execute("UPDATE tasks SET repeat = ?1 WHERE key = 'vixie'", [old]).expect("an old repeat");
    drop(db);

    let store = SqliteStore::open(dir.path()).expect("reopen");
    let expected_old = Repeat::cron("30 2 * * *", "America/New_York").and_then(|r| r.times(3)).expect("the old repeat");
    assert_eq!(repeat_of(&store, "vixie").await, Some(expected_old));
    assert_eq!(repeat_of(&store, "spring").await, Some(spring));
    assert_eq!(repeat_of(&store, "quartz").await, Some(quartz));
    store.close().await.expect("close");
}
