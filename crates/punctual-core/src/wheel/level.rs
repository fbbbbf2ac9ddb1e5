//! One level of the timing wheel and the geometry of levels: which level and slot a
//! deadline belongs to, relative to the wheel's time, and where a slot starts.
//!
//! A level has 64 slots; a slot of level `L` spans `64^L` ticks, a whole level
//! `64^(L+1)`. A deadline `at` later than the wheel's time `now` belongs to the level of
//! the highest bit in which `at` and `now` differ (bit / 6), in the slot given by `at`'s
//! six bits of that level. Each level keeps an occupancy bitmap; the wheel keeps bit `s`
//! set exactly when slot `s`'s list is non-empty (invariant 4 of the wheel).

use super::List;

/// Bits of a deadline each level resolves.
pub(super) const SLOT_BITS: u32 = 6;
/// Slots per level.
pub(super) const SLOTS: usize = 1 << SLOT_BITS;

/// The level of a deadline `at` later than `now`.
pub(super) fn level_for(now: u64, at: u64) -> usize {
    debug_assert!(at > now, "only future deadlines have a level");
    let highest = u64::BITS - 1 - (now ^ at).leading_zeros();
    (highest / SLOT_BITS) as usize
}

/// The slot of `at` in `level`.
pub(super) fn slot_index(at: u64, level: usize) -> usize {
    ((at >> (level as u32 * SLOT_BITS)) & (SLOTS as u64 - 1)) as usize
}

/// The first tick of slot `slot` of `level`, for a wheel standing at `now`.
pub(super) fn slot_start(now: u64, level: usize, slot: usize) -> u64 {
    let shift = level as u32 * SLOT_BITS;
    let span_bits = shift + SLOT_BITS;
    let above = if span_bits >= u64::BITS { 0 } else { now & (u64::MAX << span_bits) };
    above | ((slot as u64) << shift)
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Level {
    /// Bit `s` is set when slot `s` holds entries.
    pub(super) occupied: u64,
    pub(super) slots: [List; SLOTS],
}

impl Level {
    pub(super) const EMPTY: Level = Level { occupied: 0, slots: [List::EMPTY; SLOTS] };
}
