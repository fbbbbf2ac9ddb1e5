//! Redis' clock, as seen from this process: the system clock plus an offset measured
//! against Redis `TIME`, so a node whose own clock is minutes off still computes due
//! times ("in 30m"), retries and its sleeps on the time every node shares.
//!
//! The offset is measured at connect and every [`REFRESH`], as Redis' time minus the
//! midpoint of the round trip; a failed measurement keeps the last offset.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use punctual_core::clock::Sleep;
use punctual_core::{Clock, Result, SystemClock, Timestamp};
use tokio_util::sync::CancellationToken;

use crate::conn::Conn;

/// How often the offset is measured again.
const REFRESH: Duration = Duration::from_secs(10);

/// The system clock moved onto Redis' time.
#[derive(Debug, Clone, Default)]
pub struct RedisClock {
    offset_ms: Arc<AtomicI64>,
}

impl RedisClock {
    /// Redis' time minus this machine's, in milliseconds, as last measured.
    pub fn offset_ms(&self) -> i64 {
        self.offset_ms.load(Ordering::Relaxed)
    }

    /// Measures the offset once.
    pub(crate) async fn measure(&self, conn: &Conn) -> Result<()> {
        let before = SystemClock.now();
        let redis = redis_time(conn).await?;
        let after = SystemClock.now();
        let midpoint = before.as_millis() + (after.as_millis() - before.as_millis()) / 2;
        self.offset_ms.store(redis.as_millis() - midpoint, Ordering::Relaxed);
        Ok(())
    }
}

/// Measures the offset every [`REFRESH`] until `stop`.
pub(crate) async fn refresh(clock: RedisClock, conn: Conn, stop: CancellationToken) {
    let mut every = periodic(REFRESH);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stop.cancelled() => return,
        }
        // A failure keeps the last offset; the connection logs unreachability.
        let _ = clock.measure(&conn).await;
    }
}

/// Ticks every `period`, the first tick one period from now; a late tick delays the
/// next ones instead of bunching them (a background check after a pause runs once).
pub(crate) fn periodic(period: Duration) -> tokio::time::Interval {
    let mut every = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    every
}

/// Redis' own time (`TIME`), to the millisecond.
pub(crate) async fn redis_time(conn: &Conn) -> Result<Timestamp> {
    let (secs, micros): (i64, i64) = conn.query(&redis::cmd("TIME")).await?;
    Ok(Timestamp::from_millis(secs * 1000 + micros / 1000))
}

impl Clock for RedisClock {
    fn now(&self) -> Timestamp {
        let local = SystemClock.now();
        Timestamp::from_millis(local.as_millis().saturating_add(self.offset_ms()))
    }

    fn sleep_until(&self, deadline: Timestamp) -> Sleep<'_> {
        Box::pin(punctual_core::clock::sleep_until_on(self, deadline))
    }
}
