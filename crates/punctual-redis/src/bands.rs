//! Priorities across the shards of a sharded queue: what `heads` keeps of each shard's
//! urgent set (the earliest task of each priority above 0 the shard's lane holds, its
//! urgent *bands*) and the order a lease takes shards' tasks in.
//!
//! Lease order: the due tasks of the highest priority first, each priority by due time
//! and then key ([`Rank`]). A shard's next task at `now` is the earliest task of the
//! highest priority whose earliest task is due; when no urgent band is due, it is the
//! lane's earliest task over every priority (its head), at priority 0 — due or not, so
//! that a queue without priorities is ordered by its heads exactly as before them. (A
//! head that is due when no urgent band is due is of priority 0: were it urgent, its
//! band would be due.)
//!
//! Invariant, as for heads: a trusted band is never later than the shard's true band,
//! and a band that is absent is empty in Redis, but for wake-ups lost (the trust period
//! bounds those). Bands are learnt with the head (a lease script's answer, a read of the
//! head), and lowered by wake-ups that name a priority and by this process's own
//! writes; a band too early is harmless, as a head is.

use std::cmp::Reverse;

use punctual_core::{Priority, Timestamp};

/// The earliest scheduled task of a shard's lane, or of one priority in it: its due
/// time and key (`""` when only the time is known, from a wake-up: it then sorts before
/// every task due then).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct HeadTask {
    pub(crate) due: Timestamp,
    pub(crate) key: String,
}

/// A task's place in lease order: the higher priority first, then the earlier due time,
/// then the key (bytewise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Rank<'a> {
    pub(crate) urgency: Reverse<Priority>,
    pub(crate) task: &'a HeadTask,
}

impl Rank<'_> {
    pub(crate) fn priority(self) -> Priority {
        self.urgency.0
    }
}

/// The earliest task of each priority above 0 in a shard's lane, the highest priority
/// first; empty for a lane without urgent tasks (a queue that uses no priorities).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Bands(Vec<(Priority, HeadTask)>);

impl Bands {
    /// Bands as a script reports them: one head per priority above 0, in any order.
    pub(crate) fn new(mut heads: Vec<(Priority, HeadTask)>) -> Bands {
        heads.retain(|(priority, _)| *priority > Priority::LOWEST);
        heads.sort_by(|a, b| (Reverse(a.0), &a.1).cmp(&(Reverse(b.0), &b.1)));
        heads.dedup_by_key(|(priority, _)| *priority);
        Bands(heads)
    }

    /// A task of `priority` due at `due` joined the lane (a wake-up, or this process's
    /// own write): that band's head is no later than it. Priority 0 has no band.
    pub(crate) fn lower(&mut self, priority: Priority, due: Timestamp) {
        if priority == Priority::LOWEST {
            return;
        }
        let known_only_by_time = HeadTask { due, key: String::new() };
        match self.0.iter_mut().find(|(p, _)| *p == priority) {
            Some((_, head)) if head.due <= due => {}
            Some((_, head)) => *head = known_only_by_time,
            None => {
                let at = self.0.iter().position(|(p, _)| *p < priority).unwrap_or(self.0.len());
                self.0.insert(at, (priority, known_only_by_time));
            }
        }
    }

    /// Lowered by every band of `other` (the wake-ups a script in flight missed).
    pub(crate) fn lower_by(&mut self, other: &Bands) {
        for (priority, head) in &other.0 {
            self.lower(*priority, head.due);
        }
    }

    /// The shard's next task in lease order at `now`, given its lane's head (see the
    /// module doc); `None` when the lane is empty.
    pub(crate) fn next<'a>(&'a self, head: Option<&'a HeadTask>, now: Timestamp) -> Option<Rank<'a>> {
        match self.0.iter().find(|(_, band)| band.due <= now) {
            Some((priority, band)) => Some(Rank { urgency: Reverse(*priority), task: band }),
            None => head.map(|head| Rank { urgency: Reverse(Priority::LOWEST), task: head }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn p(level: u8) -> Priority {
        Priority::new(level.into()).unwrap()
    }

    fn task(due: i64, key: &str) -> HeadTask {
        HeadTask { due: at(due), key: key.into() }
    }

    #[test]
    fn the_next_task_is_the_highest_due_band_else_the_head_at_priority_0() {
        let bands = Bands::new(vec![(p(3), task(5, "c")), (p(9), task(50, "n")), (p(0), task(1, "zero"))]);
        assert_eq!(bands, Bands(vec![(p(9), task(50, "n")), (p(3), task(5, "c"))]), "highest first, no band 0");
        let head = task(1, "a");
        let next = |now| bands.next(Some(&head), at(now)).map(|r| (r.priority().get(), r.task.clone()));
        assert_eq!(next(60), Some((9, task(50, "n"))), "priority 9 is due: first");
        assert_eq!(next(10), Some((3, task(5, "c"))), "priority 9 is not due yet: priority 3");
        assert_eq!(next(2), Some((0, head.clone())), "no band due: the head, at priority 0");
        assert_eq!(next(0), Some((0, head.clone())), "the head even when it is not due");
        assert_eq!(Bands::default().next(None, at(9)), None);
        let order = |a: (u8, i64, &str), b: (u8, i64, &str)| {
            let (task_a, task_b) = (task(a.1, a.2), task(b.1, b.2));
            Rank { urgency: Reverse(p(a.0)), task: &task_a } < Rank { urgency: Reverse(p(b.0)), task: &task_b }
        };
        assert!(order((9, 50, "z"), (3, 5, "a")), "priority before due time");
        assert!(order((3, 5, "b"), (3, 6, "a")), "then due time");
        assert!(order((0, 5, "a"), (0, 5, "b")), "then key");
    }

    #[test]
    fn a_band_is_lowered_by_a_task_of_its_priority_and_made_by_one_of_a_new_priority() {
        let mut bands = Bands::new(vec![(p(5), task(20, "e"))]);
        bands.lower(p(5), at(30));
        assert_eq!(bands, Bands(vec![(p(5), task(20, "e"))]), "later than the head: unchanged");
        bands.lower(p(5), at(10));
        bands.lower(p(7), at(40));
        bands.lower(p(2), at(15));
        bands.lower(Priority::LOWEST, at(1));
        assert_eq!(bands, Bands(vec![(p(7), task(40, "")), (p(5), task(10, "")), (p(2), task(15, ""))]));
        let mut learnt = Bands::new(vec![(p(5), task(12, "k")), (p(1), task(3, "q"))]);
        learnt.lower_by(&Bands::new(vec![(p(5), task(11, "")), (p(9), task(50, ""))]));
        assert_eq!(learnt, Bands(vec![(p(9), task(50, "")), (p(5), task(11, "")), (p(1), task(3, "q"))]));
    }

    mod picks {
        use std::time::Duration;

        use punctual_core::{Lane, QueueName};

        use super::*;
        use crate::heads::{Bound, Heads};

        const H: Lane = Lane::Handler;

        fn q() -> QueueName {
            QueueName::new("q").unwrap()
        }

        /// A shard's head and bands, as a script answers them.
        type Learnt = (Option<HeadTask>, Vec<(Priority, HeadTask)>);

        /// Heads and bands learnt for shards 0..n at `now`.
        fn learn(heads: &Heads, learnt: &[Learnt], now: i64) {
            let n = learnt.len() as u32;
            for (shard, (head, bands)) in learnt.iter().enumerate() {
                let flight = heads.depart(&q(), H, n, shard as u32, false);
                heads.land(flight, head.clone(), Bands::new(bands.clone()), at(now));
            }
        }

        fn pick(heads: &Heads, now: i64) -> Option<(u32, u8, Option<Bound>)> {
            heads.pick(&q(), H, 3, at(now), &[]).map(|pick| (pick.shard, pick.floor.get(), pick.bound))
        }

        fn bound(due: i64, key: &str) -> Option<Bound> {
            Some(Bound { due: at(due), before: Some(key.into()) })
        }

        #[test]
        fn a_lease_picks_the_highest_due_priority_of_any_shard_bounded_by_the_others_next_task() {
            let heads = Heads::new(Duration::from_secs(1), Duration::ZERO);
            learn(
                &heads,
                &[
                    (Some(task(10, "a")), vec![]),
                    (Some(task(20, "b")), vec![(p(9), task(90, "u")), (p(4), task(30, "m"))]),
                    (Some(task(15, "c")), vec![(p(4), task(25, "n"))]),
                ],
                0,
            );
            // At 50 priority 9 is not due: priority 4 first, in due order, bounded by the
            // other shard's priority-4 task (floor 4: nothing of priority 0).
            assert_eq!(pick(&heads, 50), Some((2, 4, bound(30, "m"))));
            // At 100 shard 1's priority 9 comes first, bounded by shard 2's priority 4.
            assert_eq!(pick(&heads, 100), Some((1, 4, bound(25, "n"))));
            // Before any band is due, the heads decide, as without priorities (floor 0).
            assert_eq!(pick(&heads, 12), Some((0, 0, bound(15, "c"))));
            // A wake-up of another process's urgent task in shard 0 makes it first.
            heads.lower(&q(), H, 0, p(9), at(40));
            assert_eq!(pick(&heads, 100), Some((0, 9, bound(90, "u"))), "known by its time only, before u");
        }
    }
}
