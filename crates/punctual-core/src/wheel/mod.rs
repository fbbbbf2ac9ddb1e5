//! A hierarchical timing wheel: a pure data structure (no clock, no async, no I/O)
//! holding values until their deadline, in milliseconds over the whole `i64` range.
//! [`crate::timer`] drives one with the engine's clock.
//!
//! # Design
//!
//! The wheel has a time of its own, `now`, which only [`Wheel::poll`] moves (forward).
//! Deadlines are mapped to `u64` ticks preserving order. There are [`LEVELS`] levels of
//! 64 slots; a slot of level `L` spans `64^L` ticks, a whole level `64^(L+1)`. An entry
//! with deadline `at > now` lives at the level of the highest bit in which `at` and
//! `now` differ (bit / 6), in the slot given by `at`'s six bits of that level. So level
//! 0 holds deadlines of `now`'s 64 ms block, one deadline per slot; level 1 those of
//! `now`'s 4.096 s block but a later 64 ms block, and so on. Eleven levels cover 66
//! bits, more than any deadline has: nothing overflows, nothing is clamped, `i64::MAX`
//! is a deadline like any other.
//!
//! An entry whose deadline is at or before `now` when inserted goes to the `due` list:
//! it counts as due at `now` and fires at the next poll, before every other entry.
//!
//! Polling finds the earliest occupied slot (the lowest occupied level, its first
//! occupied slot: an occupancy bitmap per level makes this a few instructions), moves
//! `now` to the slot's start and re-files its entries relative to the new `now` (they
//! land lower, or in `due` when their deadline is that start); then it hands out the
//! `due` list, and repeats while the next slot starts no later than the poll's time.
//! Each entry thus moves down at most [`LEVELS`] times over its life.
//!
//! Entries sit in one storage vector, each linked into exactly one list (a slot or
//! `due`) by indices, so insert and remove are O(1). A [`Key`] carries a generation
//! checked against its storage cell, so a key whose entry fired or was removed never
//! touches the cell's next occupant (generations wrap after 2^32 reuses of one cell).
//!
//! # Invariants
//!
//! 1. Every entry with deadline `at <= now` is in `due`; every other entry is in the
//!    slot `slot_index(at, level_for(now, at))` of that level.
//! 2. Hence at every level, occupied slots come after the slot `now` is in: lower
//!    levels hold only earlier deadlines than higher ones, and within a level, lower
//!    slots earlier ones. The earliest entry is in `due`, else in the first occupied
//!    slot of the lowest occupied level.
//! 3. Lists are first in, first out, and re-filing moves a slot's entries in list order,
//!    so entries with equal deadlines stay in insertion order.
//! 4. A level's occupancy bit for a slot is set exactly when the slot's list is non-empty.
//!
//! # Order
//!
//! [`Wheel::poll`] returns expired values by deadline, ties in insertion order, where
//! a deadline already past at insertion counts as the wheel's time then.

use std::fmt;

mod level;

use self::level::{Level, level_for, slot_index, slot_start};

/// Levels: 11 × 6 = 66 bits cover every `u64` tick.
pub const LEVELS: usize = 11;
/// No entry (the end of a list, of the free list).
const NIL: u32 = u32::MAX;

/// Maps milliseconds to ticks, preserving order (`i64::MIN` → 0).
fn tick(ms: i64) -> u64 {
    (ms as u64) ^ (1 << 63)
}

/// The inverse of [`tick`].
fn millis(tick: u64) -> i64 {
    (tick ^ (1 << 63)) as i64
}

/// Identifies an inserted value, for [`Wheel::remove`] and [`Wheel::get_mut`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    index: u32,
    generation: u32,
}

/// A doubly linked list of entries, by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct List {
    head: u32,
    tail: u32,
}

impl List {
    const EMPTY: List = List { head: NIL, tail: NIL };

    fn is_empty(&self) -> bool {
        self.head == NIL
    }
}

/// Where an entry is linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Due,
    Slot(usize, usize),
}

struct Entry<T> {
    at: u64,
    prev: u32,
    next: u32,
    value: T,
}

enum Node<T> {
    Occupied(Entry<T>),
    Vacant { next_free: u32 },
}

struct Cell<T> {
    generation: u32,
    node: Node<T>,
}

/// Values waiting for their deadline (milliseconds). See the module docs.
pub struct Wheel<T> {
    cells: Vec<Cell<T>>,
    /// The first vacant cell, or [`NIL`].
    free: u32,
    len: usize,
    /// The wheel's time, as a tick.
    now: u64,
    due: List,
    levels: Box<[Level; LEVELS]>,
}

impl<T> fmt::Debug for Wheel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel").field("now", &millis(self.now)).field("len", &self.len).finish()
    }
}

impl<T> Wheel<T> {
    /// An empty wheel whose time is `now`.
    pub fn new(now: i64) -> Wheel<T> {
        Wheel {
            cells: Vec::new(),
            free: NIL,
            len: 0,
            now: tick(now),
            due: List::EMPTY,
            levels: Box::new([Level::EMPTY; LEVELS]),
        }
    }

    /// How many values wait.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no value waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `value`, to be returned by the first poll at or after `deadline` (the next
    /// poll if `deadline` is not after the wheel's time). O(1).
    pub fn insert(&mut self, deadline: i64, value: T) -> Key {
        let entry = Entry { at: tick(deadline), prev: NIL, next: NIL, value };
        let index = if self.free == NIL {
            let index =
                u32::try_from(self.cells.len()).ok().filter(|i| *i != NIL).expect("fewer than 2^32 - 1 entries");
            self.cells.push(Cell { generation: 0, node: Node::Occupied(entry) });
            index
        } else {
            let index = self.free;
            let cell = &mut self.cells[index as usize];
            let Node::Vacant { next_free } = cell.node else { unreachable!("the free list links vacant cells") };
            self.free = next_free;
            cell.node = Node::Occupied(entry);
            index
        };
        self.len += 1;
        self.link(index);
        Key { index, generation: self.cells[index as usize].generation }
    }

    /// Takes the value of `key` out, or `None` if it already fired or was removed. O(1).
    pub fn remove(&mut self, key: Key) -> Option<T> {
        self.get_mut(key)?;
        self.unlink(key.index);
        Some(self.release(key.index))
    }

    /// The value of `key` while it waits.
    pub fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        match self.cells.get_mut(key.index as usize) {
            Some(Cell { generation, node: Node::Occupied(entry) }) if *generation == key.generation => {
                Some(&mut entry.value)
            }
            _ => None,
        }
    }

    /// Moves the wheel's time to `now` (it never goes back: an earlier `now` counts as
    /// the wheel's time) and returns every value whose deadline it reached, by
    /// deadline, ties in insertion order. O(expired + re-filed entries), each entry
    /// re-filed at most [`LEVELS`] times in all.
    pub fn poll(&mut self, now: i64) -> Vec<T> {
        let now = tick(now);
        let mut expired = Vec::new();
        self.drain_due(&mut expired);
        while now > self.now {
            let Some((level, slot)) = self.first_slot() else { break };
            let start = slot_start(self.now, level, slot);
            if start > now {
                break;
            }
            debug_assert!(start > self.now, "occupied slots start after the wheel's time (invariant 2)");
            debug_assert!(self.levels[..level].iter().all(|l| l.occupied == 0), "lower levels are empty");
            self.now = start;
            let list = std::mem::replace(&mut self.levels[level].slots[slot], List::EMPTY);
            self.levels[level].occupied &= !(1 << slot);
            let mut index = list.head;
            while index != NIL {
                let next = self.entry(index).next;
                self.link(index);
                index = next;
            }
            self.drain_due(&mut expired);
        }
        self.now = self.now.max(now);
        expired
    }

    /// The earliest deadline waiting (the wheel's time for values inserted overdue),
    /// or `None` when empty. O(1) when it is in the wheel's current 64 ms block;
    /// otherwise scans the one slot that holds it.
    pub fn next_expiration(&self) -> Option<i64> {
        if !self.due.is_empty() {
            return Some(millis(self.now));
        }
        let (level, slot) = self.first_slot()?;
        if level == 0 {
            return Some(millis(slot_start(self.now, 0, slot)));
        }
        let mut earliest = u64::MAX;
        let mut index = self.levels[level].slots[slot].head;
        while index != NIL {
            let entry = self.entry(index);
            earliest = earliest.min(entry.at);
            index = entry.next;
        }
        Some(millis(earliest))
    }

    /// The earliest occupied slot (invariant 2).
    fn first_slot(&self) -> Option<(usize, usize)> {
        let (level, occupied) = self.levels.iter().enumerate().find(|(_, l)| l.occupied != 0)?;
        let slot = occupied.occupied.trailing_zeros() as usize;
        debug_assert!(slot > slot_index(self.now, level), "occupied slots come after the wheel's time (invariant 2)");
        Some((level, slot))
    }

    /// Where an entry with deadline `at` belongs now (invariant 1).
    fn place(&self, at: u64) -> Place {
        if at <= self.now {
            Place::Due
        } else {
            let level = level_for(self.now, at);
            Place::Slot(level, slot_index(at, level))
        }
    }

    fn list_mut(&mut self, place: Place) -> &mut List {
        match place {
            Place::Due => &mut self.due,
            Place::Slot(level, slot) => &mut self.levels[level].slots[slot],
        }
    }

    fn entry(&self, index: u32) -> &Entry<T> {
        match &self.cells[index as usize].node {
            Node::Occupied(entry) => entry,
            Node::Vacant { .. } => unreachable!("linked cell {index} is vacant"),
        }
    }

    fn entry_mut(&mut self, index: u32) -> &mut Entry<T> {
        match &mut self.cells[index as usize].node {
            Node::Occupied(entry) => entry,
            Node::Vacant { .. } => unreachable!("linked cell {index} is vacant"),
        }
    }

    /// Appends an unlinked entry to the list where it belongs.
    fn link(&mut self, index: u32) {
        let place = self.place(self.entry(index).at);
        let tail = self.list_mut(place).tail;
        let entry = self.entry_mut(index);
        entry.prev = tail;
        entry.next = NIL;
        if tail == NIL {
            self.list_mut(place).head = index;
        } else {
            self.entry_mut(tail).next = index;
        }
        self.list_mut(place).tail = index;
        if let Place::Slot(level, slot) = place {
            self.levels[level].occupied |= 1 << slot;
        }
    }

    /// Takes an entry out of its list.
    fn unlink(&mut self, index: u32) {
        let Entry { at, prev, next, .. } = *self.entry(index);
        let place = self.place(at);
        if prev == NIL {
            debug_assert_eq!(
                self.list_mut(place).head,
                index,
                "an entry is in the list its deadline says (invariant 1)"
            );
            self.list_mut(place).head = next;
        } else {
            self.entry_mut(prev).next = next;
        }
        if next == NIL {
            self.list_mut(place).tail = prev;
        } else {
            self.entry_mut(next).prev = prev;
        }
        if let Place::Slot(level, slot) = place
            && self.levels[level].slots[slot].is_empty()
        {
            self.levels[level].occupied &= !(1 << slot);
        }
    }

    /// Frees an unlinked entry's cell; its value.
    fn release(&mut self, index: u32) -> T {
        let cell = &mut self.cells[index as usize];
        let node = std::mem::replace(&mut cell.node, Node::Vacant { next_free: self.free });
        cell.generation = cell.generation.wrapping_add(1);
        self.free = index;
        self.len -= 1;
        match node {
            Node::Occupied(entry) => entry.value,
            Node::Vacant { .. } => unreachable!("released cell {index} was vacant"),
        }
    }

    /// Hands out the `due` list in order.
    fn drain_due(&mut self, expired: &mut Vec<T>) {
        let mut index = std::mem::replace(&mut self.due, List::EMPTY).head;
        while index != NIL {
            let next = self.entry(index).next;
            expired.push(self.release(index));
            index = next;
        }
    }
}

#[cfg(test)]
mod tests;
