//! Warns in the log of calendars whose entered holidays run out within 30 days, have
//! run out, or were never entered (the calendar's `notice`, as `GET /v1/calendars`
//! shows it): at start-up, whenever the calendars change, and once a day after, so a
//! team hears of next year's public holidays before its delays start counting them as
//! working days.

use std::collections::BTreeMap;
use std::time::Duration;

use punctual_core::{Engine, Store};
use tokio_util::sync::CancellationToken;

use crate::api::calendars::notice;

/// How often each notice is said again while it holds.
const REPEAT_EVERY: Duration = Duration::from_secs(24 * 3600);

/// Says each calendar's notice until `stop`.
pub(crate) async fn warn_until_stopped<S: Store>(engine: Engine<S>, stop: CancellationToken) {
    let mut calendars = engine.watch_calendars();
    // When each notice (by calendar and version) was last said.
    let mut said: BTreeMap<(String, u64), punctual_core::Timestamp> = BTreeMap::new();
    loop {
        let now = engine.clock().now();
        let set = engine.calendars();
        said.retain(|(name, version), _| {
            set.get(name).is_some_and(|entry| entry.record.as_ref().map_or(0, |r| r.version) == *version)
        });
        for (name, entry) in set.iter() {
            let Some(text) = notice(entry.calendar.entered_until(), now) else { continue };
            let version = entry.record.as_ref().map_or(0, |record| record.version);
            let last = said.get(&(name.to_string(), version));
            if last.is_none_or(|last| now >= last.saturating_add(REPEAT_EVERY)) {
                tracing::warn!(calendar = %name, "calendar holidays: {text}");
                said.insert((name.to_string(), version), now);
            }
        }
        tokio::select! {
            changed = calendars.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(REPEAT_EVERY) => {}
            () = stop.cancelled() => return,
        }
    }
}
