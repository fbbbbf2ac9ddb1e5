//! Waiting on what cannot signal the bench: a server in another process getting
//! ready, a Redis it reconnects to, a broker settling, a store file another engine
//! releases. [`until`] is the bench's one way to wait on such a thing (the blocking
//! wait in a `Drop` uses `punctual_private_redis::poll_until`); its pause between two
//! looks is the bench's one retry sleep. What the bench itself drives (tasks fired, a
//! stop asked for) it waits on with signals instead.

use std::time::{Duration, Instant};

use anyhow::Result;

/// What one look saw.
#[derive(Debug)]
pub(crate) enum Look<T> {
    /// What was waited for.
    Ready(T),
    /// Not yet, and why: the cause of the error if time runs out.
    NotYet(anyhow::Error),
}

/// Looks with `look` every `every` until it answers [`Look::Ready`]: that answer. An
/// error of `look` is what waiting cannot mend (the process exited, a refusal) and is
/// returned at once; when `limit` has passed since the first look, the error names
/// `what` (the awaited event, "punctual serve to answer /readyz") and `limit`, caused
/// by the last [`Look::NotYet`].
pub(crate) async fn until<T>(
    what: &str,
    limit: Duration,
    every: Duration,
    mut look: impl AsyncFnMut() -> Result<Look<T>>,
) -> Result<T> {
    let deadline = Instant::now() + limit;
    loop {
        let why = match look().await? {
            Look::Ready(found) => return Ok(found),
            Look::NotYet(why) => why,
        };
        if Instant::now() >= deadline {
            return Err(why.context(format!("waited {limit:?} for {what}")));
        }
        // The polling interval: the thing looked at cannot tell the bench it changed.
        tokio::time::sleep(every).await;
    }
}

#[cfg(test)]
mod tests {
    use anyhow::anyhow;

    use super::*;

    const EVERY: Duration = Duration::from_millis(1);

    #[tokio::test]
    async fn answers_what_a_later_look_found() {
        let mut looks = 0;
        let found = until("the third look", Duration::from_secs(10), EVERY, async || {
            looks += 1;
            Ok(if looks == 3 { Look::Ready(looks) } else { Look::NotYet(anyhow!("look {looks}")) })
        })
        .await
        .unwrap();
        assert_eq!(found, 3);
    }

    #[tokio::test]
    async fn a_look_s_error_ends_the_wait_at_once() {
        let mut looks = 0;
        let error = until::<()>("nothing", Duration::from_secs(10), EVERY, async || {
            looks += 1;
            Err(anyhow!("it exited"))
        })
        .await
        .unwrap_err();
        assert_eq!((looks, error.to_string()), (1, "it exited".to_owned()));
    }

    #[tokio::test]
    async fn running_out_of_time_names_the_wait_and_the_last_reason() {
        let mut looks = 0;
        let error = until::<()>("the server to answer", Duration::from_millis(20), EVERY, async || {
            looks += 1;
            Ok(Look::NotYet(anyhow!("refused {looks}")))
        })
        .await
        .unwrap_err();
        assert_eq!(error.to_string(), "waited 20ms for the server to answer");
        assert_eq!(error.root_cause().to_string(), format!("refused {looks}"));
        assert!(looks > 1, "looked again before giving up");
    }
}
