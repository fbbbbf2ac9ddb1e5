//! Every Redis key and channel punctual uses, in one place.
//!
//! A queue is split into `shards` shards (1 unless configured); a task's shard is a
//! stable hash of its key, or of the key's hash tag (`{…}`, as Redis Cluster reads
//! them) on a queue registered with hash tags, which every queue first written by this
//! version is: a group's tasks share one shard when their keys carry the group as tag.
//! Every key of one shard shares one hash tag, so a script touching them runs on one
//! Redis Cluster node:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `<p>:{<queue>}:scheduled` (shard n > 0: `{<queue>/<n>}`) | ZSet | key → due_at ms of scheduled tasks without a target (the handler lane) |
//! | `…:scheduled:target` | ZSet | key → due_at ms of scheduled tasks with a target (the target lane) |
//! | `…:scheduled:urgent` | ZSet | key → (9 − priority) · 2^48 + due_at ms of the handler lane's scheduled tasks of priority above 0 (see `lua/common.lua`): the highest priority first, each in due order |
//! | `…:scheduled:target:urgent` | ZSet | the same for the target lane's |
//! | `…:scheduled:grouped` | ZSet | key → due_at ms of scheduled tasks with a group (both lanes), which are in none of the four sets above |
//! | `…:scheduled:groups` | ZSet, scores 0 | `"<group>\n<9 − priority><due_at ms, 12 hex digits>\n<key>"` of the handler lane's scheduled tasks with a group: each group's tasks in lease order (`lua/common_groups.lua`, `lua/lease_groups.lua`) |
//! | `…:scheduled:target:groups` | ZSet, scores 0 | the same for the target lane's |
//! | `…:groups:scheduled` | ZSet | each group with tasks in `scheduled:groups` → its state there (`lua/common_groups.lua`): its turn when *ready* (it had a due task at the last lease's look: leases walk these in order), 2^50 + its leased count when *parked* (a lease found it at its limit), 2^51 + its earliest due_at ms when *waiting* |
//! | `…:groups:target:scheduled` | ZSet | the same for `scheduled:target:groups` |
//! | `…:groups:ready` | ZSet | each group ready in `groups:scheduled` → the earliest due_at ms of its tasks in `scheduled:groups` (a lease's next due time, exact without a look at each ready group) |
//! | `…:groups:target:ready` | ZSet | the same for `groups:target:scheduled` and `scheduled:target:groups` |
//! | `…:groups` | ZSet, scores 0 | the names of the groups that have tasks (listing groups by name) |
//! | `…:groups:counts` | Hash | group → `"<scheduled>,<leased>,<dead>,<turn>"`: its tasks by state (a leased task counts until its lease ends or is reaped) and its turn |
//! | `…:groups:slots` | Hash | group → its `group_rate` slots, `"<at>+<until − at>"` in ms each, separated by `' '`: each lease of one of its tasks under a rate took one (`lua/group_slots.lua`); kept when the group's tasks go, for the window of each slot |
//! | `…:groups:slots:ends` | ZSet | each group in `groups:slots` → the latest `until` ms of its slots: a lease under a rate drops the groups whose every slot ended |
//! | `…:turns` | Hash | `last` → the last turn a lease gave, `ungrouped` → the ungrouped tasks' turn; `urgent`, `urgent:target` → how many scheduled tasks with a group and a priority above 0 each lane holds (absent: none) |
//! | `…:leases` | ZSet | key → lease expiry ms |
//! | `…:inflight` | ZSet | key → due_at ms of leased tasks (listing in due order) |
//! | `…:dead` | ZSet | key → due_at ms of dead tasks |
//! | `…:died` | ZSet | key → when each dead task died, ms (its `updated_at`): the retention sweep's index |
//! | `…:tasks` | Hash | key → task record: format 2, or format 1 as an earlier punctual wrote it (both in `lua/common.lua`, see `record`) |
//! | `…:tags` | ZSet, scores 0 | `"<tag>\n<key>"`, read by lexicographic range |
//! | `…:seq` | string counter | the last fence handed out in the shard |
//! | `…:completed:<key>` | string, expiring | the completion record of the dedupe window of `<key>`'s task that completed (`lua/complete.lua`), `"<completed_at>,<id>,<attempts>,<occurrence>,<unique_until>"` in ms, expiring at `unique_until` |
//! | `…:completions` | ZSet, scores 0 | task keys of the shard's completion records, the index by which `Store::completions` pages them by key (`completions`): filled by that paging from a `SCAN` of the `completed:*` keys, an entry dropped once its record is gone; expires when the latest record it names ends |
//! | `…:history` | Hash | key → the key's history (`punctual_core::history`): its count in three digits (`"003"`), then `"\n<event>"` for each of its latest [`HISTORY_LIMIT`](punctual_core::history::HISTORY_LIMIT) events, oldest first, each one compact JSON object as `history::encode` writes it (`lua/common.lua`, `tell`); kept when the task goes, until `Store::sweep_history` |
//! | `…:history:latest` | ZSet | each key of `history` → a time at or before its latest event, ms: of its first event (written only by the script that starts the history), or of its latest as a sweep last read it; the index by which `lua/sweep_history.lua` finds the histories that may be quiet since a cutoff |
//! | `…:outbox` | ZSet | `"<outbox>\n<row id>"` → when the row was applied, ms: the marks of the outbox rows this shard applied (`Store::apply_once`), each written by the script that applied the row, with its effect; kept at least `MARK_RETENTION` (7 days), each script that writes one first dropping at most 100 older marks. Passed only to the scripts that apply a row (see [`ShardKeys::outbox_marks`]) |
//! | `<p>:{<queue>}:rate` | List | start times (ms) of the queue's latest rate-limit slots, at most the rate's count, shared by every process (`lua/rate.lua`); expires a window after the newest |
//! | `<p>:queues` | Hash | queue name → its number of shards (the registry), and `<queue>#hash-tags` → `1` for a queue whose keys' hash tags place them (written with the count by `lua/register_queue.lua`; absent for a queue an earlier punctual registered, whose keys are placed whole) |
//! | `<p>:queue-records` | Hash | queue name → its record: settings and pause state, `"<version>,<updated ms>,<P\|R>[\|<settings>]"` (see `queue_records`); one key for the store, read whole by every process each second |
//! | `{<p>:queue-records}:audit`, `{<p>:calendars}:audit` | ZSet | audit entries (see `audit`), each `"<seq>\|<entry>"` scored by its sequence number, in the slot of the records whose changes it tells; trimmed by `Store::sweep_audit` |
//! | `<p>:calendars` | Hash | calendar name → its record, `"<version>,<updated ms>[\|<document>]"` (see `calendar_records`); one key for the store, read whole by every process each second |
//! | `<p>:nodes` | Hash | node name → `"<expires ms>,<announcement>"`: each live server's announcement, its delivery policy (see `nodes`); written and pruned of expired nodes by `lua/announce.lua` |
//! | `<p>:ids` | string counter | task ids, reserved in blocks by each process; created at a random point in [2^40, 2^41) ([`ids_start`]) |
//! | `<p>:secret` | string | the secret that signs lease tokens |
//! | `<p>:store` | string | the store's identity (13 characters, see `identity`) |
//! | `<p>:layout` | string | the layout version of these keys, [`crate::LAYOUT`] (see `layout`): a punctual refuses a newer one |
//!
//! Channel `<p>:wake` carries `"<queue>\n<due ms>"` whenever a script makes the
//! earliest due time of a queue's handler lane earlier, and `"<queue>\n<due ms>\nt"`
//! for its target lane; a sharded queue's messages end with `"\ns<shard>\np<publishing
//! process>"` (see `wake`). Queue names cannot hold `{`, `}` or `/`, so each
//! shard's hash tag is distinct.
//!
//! A pending task is one member of `scheduled` and one field of `tasks`, which Redis
//! keeps as a skiplist and a dict once a queue has more than 128 tasks. With a million
//! of them, Redis 7.0 and jemalloc: about 102 bytes in `scheduled` (skiplist node, dict
//! entry, bucket, the key's sds) and 48 + the record's allocation in `tasks` (dict
//! entry, bucket, the key's sds; then the record's sds, its length + 2 under 32 bytes
//! and + 4 from there, rounded up to jemalloc's class: 8, 16, 32, 48, 64, 80…), so
//! about 158 bytes with an empty record (BENCHMARKS.md has the measurements).
//!
//! Invariants: a task's record is in `tasks` exactly when its key is in the set of its
//! state (scheduled: `scheduled`, or `scheduled:target` when the record holds a target;
//! `leases` and `inflight`; or `dead` and `died`), and in `tags` once per tag; a
//! scheduled task whose priority is above 0 is also in its lane's urgent set
//! (`scheduled:urgent` or `scheduled:target:urgent`), and nothing else is: every script
//! that schedules or unschedules a task keeps the urgent sets so, knowing the priority
//! from the record's header. (`died` came after `dead`: a task that died under an
//! earlier punctual is in `dead` only, and no retention sweep sees it.
//! `scheduled:target` came with targets: an earlier punctual does not know it, so it
//! never leases a task with a target. The urgent sets came with priorities: a task of
//! priority 0, as every task before them, is in neither, so a store written before
//! needs nothing.)
//!
//! A queue that uses no priorities has empty urgent sets, which Redis does not keep:
//! they cost it no memory, and a lease one look at an absent key.
//!
//! Groups: a scheduled task with a group is in `scheduled:grouped` and in its lane's
//! group set (`scheduled:groups` or `scheduled:target:groups`) instead of its lane's
//! sets, and its group is in that lane's `groups:scheduled` set exactly while it has
//! such a task (waiting at its earliest due time, or ready, or parked), and in that
//! lane's `groups:ready` exactly while it is ready there; a group is in
//! `groups` and `groups:counts` exactly
//! while it has tasks, counted by state. Every script that places or unplaces a task
//! keeps them so, knowing the group from the record's header. A queue that uses no
//! groups has them all empty (but `turns`, one small hash once a lease took a task):
//! a lease looks once at the absent `groups`. (They came with groups: a store written
//! before has none, and needs nothing.) The group sets' members sort each group's
//! tasks in lease order, so a group's head is one `ZRANGEBYLEX` per priority it holds,
//! and every script touches only the keys it is passed.
//!
//! Histories: a task key is in `history:latest` exactly while it is in `history`,
//! scored at or before its latest event (but for clocks that disagree): only the script
//! that starts a key's history adds it, and only `lua/sweep_history.lua` scores it
//! again or takes it out, with its history (see `history`). A history is kept when
//! its task goes; every script that changes a task appends its events there.
//!
//! Group rates: a group is in `groups:slots` exactly while it is in
//! `groups:slots:ends`, scored by the latest end of the slots its field holds. Only
//! the lease script reads or writes them, and only under a `group_rate`: each such
//! lease first drops the groups whose every slot ended (a bounded batch), so a queue
//! leased without a rate keeps whatever slots it had until a lease under one comes (at
//! most the rate's count per group leased in the last window). They came with group
//! rates: a store written before has none, and needs nothing.

use punctual_core::{Lane, QueueName, TaskKey};

/// The keys of one shard of one queue. Scripts take them as `KEYS[1..25]` in the order
/// of [`ShardKeys::in_script_order`] (the header of `lua/common.lua`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShardKeys {
    /// The handler lane's scheduled tasks (the name it had before there were lanes).
    pub(crate) scheduled: String,
    /// The target lane's scheduled tasks.
    pub(crate) scheduled_target: String,
    /// The handler lane's scheduled tasks of priority above 0, by priority and due time.
    pub(crate) urgent: String,
    /// The target lane's scheduled tasks of priority above 0, by priority and due time.
    pub(crate) urgent_target: String,
    pub(crate) leases: String,
    pub(crate) inflight: String,
    pub(crate) dead: String,
    pub(crate) tasks: String,
    pub(crate) tags: String,
    pub(crate) seq: String,
    pub(crate) died: String,
    /// The scheduled tasks with a group, both lanes, by due time.
    pub(crate) grouped: String,
    /// The handler lane's scheduled tasks with a group, each group's in lease order.
    pub(crate) group_tasks: String,
    /// The same for the target lane.
    pub(crate) group_tasks_target: String,
    /// The groups with tasks in `group_tasks`, each scored by its state there.
    pub(crate) groups_scheduled: String,
    /// The same for `group_tasks_target`.
    pub(crate) groups_scheduled_target: String,
    /// The names of the groups with tasks.
    pub(crate) groups: String,
    /// Each group's counts by state and its turn.
    pub(crate) group_counts: String,
    /// The last turn given, and the ungrouped tasks' turn.
    pub(crate) turns: String,
    /// The groups ready in `groups_scheduled`, each scored by its earliest due time.
    pub(crate) groups_ready: String,
    /// The same for `groups_scheduled_target`.
    pub(crate) groups_ready_target: String,
    /// Each group's `group_rate` slots, kept when its tasks go.
    pub(crate) group_slots: String,
    /// Each group of `group_slots` by the latest end of its slots.
    pub(crate) group_slot_ends: String,
    /// Each task key's history, kept when its task goes.
    pub(crate) history: String,
    /// Each task key of `history` by a time at or before its latest event.
    pub(crate) history_latest: String,
    /// The marks of the outbox rows applied in this shard. Not one of the keys every
    /// script gets ([`ShardKeys::in_script_order`]): only a schedule, delete or
    /// cancel_tag script that applies a row touches marks, so only such a call passes
    /// the key, after all its others (`lua/common.lua`, `row_marked`). Every other
    /// call, those three scripts' included, is sent byte for byte as before: no key
    /// name more to send and hash on the hot paths (lease, complete), and no command
    /// more in any script.
    pub(crate) outbox_marks: String,
    /// The shard's completion record keys up to the task key.
    completed: String,
    /// The task keys of the shard's completion records, by which they are paged.
    /// Not one of the keys every script gets: only `lua/completions_index.lua` keeps it.
    pub(crate) completions: String,
}

impl ShardKeys {
    pub(crate) fn new(prefix: &str, queue: &QueueName, shard: u32) -> ShardKeys {
        let tag = if shard == 0 { format!("{{{queue}}}") } else { format!("{{{queue}/{shard}}}") };
        let key = |name: &str| format!("{prefix}:{tag}:{name}");
        ShardKeys {
            scheduled: key("scheduled"),
            scheduled_target: key("scheduled:target"),
            urgent: key("scheduled:urgent"),
            urgent_target: key("scheduled:target:urgent"),
            leases: key("leases"),
            inflight: key("inflight"),
            dead: key("dead"),
            tasks: key("tasks"),
            tags: key("tags"),
            seq: key("seq"),
            died: key("died"),
            grouped: key("scheduled:grouped"),
            group_tasks: key("scheduled:groups"),
            group_tasks_target: key("scheduled:target:groups"),
            groups_scheduled: key("groups:scheduled"),
            groups_scheduled_target: key("groups:target:scheduled"),
            groups: key("groups"),
            group_counts: key("groups:counts"),
            turns: key("turns"),
            groups_ready: key("groups:ready"),
            groups_ready_target: key("groups:target:ready"),
            group_slots: key("groups:slots"),
            group_slot_ends: key("groups:slots:ends"),
            history: key("history"),
            history_latest: key("history:latest"),
            outbox_marks: key("outbox"),
            completed: key("completed:"),
            completions: key("completions"),
        }
    }

    /// The key of the completion record of `key`'s dedupe window, in this shard (the
    /// task's): under the shard's hash tag, so the scripts that read and write it with
    /// the task stay on one Cluster node. Scripts take them after `KEYS[1..25]`.
    pub(crate) fn completion(&self, key: &TaskKey) -> String {
        self.completion_of(key.as_str())
    }

    /// [`ShardKeys::completion`] of a task key as the index of records holds it.
    pub(crate) fn completion_of(&self, key: &str) -> String {
        format!("{}{key}", self.completed)
    }

    /// The `SCAN … MATCH` pattern of the shard's completion record keys: their common
    /// beginning, its pattern characters escaped, then `*`.
    pub(crate) fn completions_pattern(&self) -> String {
        let mut pattern = String::with_capacity(self.completed.len() + 2);
        for c in self.completed.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push('*');
        pattern
    }

    /// The task key whose completion record is the key `record_key` of this shard
    /// (`None` for another key).
    pub(crate) fn completed_task<'k>(&self, record_key: &'k str) -> Option<&'k str> {
        record_key.strip_prefix(self.completed.as_str())
    }

    /// `KEYS[1..25]` of every shard script, as `lua/common.lua` numbers them.
    pub(crate) fn in_script_order(&self) -> [&str; 25] {
        [
            &self.scheduled,
            &self.leases,
            &self.inflight,
            &self.dead,
            &self.tasks,
            &self.tags,
            &self.seq,
            &self.died,
            &self.scheduled_target,
            &self.urgent,
            &self.urgent_target,
            &self.grouped,
            &self.group_tasks,
            &self.group_tasks_target,
            &self.groups_scheduled,
            &self.groups_scheduled_target,
            &self.groups,
            &self.group_counts,
            &self.turns,
            &self.groups_ready,
            &self.groups_ready_target,
            &self.group_slots,
            &self.group_slot_ends,
            &self.history,
            &self.history_latest,
        ]
    }

    /// The scheduled tasks of `lane`, and its urgent set.
    pub(crate) fn lane_sets(&self, lane: Lane) -> (&str, &str) {
        match lane {
            Lane::Handler => (&self.scheduled, &self.urgent),
            Lane::Target => (&self.scheduled_target, &self.urgent_target),
        }
    }
}

/// The slot log of `queue`'s rate limit, under the queue's first hash tag (shard 0's):
/// one per queue, however many shards it has.
pub(crate) fn rate(prefix: &str, queue: &QueueName) -> String {
    format!("{prefix}:{{{queue}}}:rate")
}

/// The registry of queues and their shard counts.
pub(crate) fn registry(prefix: &str) -> String {
    format!("{prefix}:queues")
}

/// Every queue's record (settings, pause state), one field per queue.
/// The audit's entries kept beside the Hash `hash` of records: in its slot, the key's
/// hash tag being the Hash's whole name (see `audit`).
pub(crate) fn audit(hash: &str) -> String {
    format!("{{{hash}}}:audit")
}

pub(crate) fn queue_records(prefix: &str) -> String {
    format!("{prefix}:queue-records")
}

/// Every calendar's record, one field per calendar.
pub(crate) fn calendar_records(prefix: &str) -> String {
    format!("{prefix}:calendars")
}

/// Every live node's announcement, one field per node.
pub(crate) fn nodes(prefix: &str) -> String {
    format!("{prefix}:nodes")
}

/// The counter of task ids.
pub(crate) fn ids(prefix: &str) -> String {
    format!("{prefix}:ids")
}

/// Where a new task-id counter starts: a random point in [2^40, 2^41). Ids of a
/// counter Redis lost and made anew (a restart without persistence, `FLUSHALL`) then
/// never meet the ids processes reserved before and still hand out; stores written
/// before counters started there counted from 1, below 2^40. Ids stay below 2^53, the
/// largest integer the scripts' numbers (doubles) hold exactly.
pub(crate) fn ids_start() -> u64 {
    (1 << 40) + (rand::random::<u64>() >> 24)
}

/// The lease-signing secret.
pub(crate) fn secret(prefix: &str) -> String {
    format!("{prefix}:secret")
}

/// The layout version of the store's keys (`layout`).
pub(crate) fn layout(prefix: &str) -> String {
    format!("{prefix}:layout")
}

/// The store's identity.
pub(crate) fn store(prefix: &str) -> String {
    format!("{prefix}:store")
}

/// The wake-up channel.
pub(crate) fn wake_channel(prefix: &str) -> String {
    format!("{prefix}:wake")
}

/// The shard of `key` among `shards`: FNV-1a of its bytes, or with `hash_tags` of its
/// hash tag's when it has one ([`hash_tag`]), which never changes between versions or
/// machines (every process must agree forever).
pub(crate) fn shard_of(key: &TaskKey, shards: u32, hash_tags: bool) -> u32 {
    if shards <= 1 {
        return 0;
    }
    let placed = if hash_tags { hash_tag(key.as_str()).unwrap_or(key.as_str()) } else { key.as_str() };
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in placed.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    u32::try_from(hash % u64::from(shards)).unwrap_or(0)
}

/// The hash tag of `key` as Redis Cluster reads one: the text between its first `{`
/// and the first `}` after it, when that is not empty.
pub(crate) fn hash_tag(key: &str) -> Option<&str> {
    let open = key.find('{')?;
    let rest = &key[open + 1..];
    let close = rest.find('}')?;
    (close > 0).then(|| &rest[..close])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_have_distinct_hash_tags_and_one_tag_per_shard() {
        let q = QueueName::new("order.cancel").unwrap();
        let zero = ShardKeys::new("punctual", &q, 0);
        let two = ShardKeys::new("punctual", &q, 2);
        assert_eq!(zero.scheduled, "punctual:{order.cancel}:scheduled");
        assert_eq!(two.tasks, "punctual:{order.cancel/2}:tasks");
        assert_eq!(zero.scheduled, "punctual:{order.cancel}:scheduled", "the handler lane's, as before lanes");
        assert_eq!(two.scheduled_target, "punctual:{order.cancel/2}:scheduled:target");
        assert_eq!(
            zero.lane_sets(Lane::Handler),
            ("punctual:{order.cancel}:scheduled", "punctual:{order.cancel}:scheduled:urgent")
        );
        assert_eq!(
            two.lane_sets(Lane::Target),
            ("punctual:{order.cancel/2}:scheduled:target", "punctual:{order.cancel/2}:scheduled:target:urgent")
        );
        assert!(zero.in_script_order().iter().all(|k| k.contains("{order.cancel}:")));
        let key = TaskKey::new("order-1234").unwrap();
        assert_eq!(two.completion(&key), "punctual:{order.cancel/2}:completed:order-1234", "the task's shard");
        assert_eq!(two.completed_task(&two.completion(&key)), Some("order-1234"));
        assert_eq!(two.completed_task(&zero.completion(&key)), None, "another shard's record");
        assert_eq!(two.completions, "punctual:{order.cancel/2}:completions", "no task's record key");
        assert_eq!(two.completions_pattern(), "punctual:{order.cancel/2}:completed:*");
        let odd = ShardKeys::new(r"p[1]*?\", &QueueName::new("q").unwrap(), 0);
        assert_eq!(
            odd.completions_pattern(),
            r"p\[1\]\*\?\\:{q}:completed:*",
            "a prefix's pattern characters are escaped"
        );
        assert_eq!(rate("punctual", &q), "punctual:{order.cancel}:rate");
        assert_eq!(queue_records("punctual"), "punctual:queue-records", "no queue's hash tag: no queue's node");
        assert_eq!(calendar_records("punctual"), "punctual:calendars", "no queue's hash tag either");
        assert_eq!(nodes("punctual"), "punctual:nodes", "no queue's hash tag either");
    }

    #[test]
    fn the_keys_go_to_the_scripts_in_the_order_common_lua_names_them() {
        let keys = ShardKeys::new("p", &QueueName::new("q").unwrap(), 0);
        let header = include_str!("lua/common.lua");
        for (i, key) in keys.in_script_order().iter().enumerate() {
            let name = key.split_once("}:").unwrap().1;
            let line = format!("--   KEYS[{}] {name} ", i + 1);
            assert!(header.contains(&line), "common.lua lacks {line:?}");
        }
        // The completion record keys come right after them (schedule.lua, complete.lua).
        let count = format!("local SHARD_KEYS = {}\n", keys.in_script_order().len());
        assert!(header.contains(&count), "common.lua lacks {count:?}");
    }

    #[test]
    fn a_shards_outbox_marks_share_its_hash_tag_and_no_script_gets_them_unasked() {
        let two = ShardKeys::new("punctual", &QueueName::new("orders").unwrap(), 2);
        assert_eq!(two.outbox_marks, "punctual:{orders/2}:outbox");
        assert!(!two.in_script_order().contains(&two.outbox_marks.as_str()));
        // The scripts that apply a row read the marks as their last key, nowhere else.
        for (name, script) in [
            ("schedule", include_str!("lua/schedule.lua")),
            ("delete", include_str!("lua/delete.lua")),
            ("cancel_tag", include_str!("lua/cancel_tag.lua")),
        ] {
            assert!(script.contains("row_marked(row)") && script.contains("mark_row(row, "), "{name}.lua");
        }
    }

    #[test]
    fn every_script_that_places_or_unplaces_a_task_saves_its_groups_counts() {
        // The group counts a script changes are written back by `save_groups` only.
        let scripts = [
            ("schedule", include_str!("lua/schedule.lua")),
            (
                "lease",
                concat!(
                    include_str!("lua/group_slots.lua"),
                    include_str!("lua/lease_groups.lua"),
                    include_str!("lua/lease.lua")
                ),
            ),
            ("complete", include_str!("lua/complete.lua")),
            ("release", include_str!("lua/release.lua")),
            ("reap", include_str!("lua/reap.lua")),
            ("retry_dead", include_str!("lua/retry_dead.lua")),
            ("retry_dead_many", include_str!("lua/retry_dead_many.lua")),
            ("delete", include_str!("lua/delete.lua")),
            ("cancel_tag", include_str!("lua/cancel_tag.lua")),
            ("purge", include_str!("lua/purge.lua")),
            ("sweep_dead", include_str!("lua/sweep_dead.lua")),
            ("extend", include_str!("lua/extend.lua")),
            ("import", include_str!("lua/import.lua")),
        ];
        let moves = ["place(", "arm(", "bury(", "revive(", "remove(", "remove_listed(", "count_in_group("];
        for (name, script) in scripts {
            if !moves.iter().any(|call| script.contains(call)) {
                continue;
            }
            let saved = script.rfind("save_groups()").unwrap_or_else(|| panic!("{name}.lua never calls save_groups()"));
            // A group whose lease ended wakes consumers: published after it is noted.
            let published = script.rfind("publish_wakeup()");
            assert!(published.is_some_and(|at| at > saved), "{name}.lua publishes before save_groups() or never");
        }
    }

    #[test]
    fn every_script_that_tells_an_event_saves_the_history_after() {
        // Events are written by `save_history` only (`lua/common.lua`): a script that
        // tells one must call it after its last `tell`, or the change goes untold.
        let scripts = [
            ("schedule", include_str!("lua/schedule.lua")),
            ("lease", include_str!("lua/lease.lua")),
            ("complete", include_str!("lua/complete.lua")),
            ("extend", include_str!("lua/extend.lua")),
            ("release", include_str!("lua/release.lua")),
            ("reap", include_str!("lua/reap.lua")),
            ("retry_dead", include_str!("lua/retry_dead.lua")),
            ("retry_dead_many", include_str!("lua/retry_dead_many.lua")),
            ("delete", include_str!("lua/delete.lua")),
            ("cancel_tag", include_str!("lua/cancel_tag.lua")),
            ("purge", include_str!("lua/purge.lua")),
            ("sweep_dead", include_str!("lua/sweep_dead.lua")),
            ("import", include_str!("lua/import.lua")),
        ];
        for (name, script) in scripts {
            // `revive` (`lua/common.lua`) tells a retry; `acked` (`lua/complete.lua`) an ack.
            let told = ["tell(", "tell_event(", "acked(", "revive("].iter().filter_map(|call| script.rfind(call)).max();
            let told = told.unwrap_or_else(|| panic!("{name}.lua tells no event"));
            let saved = script.rfind("save_history()").unwrap_or_else(|| panic!("{name}.lua never saves the history"));
            assert!(saved > told, "{name}.lua tells an event after it saved the history");
        }
    }

    #[test]
    fn new_id_counters_start_above_every_old_one_and_far_below_2_to_the_53() {
        for _ in 0..1000 {
            let start = ids_start();
            assert!((1 << 40..1 << 41).contains(&start), "{start}");
        }
        assert_ne!(ids_start(), ids_start());
    }

    #[test]
    fn the_shard_of_a_key_is_stable() {
        let key = TaskKey::new("order-1234").unwrap();
        // Fixed forever: tasks stored by one version must be found by the next.
        assert_eq!(shard_of(&key, 1, true), 0);
        assert_eq!(shard_of(&key, 8, false), 2);
        assert_eq!(shard_of(&key, 8, true), 2, "a key without a tag is placed whole either way");
        let spread: std::collections::HashSet<u32> =
            (0..200).map(|i| shard_of(&TaskKey::new(format!("k{i}")).unwrap(), 4, true)).collect();
        assert_eq!(spread.len(), 4, "keys spread over every shard");
    }

    #[test]
    fn a_hash_tag_places_its_keys_together_where_the_queue_reads_tags() {
        assert_eq!(hash_tag("{customer-42}order-1"), Some("customer-42"));
        assert_eq!(hash_tag("order-1:{wf-7}:remind"), Some("wf-7"));
        assert_eq!(hash_tag("a{}b{c}"), None, "an empty first tag is none, as in Redis");
        assert_eq!(hash_tag("{open"), None);
        assert_eq!(hash_tag("plain"), None);
        let keys: Vec<TaskKey> = (0..50).map(|i| TaskKey::new(format!("{{c-9}}order-{i}")).unwrap()).collect();
        let tagged: std::collections::HashSet<u32> = keys.iter().map(|k| shard_of(k, 16, true)).collect();
        assert_eq!(tagged.len(), 1, "one tag, one shard");
        assert_eq!(tagged.into_iter().next(), Some(shard_of(&TaskKey::new("c-9").unwrap(), 16, true)));
        let whole: std::collections::HashSet<u32> = keys.iter().map(|k| shard_of(k, 16, false)).collect();
        assert!(whole.len() > 1, "a queue registered before tags places each key whole");
    }
}
