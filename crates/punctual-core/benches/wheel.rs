//! The timing wheel against the two usual alternatives, a binary heap (cancel by lazy
//! deletion: a set of cancelled ids, skipped when they surface) and a B-tree keyed by
//! (deadline, sequence number), at 1k, 100k and 10M timers (the B-tree at 1k and 100k
//! only) with deadlines spread uniformly over the next hour.
//!
//! - `insert_cancel`: insert every timer, then cancel every one, in insertion order.
//! - `insert_fire_all`: insert every timer, then fire them all in deadline order the
//!   way a timer driver does (ask for the next expiration, poll up to it, repeat).
//!
//! `cargo bench -p punctual-core --bench wheel` (about 5 minutes); figures in BENCHMARKS.md.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashSet};
use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use punctual_core::wheel::{Key, Wheel};

/// Deadlines fall within the next hour, in milliseconds.
const WINDOW_MS: u64 = 3_600_000;

/// `n` deadlines, uniform over the window (splitmix64: the same on every run).
fn deadlines(n: usize) -> Vec<i64> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            1 + (z % WINDOW_MS) as i64
        })
        .collect()
}

/// The operations a timer needs, for each contender.
trait Timers {
    type Handle: Copy;
    const NAME: &'static str;
    fn new() -> Self;
    fn insert(&mut self, deadline: i64, value: u64) -> Self::Handle;
    fn cancel(&mut self, handle: Self::Handle);
    /// Fires every timer in deadline order; the sum of their values.
    fn fire_all(&mut self) -> u64;
}

impl Timers for Wheel<u64> {
    type Handle = Key;
    const NAME: &'static str = "wheel";
    fn new() -> Self {
        Wheel::new(0)
    }
    fn insert(&mut self, deadline: i64, value: u64) -> Key {
        Wheel::insert(self, deadline, value)
    }
    fn cancel(&mut self, handle: Key) {
        black_box(self.remove(handle));
    }
    fn fire_all(&mut self) -> u64 {
        let mut sum = 0;
        while let Some(at) = self.next_expiration() {
            sum += self.poll(at).into_iter().sum::<u64>();
        }
        sum
    }
}

/// A min-heap of (deadline, id, value); cancelled ids are skipped when popped.
struct Heap {
    heap: BinaryHeap<Reverse<(i64, u64, u64)>>,
    cancelled: HashSet<u64>,
    next_id: u64,
}

impl Timers for Heap {
    type Handle = u64;
    const NAME: &'static str = "binary_heap";
    fn new() -> Self {
        Heap { heap: BinaryHeap::new(), cancelled: HashSet::new(), next_id: 0 }
    }
    fn insert(&mut self, deadline: i64, value: u64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.heap.push(Reverse((deadline, id, value)));
        id
    }
    fn cancel(&mut self, id: u64) {
        self.cancelled.insert(id);
    }
    fn fire_all(&mut self) -> u64 {
        let mut sum = 0;
        while let Some(Reverse((_, id, value))) = self.heap.pop() {
            if !self.cancelled.remove(&id) {
                sum += value;
            }
        }
        sum
    }
}

/// A sorted map keyed by (deadline, sequence number).
struct Tree {
    map: BTreeMap<(i64, u64), u64>,
    seq: u64,
}

impl Timers for Tree {
    type Handle = (i64, u64);
    const NAME: &'static str = "btree_map";
    fn new() -> Self {
        Tree { map: BTreeMap::new(), seq: 0 }
    }
    fn insert(&mut self, deadline: i64, value: u64) -> (i64, u64) {
        let key = (deadline, self.seq);
        self.seq += 1;
        self.map.insert(key, value);
        key
    }
    fn cancel(&mut self, key: (i64, u64)) {
        black_box(self.map.remove(&key));
    }
    fn fire_all(&mut self) -> u64 {
        let mut sum = 0;
        while let Some((_, value)) = self.map.pop_first() {
            sum += value;
        }
        sum
    }
}

fn insert_cancel<T: Timers>(deadlines: &[i64]) {
    let mut timers = T::new();
    let handles: Vec<T::Handle> = deadlines.iter().enumerate().map(|(i, at)| timers.insert(*at, i as u64)).collect();
    for handle in handles {
        timers.cancel(handle);
    }
    black_box(timers);
}

fn insert_fire_all<T: Timers>(deadlines: &[i64]) -> u64 {
    let mut timers = T::new();
    for (i, at) in deadlines.iter().enumerate() {
        timers.insert(*at, i as u64);
    }
    timers.fire_all()
}

fn bench(c: &mut Criterion) {
    for n in [1_000usize, 100_000, 10_000_000] {
        let deadlines = deadlines(n);
        let expected: u64 = (0..n as u64).sum();
        for (name, scenario) in [("insert_cancel", 0), ("insert_fire_all", 1)] {
            let mut group = c.benchmark_group(name);
            if n >= 10_000_000 {
                // Seconds per iteration: ten single-iteration samples.
                group.sampling_mode(SamplingMode::Flat).sample_size(10).warm_up_time(Duration::from_millis(1));
            } else {
                group.measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
            }
            macro_rules! contender {
                ($t:ty) => {
                    group.bench_with_input(BenchmarkId::new(<$t as Timers>::NAME, n), &deadlines, |b, d| {
                        if scenario == 0 {
                            b.iter(|| insert_cancel::<$t>(d))
                        } else {
                            b.iter(|| assert_eq!(insert_fire_all::<$t>(d), expected))
                        }
                    });
                };
            }
            contender!(Wheel<u64>);
            contender!(Heap);
            // At 10M a B-tree iteration takes about half a minute: ten samples would
            // take longer than the whole rest of the run.
            if n < 10_000_000 {
                contender!(Tree);
            }
            group.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
