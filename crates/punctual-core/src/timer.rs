//! One timer for all of an engine's waits: a [`Wheel`] of sleepers behind a mutex and
//! one driver task that sleeps on the engine's [`Clock`] until the wheel's next
//! expiration, then wakes the sleepers whose deadline came.
//!
//! [`Timer::sleep_until`] registers its future in the wheel on first poll (O(1)) and
//! takes it out when dropped (O(1)), so a `select!` that loses a sleep costs nothing.
//! A sleeper whose deadline is earlier than what the driver sleeps until wakes the
//! driver, which then sleeps until the earlier time.
//!
//! Invariants:
//! - `driver_at` is never later than the wheel's earliest deadline: the driver sets it
//!   to that after each poll, and an insert lowers it (and notifies the driver) when
//!   earlier. The driver enables its notification before it polls, so none is missed.
//! - A sleep completes only once the clock reads its deadline or later, like
//!   [`Clock::sleep_until`]: fired by the wheel while the clock reads earlier (the clock
//!   was set back, and the wheel's time never goes back), or after the driver stopped,
//!   it finishes on [`Clock::sleep_until`] itself.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::{self, Clock};
use crate::time::Timestamp;
use crate::wheel::{Key, Wheel};

/// The engine's timer. Cheap to clone; clones share the wheel and the driver.
#[derive(Clone)]
pub(crate) struct Timer {
    shared: Arc<Shared>,
}

struct Shared {
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// Wakes the driver when `driver_at` moved earlier.
    driver_wake: Notify,
}

struct State {
    wheel: Wheel<Waker>,
    /// What the driver sleeps until (`None`: nothing).
    driver_at: Option<i64>,
    /// The driver ended: new sleeps use the clock directly.
    stopped: bool,
}

impl fmt::Debug for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.lock();
        f.debug_struct("Timer").field("sleepers", &state.wheel.len()).field("driver_at", &state.driver_at).finish()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("timer lock poisoned")
    }
}

impl Timer {
    /// A timer on `clock` whose driver runs on the current tokio runtime until `stop`.
    pub(crate) fn start(clock: Arc<dyn Clock>, stop: CancellationToken) -> (Timer, JoinHandle<()>) {
        let state = State { wheel: Wheel::new(clock.now().as_millis()), driver_at: None, stopped: false };
        let shared = Arc::new(Shared { clock, state: Mutex::new(state), driver_wake: Notify::new() });
        let driver = tokio::spawn(drive(Arc::clone(&shared), stop));
        (Timer { shared }, driver)
    }

    /// Completes once the clock reads `deadline` or later (at once if it does now).
    pub(crate) fn sleep_until(&self, deadline: Timestamp) -> TimerSleep<'_> {
        TimerSleep { shared: &self.shared, deadline, state: SleepState::New }
    }
}

/// Sleeps until the wheel's next expiration or an earlier insert, fires what is due,
/// repeats; at `stop`, wakes every sleeper so it finishes on the clock.
async fn drive(shared: Arc<Shared>, stop: CancellationToken) {
    loop {
        let woken = shared.driver_wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let now = shared.clock.now();
        let (expired, next) = {
            let mut state = shared.lock();
            let expired = state.wheel.poll(now.as_millis());
            let next = state.wheel.next_expiration();
            debug_assert!(next.is_none_or(|at| at > now.as_millis()), "the poll took everything due");
            state.driver_at = next;
            (expired, next)
        };
        for waker in expired {
            waker.wake();
        }
        let sleep = async {
            match next {
                Some(at) => shared.clock.sleep_until(Timestamp::from_millis(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep => {}
            _ = &mut woken => {}
            _ = stop.cancelled() => break,
        }
    }
    let left = {
        let mut state = shared.lock();
        state.stopped = true;
        state.driver_at = None;
        state.wheel.poll(i64::MAX)
    };
    for waker in left {
        waker.wake();
    }
}

/// The future of [`Timer::sleep_until`].
pub(crate) struct TimerSleep<'a> {
    shared: &'a Shared,
    deadline: Timestamp,
    state: SleepState<'a>,
}

enum SleepState<'a> {
    /// Not polled yet.
    New,
    /// Waiting in the wheel.
    Registered(Key),
    /// Fired early or the driver stopped: the clock finishes the wait.
    OnClock(clock::Sleep<'a>),
    Done,
}

impl fmt::Debug for TimerSleep<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerSleep").field("deadline", &self.deadline).finish_non_exhaustive()
    }
}

impl Future for TimerSleep<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let shared = this.shared;
        loop {
            match &mut this.state {
                SleepState::New => {
                    if shared.clock.now() >= this.deadline {
                        this.state = SleepState::Done;
                        return Poll::Ready(());
                    }
                    let deadline = this.deadline.as_millis();
                    let mut state = shared.lock();
                    if state.stopped {
                        drop(state);
                        this.state = SleepState::OnClock(shared.clock.sleep_until(this.deadline));
                        continue;
                    }
                    this.state = SleepState::Registered(state.wheel.insert(deadline, cx.waker().clone()));
                    if state.driver_at.is_none_or(|at| deadline < at) {
                        state.driver_at = Some(deadline);
                        drop(state);
                        shared.driver_wake.notify_one();
                    }
                    return Poll::Pending;
                }
                SleepState::Registered(key) => {
                    let mut state = shared.lock();
                    if let Some(waker) = state.wheel.get_mut(*key) {
                        if !waker.will_wake(cx.waker()) {
                            waker.clone_from(cx.waker());
                        }
                        return Poll::Pending;
                    }
                    drop(state);
                    if shared.clock.now() >= this.deadline {
                        this.state = SleepState::Done;
                        return Poll::Ready(());
                    }
                    this.state = SleepState::OnClock(shared.clock.sleep_until(this.deadline));
                }
                SleepState::OnClock(sleep) => {
                    if sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    this.state = SleepState::Done;
                    return Poll::Ready(());
                }
                SleepState::Done => return Poll::Ready(()),
            }
        }
    }
}

impl Drop for TimerSleep<'_> {
    fn drop(&mut self) {
        if let SleepState::Registered(key) = self.state {
            self.shared.lock().wheel.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures_util::poll;
    use tokio::sync::mpsc;

    use super::*;
    use crate::clock::ManualClock;

    const START: Timestamp = Timestamp::from_millis(1_000_000);

    impl Timer {
        fn sleepers(&self) -> usize {
            self.shared.lock().wheel.len()
        }
        fn driver_at(&self) -> Option<i64> {
            self.shared.lock().driver_at
        }
    }

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(START.as_millis() + ms)
    }

    /// Lets the other tasks run until `condition` holds (a guard against hanging, not a
    /// wait for time to pass: the clock is manual).
    async fn until(what: &str, mut condition: impl FnMut() -> bool) {
        let wait = async {
            while !condition() {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait).await.unwrap_or_else(|_| panic!("never: {what}"));
    }

    fn manual() -> (ManualClock, Timer, JoinHandle<()>, CancellationToken) {
        let clock = ManualClock::new(START);
        let stop = CancellationToken::new();
        let (timer, driver) = Timer::start(Arc::new(clock.clone()), stop.clone());
        (clock, timer, driver, stop)
    }

    /// Starts a task per deadline that reports its deadline once its sleep ends.
    fn sleepers(timer: &Timer, deadlines: impl IntoIterator<Item = i64>) -> mpsc::UnboundedReceiver<i64> {
        let (done, fired) = mpsc::unbounded_channel();
        for ms in deadlines {
            let (timer, done) = (timer.clone(), done.clone());
            tokio::spawn(async move {
                timer.sleep_until(at(ms)).await;
                done.send(ms).expect("test alive");
            });
        }
        fired
    }

    async fn receive(fired: &mut mpsc::UnboundedReceiver<i64>, n: usize) -> Vec<i64> {
        let mut got = Vec::new();
        for _ in 0..n {
            let ms = tokio::time::timeout(Duration::from_secs(10), fired.recv()).await.expect("a sleeper fires");
            got.push(ms.expect("senders alive"));
        }
        got.sort_unstable();
        got
    }

    #[tokio::test]
    async fn many_sleepers_wake_when_the_clock_reaches_their_deadline_and_not_before() {
        let (clock, timer, _driver, _stop) = manual();
        let mut fired = sleepers(&timer, (1..=1000).rev().map(|i| i * 10));
        until("every sleeper registered", || timer.sleepers() == 1000).await;
        until("the driver sleeps until the earliest", || timer.driver_at() == Some(at(10).as_millis())).await;

        clock.set(at(5_000));
        assert_eq!(receive(&mut fired, 500).await, (1..=500).map(|i| i * 10).collect::<Vec<_>>());
        assert_eq!(timer.sleepers(), 500, "the later half still waits");
        assert!(fired.try_recv().is_err());

        clock.set(at(5_009));
        until("the driver sleeps until the next", || timer.driver_at() == Some(at(5_010).as_millis())).await;
        assert!(fired.try_recv().is_err(), "nothing is due before 5010");
        clock.set(at(20_000));
        assert_eq!(receive(&mut fired, 500).await, (501..=1000).map(|i| i * 10).collect::<Vec<_>>());
        assert_eq!(timer.sleepers(), 0);
    }

    #[tokio::test]
    async fn an_earlier_sleeper_wakes_the_sleeping_driver() {
        let (clock, timer, _driver, _stop) = manual();
        let mut late = sleepers(&timer, [60_000]);
        until("the driver sleeps until the late one", || timer.driver_at() == Some(at(60_000).as_millis())).await;

        let mut early = sleepers(&timer, [10]);
        until("the driver sleeps until the early one", || timer.driver_at() == Some(at(10).as_millis())).await;
        clock.set(at(10));
        assert_eq!(receive(&mut early, 1).await, vec![10]);
        assert!(late.try_recv().is_err());
        assert_eq!(timer.sleepers(), 1);
    }

    #[tokio::test]
    async fn a_dropped_sleep_leaves_the_wheel() {
        let (_clock, timer, _driver, _stop) = manual();
        let mut sleep = Box::pin(timer.sleep_until(at(100)));
        assert!(poll!(&mut sleep).is_pending());
        assert_eq!(timer.sleepers(), 1);
        drop(sleep);
        assert_eq!(timer.sleepers(), 0);
        // A deadline already reached never enters the wheel.
        timer.sleep_until(START).await;
        assert_eq!(timer.sleepers(), 0);
    }

    #[tokio::test]
    async fn a_clock_set_back_still_never_ends_a_sleep_early() {
        let (clock, timer, _driver, _stop) = manual();
        let mut fired = sleepers(&timer, [2_000]);
        until("registered", || timer.sleepers() == 1).await;
        clock.set(at(2_000));
        receive(&mut fired, 1).await;

        // The wheel's time stays at 2000 while the clock goes back to 0: a sleep until
        // 1500 is fired by the wheel at once, and must then wait on the clock.
        clock.set(START);
        let mut sleep = Box::pin(timer.sleep_until(at(1_500)));
        assert!(poll!(&mut sleep).is_pending());
        until("fired by the wheel", || timer.sleepers() == 0).await;
        assert!(poll!(&mut sleep).is_pending(), "the clock reads 0");
        clock.set(at(1_500));
        tokio::time::timeout(Duration::from_secs(10), sleep).await.expect("woken by the clock");
    }

    #[tokio::test]
    async fn after_the_driver_stops_sleeps_end_on_the_clock() {
        let (clock, timer, driver, stop) = manual();
        let mut waiting = Box::pin(timer.sleep_until(at(100)));
        assert!(poll!(&mut waiting).is_pending());
        stop.cancel();
        driver.await.expect("driver ends cleanly");
        assert_eq!(timer.sleepers(), 0);
        let mut later = Box::pin(timer.sleep_until(at(200)));
        assert!(poll!(&mut later).is_pending());
        assert!(poll!(&mut waiting).is_pending());
        assert_eq!(timer.sleepers(), 0, "a stopped timer keeps no sleepers");
        clock.set(at(200));
        tokio::time::timeout(Duration::from_secs(10), async { tokio::join!(waiting, later) }).await.expect("both end");
    }
}
