//! Which shards of a sharded queue hold due work, as this process last heard: a lease
//! visits only those, so a queue split into many shards costs a lease what one shard
//! costs, and a server spreads its leases over the due shards instead of reading every
//! shard first.
//!
//! Per queue and lane, one head per shard: the earliest due time of the shard's lane
//! (`None`: empty) and when this process learnt it. A head is learnt from a lease
//! script's answer (the lane's head as the script left it), and lowered by every
//! wake-up naming the shard (every script that makes a shard's head earlier publishes
//! one) and by this process's own calls when they are answered; a call that may have
//! made a head earlier and was not answered (an error, a cancelled call: [`Arming`])
//! forgets the shard's heads, as this process does not listen to its own wake-ups.
//!
//! Invariant: a trusted head is never later than the shard's true head. A lease
//! answer is as old as its script: wake-ups that arrive while it is in flight (the
//! only ones that can postdate the script) are kept beside it and lower it when it
//! lands. A head that is too early is harmless (a visit finds nothing due and learns
//! the truth); one that is too late is only possible after a lost wake-up, so a head
//! is trusted for at most `trust` (the safety poll) after it was learnt, a shard never
//! learnt is visited, and every head is forgotten whenever the wake-up subscription
//! (re)connects. A lost wake-up therefore delays a task by at most two safety polls,
//! as before shards had heads.
//!
//! Order: a lease visits the due shards in turn, starting one shard further on each
//! call (and each process from a shard of its own), each bounded by the other shards'
//! earliest head plus the slack, and stops when it has its batch. Within a shard tasks
//! leave in due order; across shards, no task is leased while one due more than the
//! slack earlier waits (zero slack: strict due order; docs/redis.md).
//!
//! Groups: a shard's head counts its groups' tasks a lease could take (under the
//! lease's group limit and rate), and each head notes whether its shard holds groups.
//! While any shard of a lane does, a lease shares its room among every due shard at
//! once, unbounded ([`Heads::pick_shares`]), and each shard hands out its share by its
//! groups' turns: a group's backlog takes at most its shard's share, so it starves
//! neither the groups of its shard nor those of another.
//!
//! Priorities: beside its head, each shard has its urgent bands (`bands`: the earliest
//! task of each priority above 0), learnt, lowered and forgotten with the head. Heads
//! and bands together give each shard's next task in lease order ([`Rank`]: the highest
//! due priority first); a lease picks the shard whose next task comes first, bounded by
//! the others' next task: its priority (the pick's `floor`: no task of a lower priority
//! is taken) and, in that priority, its due time and key as above. So a lease hands out
//! the due tasks of the highest priority of every shard before lower ones, and a queue
//! without priorities (no bands, every next task its head at priority 0) is picked and
//! bounded exactly as before.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use punctual_core::{Lane, Priority, QueueName, Timestamp};

use crate::bands::{Bands, HeadTask, Rank};
use crate::shards::earliest;

/// How far a lease of one shard may go so that due order holds across shards: tasks
/// due at or before `due`, and of those due at `due`, with `before`, only keys before it
/// (of the pick's `floor` priority; of higher ones, every due task).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bound {
    pub(crate) due: Timestamp,
    pub(crate) before: Option<String>,
}

/// Where a lease should take from next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pick {
    pub(crate) shard: u32,
    pub(crate) bound: Option<Bound>,
    /// The lowest priority the lease may take (that of the other shards' next task; 0
    /// without a bound), the bound's.
    pub(crate) floor: Priority,
    /// Every eligible shard, this one too, is being leased from by another call.
    pub(crate) busy: bool,
}

/// The heads of every sharded queue's lanes this process has leased from.
#[derive(Debug)]
pub(crate) struct Heads {
    /// By queue, then by lane ([`lane_slot`]).
    lanes: Mutex<HashMap<QueueName, [Option<LaneHeads>; 2]>>,
    /// How long a learnt head is trusted.
    trust: Duration,
    /// How much later than the earliest head of the other shards a lease may take a
    /// shard's tasks (zero: strict due order).
    slack: Duration,
    /// Where this process's first lease of a lane starts.
    first_start: usize,
    /// Told whenever a script in flight lands (or crashes).
    landed: tokio::sync::Notify,
}

#[derive(Debug)]
struct LaneHeads {
    shards: Vec<Head>,
    /// The shard the next pick starts looking at.
    next_start: usize,
    /// Scripts in flight, each with the lowest wake-up since it was sent.
    flights: Vec<Flight>,
    next_flight: u64,
}

#[derive(Debug, Clone, Default)]
struct Head {
    /// `None`: the lane is empty in this shard.
    task: Option<HeadTask>,
    /// The earliest task of each priority above 0.
    bands: Bands,
    /// When it was learnt; `None`: never (or forgotten).
    learnt: Option<Timestamp>,
    /// The shard held groups at the last look of a lease or read (kept when forgotten:
    /// a queue's groups come and go slowly, and a visit corrects it).
    grouped: bool,
}

#[derive(Debug)]
struct Flight {
    id: u64,
    shard: u32,
    lowest: Option<Timestamp>,
    /// The lowest wake-up of each priority above 0.
    lowest_bands: Bands,
    /// A lease script (it takes the shard's due tasks), not a read of the head.
    leasing: bool,
    /// The shard's heads were forgotten while it was in flight (a change that may have
    /// made them later or earlier, after the script read them): its answer is kept but
    /// not trusted.
    forgotten: bool,
}

/// A script in flight on one shard, from [`Heads::depart`] to [`Heads::land`] or
/// [`Heads::crash`]; dropped without either (its call was cancelled), it is a crash.
#[derive(Debug)]
pub(crate) struct Departure<'a> {
    heads: &'a Heads,
    queue: QueueName,
    lane: Lane,
    shards: u32,
    shard: u32,
    id: u64,
    settled: bool,
}

impl Drop for Departure<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.heads.settle(self, None);
        }
    }
}

/// A script that may make a shard's heads earlier (it schedules, retries, revives or
/// re-arms tasks), from before it is sent until its caller has told the heads what it
/// did ([`Arming::done`]). Dropped before that (the script failed, or its call was
/// cancelled), it forgets the shard's heads: the script may have applied, and this
/// process does not listen to its own wake-ups.
#[derive(Debug)]
pub(crate) struct Arming<'a> {
    heads: &'a Heads,
    queue: &'a QueueName,
    shard: u32,
    done: bool,
}

impl Arming<'_> {
    /// The heads were told (or need not be).
    pub(crate) fn done(mut self) {
        self.done = true;
    }
}

impl Drop for Arming<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.heads.forget(self.queue, self.shard);
        }
    }
}

/// The earlier of a head and a wake-up's time (which knows no key).
fn lowered(head: Option<HeadTask>, due: Option<Timestamp>) -> Option<HeadTask> {
    match (head, due) {
        (Some(head), Some(due)) if head.due <= due => Some(head),
        (_, Some(due)) => Some(HeadTask { due, key: String::new() }),
        (head, None) => head,
    }
}

impl Heads {
    pub(crate) fn new(trust: Duration, slack: Duration) -> Heads {
        Heads {
            lanes: Mutex::new(HashMap::new()),
            trust,
            slack,
            first_start: rand::random::<u16>() as usize,
            landed: tokio::sync::Notify::new(),
        }
    }

    fn with<T>(&self, queue: &QueueName, lane: Lane, shards: u32, f: impl FnOnce(&mut LaneHeads) -> T) -> T {
        let mut lanes = self.lanes.lock().expect("heads lock poisoned");
        let slot = match lanes.get_mut(queue) {
            Some(slots) => &mut slots[lane_slot(lane)],
            None => &mut lanes.entry(queue.clone()).or_default()[lane_slot(lane)],
        };
        let heads = slot.get_or_insert_with(|| LaneHeads {
            shards: vec![Head::default(); shards as usize],
            next_start: self.first_start % shards.max(1) as usize,
            flights: Vec::new(),
            next_flight: 0,
        });
        if heads.shards.len() != shards as usize {
            heads.shards = vec![Head::default(); shards as usize];
        }
        f(heads)
    }

    fn trusted(&self, head: &Head, now: Timestamp) -> bool {
        head.learnt.is_some_and(|at| now.saturating_since(at) < self.trust)
    }

    /// The shards of `queue`'s `lane` whose head must be read before a lease at `now`:
    /// those never learnt, forgotten, or learnt too long ago.
    pub(crate) fn untrusted(&self, queue: &QueueName, lane: Lane, shards: u32, now: Timestamp) -> Vec<u32> {
        self.with(queue, lane, shards, |heads| {
            (0..heads.shards.len()).filter(|&s| !self.trusted(&heads.shards[s], now)).map(|s| s as u32).collect()
        })
    }

    /// The shard a lease at `now` should take from next, and how far: the shard whose
    /// next task in lease order comes first (with slack, any shard whose next task is of
    /// the same priority and due within the slack of the first, in turn from this lane's
    /// next start), bounded by the other shards' first next task (plus the slack). Without
    /// priorities, the next task is the head. `None` when nothing is due. Shards in
    /// `spent` (visited by this call and found with nothing due by Redis' clock, which
    /// may be a moment behind `now`) are passed over.
    pub(crate) fn pick(
        &self,
        queue: &QueueName,
        lane: Lane,
        shards: u32,
        now: Timestamp,
        spent: &[u32],
    ) -> Option<Pick> {
        self.with(queue, lane, shards, |heads| {
            let n = heads.shards.len();
            // Each shard's next task, borrowed: a pick clones no key but the bound's.
            let shards_now = &heads.shards;
            let rank = |s: usize| shards_now[s].bands.next(shards_now[s].task.as_ref(), now);
            let earliest = (0..n).filter(|s| !spent.contains(&(*s as u32))).filter_map(rank).min()?;
            if earliest.task.due > now {
                return None;
            }
            let start = heads.next_start % n;
            let eligible = |s: &usize| {
                rank(*s).is_some_and(|r| match self.slack.is_zero() {
                    true => r == earliest,
                    false => {
                        r.urgency == earliest.urgency && r.task.due <= earliest.task.due.saturating_add(self.slack)
                    }
                })
            };
            // A shard another lease of this process is taking from is likely emptied by
            // it: take from another eligible shard first, if there is one.
            let leasing = |s: &usize| heads.flights.iter().any(|f| f.leasing && f.shard as usize == *s);
            let order = || (0..n).map(|i| (start + i) % n).filter(eligible);
            let free = order().find(|s| !leasing(s));
            let busy = free.is_none();
            let chosen = free.or_else(|| order().next())?;
            heads.next_start = (chosen + 1) % n;
            let others = (0..n).filter(|&s| s != chosen).filter_map(rank).min();
            let floor = others.map_or(Priority::LOWEST, Rank::priority);
            let bound = others.map(|Rank { task: other, .. }| match self.slack.is_zero() {
                true => Bound { due: other.due, before: Some(other.key.clone()) },
                false => Bound { due: other.due.saturating_add(self.slack), before: None },
            });
            Some(Pick { shard: chosen as u32, bound, floor, busy })
        })
    }

    /// The shards a lease should visit together now, each with its pick and its
    /// departure; empty when every due shard is being leased from by another call,
    /// `None` when none is due. One shard when the order is strict; with slack, up to
    /// `most` of the free shards whose head is due within the slack of the earliest,
    /// each bounded by the others' heads as picked, which taking from the others only
    /// raises.
    pub(crate) fn pick_together(
        &self,
        queue: &QueueName,
        lane: Lane,
        shards: u32,
        now: Timestamp,
        spent: &[u32],
        most: usize,
    ) -> Option<Vec<(Pick, Departure<'_>)>> {
        let mut picks = Vec::new();
        while picks.len() < most {
            let Some(pick) = self.pick(queue, lane, shards, now, spent) else { break };
            if pick.busy {
                return Some(picks);
            }
            let departure = self.depart(queue, lane, shards, pick.shard, true);
            picks.push((pick, departure));
            if self.slack.is_zero() {
                break;
            }
        }
        (!picks.is_empty()).then_some(picks)
    }

    /// For a lane whose shards hold groups: every due shard not in `spent` (at most
    /// `most`, in turn from the lane's next start, one shard further on each call),
    /// unbounded, to share a lease's room. Shards another call of this process is
    /// leasing from are passed over; empty when every due shard is, `None` when none is
    /// due.
    pub(crate) fn pick_shares(
        &self,
        queue: &QueueName,
        lane: Lane,
        shards: u32,
        now: Timestamp,
        spent: &[u32],
        most: usize,
    ) -> Option<Vec<(Pick, Departure<'_>)>> {
        let due: Vec<u32> = self.with(queue, lane, shards, |heads| {
            let n = heads.shards.len();
            let start = heads.next_start % n.max(1);
            heads.next_start = (start + 1) % n.max(1);
            let leasing = |s: usize| heads.flights.iter().any(|f| f.leasing && f.shard as usize == s);
            let due = |s: &usize| {
                !spent.contains(&(*s as u32))
                    && heads.shards[*s]
                        .bands
                        .next(heads.shards[*s].task.as_ref(), now)
                        .is_some_and(|r| r.task.due <= now)
            };
            let due: Vec<usize> = (0..n).map(|i| (start + i) % n).filter(due).collect();
            if due.is_empty() {
                return None;
            }
            Some(due.into_iter().filter(|s| !leasing(*s)).take(most.max(1)).map(|s| s as u32).collect())
        })?;
        let picks = due.into_iter().map(|shard| {
            let pick = Pick { shard, bound: None, floor: Priority::LOWEST, busy: false };
            (pick, self.depart(queue, lane, shards, shard, true))
        });
        Some(picks.collect())
    }

    /// Whether a shard of `queue`'s `lane` held groups at its last look.
    pub(crate) fn grouped(&self, queue: &QueueName, lane: Lane, shards: u32) -> bool {
        self.with(queue, lane, shards, |heads| heads.shards.iter().any(|head| head.grouped))
    }

    /// Whether `shard` of `queue` held groups at its last look, in either lane (lanes
    /// this process never leased from are unknown: no).
    pub(crate) fn shard_grouped(&self, queue: &QueueName, shard: u32) -> bool {
        let lanes = self.lanes.lock().expect("heads lock poisoned");
        lanes.get(queue).is_some_and(|slots| {
            slots.iter().flatten().any(|heads| heads.shards.get(shard as usize).is_some_and(|head| head.grouped))
        })
    }

    /// Notes whether `shard` of `queue`'s `lane` holds groups, as a script just saw.
    pub(crate) fn note_grouped(&self, queue: &QueueName, lane: Lane, shards: u32, shard: u32, grouped: bool) {
        self.with(queue, lane, shards, |heads| {
            if let Some(head) = heads.shards.get_mut(shard as usize) {
                head.grouped = grouped;
            }
        });
    }

    /// Notes a script about to be sent to `shard` that will tell its head: a lease
    /// script when `leasing`, else a read of the head.
    pub(crate) fn depart(
        &self,
        queue: &QueueName,
        lane: Lane,
        shards: u32,
        shard: u32,
        leasing: bool,
    ) -> Departure<'_> {
        let id = self.with(queue, lane, shards, |heads| {
            let id = heads.next_flight;
            heads.next_flight += 1;
            let flight = Flight { id, shard, lowest: None, lowest_bands: Bands::default(), leasing, forgotten: false };
            heads.flights.push(flight);
            id
        });
        Departure { heads: self, queue: queue.clone(), lane, shards, shard, id, settled: false }
    }

    /// The script of `departure` answered that the lane's head of its shard is `head`
    /// and its urgent bands `bands` (learnt at `now`).
    pub(crate) fn land(&self, mut departure: Departure<'_>, head: Option<HeadTask>, bands: Bands, now: Timestamp) {
        self.settle(&departure, Some((head, bands, now)));
        departure.settled = true;
    }

    /// The script of `departure` failed: its shard's head is read again next time.
    pub(crate) fn crash(&self, mut departure: Departure<'_>) {
        self.settle(&departure, None);
        departure.settled = true;
    }

    /// Ends `departure`'s flight: its shard's head and bands are `learnt` (the answer
    /// and when), or unknown.
    fn settle(&self, departure: &Departure<'_>, learnt: Option<(Option<HeadTask>, Bands, Timestamp)>) {
        self.with(&departure.queue, departure.lane, departure.shards, |heads| {
            let (lowest, lowest_bands, forgotten) = take_flight(heads, departure.id).unwrap_or_default();
            if let Some(slot) = heads.shards.get_mut(departure.shard as usize) {
                match learnt {
                    Some((head, mut bands, now)) => {
                        bands.lower_by(&lowest_bands);
                        let learnt = (!forgotten).then_some(now);
                        *slot = Head { task: lowered(head, lowest), bands, learnt, grouped: slot.grouped };
                    }
                    None => slot.learnt = None,
                }
            }
        });
        self.landed.notify_waiters();
    }

    /// Resolves once some script in flight has landed after this call (create it before
    /// looking at the heads, so a landing in between is not missed).
    pub(crate) fn landing(&self) -> tokio::sync::futures::Notified<'_> {
        self.landed.notified()
    }

    /// A task of `priority` in `shard` of `queue`'s `lane` is due at `due` (a wake-up,
    /// or a change this process made): the head is lowered, and above priority 0 that
    /// priority's band too. Lanes this process never leased from are left alone: their
    /// heads are unknown, so read anyway.
    pub(crate) fn lower(&self, queue: &QueueName, lane: Lane, shard: u32, priority: Priority, due: Timestamp) {
        let mut lanes = self.lanes.lock().expect("heads lock poisoned");
        let Some(heads) = lanes.get_mut(queue).and_then(|slots| slots[lane_slot(lane)].as_mut()) else { return };
        if let Some(slot) = heads.shards.get_mut(shard as usize) {
            slot.task = lowered(slot.task.take(), Some(due));
            slot.bands.lower(priority, due);
        }
        for flight in heads.flights.iter_mut().filter(|f| f.shard == shard) {
            flight.lowest = Some(flight.lowest.map_or(due, |lowest| lowest.min(due)));
            flight.lowest_bands.lower(priority, due);
        }
    }

    /// The earliest a lease of `queue`'s `lane` should look again after a call at
    /// `now`: the earliest trusted head, or `now` while a shard is not trusted.
    pub(crate) fn next_due(&self, queue: &QueueName, lane: Lane, shards: u32, now: Timestamp) -> Option<Timestamp> {
        self.with(queue, lane, shards, |heads| {
            heads.shards.iter().fold(None, |next, head| {
                let due = if self.trusted(head, now) { head.task.as_ref().map(|h| h.due) } else { Some(now) };
                earliest(next, due)
            })
        })
    }

    /// A script about to be sent to `shard` of `queue` that may make its heads earlier.
    pub(crate) fn arming<'a>(&'a self, queue: &'a QueueName, shard: u32) -> Arming<'a> {
        Arming { heads: self, queue, shard, done: false }
    }

    /// Forgets the heads of `shard` of `queue` (a change that may have made them
    /// later: a cancel, a replace, a purge): they are read again before the next lease.
    /// A script in flight on the shard answers heads read before the change: they are
    /// not trusted either when it lands.
    pub(crate) fn forget(&self, queue: &QueueName, shard: u32) {
        let mut lanes = self.lanes.lock().expect("heads lock poisoned");
        for heads in lanes.get_mut(queue).into_iter().flatten().flatten() {
            if let Some(head) = heads.shards.get_mut(shard as usize) {
                head.learnt = None;
            }
            heads.flights.iter_mut().filter(|flight| flight.shard == shard).for_each(|flight| flight.forgotten = true);
        }
    }

    /// Forgets every head (wake-ups may have been missed): each is read again before
    /// it is trusted.
    pub(crate) fn forget_all(&self) {
        for heads in self.lanes.lock().expect("heads lock poisoned").values_mut().flatten().flatten() {
            for head in &mut heads.shards {
                head.learnt = None;
            }
            heads.flights.iter_mut().for_each(|flight| flight.forgotten = true);
        }
    }
}

/// The index of `lane` in per-lane arrays.
pub(crate) fn lane_slot(lane: Lane) -> usize {
    match lane {
        Lane::Handler => 0,
        Lane::Target => 1,
    }
}

/// Removes the flight `id`; the lowest wake-up it saw, and of each priority above 0;
/// whether its shard's heads were forgotten while it flew.
fn take_flight(heads: &mut LaneHeads, id: u64) -> Option<(Option<Timestamp>, Bands, bool)> {
    let at = heads.flights.iter().position(|f| f.id == id)?;
    let flight = heads.flights.swap_remove(at);
    Some((flight.lowest, flight.lowest_bands, flight.forgotten))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q() -> QueueName {
        QueueName::new("q").unwrap()
    }

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn head(due: i64, key: &str) -> Option<HeadTask> {
        Some(HeadTask { due: at(due), key: key.into() })
    }

    const H: Lane = Lane::Handler;

    /// A pick's shard and bound.
    fn pk(pick: Option<Pick>) -> Option<(u32, Option<Bound>)> {
        pick.map(|p| (p.shard, p.bound))
    }

    /// Heads learnt for shards 0..n, all at `now`.
    fn learn(heads: &Heads, learnt: &[Option<HeadTask>], now: i64) {
        let n = learnt.len() as u32;
        for (shard, task) in learnt.iter().enumerate() {
            let flight = heads.depart(&q(), H, n, shard as u32, false);
            heads.land(flight, task.clone(), Bands::default(), at(now));
        }
    }

    fn strict() -> Heads {
        Heads::new(Duration::from_secs(1), Duration::ZERO)
    }

    #[test]
    fn strict_order_takes_the_earliest_head_up_to_the_next_one() {
        let heads = strict();
        assert_eq!(heads.untrusted(&q(), H, 3, at(0)), vec![0, 1, 2], "nothing learnt yet");
        learn(&heads, &[head(20, "b"), head(10, "a"), None], 0);
        assert!(heads.untrusted(&q(), H, 3, at(5)).is_empty());
        let bound = Bound { due: at(20), before: Some("b".into()) };
        assert_eq!(pk(heads.pick(&q(), H, 3, at(100), &[])), Some((1, Some(bound))));
        assert_eq!(
            pk(heads.pick(&q(), H, 3, at(15), &[])),
            Some((1, Some(Bound { due: at(20), before: Some("b".into()) })))
        );
        assert_eq!(pk(heads.pick(&q(), H, 3, at(9), &[])), None, "nothing due yet");
        assert_eq!(heads.next_due(&q(), H, 3, at(9)), Some(at(10)));
        learn(&heads, &[head(20, "b"), None, None], 1);
        assert_eq!(pk(heads.pick(&q(), H, 3, at(100), &[])), Some((0, None)), "the only shard with work: no bound");
    }

    #[test]
    fn slack_spreads_leases_over_shards_due_within_it() {
        let heads = Heads::new(Duration::from_secs(1), Duration::from_millis(50));
        learn(&heads, &[head(10, "a"), head(40, "b"), head(70, "c"), head(55, "d")], 0);
        let mut picked = Vec::new();
        for _ in 0..6 {
            let (shard, bound) = pk(heads.pick(&q(), H, 4, at(100), &[])).unwrap();
            let expected = if shard == 0 { at(90) } else { at(60) };
            assert_eq!(bound, Some(Bound { due: expected, before: None }), "the others' earliest + slack");
            picked.push(shard);
        }
        picked.sort();
        picked.dedup();
        assert_eq!(picked, vec![0, 1, 3], "in turn, the shards whose head is within 50 ms of the earliest");
    }

    #[test]
    fn a_shard_another_lease_is_taking_from_comes_last() {
        let heads = Heads::new(Duration::from_secs(1), Duration::from_millis(50));
        learn(&heads, &[head(10, "a"), head(20, "b")], 0);
        let (first, _) = pk(heads.pick(&q(), H, 2, at(100), &[])).unwrap();
        let flight = heads.depart(&q(), H, 2, first, true);
        for _ in 0..3 {
            assert_ne!(pk(heads.pick(&q(), H, 2, at(100), &[])).unwrap().0, first, "the other eligible shard first");
        }
        let second = heads.depart(&q(), H, 2, 1 - first, true);
        assert!(
            heads.pick(&q(), H, 2, at(100), &[]).unwrap().busy,
            "every eligible shard taken from: one of them, busy"
        );
        heads.land(flight, None, Bands::default(), at(1));
        heads.land(second, head(20, "b"), Bands::default(), at(1));
        assert_eq!(pk(heads.pick(&q(), H, 2, at(100), &[])), Some((1 - first, None)));
        assert_eq!(pk(heads.pick(&q(), H, 2, at(100), &[1 - first])), None, "spent this call");
    }

    #[test]
    fn a_head_is_trusted_for_a_while_only() {
        let heads = strict();
        learn(&heads, &[None, None], 0);
        assert!(heads.untrusted(&q(), H, 2, at(999)).is_empty());
        assert_eq!(heads.next_due(&q(), H, 2, at(999)), None);
        assert_eq!(heads.untrusted(&q(), H, 2, at(1000)), vec![0, 1], "a second on: read again");
        assert_eq!(heads.next_due(&q(), H, 2, at(1000)), Some(at(1000)));
        learn(&heads, &[None, None], 1000);
        heads.forget_all();
        assert_eq!(heads.untrusted(&q(), H, 2, at(1001)), vec![0, 1], "forgotten: read again");
    }

    #[test]
    fn a_wake_up_during_a_script_is_not_overwritten_by_its_answer() {
        let heads = strict();
        learn(&heads, &[head(100, "x"), head(100, "y")], 0);
        let flight = heads.depart(&q(), H, 2, 1, true);
        // A schedule after the script ran: its wake-up arrives before the answer.
        heads.lower(&q(), H, 1, Priority::LOWEST, at(7));
        heads.land(flight, head(100, "y"), Bands::default(), at(1));
        assert_eq!(
            pk(heads.pick(&q(), H, 2, at(8), &[])),
            Some((1, Some(Bound { due: at(100), before: Some("x".into()) })))
        );
        // Known only by its time, a head sorts before every key due then.
        heads.lower(&q(), H, 0, Priority::LOWEST, at(7));
        assert_eq!(
            pk(heads.pick(&q(), H, 2, at(8), &[])),
            Some((0, Some(Bound { due: at(7), before: Some(String::new()) })))
        );
        // A failed script's shard is read again.
        let flight = heads.depart(&q(), H, 2, 0, true);
        heads.crash(flight);
        assert_eq!(heads.untrusted(&q(), H, 2, at(2)), vec![0]);
        assert_eq!(heads.next_due(&q(), H, 2, at(2)), Some(at(2)), "unknown: look now");
    }

    #[test]
    fn a_call_that_may_have_armed_a_task_unanswered_forgets_the_shards_heads() {
        let heads = strict();
        learn(&heads, &[None, None], 0);
        heads.arming(&q(), 1).done();
        assert!(heads.untrusted(&q(), H, 2, at(1)).is_empty(), "answered and told: trusted");
        drop(heads.arming(&q(), 1));
        assert_eq!(heads.untrusted(&q(), H, 2, at(1)), vec![1], "unanswered: read again");
    }

    /// The race of a reaped task on a sharded queue: a lease script reads the shard
    /// (the task still leased), the reaper makes the task due again and forgets the
    /// shard's heads, and then the lease's answer lands: it must not be trusted, or the
    /// due task waits until the head is read again (for ever on a clock that stands).
    #[test]
    fn a_script_in_flight_when_the_shard_is_forgotten_lands_untrusted() {
        let heads = strict();
        learn(&heads, &[None, None], 0);
        let flight = heads.depart(&q(), H, 2, 1, true);
        heads.forget(&q(), 1);
        heads.land(flight, None, Bands::default(), at(1));
        assert_eq!(heads.untrusted(&q(), H, 2, at(1)), vec![1], "read again before the next lease");
        assert_eq!(heads.next_due(&q(), H, 2, at(1)), Some(at(1)), "unknown: look now");

        let flight = heads.depart(&q(), H, 2, 0, true);
        heads.forget_all();
        heads.land(flight, None, Bands::default(), at(2));
        assert_eq!(heads.untrusted(&q(), H, 2, at(2)), vec![0, 1]);
    }

    #[test]
    fn lanes_and_queues_have_heads_of_their_own() {
        let heads = strict();
        learn(&heads, &[None], 0);
        heads.lower(&q(), Lane::Target, 0, Priority::LOWEST, at(1));
        heads.lower(&QueueName::new("other").unwrap(), H, 0, Priority::LOWEST, at(1));
        assert_eq!(pk(heads.pick(&q(), H, 1, at(5), &[])), None);
        heads.lower(&q(), H, 0, Priority::LOWEST, at(1));
        assert_eq!(pk(heads.pick(&q(), H, 1, at(5), &[])), Some((0, None)));
        heads.forget(&q(), 0);
        assert_eq!(heads.untrusted(&q(), H, 1, at(5)), vec![0]);
    }
}
