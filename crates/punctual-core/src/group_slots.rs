//! The slots of a group under a queue's `group_rate` (the rule is in
//! [`Store::lease`](crate::Store::lease)), as the reference store keeps them.
//!
//! Each lease of a group's task under a rate takes a slot: the lease's `now`, and the
//! end of the window of the rate it was taken under. In a lease under `count/per`, a
//! slot counts while it is both inside `(now - per, now]` and before its own window's
//! end, so a slot taken under a shorter window than today's is not revived; a store may
//! forget a slot once its own window has ended, since it never counts again. The group
//! has room while fewer than `count` slots count.
//!
//! Invariant: slots are kept in the order they were taken (oldest first).

use std::collections::VecDeque;

use crate::policy::Rate;
use crate::time::Timestamp;

/// One lease's slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Taken {
    at: Timestamp,
    /// `at` plus the window of the rate it was taken under.
    until: Timestamp,
}

impl Taken {
    /// When the slot stops counting under `rate`.
    fn ends(self, rate: Rate) -> Timestamp {
        self.until.min(self.at.saturating_add(rate.per))
    }
}

/// A group's slots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSlots {
    taken: VecDeque<Taken>,
}

impl GroupSlots {
    /// Takes a slot at `now` under `rate`.
    pub fn take(&mut self, rate: Rate, now: Timestamp) {
        let slot = Taken { at: now, until: now.saturating_add(rate.per) };
        // Callers' clocks need not agree: keep the order of `at` all the same.
        let at = self.taken.partition_point(|taken| taken.at <= now);
        self.taken.insert(at, slot);
    }

    /// When the group has room under `rate`, at or after `now`: `now` while fewer than
    /// `rate.count` slots count, else the instant enough of them stop counting.
    pub fn room_at(&self, rate: Rate, now: Timestamp) -> Timestamp {
        let mut ends: Vec<Timestamp> = self
            .taken
            .iter()
            .filter(|taken| taken.at <= now)
            .map(|taken| taken.ends(rate))
            .filter(|end| *end > now)
            .collect();
        let count = rate.count as usize;
        if ends.len() < count {
            return now;
        }
        // Room once all but `count - 1` have stopped counting.
        ends.sort_unstable();
        ends[ends.len() - count]
    }

    /// Forgets the slots whose own window ended by `now`; whether any are left.
    pub fn forget_ended(&mut self, now: Timestamp) -> bool {
        self.taken.retain(|taken| taken.until > now);
        !self.taken.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn rate(count: u32, secs: u64) -> Rate {
        Rate { count, per: Duration::from_secs(secs) }
    }

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_millis(1_000_000 + secs * 1_000)
    }

    #[test]
    fn a_full_window_has_room_when_its_oldest_slot_leaves_it() {
        let mut slots = GroupSlots::default();
        slots.take(rate(2, 60), at(0));
        assert_eq!(slots.room_at(rate(2, 60), at(0)), at(0), "one slot of two");
        slots.take(rate(2, 60), at(10));
        assert_eq!(slots.room_at(rate(2, 60), at(10)), at(60));
        assert_eq!(slots.room_at(rate(2, 60), at(59)), at(60));
        assert_eq!(slots.room_at(rate(2, 60), at(60)), at(60), "the first slot left the window");
        assert_eq!(slots.room_at(rate(1, 60), at(60)), at(70), "a lower count waits for the second too");
    }

    #[test]
    fn a_slot_counts_only_within_its_own_window() {
        let mut slots = GroupSlots::default();
        slots.take(rate(1, 10), at(0));
        // Under a longer window today, the slot still stops counting where its own ended.
        assert_eq!(slots.room_at(rate(1, 3_600), at(5)), at(10));
        assert!(!slots.forget_ended(at(10)), "its window ended at 10 s");
    }

    #[test]
    fn slots_taken_out_of_clock_order_count_by_their_time() {
        let mut slots = GroupSlots::default();
        slots.take(rate(2, 60), at(30));
        slots.take(rate(2, 60), at(0));
        assert_eq!(slots.room_at(rate(2, 60), at(30)), at(60));
        // A slot taken after `now` (another caller's clock) does not count yet.
        assert_eq!(slots.room_at(rate(2, 60), at(20)), at(20));
    }
}
