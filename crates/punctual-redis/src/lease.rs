//! Leasing due tasks, extending and releasing leases (completions are in
//! `group_commit`, expiries in `reap`).
//!
//! Invariants: a lease reads and takes only its lane's scheduled set in each shard
//! (`keys`), so it costs what it takes whatever the other lane holds. An unsharded
//! queue is one script, earliest due first. A sharded queue's lease takes from the
//! shards whose head is due as this process knows it (`heads`, reading first the heads
//! it does not trust), one script per shard visited, each bounded by the other shards'
//! earliest head (plus `shard_order_slack`), until it has its batch: due order holds
//! within a shard and, across shards, to within the slack (docs/redis.md). Each script
//! takes at most [`SCRIPT_BATCH`] tasks.
//!
//! Priorities: a shard's script takes its lane's due tasks of the highest priority
//! first (from the lane's urgent set, `lua/lease.lua`), then those of priority 0 with
//! the room left. A sharded queue's lease picks shards by their next task in lease order
//! (`heads`, `bands`): it takes the due tasks of the highest priority of any shard
//! before lower ones, each visit bounded by the priority of the other shards' next task,
//! and hands out its batch in lease order (priority, then due time and key).
//!
//! Groups: while a shard of the lane holds groups, a lease shares its room among every
//! due shard at once, unbounded, and each shard takes its share by its groups' turns
//! (`heads`): a group (in one shard, by its keys' hash tag) keeps its limit, rate and
//! due order exactly, and one group's backlog takes at most its shard's share.

use punctual_core::store::{ExtendRequest, LeaseBatch, LeaseRequest, LeaseToken};
use std::cmp::Reverse;

use punctual_core::{Priority, Result, Task, Timestamp};

use crate::{SCRIPT_BATCH, Shared};

/// The longest a lease waits for another call's script on the shards it would visit
/// (a landing ends it sooner).
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// How many times one lease call waits so before it answers what it has (the engine
/// asks again).
const MAX_BUSY_WAITS: u32 = 4;

impl Shared {
    pub(crate) async fn lease(&self, req: &LeaseRequest) -> Result<LeaseBatch> {
        let shards = self.shard_count(&req.queue, false).await?;
        let max = (req.max.max(1) as usize).min(SCRIPT_BATCH);
        if shards == 1 {
            let taken = self.on(&req.queue, 0).lease(req, max, None, Priority::LOWEST).await?;
            let next_due = in_engine_time(taken.batch.next_due, taken.now, req.now);
            return Ok(LeaseBatch::new(taken.batch.leases, next_due));
        }
        let (queue, lane) = (&req.queue, req.lane);
        self.read_heads(req, shards).await?;
        // With groups, every due shard gives a share, by its groups' turns (`heads`).
        let shares = self.heads.grouped(queue, lane, shards);
        let mut leases = Vec::new();
        // Shards this call found with nothing due (Redis' clock may be a moment behind
        // the engine's): not picked again by this call. A visit takes tasks, spends its
        // shard, or corrects a head that was too early; the bound is a backstop.
        let mut spent = Vec::new();
        let mut script_now = None;
        let (mut visits, mut waits) = (0, 0);
        // Tasks per shard the last visits took.
        let mut yielded = 0;
        while visits <= 2 * shards && leases.len() < max {
            let room = max - leases.len();
            // Before the picks, so a landing between the two is not missed.
            let landing = self.heads.landing();
            // The first visit alone, with all the room: a shard with plenty due fills
            // the batch with one script. Once shards run dry, as many at once as the
            // room needs if each holds what the last ones yielded.
            let picked = match shares {
                true => self.heads.pick_shares(queue, lane, shards, req.now, &spent, room),
                false => {
                    let together = if visits == 0 { 1 } else { room.div_ceil(yielded.max(1)) };
                    self.heads.pick_together(queue, lane, shards, req.now, &spent, together)
                }
            };
            let Some(picks) = picked else { break };
            if picks.is_empty() {
                // Every due shard is being leased from by another call of this process,
                // which is likely to empty it: hand out what this call has, or wait
                // for one of them to land and look again, rather than send a script that
                // finds nothing (many pull loops woken by one wake-up would).
                if !leases.is_empty() || waits == MAX_BUSY_WAITS {
                    break;
                }
                waits += 1;
                let _ = tokio::time::timeout(BUSY_WAIT, landing).await;
                continue;
            }
            visits += picks.len() as u32;
            // The room shared out over the shards visited together.
            let (share, extra) = (room / picks.len(), room % picks.len());
            let visited = picks.iter().enumerate().map(|(i, (pick, _))| {
                let room = share + usize::from(i < extra);
                async move { self.on(queue, pick.shard).lease(req, room, pick.bound.as_ref(), pick.floor).await }
            });
            let answers = futures_util::future::join_all(visited).await;
            let before = leases.len();
            let visiting = answers.len();
            let mut failed = None;
            for ((pick, departure), answer) in picks.into_iter().zip(answers) {
                match answer {
                    Ok(taken) => {
                        // Nothing taken and nothing due by the script's clock: spent. (A
                        // bound from a head known only by its time can also take nothing;
                        // the shard's head is exact now, so it is picked again rightly.)
                        let due_by_redis = taken.head.as_ref().is_some_and(|head| head.due <= taken.now);
                        if taken.batch.leases.is_empty() && !due_by_redis {
                            spent.push(pick.shard);
                        }
                        self.heads.land(departure, taken.head, taken.bands, req.now);
                        self.heads.note_grouped(queue, lane, shards, pick.shard, taken.grouped);
                        script_now = Some(script_now.map_or(taken.now, |at: Timestamp| at.max(taken.now)));
                        leases.extend(taken.batch.leases);
                    }
                    Err(e) => {
                        self.heads.crash(departure);
                        failed = Some(e);
                    }
                }
            }
            yielded = (leases.len() - before) / visiting;
            if let Some(e) = failed {
                // Leases already taken are handed out, not left to expire.
                if leases.is_empty() {
                    return Err(e);
                }
                break;
            }
        }
        leases.sort_by(|a, b| lease_order(&a.task).cmp(&lease_order(&b.task)));
        let mut next_due = self.heads.next_due(queue, lane, shards, req.now);
        if let Some(script_now) = script_now {
            next_due = in_engine_time(next_due, script_now, req.now);
        }
        Ok(LeaseBatch::new(leases, next_due))
    }

    /// Reads the heads of `req`'s queue and lane this process does not trust, all at
    /// once (a head counts the tasks of groups `req` could take).
    async fn read_heads(&self, req: &LeaseRequest, shards: u32) -> Result<()> {
        let (queue, lane, now) = (&req.queue, req.lane, req.now);
        let untrusted = self.heads.untrusted(queue, lane, shards, now);
        let reads = untrusted.into_iter().map(|shard| async move {
            let departure = self.heads.depart(queue, lane, shards, shard, false);
            match self.on(queue, shard).head(req).await {
                Ok((head, bands, grouped)) => {
                    self.heads.land(departure, head, bands, now);
                    self.heads.note_grouped(queue, lane, shards, shard, grouped);
                    Ok(())
                }
                Err(e) => {
                    self.heads.crash(departure);
                    Err(e)
                }
            }
        });
        futures_util::future::join_all(reads).await.into_iter().collect()
    }

    pub(crate) async fn extend(&self, req: &ExtendRequest) -> Result<Timestamp> {
        let token = &req.token;
        let shard = self.shard_of(&token.queue, &token.key, false).await?;
        self.on(&token.queue, shard).extend(req).await
    }

    pub(crate) async fn release(&self, token: &LeaseToken, now: Timestamp) -> Result<()> {
        let shard = self.shard_of(&token.queue, &token.key, false).await?;
        let arming = self.heads.arming(&token.queue, shard);
        self.on(&token.queue, shard).release(token, now).await?;
        // Scheduled again at its due time: the shard's head is read afresh.
        self.heads.forget(&token.queue, shard);
        arming.done();
        Ok(())
    }
}

/// Where a leased task goes in a batch: the highest priority first, then the earliest
/// due time, then the key.
fn lease_order(task: &Task) -> (Reverse<Priority>, Timestamp, &str) {
    (Reverse(task.priority), task.due_at, task.key.as_str())
}

/// `next_due` as the engine's clock should read it: a task Redis' clock (`script_now`,
/// a script's) says is due in Δ is due Δ after the engine's `now`. The engine's clock
/// follows Redis' to within a millisecond or so, and a head due in that millisecond
/// would otherwise have the engine ask again at once, over and over, until Redis' clock
/// caught up.
fn in_engine_time(next_due: Option<Timestamp>, script_now: Timestamp, now: Timestamp) -> Option<Timestamp> {
    next_due.map(|due| if due > script_now { now.saturating_add(due.saturating_since(script_now)) } else { due })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_due_by_redis_clock_in_a_moment_is_due_that_moment_after_the_engines_now() {
        let at = Timestamp::from_millis;
        assert_eq!(in_engine_time(Some(at(101)), at(100), at(102)), Some(at(103)), "Redis a moment behind");
        assert_eq!(in_engine_time(Some(at(150)), at(100), at(100)), Some(at(150)), "the same clock");
        assert_eq!(in_engine_time(Some(at(90)), at(100), at(102)), Some(at(90)), "already due: as it is");
        assert_eq!(in_engine_time(None, at(100), at(102)), None);
    }
}
