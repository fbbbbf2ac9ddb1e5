//! The timing wheel's unit tests: the invariants of the module docs checked by walking
//! every list, edge cases at both ends of time, and a model test against a sorted map.

use std::collections::{BTreeMap, HashMap};

use proptest::prelude::*;

use super::*;

impl<T> Wheel<T> {
    /// Checks every invariant of the module docs by walking all lists.
    fn check_invariants(&self) {
        let mut linked = 0;
        let mut lists = vec![(Place::Due, self.due)];
        for (level, l) in self.levels.iter().enumerate() {
            for (slot, list) in l.slots.iter().enumerate() {
                assert_eq!(l.occupied & (1 << slot) != 0, !list.is_empty(), "occupancy bit of {level}/{slot}");
                lists.push((Place::Slot(level, slot), *list));
            }
        }
        for (place, list) in lists {
            let (mut prev, mut index) = (NIL, list.head);
            while index != NIL {
                let entry = self.entry(index);
                assert_eq!(entry.prev, prev, "back link");
                assert_eq!(self.place(entry.at), place, "entry filed where its deadline says");
                if let Place::Slot(level, slot) = place {
                    assert!(slot > slot_index(self.now, level), "slot after the wheel's time");
                }
                linked += 1;
                (prev, index) = (index, entry.next);
            }
            assert_eq!(list.tail, prev, "tail");
        }
        let occupied = self.cells.iter().filter(|c| matches!(c.node, Node::Occupied(_))).count();
        assert_eq!((linked, occupied), (self.len, self.len), "every entry linked exactly once");
    }
}

#[test]
fn a_deadline_at_or_before_the_wheels_time_fires_at_the_next_poll() {
    let mut wheel = Wheel::new(1_000);
    wheel.insert(1_000, "now");
    wheel.insert(10, "past");
    wheel.insert(1_001, "next ms");
    assert_eq!(wheel.next_expiration(), Some(1_000));
    assert_eq!(wheel.poll(1_000), vec!["now", "past"]);
    assert_eq!(wheel.next_expiration(), Some(1_001));
    assert_eq!(wheel.poll(1_000), Vec::<&str>::new());
    assert_eq!(wheel.poll(1_001), vec!["next ms"]);
    assert!(wheel.is_empty());
    assert_eq!(wheel.next_expiration(), None);
}

#[test]
fn far_deadlines_need_no_overflow_list() {
    let mut wheel = Wheel::new(0);
    wheel.insert(i64::MAX, "max");
    wheel.insert(1 << 62, "2^62");
    wheel.insert(1 << 40, "2^40");
    wheel.insert(i64::MIN, "min");
    wheel.check_invariants();
    assert_eq!(wheel.poll(0), vec!["min"]);
    assert_eq!(wheel.next_expiration(), Some(1 << 40));
    assert_eq!(wheel.poll((1 << 40) - 1), Vec::<&str>::new());
    assert_eq!(wheel.poll(1 << 40), vec!["2^40"]);
    assert_eq!(wheel.next_expiration(), Some(1 << 62));
    assert_eq!(wheel.poll(i64::MAX), vec!["2^62", "max"]);
    wheel.check_invariants();
    // The wheel's time is now the latest there is: everything is due at once.
    wheel.insert(i64::MAX, "again");
    assert_eq!(wheel.poll(0), vec!["again"]);
}

#[test]
fn one_poll_returns_by_deadline_ties_in_insertion_order() {
    let mut wheel = Wheel::new(0);
    for (deadline, value) in [(5_000, 'a'), (70, 'b'), (5_000, 'c'), (3, 'd'), (70, 'e'), (300_000, 'f')] {
        wheel.insert(deadline, value);
    }
    wheel.poll(64);
    // 'g' is filed after 'b' and 'e' reached level 0: ties stay in insertion order.
    wheel.insert(70, 'g');
    assert_eq!(wheel.poll(1_000_000), vec!['b', 'e', 'g', 'a', 'c', 'f']);
}

#[test]
fn next_expiration_is_exact_on_every_level() {
    let mut wheel = Wheel::new(0);
    wheel.insert(9_999, ());
    wheel.insert(5_001, ());
    wheel.insert(300_007, ());
    assert_eq!(wheel.next_expiration(), Some(5_001));
    assert_eq!(wheel.poll(5_000), Vec::<()>::new());
    assert_eq!(wheel.next_expiration(), Some(5_001));
    wheel.poll(5_001);
    assert_eq!(wheel.next_expiration(), Some(9_999));
    wheel.poll(10_000);
    assert_eq!(wheel.next_expiration(), Some(300_007));
}

#[test]
fn a_key_is_dead_once_its_value_fired_or_was_removed() {
    let mut wheel = Wheel::new(0);
    let fired = wheel.insert(10, 1);
    let removed = wheel.insert(20, 2);
    assert_eq!(wheel.remove(removed), Some(2));
    assert_eq!(wheel.remove(removed), None);
    assert_eq!(wheel.poll(10), vec![1]);
    assert_eq!(wheel.remove(fired), None);
    assert_eq!(wheel.get_mut(fired), None);
    // The cells are reused; the old keys must not reach the new occupants.
    let a = wheel.insert(30, 3);
    let b = wheel.insert(40, 4);
    assert_eq!(wheel.remove(fired), None);
    assert_eq!(wheel.remove(removed), None);
    assert_eq!(wheel.len(), 2);
    *wheel.get_mut(a).unwrap() = 33;
    assert_eq!(wheel.remove(b), Some(4));
    assert_eq!(wheel.poll(100), vec![33]);
}

#[test]
fn a_poll_into_the_past_moves_nothing() {
    let mut wheel = Wheel::new(100);
    wheel.insert(150, ());
    assert_eq!(wheel.poll(50), Vec::<()>::new());
    assert_eq!(wheel.next_expiration(), Some(150));
    wheel.check_invariants();
}

/// What the wheel must behave like: a sorted map keyed by (effective deadline,
/// insertion number), where a deadline already past counts as the wheel's time.
#[derive(Debug)]
struct Model {
    time: i64,
    seq: u64,
    waiting: BTreeMap<(i64, u64), u32>,
    where_is: HashMap<u32, (i64, u64)>,
}

impl Model {
    fn insert(&mut self, deadline: i64, value: u32) {
        let key = (deadline.max(self.time), self.seq);
        self.seq += 1;
        self.waiting.insert(key, value);
        self.where_is.insert(value, key);
    }

    fn remove(&mut self, value: u32) -> Option<u32> {
        let key = self.where_is.remove(&value)?;
        self.waiting.remove(&key)
    }

    fn poll(&mut self, now: i64) -> Vec<u32> {
        self.time = self.time.max(now);
        let later = self.waiting.split_off(&(self.time, u64::MAX));
        let expired: Vec<u32> = std::mem::replace(&mut self.waiting, later).into_values().collect();
        for value in &expired {
            self.where_is.remove(value);
        }
        expired
    }

    fn next_expiration(&self) -> Option<i64> {
        self.waiting.keys().next().map(|(at, _)| *at)
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Insert at the model's time plus this.
    Insert(i64),
    /// Remove the value of one of the keys handed out so far (fired or not).
    Remove(prop::sample::Index),
    /// Poll at the model's time plus this (negative: into the past).
    Poll(i64),
    NextExpiration,
}

fn op() -> impl Strategy<Value = Op> {
    let offset = prop_oneof![-100i64..=100, 0i64..5_000, 0i64..400_000, 0i64..1 << 40, Just(i64::MAX), Just(i64::MIN),];
    let advance =
        prop_oneof![0i64..=3, 0i64..100, 0i64..5_000, 0i64..400_000, 0i64..1 << 40, -50i64..0, Just(i64::MAX)];
    prop_oneof![
        4 => offset.prop_map(Op::Insert),
        2 => any::<prop::sample::Index>().prop_map(Op::Remove),
        3 => advance.prop_map(Op::Poll),
        1 => Just(Op::NextExpiration),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn behaves_like_a_sorted_map(
        start in prop_oneof![Just(0i64), 0i64..1 << 45, Just(i64::MIN), Just(i64::MAX - 5_000)],
        ops in prop::collection::vec(op(), 1..300),
    ) {
        let mut wheel = Wheel::new(start);
        let mut model = Model { time: start, seq: 0, waiting: BTreeMap::new(), where_is: HashMap::new() };
        let mut keys = Vec::new();
        for op in ops {
            match op {
                Op::Insert(offset) => {
                    let value = keys.len() as u32;
                    let deadline = model.time.saturating_add(offset);
                    keys.push(wheel.insert(deadline, value));
                    model.insert(deadline, value);
                }
                Op::Remove(index) if !keys.is_empty() => {
                    let value = index.index(keys.len());
                    prop_assert_eq!(wheel.remove(keys[value]), model.remove(value as u32));
                }
                Op::Remove(_) => {}
                Op::Poll(advance) => {
                    let now = model.time.saturating_add(advance);
                    prop_assert_eq!(wheel.poll(now), model.poll(now));
                }
                Op::NextExpiration => prop_assert_eq!(wheel.next_expiration(), model.next_expiration()),
            }
            prop_assert_eq!(wheel.len(), model.waiting.len());
            wheel.check_invariants();
        }
        prop_assert_eq!(wheel.poll(i64::MAX), model.poll(i64::MAX));
    }
}
