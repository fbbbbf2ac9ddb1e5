//! Proptest generators for the cron differential tests: expressions built as a small
//! syntax tree (so each knows, without parsing, the values it means and whether it is
//! valid), rendered as text with names in mixed case, nicknames, 5 or 6 fields; broken
//! expressions, each refused for a documented reason; and start instants near the
//! daylight-saving transitions of a few zones, or anywhere.

use std::sync::OnceLock;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;

use super::cron_model::{Cron, NICKNAMES, transitions};

/// Zones with daylight saving (by an hour, half an hour at Lord Howe, two hours at
/// Troll; at midnight in São Paulo until 2019), one that dropped it (Shanghai, 1991),
/// one that crossed the date line (Apia skipped 2011-12-30) and two without.
pub const ZONES: &[&str] = &[
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Shanghai",
    "UTC",
    "Asia/Kolkata",
    "Pacific/Apia",
    "America/Sao_Paulo",
    "Antarctica/Troll",
];

/// The years start instants are drawn from.
pub const YEARS: (i16, i16) = (1990, 2100);

/// One field of an expression as a tree: its elements, rendered comma-separated.
#[derive(Debug, Clone)]
pub struct Field {
    pub elements: Vec<Element>,
    /// Value names are written in these cases, one per value in the rendering order.
    pub cases: Vec<u8>,
}

/// `*`, `N` or `N-M`, optionally `/S`.
#[derive(Debug, Clone, Copy)]
pub enum Element {
    Star(Option<u32>),
    One(u32, Option<u32>),
    Range(u32, u32, Option<u32>),
}

/// Which field, for its range and names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Second,
    Minute,
    Hour,
    Day,
    Month,
    Weekday,
}

impl Which {
    fn range(self) -> (u32, u32) {
        match self {
            Which::Second | Which::Minute => (0, 59),
            Which::Hour => (0, 23),
            Which::Day => (1, 31),
            Which::Month => (1, 12),
            Which::Weekday => (0, 7),
        }
    }
    fn name(self, v: u32) -> Option<&'static str> {
        const MONTHS: [&str; 12] = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
        const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
        match self {
            Which::Month => MONTHS.get(v as usize - 1).copied(),
            Which::Weekday => WEEKDAYS.get(v as usize).copied(),
            _ => None,
        }
    }
}

/// Writes a name in one of four cases: `MON`, `mon`, `Mon`, `mOn`.
fn cased(name: &str, case: u8) -> String {
    name.chars()
        .enumerate()
        .map(|(i, ch)| match case % 4 {
            0 => ch.to_ascii_uppercase(),
            1 => ch.to_ascii_lowercase(),
            2 if i == 0 => ch.to_ascii_uppercase(),
            2 => ch.to_ascii_lowercase(),
            _ if i % 2 == 1 => ch.to_ascii_uppercase(),
            _ => ch.to_ascii_lowercase(),
        })
        .collect()
}

impl Field {
    /// The text of this field. `case` 4 and up writes numbers even where names exist.
    pub fn render(&self, which: Which) -> String {
        let mut cases = self.cases.iter().copied().cycle();
        let mut value = |v: u32| {
            let case = cases.next().unwrap_or(9);
            match which.name(v) {
                Some(name) if case < 4 => cased(name, case),
                _ => v.to_string(),
            }
        };
        let step = |s: Option<u32>| s.map(|s| format!("/{s}")).unwrap_or_default();
        self.elements
            .iter()
            .map(|e| match *e {
                Element::Star(s) => format!("*{}", step(s)),
                Element::One(v, s) => format!("{}{}", value(v), step(s)),
                Element::Range(a, b, s) => format!("{}-{}{}", value(a), value(b), step(s)),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The values this field means, as the model's bit set (weekday 7 folded onto 0).
    pub fn values(&self, which: Which) -> u64 {
        let (min, max) = which.range();
        let mut set = 0u64;
        for e in &self.elements {
            let (lo, hi, step) = match *e {
                Element::Star(s) => (min, max, s),
                Element::One(v, None) => (v, v, None),
                Element::One(v, s) => (v, max, s),
                Element::Range(a, b, s) => (a, b, s),
            };
            set |= (lo..=hi).step_by(step.unwrap_or(1) as usize).fold(0, |acc, v| acc | 1 << v);
        }
        if which == Which::Weekday && set & 1 << 7 != 0 {
            set = (set & !(1 << 7)) | 1;
        }
        set
    }

    fn starts_with_star(&self) -> bool {
        matches!(self.elements.first(), Some(Element::Star(_)))
    }
}

/// A generated expression: either a nickname or its fields.
#[derive(Debug, Clone)]
pub struct Expr {
    pub text: String,
    /// What it means, as the model's fields would be; `None` when it matches no date.
    pub meaning: Option<Cron>,
}

/// Values of a field, biased toward `likely` (hours near the usual transition times).
fn value_in(which: Which, likely: Option<(u32, u32)>) -> BoxedStrategy<u32> {
    let (min, max) = which.range();
    match likely {
        Some((lo, hi)) => prop_oneof![3 => lo..=hi, 2 => min..=max].boxed(),
        None => (min..=max).boxed(),
    }
}

fn step_for(which: Which) -> BoxedStrategy<Option<u32>> {
    let (min, max) = which.range();
    // Mostly steps inside the range; now and then one past it (only the start matches).
    prop_oneof![4 => (1..=(max - min).max(1)).prop_map(Some), 1 => (1..=max + 3).prop_map(Some)].boxed()
}

fn element(which: Which, likely: Option<(u32, u32)>) -> BoxedStrategy<Element> {
    let v = value_in(which, likely);
    let pair = (value_in(which, likely), value_in(which, likely)).prop_map(|(a, b)| (a.min(b), a.max(b)));
    prop_oneof![
        2 => Just(Element::Star(None)),
        2 => step_for(which).prop_map(Element::Star),
        6 => v.clone().prop_map(|v| Element::One(v, None)),
        1 => (v, step_for(which)).prop_map(|(v, s)| Element::One(v, s)),
        3 => pair.clone().prop_map(|(a, b)| Element::Range(a, b, None)),
        2 => (pair, step_for(which)).prop_map(|((a, b), s)| Element::Range(a, b, s)),
    ]
    .boxed()
}

/// A field of 1–3 elements; `star` is the weight of a plain `*`.
fn field(which: Which, likely: Option<(u32, u32)>, star: u32) -> BoxedStrategy<Field> {
    let cases = proptest::collection::vec(0u8..6, 1..8);
    let list = (proptest::collection::vec(element(which, likely), 1..=3), cases.clone())
        .prop_map(|(elements, cases)| Field { elements, cases });
    prop_oneof![
        star => cases.prop_map(|cases| Field { elements: vec![Element::Star(None)], cases }),
        10 => list,
    ]
    .boxed()
}

/// A valid expression (a few match no date: their `meaning` is `None`).
pub fn expression() -> impl Strategy<Value = Expr> {
    let fields = (
        proptest::option::weighted(0.35, field(Which::Second, Some((0, 1)), 6)),
        field(Which::Minute, Some((0, 35)), 4),
        field(Which::Hour, Some((0, 4)), 3),
        field(Which::Day, None, 14),
        field(Which::Month, None, 25),
        field(Which::Weekday, None, 12),
        prop_oneof![Just(" "), Just("  "), Just("\t")],
    )
        .prop_map(|(second, minute, hour, day, month, weekday, sep)| {
            let mut parts = Vec::new();
            if let Some(s) = &second {
                parts.push(s.render(Which::Second));
            }
            parts.extend([
                minute.render(Which::Minute),
                hour.render(Which::Hour),
                day.render(Which::Day),
                month.render(Which::Month),
                weekday.render(Which::Weekday),
            ]);
            let cron = Cron {
                second: second.as_ref().map_or(1, |s| s.values(Which::Second)),
                minute: minute.values(Which::Minute),
                hour: hour.values(Which::Hour),
                day: day.values(Which::Day),
                month: month.values(Which::Month),
                weekday: weekday.values(Which::Weekday),
                day_star: day.starts_with_star(),
                weekday_star: weekday.starts_with_star(),
                wildcard: second.as_ref().is_some_and(Field::starts_with_star)
                    || minute.starts_with_star()
                    || hour.starts_with_star(),
            };
            Expr { text: parts.join(sep), meaning: cron.matches_some_date().then_some(cron) }
        });
    let nickname = (proptest::sample::select(&NICKNAMES[..]), 0u8..4).prop_map(|((name, same), case)| {
        let text = cased(&name[1..], case);
        let meaning = Cron::parse(same).ok();
        Expr { text: format!("@{text}"), meaning }
    });
    prop_oneof![12 => fields, 1 => nickname]
}

/// An expression that must be refused with field `repeat.cron`.
pub fn invalid_expression() -> impl Strategy<Value = String> {
    let bad_field = |which: Which| -> BoxedStrategy<String> {
        let (min, max) = which.range();
        let mut bad: Vec<String> = vec![
            format!("{}", max + 1),
            format!("{min}-{}", max + 1),
            format!("{}/2", max + 1),
            "*/0".into(),
            format!("{min}-{max}/0"),
            "1,,2".into(),
            ",1".into(),
            "1,".into(),
            "?".into(),
            "L".into(),
            "W".into(),
            "5L".into(),
            "15W".into(),
            "5#3".into(),
            "H".into(),
            "*/".into(),
            "1-".into(),
            "-1".into(),
            "1//2".into(),
            "*/2/3".into(),
            "**".into(),
            "1-2-3".into(),
            "/5".into(),
            "MONDAY".into(),
            "JANUARY".into(),
            "MOX".into(),
            "4294967296".into(),
        ];
        if max >= 5 {
            bad.push("5-1".into());
        }
        if min > 0 {
            bad.push(format!("{}", min - 1));
        }
        match which {
            Which::Month => bad.extend(["MON".into(), "DEC-JAN".into(), "SUN".into()]),
            Which::Weekday => bad.extend(["JAN".into(), "FRI-MON".into()]),
            _ => bad.extend(["MON".into(), "JAN".into()]),
        }
        proptest::sample::select(bad).boxed()
    };
    let whiches = [Which::Minute, Which::Hour, Which::Day, Which::Month, Which::Weekday];
    let broken_field = (expression(), 0usize..6, any::<bool>()).prop_flat_map(move |(expr, at, six)| {
        let which = if six && at == 0 { Which::Second } else { whiches[at.min(4)] };
        bad_field(which).prop_map(move |bad| {
            let mut fields: Vec<String> = if expr.text.starts_with('@') {
                vec!["0".into(), "0".into(), "*".into(), "*".into(), "*".into()]
            } else {
                expr.text.split_whitespace().map(String::from).collect()
            };
            let offset = fields.len() - 5;
            let index = if which == Which::Second {
                if offset == 0 {
                    fields.insert(0, String::new());
                }
                0
            } else {
                offset + whiches.iter().position(|&w| w == which).expect("a field")
            };
            fields[index] = bad;
            fields.join(" ")
        })
    });
    let wrong_count = (expression(), prop_oneof![Just(3usize), Just(4), Just(7), Just(8)], any::<bool>())
        .prop_filter("fields, not a nickname", |(e, _, _)| !e.text.starts_with('@'))
        .prop_map(|(expr, n, year)| {
            let mut fields: Vec<String> = expr.text.split_whitespace().map(String::from).collect();
            while fields.len() < n {
                fields.push(if year { "1999".into() } else { "*".into() });
            }
            fields.truncate(n);
            fields.join(" ")
        });
    let fixed = proptest::sample::select(vec![
        "0 0 0 1 1 * 1999",
        "* * * * * * *",
        "1,,2 * * * *",
        "@reboot",
        "@every 1h",
        "@",
        "@yearlyy",
        "@daily *",
        "",
        "   ",
        "0 0 30 2 *",
        "0 0 31 4,6 *",
        "0 0 31 2,4,6,9,11 *",
        "0 0 30-31 FEB *",
        "0 0 31 4 */1",
        "0 0 31 Jun *",
        "0 0 0 30 2 *",
        "0 0 L * *",
        "0 0 * * 5L",
        "0 0 * * 5#3",
        "0 0 15W * *",
        "0 0 ? * MON",
    ]);
    prop_oneof![6 => broken_field, 2 => wrong_count, 2 => fixed.prop_map(String::from)]
}

/// An unknown zone name.
pub fn invalid_zone() -> impl Strategy<Value = String> {
    proptest::sample::select(vec!["Mars/Olympus_Mons", "America/New_Yrok", "Europe/Londres", "UTC+25", "Nowhere"])
        .prop_map(String::from)
}

/// Each zone's offset-changing transitions over [`YEARS`], computed once.
pub fn zone_transitions() -> &'static [(TimeZone, Vec<Timestamp>)] {
    static ALL: OnceLock<Vec<(TimeZone, Vec<Timestamp>)>> = OnceLock::new();
    ALL.get_or_init(|| {
        ZONES
            .iter()
            .map(|name| {
                let tz = TimeZone::get(name).expect("a bundled zone");
                let at = transitions(&tz, YEARS.0, YEARS.1);
                (tz, at)
            })
            .collect()
    })
}

/// The transition of `zone` nearest to `t`, when one is within `within`.
pub fn nearest_transition(zone: &str, t: Timestamp, within: SignedDuration) -> Option<Timestamp> {
    let index = ZONES.iter().position(|&z| z == zone)?;
    let (_, at) = &zone_transitions()[index];
    at.iter().copied().filter(|&tr| t.duration_since(tr).abs() <= within).min_by_key(|&tr| t.duration_since(tr).abs())
}

/// A zone and an instant: within a few hours of one of its transitions (at or next to
/// it now and then, sometimes with milliseconds), anywhere in [`YEARS`], or anywhere
/// from the epoch to the end of time.
pub fn zone_and_start() -> impl Strategy<Value = (&'static str, Timestamp)> {
    let near = (0..ZONES.len(), any::<proptest::sample::Index>(), near_offset(), 0i64..1000).prop_map(
        |(zone, which, offset, ms)| {
            let (_, at) = &zone_transitions()[zone];
            let base = if at.is_empty() {
                // No transition: noon UTC of some day of the range.
                let days = i64::from(YEARS.1 - YEARS.0) * 365;
                start_of(YEARS.0) + SignedDuration::from_hours(24 * which.index(days as usize) as i64 + 12)
            } else {
                at[which.index(at.len())]
            };
            let ms = if ms < 600 { 0 } else { ms };
            (ZONES[zone], base + SignedDuration::from_millis(offset * 1000 + ms))
        },
    );
    let anywhere = |from: Timestamp, to: Timestamp| {
        (0..ZONES.len(), from.as_millisecond()..to.as_millisecond())
            .prop_map(|(zone, ms)| (ZONES[zone], Timestamp::from_millisecond(ms).expect("in range")))
    };
    let latest = punctual_core::Timestamp::MAX.to_jiff();
    prop_oneof![
        8 => near,
        2 => anywhere(start_of(YEARS.0), start_of(YEARS.1 + 1)),
        1 => anywhere(Timestamp::UNIX_EPOCH, latest),
    ]
}

/// Seconds from a transition: mostly the hours before it (so a run reaches it), and
/// exactly at and beside it.
fn near_offset() -> impl Strategy<Value = i64> {
    prop_oneof![
        6 => -4 * 3600i64..2 * 3600,
        1 => proptest::sample::select(vec![-3601i64, -3600, -1800, -61, -60, -1, 0, 1, 59, 60, 1799, 1800, 3600]),
    ]
}

fn start_of(year: i16) -> Timestamp {
    jiff::civil::date(year, 1, 1).to_zoned(TimeZone::UTC).expect("a date").timestamp()
}
