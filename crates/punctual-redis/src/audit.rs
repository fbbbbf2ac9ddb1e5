//! The audit on Redis (see `punctual_core::audit`): two ZSets of entries, one beside
//! the Hash of queue records and one beside that of calendars (`keys::audit`), so that
//! a record's change and its entry are written by one script in one slot, also on a
//! Cluster. Each entry is scored by its sequence number (`lua/audit.lua`): its time in
//! ms times 2048 plus the set's parity, 0 for the queue records' set and 1 for the
//! calendars' (raised above its set's last score when it would not be above it), so the
//! numbers of each set rise and the two sets' never meet. Entries appended on their own
//! (a purge, an access reload) go to the queue records' set.
//!
//! A page reads the newest entries below the cursor of both sets and keeps the newest
//! of them; the sweep reads each set's oldest and deletes those made before the cutoff.

use punctual_core::Result;
use punctual_core::Timestamp;
use punctual_core::audit::{AuditEntry, AuditRequest, decode};
use punctual_core::store::corrupt;

use crate::{Shared, keys};

/// The parity of the audit set beside the Hash `hash`.
pub(crate) fn parity(hash: &str) -> u8 {
    u8::from(hash.ends_with(":calendars"))
}

/// An entry from its member, `"<seq>|<entry>"`.
fn entry_of(member: &str) -> Result<AuditEntry> {
    let (seq, text) = member.split_once('|').ok_or_else(|| corrupt(format!("audit entry '{member}'")))?;
    decode(seq.parse().map_err(corrupt)?, text)
}

impl Shared {
    fn audit_sets(&self) -> [String; 2] {
        let prefix = &self.config.prefix;
        [keys::audit(&keys::queue_records(prefix)), keys::audit(&keys::calendar_records(prefix))]
    }

    pub(crate) async fn append_audit(&self, entry: &AuditEntry) -> Result<()> {
        self.append_audit_to(&keys::queue_records(&self.config.prefix), entry).await
    }

    pub(crate) async fn audit(&self, req: &AuditRequest) -> Result<Vec<AuditEntry>> {
        let max = req.before.map_or_else(|| "+inf".to_owned(), |before| format!("({before}"));
        let limit = req.limit.max(1);
        let mut entries = Vec::new();
        for set in self.audit_sets() {
            let members: Vec<String> = self
                .conn
                .query(
                    redis::cmd("ZRANGE")
                        .arg(&set)
                        .arg(&max)
                        .arg("-inf")
                        .arg("BYSCORE")
                        .arg("REV")
                        .arg("LIMIT")
                        .arg(0)
                        .arg(limit),
                )
                .await?;
            for member in members {
                entries.push(entry_of(&member)?);
            }
        }
        entries.sort_by_key(|entry| std::cmp::Reverse(entry.seq));
        entries.truncate(limit as usize);
        Ok(entries)
    }

    pub(crate) async fn sweep_audit(&self, before: Timestamp, limit: u32) -> Result<u64> {
        let mut deleted = 0;
        for set in self.audit_sets() {
            let room = i64::from(limit.max(1)) - deleted as i64;
            if room <= 0 {
                break;
            }
            let oldest: Vec<String> = self.conn.query(redis::cmd("ZRANGE").arg(&set).arg(0).arg(room - 1)).await?;
            let mut old = Vec::new();
            for member in oldest {
                if entry_of(&member)?.at >= before {
                    break;
                }
                old.push(member);
            }
            if !old.is_empty() {
                let removed: u64 = self.conn.query(redis::cmd("ZREM").arg(&set).arg(&old)).await?;
                deleted += removed;
            }
        }
        Ok(deleted)
    }
}
