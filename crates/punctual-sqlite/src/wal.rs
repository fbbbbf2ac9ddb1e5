//! What the writer knows of the WAL: its size after the writer's last commit, from
//! SQLite's WAL hook, and from that when to ask for a background checkpoint and when
//! to restart the WAL itself (see `writer`).
//!
//! Invariants: the size is the WAL's frames after the last commit on the watching
//! thread, never the file's length (a WAL written again from its start keeps its
//! file); a checkpoint is asked for once per `checkpoint_bytes` of growth, however
//! often the writer looks; past `limit_bytes` the WAL is restarted, not truncated.

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::mpsc;

use rusqlite::Connection;

/// The bytes of a WAL frame besides its page.
const FRAME_HEADER_BYTES: u64 = 24;

thread_local! {
    /// The frames in the WAL after the last commit of a connection watched on this
    /// thread, as SQLite's WAL hook reports them: the writer commits on its own thread.
    static WAL_FRAMES: Cell<c_int> = const { Cell::new(0) };
}

/// The WAL hook: notes the frames in the WAL after a commit.
fn note_wal_frames(_: &rusqlite::hooks::Wal, frames: c_int) -> rusqlite::Result<()> {
    WAL_FRAMES.with(|noted| noted.set(frames));
    Ok(())
}

/// When the writer asks for a background checkpoint and when it restarts the WAL
/// itself, by what the WAL holds after its last commit.
pub(crate) struct WalWatch {
    frame_bytes: u64,
    /// Ask for a checkpoint each time the WAL has grown by this much.
    checkpoint_bytes: u64,
    /// Restart the WAL past this size.
    limit_bytes: u64,
    /// The WAL's size at the last ask (0 once it is written from its start again).
    asked_at: u64,
}

impl WalWatch {
    /// Watches the WAL of `conn`, whose commits run on this thread.
    pub(crate) fn new(conn: &Connection, checkpoint_bytes: u64, limit_bytes: u64) -> WalWatch {
        conn.wal_hook(Some(note_wal_frames));
        let page_size: u64 = conn.query_row("PRAGMA page_size", [], |row| row.get(0)).unwrap_or(4096);
        WalWatch { frame_bytes: page_size + FRAME_HEADER_BYTES, checkpoint_bytes, limit_bytes, asked_at: 0 }
    }

    /// The WAL's size after the last commit.
    fn bytes(&self) -> u64 {
        u64::try_from(WAL_FRAMES.with(Cell::get)).unwrap_or(0) * self.frame_bytes
    }

    /// Restarts the WAL past the limit; else asks `checkpoint` for a background
    /// checkpoint if the WAL has grown by `checkpoint_bytes` since the last ask.
    pub(crate) fn look(&mut self, conn: &Connection, checkpoint: &mpsc::SyncSender<()>) {
        let wal_bytes = self.bytes();
        if wal_bytes < self.asked_at {
            // Written again from its start: restarted, or by SQLite itself once a
            // passive checkpoint had copied every frame while no write was running.
            self.asked_at = 0;
        }
        if wal_bytes > self.limit_bytes {
            // `busy` 1: a reader still reads frames the restart would overwrite.
            match conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |row| row.get::<_, i64>(0)) {
                Ok(0) => self.asked_at = 0,
                Ok(_) => tracing::warn!(wal_bytes, "cannot restart the WAL while readers read it; will retry"),
                Err(e) => tracing::warn!(error = %e, wal_bytes, "cannot restart the WAL; will retry"),
            }
        } else if wal_bytes >= self.asked_at + self.checkpoint_bytes {
            self.asked_at = wal_bytes;
            // Full means one is already pending: nothing to add.
            let _ = checkpoint.try_send(());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test: a failed unwrap is a failed test with its line")]
mod tests {
    use super::*;

    /// Commits of 8 KiB each, looked at after each: a checkpoint is asked for once per
    /// 64 KiB of growth, not at every look once the file is large; past 512 KiB the WAL
    /// is written again from its start, so its file never grows past the limit and one
    /// commit, and never shrinks (it is not truncated).
    #[test]
    fn checkpoints_are_asked_by_growth_and_the_wal_is_restarted_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("wal.db")).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE pages (data BLOB NOT NULL);",
        )
        .unwrap();
        let (limit, step) = (512 * 1024, 64 * 1024);
        let mut watch = WalWatch::new(&conn, step, limit);
        let (asks, asked) = mpsc::sync_channel::<()>(1);
        let wal_file = || std::fs::metadata(dir.path().join("wal.db-wal")).map_or(0, |m| m.len());
        let (mut asked_for, mut file_before, mut restarts) = (0, 0, 0);
        let commits = 300;
        for _ in 0..commits {
            conn.execute("INSERT INTO pages (data) VALUES (zeroblob(8192))", []).unwrap();
            let before = watch.bytes();
            watch.look(&conn, &asks);
            asked_for += usize::from(asked.try_recv().is_ok());
            conn.execute("DELETE FROM pages WHERE rowid % 4 = 0", []).unwrap();
            restarts += usize::from(watch.bytes() < before);
            let file = wal_file();
            assert!(file <= limit + 64 * 1024, "the WAL file grew to {file} bytes");
            assert!(file >= file_before, "the WAL file shrank from {file_before} to {file} bytes");
            file_before = file;
        }
        assert!(restarts >= 2, "the WAL was written again from its start {restarts} times");
        // Each of the WAL's lives from its start to the limit asks at least once and at
        // most once per 64 KiB of it.
        let most = (limit / step) as usize * (restarts + 1);
        assert!((restarts..=most).contains(&asked_for), "{asked_for} checkpoints asked for in {commits} looks");
    }
}
