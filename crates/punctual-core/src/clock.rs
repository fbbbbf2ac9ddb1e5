//! The one source of time. Everything that reads "now" or sleeps goes through a
//! [`Clock`], so tests drive time by hand ([`ManualClock`]) instead of sleeping.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use tokio::sync::watch;

use crate::time::Timestamp;

/// A boxed future that sleeps.
pub type Sleep<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Wall-clock time and sleeping.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current instant.
    fn now(&self) -> Timestamp;
    /// Completes at or after `deadline` (at once if it has passed).
    fn sleep_until(&self, deadline: Timestamp) -> Sleep<'_>;
}

/// The system clock; sleeps on tokio's timer (1 ms resolution).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods, reason = "this is the clock")]
    fn now(&self) -> Timestamp {
        let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Timestamp::from_millis(i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX))
    }

    fn sleep_until(&self, deadline: Timestamp) -> Sleep<'_> {
        Box::pin(sleep_until_on(self, deadline))
    }
}

/// Sleeps on tokio's timer until `clock` reads `deadline` or later: for clocks that
/// follow wall-clock time (the system clock, or one offset from it). Re-checks after
/// each wake-up, since the wall clock may have been stepped (or the offset corrected)
/// meanwhile.
pub async fn sleep_until_on(clock: &dyn Clock, deadline: Timestamp) {
    loop {
        let now = clock.now();
        if now >= deadline {
            return;
        }
        tokio::time::sleep(deadline.saturating_since(now)).await;
    }
}

/// Time on tokio's clock, from a chosen instant: `now` is `start` plus the time tokio
/// says has passed since the clock was made, and sleeps are tokio sleeps. Under tokio's
/// paused time (`#[tokio::test(start_paused = true)]`) time then moves only when every
/// task waits, straight to the next deadline: a test of an hour-long lease runs in
/// milliseconds, the same way every run.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    start: Timestamp,
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock that reads `start` now.
    pub fn starting_at(start: Timestamp) -> TokioClock {
        TokioClock { start, origin: tokio::time::Instant::now() }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        self.start.saturating_add(self.origin.elapsed())
    }

    fn sleep_until(&self, deadline: Timestamp) -> Sleep<'_> {
        let wait = deadline.saturating_since(self.start);
        Box::pin(tokio::time::sleep_until(self.origin + wait))
    }
}

/// Measures how long something took, for metrics only: it never decides what the
/// engine does, so it reads the monotonic clock directly instead of a [`Clock`] (a
/// manual clock would make every store call take no time at all).
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch(std::time::Instant);

impl Stopwatch {
    /// Starts measuring.
    #[allow(clippy::disallowed_methods, reason = "elapsed time for metrics only; see the type's docs")]
    pub fn start() -> Stopwatch {
        Stopwatch(std::time::Instant::now())
    }

    /// The time since [`Stopwatch::start`].
    pub fn elapsed(&self) -> std::time::Duration {
        self.0.elapsed()
    }
}

/// A clock that moves only when told to. Sleepers wake when [`ManualClock::advance`]
/// or [`ManualClock::set`] passes their deadline.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<AtomicI64>,
    changed: Arc<watch::Sender<i64>>,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: Timestamp) -> ManualClock {
        let (changed, _) = watch::channel(start.as_millis());
        ManualClock { now: Arc::new(AtomicI64::new(start.as_millis())), changed: Arc::new(changed) }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: std::time::Duration) {
        let next = Timestamp::from_millis(self.now.load(Ordering::SeqCst)).saturating_add(by);
        self.set(next);
    }

    /// Sets the clock (forward or back).
    pub fn set(&self, to: Timestamp) {
        self.now.store(to.as_millis(), Ordering::SeqCst);
        self.changed.send_replace(to.as_millis());
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(self.now.load(Ordering::SeqCst))
    }

    fn sleep_until(&self, deadline: Timestamp) -> Sleep<'_> {
        let mut changes = self.changed.subscribe();
        Box::pin(async move {
            while self.now() < deadline {
                if changes.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        })
    }
}
