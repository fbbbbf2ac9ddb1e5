//! Repeat policies: `every`'s fixed rate and limits, cron repeats across daylight-saving
//! changes, the JSON form (and the stored forms it must keep reading).

use proptest::prelude::*;

use super::*;

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

/// A task's bookkeeping after its occurrence `done` succeeded, the first due at
/// `anchor`.
fn occurrence(done: u32, anchor: Timestamp) -> TaskMeta {
    TaskMeta { occurrence: done, anchor, ..TaskMeta::default() }
}

#[test]
fn every_is_fixed_rate_and_skips_missed_occurrences() {
    let r = Repeat::every(Duration::from_secs(10)).unwrap();
    let anchor = Timestamp::from_millis(100_000);
    // Done promptly: the next slot.
    assert_eq!(
        r.next_after(&occurrence(1, anchor), Timestamp::from_millis(100_050)),
        Some(Timestamp::from_millis(110_000))
    );
    // Handler took 35 s: slots at 110 s, 120 s, 130 s are skipped, not caught up.
    assert_eq!(
        r.next_after(&occurrence(1, anchor), Timestamp::from_millis(135_000)),
        Some(Timestamp::from_millis(140_000))
    );
    // Exactly on a slot: strictly after now.
    assert_eq!(
        r.next_after(&occurrence(2, anchor), Timestamp::from_millis(120_000)),
        Some(Timestamp::from_millis(130_000))
    );
}

#[test]
fn times_counts_occurrences_in_all_and_until_bounds_them() {
    let r = Repeat::every(Duration::from_secs(10)).unwrap().times(3).unwrap();
    let anchor = Timestamp::from_millis(0);
    assert!(r.next_after(&occurrence(2, anchor), Timestamp::from_millis(10_001)).is_some());
    assert_eq!(r.next_after(&occurrence(3, anchor), Timestamp::from_millis(20_001)), None);
    let r = Repeat::every(Duration::from_secs(10)).unwrap().until(Timestamp::from_millis(20_000));
    assert_eq!(
        r.next_after(&occurrence(1, anchor), Timestamp::from_millis(10_001)),
        Some(Timestamp::from_millis(20_000))
    );
    assert_eq!(r.next_after(&occurrence(2, anchor), Timestamp::from_millis(20_001)), None);
    assert_eq!(Repeat::every(Duration::ZERO).unwrap_err().field(), Some("repeat.every"));
}

#[test]
fn cron_weekdays_at_nine_in_shanghai() {
    let r = Repeat::cron("0 9 * * MON-FRI", "Asia/Shanghai").unwrap();
    // Friday 2026-11-27 09:00 +08:00 fired; next is Monday 2026-11-30 09:00 +08:00.
    let friday = at("2026-11-27T01:00:00.020Z");
    assert_eq!(r.next_after(&occurrence(1, friday), friday), Some(at("2026-11-30T01:00:00Z")));
    // Numeric weekdays follow Vixie cron: 1-5 is Monday to Friday.
    let numeric = Repeat::cron("0 9 * * 1-5", "Asia/Shanghai").unwrap();
    assert_eq!(numeric.next_after(&occurrence(1, friday), friday), Some(at("2026-11-30T01:00:00Z")));
    assert_eq!(r.first_at(at("2026-11-29T12:00:00Z")), Some(at("2026-11-30T01:00:00Z")));
}

#[test]
fn cron_across_daylight_saving_changes() {
    // New York springs forward on 2026-03-08: 02:30 local does not exist that day.
    let r = Repeat::cron("30 2 * * *", "America/New_York").unwrap();
    let before = at("2026-03-07T07:30:00Z"); // 02:30 EST on the 7th
    let next = r.next_after(&occurrence(1, before), before).unwrap();
    // Fires once that day, at the first valid time after the gap (03:00 EDT).
    assert_eq!(next, at("2026-03-08T07:00:00Z"));
    let after = r.next_after(&occurrence(2, before), next).unwrap();
    assert_eq!(after, at("2026-03-09T06:30:00Z")); // 02:30 EDT
    // Falls back on 2026-11-01: 01:30 local happens twice, fires once.
    let r = Repeat::cron("30 1 * * *", "America/New_York").unwrap();
    let first = r.next_after(&occurrence(1, before), at("2026-11-01T04:00:00Z")).unwrap();
    assert_eq!(first, at("2026-11-01T05:30:00Z")); // 01:30 EDT
    let second = r.next_after(&occurrence(2, before), first).unwrap();
    assert_eq!(second, at("2026-11-02T06:30:00Z")); // next day 01:30 EST
}

#[test]
fn cron_errors_name_their_field() {
    assert_eq!(Repeat::cron("61 * * * *", "UTC").unwrap_err().field(), Some("repeat.cron"));
    assert_eq!(Repeat::cron("0 9 * * *", "Mars/Olympus").unwrap_err().field(), Some("repeat.tz"));
    assert_eq!(Repeat::cron("0 0 30 2 *", "UTC").unwrap_err().field(), Some("repeat.cron"));
}

#[test]
fn repeat_json_round_trips_and_refuses_ambiguity() {
    let r: Repeat = r#"{"every": "24h", "times": 3}"#.parse().unwrap();
    assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"every":"1d","times":3}"#);
    let r: Repeat = r#"{"cron": "0 9 * * MON-FRI", "tz": "Asia/Shanghai"}"#.parse().unwrap();
    assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"cron":"0 9 * * MON-FRI","tz":"Asia/Shanghai"}"#);
    assert!("{\"every\": \"1h\", \"cron\": \"* * * * *\"}".parse::<Repeat>().is_err());
    assert!("{}".parse::<Repeat>().is_err());
    assert!("{\"every\": \"1h\", \"colour\": 1}".parse::<Repeat>().is_err());
}

#[test]
fn stored_vixie_repeats_read_back_unchanged_and_other_syntaxes_say_theirs() {
    // The JSON the stores wrote before `cron_syntax` existed: read as Vixie, written
    // back byte for byte, so stored tasks and their encodings keep working.
    for stored in
        [r#"{"cron":"0 9 * * MON-FRI","tz":"Asia/Shanghai"}"#, r#"{"cron":"*/5 * * * *","tz":"UTC","times":3}"#]
    {
        let r: Repeat = stored.parse().unwrap();
        let RepeatRule::Cron(rule) = r.rule() else { panic!("{stored} is not a cron repeat") };
        assert_eq!(rule.syntax(), CronSyntax::Vixie);
        assert_eq!(serde_json::to_string(&r).unwrap(), stored);
    }
    let explicit: Repeat = r#"{"cron":"0 9 * * 1-5","cron_syntax":"vixie"}"#.parse().unwrap();
    let null: Repeat = r#"{"cron":"0 9 * * 1-5","cron_syntax":null}"#.parse().unwrap();
    assert_eq!(explicit, null);
    assert_eq!(serde_json::to_string(&explicit).unwrap(), r#"{"cron":"0 9 * * 1-5","tz":"UTC"}"#);
    // Spring and Quartz repeats keep their syntax through a round trip.
    for json in [
        r#"{"cron":"0 0 9 ? * MON-FRI","tz":"Asia/Shanghai","cron_syntax":"spring"}"#,
        r#"{"cron":"0 0 18 L * ? 2027","tz":"UTC","cron_syntax":"quartz","times":2}"#,
    ] {
        let r: Repeat = json.parse().unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), json);
    }
    // The same text means another thing in another syntax, so the repeats differ.
    let spring = Repeat::cron_with_syntax("0 0 9 * * 1", "UTC", CronSyntax::Spring).unwrap();
    let quartz = Repeat::cron_with_syntax("0 0 9 ? * 1", "UTC", CronSyntax::Quartz).unwrap();
    let monday = at("2026-11-30T09:00:00Z");
    assert_eq!(spring.first_at(at("2026-11-27T00:00:00Z")), Some(monday));
    assert_eq!(quartz.first_at(at("2026-11-27T00:00:00Z")), Some(at("2026-11-29T09:00:00Z")));
    assert_ne!(spring, Repeat::cron("0 0 9 * * 1", "UTC").unwrap());
}

#[test]
fn cron_syntax_errors_say_what_is_wrong() {
    // Read from JSON the error is the repeat's, its message naming the part.
    let message = |json: &str| json.parse::<Repeat>().unwrap_err().to_string();
    assert!(message(r#"{"every":"1h","cron_syntax":"spring"}"#).contains("cron_syntax applies to cron only"));
    assert!(message(r#"{"cron":"0 9 * * *","cron_syntax":"unix"}"#).contains("unix"));
    // A Vixie expression is not Spring's: the error says what to write.
    assert!(message(r#"{"cron":"0 9 * * MON-FRI","cron_syntax":"spring"}"#).contains("put the second first"));
    let error = Repeat::cron_with_syntax("0 9 * * MON-FRI", "UTC", CronSyntax::Spring).unwrap_err();
    assert_eq!(error.field(), Some("repeat.cron"));
}

// --- Repeat::every ---

#[test]
fn every_at_the_end_of_time_is_exhausted_not_stuck() {
    // Was: the next slot past the latest instant was clamped to it, so at `now` =
    // the latest instant `next_after` returned `now` itself and the task would have
    // fired again and again forever.
    let r = Repeat::every(Duration::from_secs(1)).unwrap();
    let anchor = Timestamp::from_millis(Timestamp::MAX.as_millis() - 1_500);
    assert_eq!(r.next_after(&occurrence(1, anchor), anchor), Some(Timestamp::from_millis(anchor.as_millis() + 1_000)));
    assert_eq!(r.next_after(&occurrence(2, anchor), Timestamp::MAX), None);
    assert_eq!(r.next_after(&occurrence(2, anchor), Timestamp::from_millis(Timestamp::MAX.as_millis() - 400)), None);
    let yearly = Repeat::every(Duration::from_secs(366 * 86_400)).unwrap();
    assert_eq!(yearly.next_after(&occurrence(1, anchor), anchor), None);
}

fn any_time() -> impl Strategy<Value = Timestamp> {
    let max = Timestamp::MAX.as_millis();
    prop_oneof![
        4 => 0..=max,
        1 => 0..=100_000i64,
        2 => max - 10_000_000..=max,
        1 => Just(max),
    ]
    .prop_map(Timestamp::from_millis)
}

fn any_every() -> impl Strategy<Value = Repeat> {
    let step = prop_oneof![1..10_000u64, 1..1u64 << 40, any::<u64>()].prop_map(Duration::from_millis);
    let until = prop::option::of(any_time());
    let times = prop::option::of(1..10u32);
    (step, times, until).prop_map(|(step, times, until)| {
        let mut r = Repeat::every(step).unwrap();
        if let Some(n) = times {
            r = r.times(n).unwrap();
        }
        if let Some(t) = until {
            r = r.until(t);
        }
        r
    })
}

proptest! {
    /// The next occurrence is the smallest `anchor + k·step` (k ≥ 1) after `now`:
    /// missed slots skipped, never caught up; none past `times`, `until` or the
    /// latest representable instant.
    #[test]
    fn every_gives_the_first_slot_after_now(
        repeat in any_every(),
        done in prop_oneof![1..12u32, any::<u32>()],
        anchor in any_time(),
        now_from_anchor in prop_oneof![
            Just(0i64),
            -10_000..10_000_000i64,
            any::<i64>(),
        ],
    ) {
        let RepeatRule::Every(step) = repeat.rule() else { unreachable!() };
        let step = i128::try_from(step.as_millis()).unwrap();
        let now = Timestamp::from_millis(anchor.as_millis().saturating_add(now_from_anchor));
        let (anchor_ms, now_ms) = (i128::from(anchor.as_millis()), i128::from(now.as_millis()));
        let next = repeat.next_after(&occurrence(done, anchor), now);
        if repeat.times_limit().is_some_and(|limit| done >= limit) {
            prop_assert_eq!(next, None, "times exhausted");
            return Ok(());
        }
        // The oracle, in i128 so that nothing saturates.
        let k = ((now_ms - anchor_ms).div_euclid(step) + 1).max(1);
        let slot = anchor_ms + k * step;
        let expected = if slot > i128::from(Timestamp::MAX.as_millis())
            || repeat.until_limit().is_some_and(|until| slot > i128::from(until.as_millis()))
        {
            None
        } else {
            Some(slot)
        };
        prop_assert_eq!(next.map(|t| i128::from(t.as_millis())), expected);
        if let Some(next) = next {
            let next_ms = i128::from(next.as_millis());
            prop_assert!(next > now, "{:?} is not after {:?}", next, now);
            prop_assert!(next_ms > anchor_ms && (next_ms - anchor_ms) % step == 0, "not on a slot");
            prop_assert!(next_ms - step <= now_ms || next_ms - step == anchor_ms, "a slot after now was skipped");
        }
    }
}

// --- Cron ---

#[test]
fn cron_at_the_end_of_time_is_exhausted_not_a_panic() {
    // Was: `to_jiff` panicked for instants after 9999-12-30T22:00:00.999Z, which
    // `Timestamp` accepted; and the crate we used searched up to the year 5000
    // only. Now occurrences run to the end of time, and past it there are none.
    let r = Repeat::cron("* * * * *", "America/New_York").unwrap();
    assert_eq!(r.next_after(&occurrence(1, Timestamp::EPOCH), Timestamp::from_millis(i64::MAX)), None);
    assert_eq!(
        r.next_after(&occurrence(1, Timestamp::EPOCH), at("5000-06-01T00:00:00Z")),
        Some(at("5000-06-01T00:01:00Z"))
    );
    assert_eq!(
        r.next_after(&occurrence(1, Timestamp::EPOCH), at("9999-12-30T21:59:00Z")),
        Some(at("9999-12-30T22:00:00Z"))
    );
    assert_eq!(r.next_after(&occurrence(1, Timestamp::EPOCH), at("9999-12-30T22:00:00Z")), None);
}

/// A 5-field expression of a simple shape, with a matcher written independently
/// of `cron/`.
#[derive(Debug, Clone)]
struct SimpleCron {
    text: String,
    minutes: Vec<i8>,
    hours: Vec<i8>,
    /// Sunday = 0.
    weekdays: Vec<i8>,
    /// A single minute and hour: runs once on a repeated (fall-back) wall-clock
    /// time, and at the end of a gap (spring-forward) that swallowed it. Other
    /// expressions run on every instant whose wall clock matches.
    fixed_time: bool,
}

impl SimpleCron {
    fn matches(&self, wall: jiff::civil::DateTime) -> bool {
        self.minutes.contains(&wall.minute())
            && self.hours.contains(&wall.hour())
            && self.weekdays.contains(&wall.weekday().to_sunday_zero_offset())
    }
}

fn simple_cron() -> impl Strategy<Value = SimpleCron> {
    simple_cron_near(0)
}

/// Like [`simple_cron`], with hours often in the three after `hour`, so that
/// single-time expressions often fall into a clock change near an instant.
fn simple_cron_near(hour: i8) -> impl Strategy<Value = SimpleCron> {
    let all = |n: i8| (0..n).collect::<Vec<i8>>();
    let hour = prop_oneof![0..24i8, (0..3i8).prop_map(move |h| (hour + h) % 24)];
    prop_oneof![
        (0..60i8, hour.clone()).prop_map(move |(m, h)| SimpleCron {
            text: format!("{m} {h} * * *"),
            minutes: vec![m],
            hours: vec![h],
            weekdays: all(7),
            fixed_time: true,
        }),
        (0..60i8, hour, 0..=7i8).prop_map(move |(m, h, d)| SimpleCron {
            text: format!("{m} {h} * * {d}"),
            minutes: vec![m],
            hours: vec![h],
            weekdays: vec![d % 7],
            fixed_time: true,
        }),
        (1..=60i8).prop_map(move |n| SimpleCron {
            text: format!("*/{n} * * * *"),
            minutes: (0..60).filter(|m| m % n == 0).collect(),
            hours: all(24),
            weekdays: all(7),
            fixed_time: false,
        }),
        (0..60i8).prop_map(move |m| SimpleCron {
            text: format!("{m} * * * *"),
            minutes: vec![m],
            hours: all(24),
            weekdays: all(7),
            fixed_time: false,
        }),
    ]
}

const ZONES: [&str; 5] = ["UTC", "America/New_York", "Australia/Lord_Howe", "Europe/London", "Asia/Kolkata"];

/// An instant: anywhere, near one of the zone's clock changes, or near the end.
fn time_in(zone: &'static str) -> impl Strategy<Value = Timestamp> {
    let tz = jiff::tz::TimeZone::get(zone).unwrap();
    let max = Timestamp::MAX.as_millis();
    prop_oneof![
        2 => 0..=max,
        4 => (946_684_800_000..2_208_988_800_000i64, -3 * 3_600_000..3 * 3_600_000i64).prop_map(move |(from, offset)| {
            let change = tz.following(jiff::Timestamp::from_millisecond(from).unwrap()).next();
            change.map_or(from, |c| c.timestamp().as_millisecond()) + offset
        }),
        1 => max - 9 * 86_400_000..=max,
    ]
    .prop_map(Timestamp::from_millis)
}

fn zone_and_time() -> impl Strategy<Value = (&'static str, Timestamp)> {
    prop::sample::select(&ZONES[..]).prop_flat_map(|zone| (Just(zone), time_in(zone)))
}

/// Whether the 5-field `cron` is due at the whole-minute instant `i` in `tz`.
fn scheduled_at(cron: &SimpleCron, tz: &jiff::tz::TimeZone, i: jiff::Timestamp) -> bool {
    let wall = tz.to_datetime(i);
    if cron.matches(wall) {
        // On a repeated wall-clock time a fixed-time job runs at the earlier instant only.
        return !cron.fixed_time || tz.to_ambiguous_timestamp(wall).earlier().unwrap() == i;
    }
    // Right after a gap, a fixed-time job runs if the gap swallowed its time.
    let Some(before) = i.checked_sub(jiff::SignedDuration::from_mins(1)).ok() else { return false };
    let mut skipped = tz.to_datetime(before).checked_add(jiff::SignedDuration::from_mins(1)).unwrap();
    while cron.fixed_time && skipped < wall {
        if cron.matches(skipped) {
            return true;
        }
        skipped = skipped.checked_add(jiff::SignedDuration::from_mins(1)).unwrap();
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// `next_after(t)` is the first due whole minute strictly after `t`: checked
    /// minute by minute across daylight-saving changes and up to the end of time.
    #[test]
    fn cron_gives_the_first_due_minute_after(
        (zone, t, cron) in zone_and_time().prop_flat_map(|(zone, t)| {
            let hour = jiff::tz::TimeZone::get(zone).unwrap().to_datetime(t.to_jiff()).hour();
            (Just(zone), Just(t), simple_cron_near(hour))
        }),
    ) {
        let rule = CronRule::new(&cron.text, zone).unwrap();
        let tz = jiff::tz::TimeZone::get(zone).unwrap();
        let next = rule.next_after(t);
        if let Some(next) = next {
            prop_assert!(next > t, "{:?} is not after {:?}", next, t);
            prop_assert_eq!(next.as_millis() % 60_000, 0, "not a whole minute");
        }
        // Every whole minute after t, up to the answer (or the end of time).
        let mut minute = (t.as_millis() / 60_000 + 1) * 60_000;
        let last = next.unwrap_or(Timestamp::MAX).as_millis();
        prop_assert!(last - minute <= 9 * 86_400_000, "{:?} is over a week after {:?}", next, t);
        while minute < last {
            let i = jiff::Timestamp::from_millisecond(minute).unwrap();
            prop_assert!(!scheduled_at(&cron, &tz, i), "{} in {} skipped {} (next {:?})", cron.text, zone, i, next);
            minute += 60_000;
        }
        if let Some(next) = next {
            prop_assert!(scheduled_at(&cron, &tz, next.to_jiff()), "{} in {} is not due at {}", cron.text, zone, next);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any expression `CronRule` accepts: the next time is after `t`, and nothing panics.
    #[test]
    fn any_accepted_cron_moves_forward(
        expr in "([0-9*/,-]{1,6} ){4,5}[0-9A-Z*/,#L-]{1,6}",
        (zone, t) in zone_and_time(),
    ) {
        if let Ok(rule) = CronRule::new(&expr, zone)
            && let Some(next) = rule.next_after(t)
        {
            prop_assert!(next > t, "{} in {}: {:?} is not after {:?}", expr, zone, next, t);
        }
    }

    /// A repeat by cron obeys `times` and `until` on top of the rule.
    #[test]
    fn cron_repeat_respects_times_and_until(
        cron in simple_cron(),
        (zone, now) in zone_and_time(),
        times in prop::option::of(1..5u32),
        done in 1..6u32,
        until_offset in prop::option::of(0..3 * 86_400_000i64),
    ) {
        let mut repeat = Repeat::cron(&cron.text, zone).unwrap();
        if let Some(n) = times {
            repeat = repeat.times(n).unwrap();
        }
        let until = until_offset.map(|offset| Timestamp::from_millis(now.as_millis() + offset));
        if let Some(until) = until {
            repeat = repeat.until(until);
        }
        let rule_next = CronRule::new(&cron.text, zone).unwrap().next_after(now);
        let expected = if times.is_some_and(|n| done >= n) {
            None
        } else {
            rule_next.filter(|next| until.is_none_or(|until| *next <= until))
        };
        prop_assert_eq!(repeat.next_after(&occurrence(done, Timestamp::EPOCH), now), expected);
    }
}
