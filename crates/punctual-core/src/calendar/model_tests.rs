//! The queries against a brute-force model that walks minute by minute over instants.
//!
//! The model reads the module doc's definition as directly as it can: minute `m` is
//! open when some date's interval, its ends read on that date's wall clock with jiff's
//! `compatible` disambiguation, holds it; a working day is a date with an open minute.
//! It shares nothing with the implementation but jiff: its own resolution of a date's
//! hours (holidays, working dates, the standard weekday), no stretches, no merging.
//!
//! Calendars are generated with minute-aligned hours weighted towards the hours that
//! daylight-saving changes touch (00:00 to 04:00, 23:00, 24:00), holidays, and working
//! dates in all three forms; queries start mostly within two days, else two weeks, of
//! a change in zones that move by an hour (Berlin, New York), by half an hour (Lord Howe), at midnight
//! (Havana), or not at all (Shanghai, with 调休 weekends).

#![allow(clippy::unwrap_used, reason = "tests: a failed unwrap is a failed test")]

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use jiff::Span;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use proptest::prelude::*;

use super::*;

const MINUTE: i64 = 60_000;
const DAY: i64 = 86_400_000;
/// How far the model walks before it answers "none".
const MODEL_LIMIT: i64 = 60 * DAY;

const ZONES: [&str; 6] =
    ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Havana", "Asia/Shanghai", "Pacific/Apia"];

/// A day's hours as (start, end) minutes; end up to 1440.
type DayHours = Vec<(u16, u16)>;

#[derive(Debug, Clone)]
enum Form {
    Standard,
    As(usize),
    Own(DayHours),
}

/// A generated calendar and where its queries start.
#[derive(Debug, Clone)]
struct Generated {
    zone: &'static str,
    /// Epoch milliseconds, minute-aligned, within two weeks of a change of the zone.
    start: i64,
    week: [DayHours; 7],
    holidays: Vec<(Date, Date)>,
    workdays: Vec<(Date, Form)>,
}

fn boundary() -> impl Strategy<Value = u16> {
    prop_oneof![
        2 => 0u16..=1440,
        3 => prop::sample::select(vec![0u16, 15, 30, 45, 60, 75, 90, 105, 120, 135, 150, 165, 180, 210, 1410, 1440]),
    ]
}

fn day_hours() -> impl Strategy<Value = DayHours> {
    prop_oneof![
        1 => Just(Vec::new()),
        3 => prop::collection::vec(boundary(), 2..=6).prop_map(|mut points| {
            points.sort_unstable();
            points.dedup();
            points.chunks_exact(2).map(|pair| (pair[0], pair[1])).collect()
        }),
    ]
}

/// Four changes of `zone` from 2025 (for a zone without any, 25 September 2026,
/// before National Day); for Apia, from mid-2011, when it skipped 30 December to move
/// across the date line, so that one date's hours are read as the same instants as
/// the next date's.
fn changes(zone: &str) -> Vec<i64> {
    let tz = TimeZone::get(zone).unwrap();
    let year = if zone == "Pacific/Apia" { 1_306_886_400 } else { 1_735_689_600 }; // 2011-06-01, 2025-01-01
    let from = jiff::Timestamp::from_second(year).unwrap();
    let found: Vec<i64> = tz.following(from).take(4).map(|t| t.timestamp().as_millisecond()).collect();
    if found.is_empty() { vec![1_790_265_600_000] } else { found }
}

fn generated() -> impl Strategy<Value = Generated> {
    let zone = prop::sample::select(ZONES.to_vec());
    let week = prop::array::uniform7(day_hours());
    let holidays = prop::collection::vec((0i64..45, 0i64..5), 0..4);
    let workdays = prop::collection::vec((0i64..45, 0u8..3, 0usize..7, day_hours()), 0..4);
    let shift = prop_oneof![3 => -2 * 24 * 60..2 * 24 * 60i64, 1 => -14 * 24 * 60..14 * 24 * 60i64];
    (zone, any::<prop::sample::Index>(), shift, week, holidays, workdays).prop_map(
        |(zone, change, shift, mut week, holidays, workdays)| {
            let changes = changes(zone);
            let start = changes[change.index(changes.len())] + shift * MINUTE;
            let tz = TimeZone::get(zone).unwrap();
            let first = tz.to_datetime(jiff::Timestamp::from_millisecond(start).unwrap()).date();
            let first = first.checked_sub(Span::new().days(10)).unwrap();
            let day = |offset: i64| first.checked_add(Span::new().days(offset)).unwrap();
            let holidays: Vec<(Date, Date)> =
                holidays.into_iter().map(|(offset, len)| (day(offset), day(offset + len))).collect();
            if week.iter().all(Vec::is_empty) {
                week[0] = vec![(540, 1020)];
            }
            let mut taken = BTreeSet::new();
            let workdays = workdays
                .into_iter()
                .filter_map(|(offset, form, weekday, hours)| {
                    let date = day(offset);
                    let free = !holidays.iter().any(|(a, b)| *a <= date && date <= *b) && taken.insert(date);
                    let form = match form {
                        0 => Form::Standard,
                        1 if !week[weekday].is_empty() => Form::As(weekday),
                        _ if hours.is_empty() => Form::Own(vec![(600, 900)]),
                        _ => Form::Own(hours),
                    };
                    free.then_some((date, form))
                })
                .collect();
            Generated { zone, start, week, holidays, workdays }
        },
    )
}

fn hours_text(hours: &DayHours) -> Vec<String> {
    hours.iter().map(|(s, e)| format!("{:02}:{:02}-{:02}:{:02}", s / 60, s % 60, e / 60, e % 60)).collect()
}

impl Generated {
    fn calendar(&self) -> Calendar {
        let names = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
        let spec = CalendarSpec {
            tz: self.zone.to_owned(),
            hours: WeekHours((0..7).map(|d| (names[d].to_owned(), hours_text(&self.week[d]))).collect()),
            holidays: self.holidays.iter().map(|(a, b)| format!("{a}/{b}")).collect(),
            workdays: self
                .workdays
                .iter()
                .map(|(date, form)| {
                    let (as_weekday, hours) = match form {
                        Form::Standard => (None, None),
                        Form::As(d) => (Some(names[*d].to_owned()), None),
                        Form::Own(hours) => (None, Some(hours_text(hours))),
                    };
                    WorkdaySpec { date: date.to_string(), as_weekday, hours }
                })
                .collect(),
        };
        Calendar::new(spec).unwrap()
    }
}

/// The brute-force model.
struct Model {
    tz: TimeZone,
    generated: Generated,
    standard: DayHours,
    intervals: RefCell<HashMap<Date, Vec<(i64, i64)>>>,
}

impl Model {
    fn new(generated: &Generated) -> Model {
        let week = &generated.week;
        // Most shared, then earliest: the largest (count, -weekday).
        let standard = (0..7)
            .filter(|d| !week[*d].is_empty())
            .max_by_key(|d| (week.iter().filter(|other| **other == week[*d]).count(), std::cmp::Reverse(*d)))
            .map(|d| week[d].clone())
            .unwrap_or_default();
        Model {
            tz: TimeZone::get(generated.zone).unwrap(),
            generated: generated.clone(),
            standard,
            intervals: RefCell::default(),
        }
    }

    fn hours(&self, date: Date) -> DayHours {
        let g = &self.generated;
        if g.holidays.iter().any(|(a, b)| *a <= date && date <= *b) {
            return Vec::new();
        }
        match g.workdays.iter().find(|(d, _)| *d == date) {
            Some((_, Form::Standard)) => self.standard.clone(),
            Some((_, Form::As(d))) => g.week[*d].clone(),
            Some((_, Form::Own(hours))) => hours.clone(),
            None => g.week[date.weekday().to_monday_zero_offset() as usize].clone(),
        }
    }

    /// The date's intervals as instants, each end read with `compatible`.
    fn intervals(&self, date: Date) -> Vec<(i64, i64)> {
        self.cache(date);
        self.intervals.borrow()[&date].clone()
    }

    fn cache(&self, date: Date) {
        if self.intervals.borrow().contains_key(&date) {
            return;
        }
        let instant = |minute: u16| {
            let civil = if minute == 1440 {
                date.tomorrow().unwrap().at(0, 0, 0, 0)
            } else {
                date.at((minute / 60) as i8, (minute % 60) as i8, 0, 0)
            };
            self.tz.to_ambiguous_timestamp(civil).compatible().unwrap().as_millisecond()
        };
        let found: Vec<(i64, i64)> =
            self.hours(date).iter().map(|(s, e)| (instant(*s), instant(*e))).filter(|(a, b)| a < b).collect();
        self.intervals.borrow_mut().insert(date, found);
    }

    fn utc_date(m: i64) -> Date {
        jiff::Timestamp::from_millisecond(m).unwrap().to_zoned(TimeZone::UTC).date()
    }

    fn around(m: i64) -> impl Iterator<Item = Date> {
        let utc = Model::utc_date(m);
        (-3..=3).map(move |k| utc.checked_add(Span::new().days(k)).unwrap())
    }

    fn open(&self, m: i64) -> bool {
        Model::around(m).any(|date| {
            self.cache(date);
            self.intervals.borrow()[&date].iter().any(|(a, b)| *a <= m && m < *b)
        })
    }

    fn next_open(&self, from: i64) -> Option<i64> {
        (0..MODEL_LIMIT / MINUTE).map(|i| from + i * MINUTE).find(|m| self.open(*m))
    }

    fn add_working_time(&self, from: i64, minutes: i64) -> Option<i64> {
        let first = self.next_open(from)?;
        if minutes == 0 {
            return Some(first);
        }
        let mut left = minutes;
        (0..MODEL_LIMIT / MINUTE).map(|i| first + i * MINUTE).find_map(|m| {
            if self.open(m) {
                left -= 1;
            }
            (left == 0).then_some(m + MINUTE)
        })
    }

    /// The open minutes of `date`'s own intervals.
    fn minutes_of(&self, date: Date) -> Vec<i64> {
        let set: BTreeSet<i64> =
            self.intervals(date).iter().flat_map(|(a, b)| (*a..*b).step_by(MINUTE as usize)).collect();
        set.into_iter().collect()
    }

    fn add_working_days(&self, from: i64, days: u32) -> Option<i64> {
        let opening = self.next_open(from)?;
        let first_day = Model::around(opening).find(|date| self.minutes_of(*date).contains(&opening)).unwrap();
        let offset = self.minutes_of(first_day).iter().filter(|m| **m < opening).count();
        let (mut date, mut counted, mut minutes) = (first_day, 0, Vec::new());
        while counted < days {
            date = date.tomorrow().unwrap();
            if date > first_day.checked_add(Span::new().days(MODEL_LIMIT / DAY)).unwrap() {
                return None;
            }
            minutes = self.minutes_of(date);
            if !minutes.is_empty() {
                counted += 1;
            }
        }
        if days == 0 {
            return Some(opening);
        }
        Some(minutes.get(offset).copied().unwrap_or(minutes[minutes.len() - 1] + MINUTE))
    }
}

/// Checks an answer against the model's, `None` meaning beyond the model's walk.
fn agrees(answer: crate::Result<Timestamp>, model: Option<i64>, from: i64) -> std::result::Result<(), TestCaseError> {
    match (answer, model) {
        (Ok(got), Some(want)) => {
            prop_assert_eq!(got.as_millis(), want, "got {}, want {}", got, Timestamp::from_millis(want))
        }
        (Ok(got), None) => prop_assert!(got.as_millis() >= from + MODEL_LIMIT - 2 * DAY, "got {got}, model: none"),
        (Err(error), Some(want)) => prop_assert!(false, "error {error}, want {}", Timestamp::from_millis(want)),
        (Err(_), None) => {}
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Every minute of the two days from the start.
    #[test]
    fn is_open_and_next_open_agree_with_the_model(g in generated()) {
        let (calendar, model) = (g.calendar(), Model::new(&g));
        for at in (g.start..g.start + 2 * DAY).step_by(MINUTE as usize) {
            let instant = Timestamp::from_millis(at);
            prop_assert_eq!(calendar.is_open(instant), model.open(at), "at {}", instant);
        }
        agrees(calendar.next_open(Timestamp::from_millis(g.start)), model.next_open(g.start), g.start)?;
    }

    #[test]
    fn add_working_time_agrees_with_the_model(
        g in generated(),
        minutes in prop_oneof![0i64..=120, 0i64..=5 * 24 * 60],
    ) {
        let (calendar, model) = (g.calendar(), Model::new(&g));
        let duration = Duration::from_secs(minutes as u64 * 60);
        let answer = calendar.add_working_time(Timestamp::from_millis(g.start), duration);
        agrees(answer, model.add_working_time(g.start, minutes), g.start)?;
    }

    #[test]
    fn add_working_days_agrees_with_the_model(g in generated(), days in 0u32..=6) {
        let (calendar, model) = (g.calendar(), Model::new(&g));
        let answer = calendar.add_working_days(Timestamp::from_millis(g.start), days);
        agrees(answer, model.add_working_days(g.start, days), g.start)?;
    }

    /// Working time is additive: adding a then b is adding a + b, whenever a lands
    /// on an open instant (at a closing edge, b counts from the reopening, the same).
    #[test]
    fn working_time_adds_up(g in generated(), a in 0u64..=3000, b in 0u64..=3000) {
        let calendar = g.calendar();
        let start = Timestamp::from_millis(g.start);
        let minutes = |n: u64| Duration::from_secs(n * 60);
        if b > 0
            && let (Ok(first), Ok(both)) =
                (calendar.add_working_time(start, minutes(a)), calendar.add_working_time(start, minutes(a + b)))
        {
            prop_assert_eq!(calendar.add_working_time(first, minutes(b)), Ok(both));
        }
    }
}
