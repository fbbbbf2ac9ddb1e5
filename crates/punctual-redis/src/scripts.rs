//! The Lua scripts, and one typed call per script: each takes typed arguments, builds
//! the script's `KEYS` and `ARGV` exactly as its header (`lua/*.lua`) says, and reads
//! its answer into typed results, so no caller builds an argument list by hand.
//!
//! Every script is `lua/clock.lua`, `lua/common.lua` and `lua/common_groups.lua`
//! followed by its own file (the lease script by `lua/group_slots.lua`,
//! `lua/lease_groups.lua` and then its own); but `lua/ids.lua`, `lua/change_record.lua`,
//! `lua/announce.lua` and `lua/register_queue.lua`, which work on no shard, and
//! `lua/sweep_history.lua` and `lua/import_history.lua` (one shard's histories alone) stand alone, and `lua/rate.lua` (no shard either) and `lua/completions_index.lua` (one shard's
//! index of completion records and the records alone) have only `lua/clock.lua` before
//! them. Loaded once per Redis node and called by SHA; redis-rs
//! reloads a script the node answers NOSCRIPT for (after a restart or a `SCRIPT
//! FLUSH`). (`lua/delete_if_unchanged.lua` is not the store's: `keyspace` loads and
//! calls it.)
//!
//! Invariants: a shard script gets the twenty-five keys of its one shard as `KEYS` (so
//! it touches only keys it was passed, on one Cluster node), then, for
//! `lua/schedule.lua`, `lua/complete.lua` and `lua/import.lua`, the completion record
//! key of each task (or record) of the call (under the same hash tag), then, for a
//! schedule, delete or cancel_tag that applies an outbox row, the shard's outbox marks,
//! and `ARGV[1..3]` = now, the wake-up channel, the queue; the codes it gets for our
//! enums come from `codes`, the history's fields the caller knows from `history`
//! ([`by_members`](crate::history::by_members) and the others). Each call here is one
//! script call: bounding batches (at most [`SCRIPT_BATCH`](crate::SCRIPT_BATCH)) is
//! the caller's part.

use std::collections::BTreeMap;
use std::time::Duration;

use punctual_core::audit::{self, AuditEntry};
use punctual_core::history::{self, HISTORY_LIMIT};
use punctual_core::outbox::MARK_RETENTION;
use punctual_core::policy::Rate;
use punctual_core::store::{
    CompleteRequest, Completed, GroupCounts, KeyHistory, Lease, LeaseBatch, LeaseRequest, LeaseToken, PurgeSelection,
    QueueStats, ReapResult, Reaped, Scheduled, Swept, corrupt,
};
use punctual_core::{
    Actor, Error, Group, NewTask, Priority, QueueName, Result, StoreId, Tag, Task, TaskKey, TaskState, Timestamp,
};
use redis::{Script, ScriptInvocation};

use crate::bands::{Bands, HeadTask};
use crate::cursor::Cursor;
use crate::heads::Bound;
use crate::history::{acked_members, by_members, leased_members, tagged_members};
use crate::keys::{self, ShardKeys};
use crate::nodes::Announcement;
use crate::shards::Sharding;
use crate::{Shared, codes, record};

const COMMON: &str = concat!(
    include_str!("lua/clock.lua"),
    "\n",
    include_str!("lua/common.lua"),
    "\n",
    include_str!("lua/common_groups.lua")
);

/// Every script, compiled (hashed) once.
#[derive(Debug)]
pub(crate) struct Scripts {
    schedule: Script,
    lease: Script,
    head: Script,
    complete: Script,
    extend: Script,
    release: Script,
    reap: Script,
    retry_dead: Script,
    delete: Script,
    cancel_tag: Script,
    purge: Script,
    list: Script,
    list_tag: Script,
    list_groups: Script,
    retry_dead_many: Script,
    sweep_dead: Script,
    stats: Script,
    ids: Script,
    rate: Script,
    change_record: Script,
    append_audit: Script,
    announce: Script,
    register_queue: Script,
    import: Script,
    completions_index: Script,
    sweep_history: Script,
    import_history: Script,
}

fn with_common(body: &str) -> Script {
    Script::new(&format!("{COMMON}\n{body}"))
}

impl Scripts {
    pub(crate) fn new() -> Scripts {
        Scripts {
            schedule: with_common(include_str!("lua/schedule.lua")),
            lease: with_common(concat!(
                include_str!("lua/group_slots.lua"),
                "\n",
                include_str!("lua/lease_groups.lua"),
                "\n",
                include_str!("lua/lease.lua")
            )),
            head: with_common(include_str!("lua/head.lua")),
            complete: with_common(include_str!("lua/complete.lua")),
            extend: with_common(include_str!("lua/extend.lua")),
            release: with_common(include_str!("lua/release.lua")),
            reap: with_common(include_str!("lua/reap.lua")),
            retry_dead: with_common(include_str!("lua/retry_dead.lua")),
            delete: with_common(include_str!("lua/delete.lua")),
            cancel_tag: with_common(include_str!("lua/cancel_tag.lua")),
            purge: with_common(include_str!("lua/purge.lua")),
            list: with_common(include_str!("lua/list.lua")),
            list_tag: with_common(include_str!("lua/list_tag.lua")),
            list_groups: with_common(include_str!("lua/list_groups.lua")),
            retry_dead_many: with_common(include_str!("lua/retry_dead_many.lua")),
            sweep_dead: with_common(include_str!("lua/sweep_dead.lua")),
            stats: with_common(include_str!("lua/stats.lua")),
            ids: Script::new(include_str!("lua/ids.lua")),
            rate: Script::new(concat!(include_str!("lua/clock.lua"), "\n", include_str!("lua/rate.lua"))),
            change_record: Script::new(concat!(
                include_str!("lua/audit.lua"),
                "\n",
                include_str!("lua/change_record.lua")
            )),
            append_audit: Script::new(concat!(
                include_str!("lua/audit.lua"),
                "\n",
                include_str!("lua/append_audit.lua")
            )),
            announce: Script::new(include_str!("lua/announce.lua")),
            register_queue: Script::new(include_str!("lua/register_queue.lua")),
            import: with_common(include_str!("lua/import.lua")),
            completions_index: Script::new(concat!(
                include_str!("lua/clock.lua"),
                "\n",
                include_str!("lua/completions_index.lua")
            )),
            sweep_history: Script::new(include_str!("lua/sweep_history.lua")),
            import_history: Script::new(include_str!("lua/import_history.lua")),
        }
    }
}

/// The mark of the outbox row a script applies (`Store::apply_once`), and the row's
/// `now`: the script looks for the mark in the shard's marks first, answering without
/// a change when it is there, and writes it with the row's effect.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowMark<'a> {
    pub(crate) mark: &'a str,
    pub(crate) now: Timestamp,
}

/// Which tasks `lua/delete.lua` deletes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DeleteIf {
    /// The task, whatever its state (cancel).
    Any,
    /// The task only if it is dead.
    Dead,
}

/// The dead tasks one `lua/retry_dead_many.lua` batch looks at.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DeadBatch<'a> {
    /// The `size` earliest due dead tasks due at or before `bound` ms.
    All { bound: i64, size: usize },
    /// `size` of a tag's tasks in the tags index's order, after the index member
    /// `after` (`""`: from the tag's first).
    Tagged { tag: &'a Tag, after: &'a str, size: usize },
    /// These keys (at most a batch).
    Keys(&'a [&'a TaskKey]),
}

/// What one batch of a bulk retry did.
#[derive(Debug)]
pub(crate) struct RetriedBatch {
    pub(crate) retried: u64,
    /// The shard may hold more of the selection (a full batch was looked at).
    pub(crate) more: bool,
    /// The last tags index member looked at ([`DeadBatch::Tagged`] only, else `""`).
    pub(crate) last: String,
}

/// What one `lua/lease.lua` call leased, and the head it left.
#[derive(Debug)]
pub(crate) struct ShardLease {
    pub(crate) batch: LeaseBatch,
    pub(crate) head: Option<HeadTask>,
    /// The lane's urgent bands, of a sharded queue (empty for another).
    pub(crate) bands: Bands,
    /// The script's now (Redis' clock, or the caller's).
    pub(crate) now: Timestamp,
    /// The shard holds groups.
    pub(crate) grouped: bool,
}

/// A task as `lua/import.lua` stores it: as given, with its id of this store and its
/// body, encoded before anything is written.
#[derive(Debug)]
pub(crate) struct ImportedTask<'a> {
    pub(crate) task: &'a Task,
    pub(crate) id: u64,
    pub(crate) body: String,
}

/// What `lua/completions_index.lua` does with the task keys it is given.
#[derive(Debug, Clone, Copy)]
pub(crate) enum IndexChange {
    /// Index those whose record holds.
    Add,
    /// Unindex those whose record is gone.
    Drop,
}

/// What one `lua/purge.lua` batch did.
#[derive(Debug)]
pub(crate) struct Purged {
    pub(crate) deleted: u64,
    /// The shard may hold more of the selection (a full batch was looked at).
    pub(crate) more: bool,
}

/// What one `lua/sweep_history.lua` call did.
#[derive(Debug)]
pub(crate) struct SweptHistories {
    pub(crate) deleted: u64,
    /// The shard may hold more histories quiet since the cutoff.
    pub(crate) more: bool,
}

/// One batch of a walk over a tag's index entries.
#[derive(Debug)]
pub(crate) struct TagBatch {
    /// The last member looked at, where the next batch starts; empty when the walk is done.
    pub(crate) next: Vec<u8>,
    /// (due ms, key) of each task looked at that is in the state and after the cursor.
    pub(crate) found: Vec<(i64, String)>,
}

/// The scripts of one shard of one queue.
#[derive(Debug)]
pub(crate) struct OnShard<'a> {
    shared: &'a Shared,
    queue: &'a QueueName,
    shard: u32,
    keys: ShardKeys,
}

impl Shared {
    /// The scripts of shard `shard` of `queue`.
    pub(crate) fn on<'a>(&'a self, queue: &'a QueueName, shard: u32) -> OnShard<'a> {
        OnShard { shared: self, queue, shard, keys: ShardKeys::new(&self.config.prefix, queue, shard) }
    }

    /// `lua/ids.lua`: reserves `want` task ids; the last of the block.
    pub(crate) async fn reserve_id_block(&self, want: u64) -> Result<u64> {
        let mut reserve = self.scripts.ids.prepare_invoke();
        reserve.key(keys::ids(&self.config.prefix)).arg(want).arg(keys::ids_start());
        self.conn.invoke(&reserve).await
    }

    /// `lua/rate.lua`: takes a slot of `queue`'s `rate`; 0 when taken, else the ms
    /// until one frees.
    pub(crate) async fn take_rate_slot(&self, queue: &QueueName, rate: Rate, now: Timestamp) -> Result<u64> {
        let mut invocation = self.scripts.rate.prepare_invoke();
        invocation
            .key(keys::rate(&self.config.prefix, queue))
            .arg(codes::now(self.config.time, now))
            .arg(rate.count.max(1))
            .arg(millis(rate.per).max(1));
        self.conn.invoke(&invocation).await
    }

    /// `lua/change_record.lua`: stores `record` as `name`'s in the Hash of records `hash`
    /// if its stored record is still at version `read` (0: none), with `entry` in the
    /// audit beside the Hash; whether it did.
    pub(crate) async fn write_record(
        &self,
        hash: &str,
        name: &str,
        read: u64,
        record: &str,
        entry: &AuditEntry,
    ) -> Result<bool> {
        let mut invocation = self.scripts.change_record.prepare_invoke();
        invocation.key(hash).key(keys::audit(hash)).arg(name).arg(read).arg(record);
        invocation.arg(audit::encode(entry)).arg(entry.at.as_millis()).arg(crate::audit::parity(hash));
        let written: i64 = self.conn.invoke(&invocation).await?;
        Ok(written == 1)
    }

    /// `lua/append_audit.lua`: keeps `entry` in the audit beside the Hash `hash`.
    pub(crate) async fn append_audit_to(&self, hash: &str, entry: &AuditEntry) -> Result<()> {
        let mut invocation = self.scripts.append_audit.prepare_invoke();
        invocation.key(keys::audit(hash)).arg(audit::encode(entry)).arg(entry.at.as_millis());
        invocation.arg(crate::audit::parity(hash));
        let _: i64 = self.conn.invoke(&invocation).await?;
        Ok(())
    }

    /// `lua/announce.lua`: makes `announcement` hold from `now`, and answers every live
    /// node's announcement text, this one's included, by node name.
    pub(crate) async fn announce_node(
        &self,
        announcement: &Announcement,
        now: Timestamp,
    ) -> Result<BTreeMap<String, String>> {
        let mut invocation = self.scripts.announce.prepare_invoke();
        invocation
            .key(keys::nodes(&self.config.prefix))
            .arg(now.as_millis())
            .arg(&announcement.node)
            .arg(&announcement.text)
            .arg(millis(announcement.ttl).max(1));
        let flat: Vec<String> = self.conn.invoke(&invocation).await?;
        Ok(flat.chunks_exact(2).map(|pair| (pair[0].clone(), pair[1].clone())).collect())
    }

    /// `lua/register_queue.lua`: records `queue` as `sharding` unless a process has,
    /// and answers what is recorded.
    pub(crate) async fn register_queue(&self, queue: &QueueName, sharding: Sharding) -> Result<Sharding> {
        let mut invocation = self.scripts.register_queue.prepare_invoke();
        invocation.key(keys::registry(&self.config.prefix)).arg(queue.as_str()).arg(sharding.count);
        invocation.arg(if sharding.hash_tags { "1" } else { "" });
        let (count, tags): (Option<u32>, Option<String>) = self.conn.invoke(&invocation).await?;
        let count = count.ok_or_else(|| corrupt("the registry answered no shard count"))?;
        Ok(Sharding { count: count.max(1), hash_tags: tags.is_some() })
    }
}

impl OnShard<'_> {
    /// An invocation with this shard's `KEYS` and `ARGV[1..3]`.
    fn invocation<'s>(&self, script: &'s Script, now: Timestamp) -> ScriptInvocation<'s> {
        let mut invocation = script.prepare_invoke();
        for key in self.keys.in_script_order() {
            invocation.key(key);
        }
        let prefix = &self.shared.config.prefix;
        invocation.arg(codes::now(self.shared.config.time, now)).arg(keys::wake_channel(prefix));
        // A sharded queue's wake-ups name the shard and this process (see `wake`).
        if self.shared.sharded(self.queue) {
            invocation.arg(format!("{}\ns{}\np{}", self.queue, self.shard, self.shared.publisher));
        } else {
            invocation.arg(self.queue.as_str());
        }
        invocation
    }

    fn store(&self) -> StoreId {
        self.shared.identity.current()
    }

    /// Passes `row` to a script that applies it: the shard's marks after every other
    /// key, the mark and the marks' retention after every other argument.
    fn with_row(&self, invocation: &mut ScriptInvocation<'_>, row: Option<RowMark<'_>>) {
        if let Some(row) = row {
            invocation.key(&self.keys.outbox_marks).arg(row.mark).arg(millis(MARK_RETENTION));
        }
    }

    /// `lua/schedule.lua`: creates or updates `tasks` (each with the id it gets if it is
    /// new), in order; each one's outcome, a conflict where `if_exists` is error. With
    /// `row` (one task), `None` when the row's mark was there, nothing written.
    pub(crate) async fn schedule(
        &self,
        tasks: &[(&NewTask, u64)],
        now: Timestamp,
        row: Option<RowMark<'_>>,
    ) -> Result<Option<Vec<Result<Scheduled>>>> {
        let mut invocation = self.invocation(&self.shared.scripts.schedule, now);
        for (task, _) in tasks {
            invocation.key(self.keys.completion(&task.key));
        }
        invocation.arg(tasks.len());
        for (task, id) in tasks {
            invocation
                .arg(task.key.as_str())
                .arg(codes::if_exists(task.if_exists))
                .arg(task.due_at.as_millis())
                .arg(task.max_attempts)
                .arg(*id)
                .arg(record::tags_of(&task.tags))
                .arg(record::body_of(task)?)
                .arg(record::target_of(task))
                .arg(task.priority.get())
                .arg(record::debounce_of(task))
                .arg(task.group.as_ref().map_or("", |group| group.as_str()))
                .arg(record::unique_of(task))
                .arg(task.scheduled_for.as_millis())
                .arg(by_members(task.by.as_ref()));
        }
        self.with_row(&mut invocation, row);
        let answer: Vec<Vec<u8>> = self.shared.conn.invoke(&invocation).await?;
        if row.is_some() && answer == [b"m"] {
            return Ok(None);
        }
        if answer.len() != tasks.len() * 2 {
            return Err(corrupt("schedule answered the wrong number of results"));
        }
        let mut results = Vec::with_capacity(tasks.len());
        for ((task, _), pair) in tasks.iter().zip(answer.chunks(2)) {
            if pair[0] == b"u" {
                results.push(Ok(Scheduled::kept_by(record::completed(&task.queue, &task.key, &pair[1])?)));
                continue;
            }
            let outcome =
                codes::schedule_outcome(&pair[0]).ok_or_else(|| corrupt("an unknown answer from schedule"))?;
            results.push(match outcome {
                Some(outcome) => {
                    let stored = record::decode(self.store(), self.queue, task.key.as_str(), &pair[1])?;
                    Ok(Scheduled::new(outcome, stored))
                }
                None => Err(Error::Conflict(format!(
                    "task '{}' already exists in queue '{}' (if_exists is error)",
                    task.key, task.queue
                ))),
            });
        }
        Ok(Some(results))
    }

    /// `lua/import.lua`: stores `tasks` where their keys hold no task, and `records`
    /// that hold at `now` where their keys hold none that does; whether each task was
    /// written (`false`: a task of its key is here, left as it is).
    pub(crate) async fn import(
        &self,
        tasks: &[&ImportedTask<'_>],
        records: &[&Completed],
        now: Timestamp,
    ) -> Result<Vec<bool>> {
        let mut invocation = self.invocation(&self.shared.scripts.import, now);
        for record in records {
            invocation.key(self.keys.completion(&record.key));
        }
        invocation.arg(tasks.len());
        for &&ImportedTask { task, id, ref body } in tasks {
            let optional = |at: Option<Timestamp>| at.map(|at| at.as_millis().to_string()).unwrap_or_default();
            let lease_expiry =
                if task.state == TaskState::Leased { optional(task.lease_expires_at) } else { String::new() };
            invocation
                .arg(task.key.as_str())
                .arg(codes::state(task.state))
                .arg(task.due_at.as_millis())
                .arg(id)
                .arg(task.created_at.as_millis())
                .arg(task.updated_at.as_millis())
                .arg(lease_expiry)
                .arg(task.attempts)
                .arg(task.max_attempts)
                .arg(task.version)
                .arg(task.meta.occurrence)
                .arg(task.meta.anchor.as_millis())
                .arg(optional(task.meta.debounce_until))
                .arg(task.priority.get())
                .arg(record::window_text(task.unique_for))
                .arg(record::tags_of(&task.tags))
                .arg(record::target_text(task.target.as_ref()))
                .arg(task.group.as_ref().map_or("", |group| group.as_str()))
                .arg(task.last_error.as_ref().map(|error| format!("+{error}")).unwrap_or_default())
                .arg(body.as_str());
        }
        invocation.arg(records.len());
        for record in records {
            invocation.arg(record::completion_text(record)).arg(record.unique_until.as_millis());
        }
        let written: Vec<i64> = self.shared.conn.invoke(&invocation).await?;
        if written.len() != tasks.len() {
            return Err(corrupt("import answered the wrong number of results"));
        }
        Ok(written.into_iter().map(|w| w == 1).collect())
    }

    /// `lua/completions_index.lua`: adds to the shard's index of completion records, or
    /// drops from it, the task keys `keys` as `change` says; how many changed.
    pub(crate) async fn change_completions_index(
        &self,
        change: IndexChange,
        keys: &[&str],
        now: Timestamp,
    ) -> Result<u64> {
        let mut invocation = self.shared.scripts.completions_index.prepare_invoke();
        invocation.key(&self.keys.completions);
        for key in keys {
            invocation.key(self.keys.completion_of(key));
        }
        let change = match change {
            IndexChange::Add => "add",
            IndexChange::Drop => "drop",
        };
        invocation.arg(codes::now(self.shared.config.time, now)).arg(change);
        for key in keys {
            invocation.arg(*key);
        }
        self.shared.conn.invoke(&invocation).await
    }

    /// `lua/lease.lua`: leases up to `max` due tasks of the request's lane, the highest
    /// priority first, none of a priority below `floor` nor, of `floor`, past `bound`
    /// (the request's own `max` is the caller's to share among shards); the batch's next
    /// due time, and the head task, are this shard's lane's, and of a sharded queue so
    /// are the bands. The request's group limit and rate apply to the shard's groups.
    pub(crate) async fn lease(
        &self,
        req: &LeaseRequest,
        max: usize,
        bound: Option<&Bound>,
        floor: Priority,
    ) -> Result<ShardLease> {
        let mut invocation = self.invocation(&self.shared.scripts.lease, req.now);
        invocation.arg(max).arg(millis(req.lease_for)).arg(codes::lane(req.lane));
        match bound {
            None => invocation.arg("").arg(""),
            Some(Bound { due, before: None }) => invocation.arg(due.as_millis()).arg(""),
            Some(Bound { due, before: Some(key) }) => invocation.arg(due.as_millis()).arg(format!("k{key}")),
        };
        let sharded = self.shared.sharded(self.queue);
        invocation.arg(floor.get()).arg(if sharded { "1" } else { "" });
        invocation.arg(req.group_limit.map(|limit| limit.max(1).to_string()).unwrap_or_default());
        match req.group_rate {
            Some(rate) => invocation.arg(rate.count.max(1)).arg(millis(rate.per).max(1)),
            None => invocation.arg("").arg(""),
        };
        invocation.arg(leased_members(req)).arg(format!("{}-", self.store()));
        let answer: Vec<Vec<u8>> = self.shared.conn.invoke(&invocation).await?;
        let [score, key, now, grouped, rest @ ..] = answer.as_slice() else {
            return Err(corrupt("lease answered no head"));
        };
        let now = parse_score(text(now)?)?.ok_or_else(|| corrupt("lease without now"))?;
        let head = head_task(score, key)?;
        let next_due = head.as_ref().map(|head| head.due);
        let (bands, pairs) = parse_bands(rest)?;
        let leases = self.decode_pairs(pairs)?.into_iter().map(Lease::of).collect();
        Ok(ShardLease { batch: LeaseBatch::new(leases, next_due), head, bands, now, grouped: !grouped.is_empty() })
    }

    /// The head task of `req`'s lane in this shard, its urgent bands, and whether the
    /// shard holds groups: `ZRANGE … 0 0` of the lane's set and of its urgent set, and
    /// `EXISTS` of its groups, side by side; `lua/head.lua` for the bands only when the
    /// urgent set holds a task (the queue uses priorities); with groups, a lease script
    /// that takes nothing, whose head counts the groups' tasks a lease could take under
    /// `req`'s group limit and rate.
    pub(crate) async fn head(&self, req: &LeaseRequest) -> Result<(Option<HeadTask>, Bands, bool)> {
        let (scheduled, urgent) = self.keys.lane_sets(req.lane);
        let first = |zset: &str| redis::cmd("ZRANGE").arg(zset).arg(0).arg(0).arg("WITHSCORES").clone();
        let (first_scheduled, first_urgent) = (first(scheduled), first(urgent));
        let groups = redis::cmd("EXISTS").arg(&self.keys.groups).clone();
        let (head, urgent_head, grouped) = futures_util::future::try_join3(
            self.shared.conn.query::<Vec<ScoredMember>>(&first_scheduled),
            self.shared.conn.query::<Vec<ScoredMember>>(&first_urgent),
            self.shared.conn.query::<bool>(&groups),
        )
        .await?;
        if grouped {
            let looked = self.lease(req, 0, None, Priority::LOWEST).await?;
            return Ok((looked.head, looked.bands, looked.grouped));
        }
        if urgent_head.is_empty() {
            let head =
                head.into_iter().next().map(|(key, due)| HeadTask { due: Timestamp::from_millis(due as i64), key });
            return Ok((head, Bands::default(), false));
        }
        let mut invocation = self.invocation(&self.shared.scripts.head, Timestamp::EPOCH);
        invocation.arg(codes::lane(req.lane));
        let answer: Vec<Vec<u8>> = self.shared.conn.invoke(&invocation).await?;
        let [score, key, rest @ ..] = answer.as_slice() else { return Err(corrupt("head answered no head")) };
        let (bands, _) = parse_bands(rest)?;
        Ok((head_task(score, key)?, bands, false))
    }

    /// `lua/complete.lua`: applies `reqs`, all judged at `now`; whether each applied
    /// (`false`: the lease was lost).
    pub(crate) async fn complete(&self, reqs: &[&CompleteRequest], now: Timestamp) -> Result<Vec<bool>> {
        let mut invocation = self.invocation(&self.shared.scripts.complete, now);
        for req in reqs {
            invocation.key(self.keys.completion(&req.token.key));
        }
        invocation.arg(reqs.len());
        for req in reqs {
            let (kind, at, error, anchor) = codes::completion(&req.completion);
            let t = &req.token;
            invocation.arg(t.key.as_str()).arg(t.task_id).arg(t.version).arg(t.fence).arg(kind).arg(at).arg(error);
            invocation.arg(anchor).arg(acked_members(req));
        }
        let results: Vec<i64> = self.shared.conn.invoke(&invocation).await?;
        Ok(results.into_iter().map(|r| r == 1).collect())
    }

    /// `lua/extend.lua`: the lease's new expiry, or `LeaseLost`.
    pub(crate) async fn extend(&self, req: &punctual_core::store::ExtendRequest) -> Result<Timestamp> {
        let mut invocation = self.invocation(&self.shared.scripts.extend, req.now);
        with_token(&mut invocation, &req.token).arg(millis(req.lease_for)).arg(by_members(req.by.as_ref()));
        let expiry: i64 = self.shared.conn.invoke(&invocation).await?;
        if expiry < 0 { Err(Error::LeaseLost) } else { Ok(Timestamp::from_millis(expiry)) }
    }

    /// `lua/release.lua`: gives the lease back untried, or `LeaseLost`.
    pub(crate) async fn release(&self, token: &LeaseToken, now: Timestamp) -> Result<()> {
        let mut invocation = self.invocation(&self.shared.scripts.release, now);
        with_token(&mut invocation, token);
        let released: i64 = self.shared.conn.invoke(&invocation).await?;
        if released == 1 { Ok(()) } else { Err(Error::LeaseLost) }
    }

    /// `lua/reap.lua`: ends up to `limit` expired leases, earliest expiry first.
    pub(crate) async fn reap(&self, limit: usize, now: Timestamp) -> Result<ReapResult> {
        let mut invocation = self.invocation(&self.shared.scripts.reap, now);
        invocation.arg(limit);
        let answer: Vec<Vec<u8>> = self.shared.conn.invoke(&invocation).await?;
        let (head, pairs) = answer.split_first().ok_or_else(|| corrupt("reap answered nothing"))?;
        let next_expiry = parse_score(std::str::from_utf8(head).map_err(corrupt)?)?;
        let mut reaped = Vec::with_capacity(pairs.len() / 2);
        for pair in pairs.chunks(2) {
            let [key, state] = pair else { return Err(corrupt("an odd answer from reap")) };
            let key = TaskKey::new(String::from_utf8(key.clone()).map_err(corrupt)?).map_err(corrupt)?;
            let code: i64 = std::str::from_utf8(state).map_err(corrupt)?.parse().map_err(corrupt)?;
            let state = codes::state_of(code).ok_or_else(|| corrupt(format!("unknown state {code}")))?;
            reaped.push(Reaped::new(self.queue.clone(), key, state));
        }
        Ok(ReapResult::new(reaped, next_expiry))
    }

    /// `lua/retry_dead.lua`: the task back to work (by `by`), or `None` when `key` is
    /// not dead.
    pub(crate) async fn retry_dead(&self, key: &TaskKey, now: Timestamp, by: Option<&Actor>) -> Result<Option<Task>> {
        let mut invocation = self.invocation(&self.shared.scripts.retry_dead, now);
        invocation.arg(key.as_str()).arg(by_members(by));
        let record: Vec<u8> = self.shared.conn.invoke(&invocation).await?;
        if record.is_empty() {
            return Ok(None);
        }
        record::decode(self.store(), self.queue, key.as_str(), &record).map(Some)
    }

    /// `lua/retry_dead_many.lua`: one batch of a bulk retry (by `by`).
    pub(crate) async fn retry_dead_many(
        &self,
        batch: DeadBatch<'_>,
        now: Timestamp,
        by: Option<&Actor>,
    ) -> Result<RetriedBatch> {
        let mut invocation = self.invocation(&self.shared.scripts.retry_dead_many, now);
        let fields = by_members(by);
        match batch {
            DeadBatch::All { bound, size } => {
                invocation.arg("all").arg(size).arg(fields).arg(bound);
            }
            DeadBatch::Tagged { tag, after, size } => {
                invocation.arg("tag").arg(size).arg(fields).arg(tag.as_str()).arg(after);
            }
            DeadBatch::Keys(keys) => {
                invocation.arg("keys").arg(keys.len()).arg(fields);
                for key in keys {
                    invocation.arg(key.as_str());
                }
            }
        }
        let (retried, more, last): (u64, String, String) = self.shared.conn.invoke(&invocation).await?;
        Ok(RetriedBatch { retried, more: !more.is_empty(), last })
    }

    /// `lua/delete.lua`: whether `key` was there (in that state) and is deleted (by
    /// `by`). With `row`, `None` when the row's mark was there, nothing deleted.
    pub(crate) async fn delete(
        &self,
        key: &TaskKey,
        only: DeleteIf,
        by: Option<&Actor>,
        row: Option<RowMark<'_>>,
    ) -> Result<Option<bool>> {
        let now = row.map_or(Timestamp::EPOCH, |row| row.now);
        let mut invocation = self.invocation(&self.shared.scripts.delete, now);
        let only = match only {
            DeleteIf::Any => "any",
            DeleteIf::Dead => "dead",
        };
        invocation.arg(key.as_str()).arg(only).arg(by_members(by));
        self.with_row(&mut invocation, row);
        let deleted: i64 = self.shared.conn.invoke(&invocation).await?;
        Ok((deleted >= 0).then_some(deleted == 1))
    }

    /// `lua/sweep_dead.lua`: deletes up to `limit` tasks that died by `died_by`, first
    /// deaths first.
    pub(crate) async fn sweep_dead(&self, died_by: Timestamp, limit: usize) -> Result<Swept> {
        let mut invocation = self.invocation(&self.shared.scripts.sweep_dead, Timestamp::EPOCH);
        invocation.arg(died_by.as_millis()).arg(limit);
        let (deleted, head): (u64, String) = self.shared.conn.invoke(&invocation).await?;
        Ok(Swept::new(deleted, parse_score(&head)?))
    }

    /// `lua/cancel_tag.lua`: deletes up to `limit` tasks carrying `tag` (by `by`); how
    /// many. With `row`, `None` when the row's mark was there, nothing deleted; the
    /// script that deletes fewer than `limit` writes the mark.
    pub(crate) async fn cancel_tag(
        &self,
        tag: &Tag,
        limit: usize,
        by: Option<&Actor>,
        row: Option<RowMark<'_>>,
    ) -> Result<Option<u64>> {
        let now = row.map_or(Timestamp::EPOCH, |row| row.now);
        let mut invocation = self.invocation(&self.shared.scripts.cancel_tag, now);
        invocation.arg(tag.as_str()).arg(limit).arg(tagged_members(by, tag));
        self.with_row(&mut invocation, row);
        let deleted: i64 = self.shared.conn.invoke(&invocation).await?;
        Ok(u64::try_from(deleted).ok())
    }

    /// `lua/purge.lua`: deletes up to `limit` (≥ 1) tasks of `selection`, each as cancel
    /// does (by `by`).
    pub(crate) async fn purge(&self, selection: PurgeSelection, limit: usize, by: Option<&Actor>) -> Result<Purged> {
        debug_assert!(limit >= 1, "a purge batch of 0 looks at nothing and tells nothing");
        let mut invocation = self.invocation(&self.shared.scripts.purge, Timestamp::EPOCH);
        invocation.arg(codes::purge_selection(selection)).arg(limit).arg(by_members(by));
        let (deleted, more): (u64, i64) = self.shared.conn.invoke(&invocation).await?;
        Ok(Purged { deleted, more: more == 1 })
    }

    /// `lua/sweep_history.lua`: deletes up to `limit` (≥ 1) histories of this shard whose
    /// latest event is before `before`, looking at up to `looks` keys; how many, and
    /// whether the shard may hold more.
    pub(crate) async fn sweep_history(&self, before: Timestamp, limit: u64, looks: u64) -> Result<SweptHistories> {
        let mut invocation = self.shared.scripts.sweep_history.prepare_invoke();
        invocation.key(&self.keys.history).key(&self.keys.history_latest);
        invocation.arg(before.as_millis()).arg(limit.max(1)).arg(looks.max(limit).max(1));
        let (deleted, more): (u64, i64) = self.shared.conn.invoke(&invocation).await?;
        Ok(SweptHistories { deleted, more: more == 1 })
    }

    /// `lua/import_history.lua`: adds to each of `histories` (of keys of this shard) its
    /// events older than its oldest here; how many.
    pub(crate) async fn import_history(&self, histories: &[KeyHistory]) -> Result<u64> {
        let mut invocation = self.shared.scripts.import_history.prepare_invoke();
        invocation.key(&self.keys.history).key(&self.keys.history_latest);
        invocation.arg(HISTORY_LIMIT).arg(histories.len());
        for history in histories {
            invocation.arg(history.key.as_str()).arg(history.events.len());
            for event in &history.events {
                invocation.arg(history::encode(event));
            }
        }
        self.shared.conn.invoke(&invocation).await
    }

    /// `lua/list.lua`: up to `limit + 1` tasks after `after`, in (due, key) order.
    pub(crate) async fn list(
        &self,
        state: Option<TaskState>,
        after: Option<&Cursor>,
        limit: usize,
    ) -> Result<Vec<Task>> {
        let mut invocation = self.invocation(&self.shared.scripts.list, Timestamp::EPOCH);
        invocation.arg(codes::state_filter(state));
        with_cursor(&mut invocation, after).arg(limit);
        let answer: Vec<Vec<u8>> = self.shared.conn.invoke(&invocation).await?;
        self.decode_pairs(&answer)
    }

    /// `lua/list_tag.lua`: one batch of the walk over `tag`'s index entries after the
    /// member `from` (empty: the tag's first).
    pub(crate) async fn list_tag(
        &self,
        tag: &Tag,
        state: Option<TaskState>,
        after: Option<&Cursor>,
        from: &[u8],
        batch: usize,
    ) -> Result<TagBatch> {
        let mut invocation = self.invocation(&self.shared.scripts.list_tag, Timestamp::EPOCH);
        invocation.arg(tag.as_str()).arg(codes::state_filter(state));
        with_cursor(&mut invocation, after).arg(from).arg(batch);
        let answer: Vec<Vec<u8>> = self.shared.conn.invoke(&invocation).await?;
        let (next, pairs) = answer.split_first().ok_or_else(|| corrupt("list_tag answered nothing"))?;
        let mut found = Vec::with_capacity(pairs.len() / 2);
        for pair in pairs.chunks(2) {
            let [key, due] = pair else { return Err(corrupt("an odd answer from list_tag")) };
            let key = String::from_utf8(key.clone()).map_err(corrupt)?;
            let due: i64 = std::str::from_utf8(due).map_err(corrupt)?.parse().map_err(corrupt)?;
            found.push((due, key));
        }
        Ok(TagBatch { next: next.clone(), found })
    }

    /// `lua/list_groups.lua`: up to `limit + 1` of this shard's groups after the name
    /// `after` (`""`: from the first), by name, each with its counts by state.
    pub(crate) async fn list_groups(&self, after: &str, limit: usize) -> Result<Vec<GroupCounts>> {
        let mut invocation = self.invocation(&self.shared.scripts.list_groups, Timestamp::EPOCH);
        invocation.arg(after).arg(limit);
        let answer: Vec<(String, u64, u64, u64)> = self.shared.conn.invoke(&invocation).await?;
        answer
            .into_iter()
            .map(|(name, scheduled, leased, dead)| {
                let group = Group::new(name).map_err(corrupt)?;
                Ok(GroupCounts::new(group, scheduled, leased, dead))
            })
            .collect()
    }

    /// `lua/stats.lua`: this shard's counts.
    pub(crate) async fn stats(&self) -> Result<QueueStats> {
        let invocation = self.invocation(&self.shared.scripts.stats, Timestamp::EPOCH);
        let (scheduled, leased, dead, head): (u64, u64, u64, String) = self.shared.conn.invoke(&invocation).await?;
        Ok(QueueStats::new(self.queue.clone(), scheduled, leased, dead, parse_score(&head)?))
    }

    /// Decodes `[key, record, key, record…]` answers.
    fn decode_pairs(&self, items: &[Vec<u8>]) -> Result<Vec<Task>> {
        items
            .chunks(2)
            .map(|pair| {
                let [key, record] = pair else { return Err(corrupt("an odd answer from a script")) };
                record::decode(self.store(), self.queue, std::str::from_utf8(key).map_err(corrupt)?, record)
            })
            .collect()
    }
}

/// The lease named by `token` as `ARGV[4..7]`: key, id, version, fence.
fn with_token<'i, 's>(invocation: &'i mut ScriptInvocation<'s>, token: &LeaseToken) -> &'i mut ScriptInvocation<'s> {
    invocation.arg(token.key.as_str()).arg(token.task_id).arg(token.version).arg(token.fence)
}

/// A listing's cursor as two arguments, due ms and key (`""`, `""`: from the start).
fn with_cursor<'i, 's>(
    invocation: &'i mut ScriptInvocation<'s>,
    after: Option<&Cursor>,
) -> &'i mut ScriptInvocation<'s> {
    match after {
        Some(cursor) => invocation.arg(cursor.due).arg(cursor.key.as_str()),
        None => invocation.arg("").arg(""),
    }
}

/// A duration in whole ms, as scripts take it.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A member of a sorted set and its score, as `ZRANGE … WITHSCORES` answers them.
type ScoredMember = (String, f64);

fn text(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes).map_err(corrupt)
}

/// A lane's head as scripts answer it: its due time ('' for none) and its key.
fn head_task(score: &[u8], key: &[u8]) -> Result<Option<HeadTask>> {
    match parse_score(text(score)?)? {
        Some(due) => Ok(Some(HeadTask { due, key: text(key)?.to_owned() })),
        None => Ok(None),
    }
}

/// Urgent bands as scripts answer them (`n`, then `n` triples: priority, due ms, key),
/// and what follows them.
fn parse_bands(answer: &[Vec<u8>]) -> Result<(Bands, &[Vec<u8>])> {
    let (count, rest) = answer.split_first().ok_or_else(|| corrupt("an answer without its bands"))?;
    let count: usize = text(count)?.parse().map_err(corrupt)?;
    if rest.len() < count * 3 {
        return Err(corrupt("an answer shorter than its bands"));
    }
    let (triples, rest) = rest.split_at(count * 3);
    let mut bands = Vec::with_capacity(count);
    for triple in triples.chunks(3) {
        let [priority, due, key] = triple else { return Err(corrupt("an odd band")) };
        let priority = Priority::new(text(priority)?.parse().map_err(corrupt)?).map_err(corrupt)?;
        let due = parse_score(text(due)?)?.ok_or_else(|| corrupt("a band without its due time"))?;
        bands.push((priority, HeadTask { due, key: text(key)?.to_owned() }));
    }
    Ok((Bands::new(bands), rest))
}

/// A ZSet score as scripts return it ('' for none).
fn parse_score(score: &str) -> Result<Option<Timestamp>> {
    if score.is_empty() {
        return Ok(None);
    }
    // Scores are doubles; ours are whole milliseconds, printed without a fraction.
    let ms: f64 = score.parse().map_err(|_| corrupt(format!("score '{score}'")))?;
    Ok(Some(Timestamp::from_millis(ms as i64)))
}
