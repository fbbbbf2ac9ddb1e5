//! Instants and durations as punctual reads and writes them.
//!
//! Every instant is a [`Timestamp`]: milliseconds since the Unix epoch, UTC. Parsing
//! accepts RFC 3339 (any offset) or integer epoch milliseconds; formatting always gives
//! RFC 3339 UTC with exactly three fractional digits (`2026-11-30T12:00:00.000Z`).
//!
//! Durations are `std::time::Duration`, written as an integer number of milliseconds
//! or a string of one or more `<number><unit>` parts (`"1500ms"`, `"30s"`, `"1h 30m"`,
//! `"7d"`), units `ms`, `s`, `m`, `h`, `d`. Errors say exactly which part is wrong.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Milliseconds since the Unix epoch, UTC, from the epoch to [`Timestamp::MAX`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(i64);

/// The latest instant punctual accepts, 9999-12-30T22:00:00.999Z: the latest that
/// `jiff` (RFC 3339 text, time zones, cron) can represent, so every `Timestamp` can be
/// displayed and converted. (It is not 9999-12-31T23:59:59.999Z: jiff keeps a day's
/// margin so that any instant plus any offset is still a date of year 9999.)
const MAX_MS: i64 = 253_402_207_200_999;

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// The latest representable instant, 9999-12-30T22:00:00.999Z.
    pub const MAX: Timestamp = Timestamp(MAX_MS);

    /// An instant from epoch milliseconds. Values before the epoch or after
    /// [`Timestamp::MAX`] are clamped.
    pub const fn from_millis(ms: i64) -> Timestamp {
        if ms < 0 {
            Timestamp(0)
        } else if ms > MAX_MS {
            Timestamp(MAX_MS)
        } else {
            Timestamp(ms)
        }
    }

    /// An instant from epoch milliseconds, `None` before the epoch or after
    /// [`Timestamp::MAX`].
    pub const fn try_from_millis(ms: i64) -> Option<Timestamp> {
        if 0 <= ms && ms <= MAX_MS { Some(Timestamp(ms)) } else { None }
    }

    /// Epoch milliseconds.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// This instant plus `d`, saturating at the latest representable instant.
    pub fn saturating_add(self, d: Duration) -> Timestamp {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Timestamp::from_millis(self.0.saturating_add(ms))
    }

    /// The time from `earlier` to `self`, zero when `earlier` is later.
    pub fn saturating_since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(u64::try_from(self.0 - earlier.0).unwrap_or(0))
    }

    /// Parses RFC 3339 (`2026-11-30T09:00:00+08:00`) or integer epoch milliseconds.
    pub fn parse(text: &str) -> Result<Timestamp, String> {
        let ms = parse_millis(text)?;
        if ms < 0 {
            return Err(format!("'{}' is before 1970-01-01T00:00:00Z", text.trim()));
        }
        Ok(Timestamp::from_millis(ms))
    }

    /// Parses as [`Timestamp::parse`] does, except that an instant before the epoch is
    /// the epoch: for times where any instant in the past means "now" (a `due_at`).
    pub fn parse_past_as_epoch(text: &str) -> Result<Timestamp, String> {
        parse_millis(text).map(Timestamp::from_millis)
    }

    /// The same instant as a `jiff::Timestamp`.
    pub fn to_jiff(self) -> jiff::Timestamp {
        // Not `from_millisecond`: it refuses the last millisecond of jiff's range,
        // 22:00:00.001 to 22:00:00.999 on 9999-12-30, which jiff represents.
        jiff::Timestamp::from_nanosecond(i128::from(self.0) * 1_000_000)
            .expect("Timestamp is always within jiff's range")
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 UTC with exactly three fractional digits. Written field by field (every
    /// timestamp is within years 1970 to 9999): a `strftime` pattern is parsed again at
    /// each use, and every task answered over HTTP carries four or five timestamps.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = jiff::tz::Offset::UTC.to_datetime(self.to_jiff());
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            at.year(),
            at.month(),
            at.day(),
            at.hour(),
            at.minute(),
            at.second(),
            at.millisecond()
        )
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Millis(i64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Millis(ms) => Timestamp::try_from_millis(ms).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "epoch milliseconds {ms} are outside {}..={}",
                    Timestamp::EPOCH,
                    Timestamp::MAX
                ))
            }),
            Raw::Text(text) => Timestamp::parse(&text).map_err(serde::de::Error::custom),
        }
    }
}

/// Epoch milliseconds of RFC 3339 text (negative before the epoch) or of integer
/// epoch milliseconds, up to [`Timestamp::MAX`].
fn parse_millis(text: &str) -> Result<i64, String> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse::<i64>()
            .ok()
            .filter(|ms| *ms <= MAX_MS)
            .ok_or_else(|| format!("epoch milliseconds {text} are after {}, the latest time", Timestamp::MAX));
    }
    let ts: jiff::Timestamp = text.parse().map_err(|e| {
        format!(
            "'{text}' is not a time: expected RFC 3339 such as 2026-11-30T09:00:00Z \
             or integer epoch milliseconds ({e})"
        )
    })?;
    Ok(ts.as_millisecond())
}

/// Parses a duration: integer milliseconds as text (`"1500"`), `<number><unit>` parts
/// separated by optional spaces (`"1h 30m"`, `"1h30m"`), units `ms`, `s`, `m`, `h`, `d`,
/// or ISO 8601 (`"PT30M"`, `"P1DT2H"`, `"PT1.5S"`: how Jackson writes a
/// `java.time.Duration`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("a duration cannot be empty: write e.g. \"30s\", \"1h 30m\" or 1500 (ms)".into());
    }
    if trimmed.starts_with(['P', 'p']) {
        return parse_iso8601_duration(trimmed);
    }
    if trimmed.bytes().all(|b| b.is_ascii_digit()) {
        return trimmed
            .parse::<u64>()
            .map(Duration::from_millis)
            .map_err(|_| format!("'{trimmed}' milliseconds is too large"));
    }
    let mut total: u64 = 0;
    let mut rest = trimmed;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(format!(
                "'{trimmed}' is not a duration: expected a number at '{rest}' \
                 (write e.g. \"1500ms\", \"30s\", \"1h 30m\", \"7d\")"
            ));
        }
        let number: u64 =
            rest[..digits].parse().map_err(|_| format!("'{}' in '{trimmed}' is too large", &rest[..digits]))?;
        rest = rest[digits..].trim_start();
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..unit_len];
        let unit_ms: u64 = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "" if rest.starts_with('.') => {
                return Err(format!(
                    "'{trimmed}' has a decimal point: combine whole units instead, e.g. \"1h 30m\" or \"1500ms\""
                ));
            }
            "" => {
                return Err(format!("'{trimmed}' is missing a unit after {number}: use ms, s, m, h or d"));
            }
            other => {
                return Err(format!("'{other}' in '{trimmed}' is not a unit: use ms, s, m, h or d"));
            }
        };
        total = number
            .checked_mul(unit_ms)
            .and_then(|part| total.checked_add(part))
            .ok_or_else(|| format!("'{trimmed}' is too long a duration"))?;
        rest = rest[unit_len..].trim_start();
    }
    Ok(Duration::from_millis(total))
}

/// An ISO 8601 duration, days of 24 hours and weeks of 7 days; years and months, whose
/// length varies, are refused, as is anything finer than a millisecond.
fn parse_iso8601_duration(text: &str) -> Result<Duration, String> {
    let span: jiff::Span = text
        .parse()
        .map_err(|e| format!("'{text}' is not an ISO 8601 duration such as \"PT30M\" or \"P1DT2H\" ({e})"))?;
    if span.get_years() != 0 || span.get_months() != 0 {
        return Err(format!("'{text}' counts years or months, whose length varies: use days (\"P30D\") instead"));
    }
    if span.is_negative() {
        return Err(format!("'{text}' is negative: a duration is zero or more"));
    }
    let exact = span
        .to_duration(jiff::SpanRelativeTo::days_are_24_hours())
        .ok()
        .and_then(|d| Duration::try_from(d).ok())
        .ok_or_else(|| format!("'{text}' is too long a duration"))?;
    if exact.subsec_nanos() % 1_000_000 != 0 {
        return Err(format!("'{text}' is not whole milliseconds"));
    }
    Ok(exact)
}

/// Writes a duration the way [`parse_duration`] reads it, largest units first:
/// `90 min` is `"1h 30m"`, `1500 ms` is `"1s 500ms"`, zero is `"0ms"`.
pub fn format_duration(d: Duration) -> String {
    let mut ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return "0ms".into();
    }
    let mut parts = Vec::new();
    for (unit, size) in [("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)] {
        if ms >= size {
            parts.push(format!("{}{unit}", ms / size));
            ms %= size;
        }
    }
    parts.join(" ")
}

/// Serde for `Duration` fields: reads a string or integer milliseconds, writes the
/// string form of [`format_duration`].
pub mod serde_duration {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Millis(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Millis(ms) => Ok(Duration::from_millis(ms)),
            Raw::Text(text) => parse_duration(&text).map_err(serde::de::Error::custom),
        }
    }
}

/// Serde for `Option<Duration>` fields as [`serde_duration`] writes them; `None`
/// writes null (use with `skip_serializing_if = "Option::is_none"` to leave it out).
pub mod serde_option_duration {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => serde_duration::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        serde_duration::deserialize(d).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn iso_8601_durations_as_java_writes_them() {
        let ms = |text: &str| parse_duration(text).map(|d| d.as_millis());
        assert_eq!(ms("PT30M"), Ok(1_800_000));
        assert_eq!(ms("PT1.5S"), Ok(1_500));
        assert_eq!(ms("P1DT2H"), Ok(93_600_000));
        assert_eq!(ms("P2W"), Ok(1_209_600_000));
        assert_eq!(ms("pt0s"), Ok(0));
        assert!(ms("P1M").unwrap_err().contains("years or months"));
        assert!(ms("P1Y").unwrap_err().contains("years or months"));
        assert!(ms("-PT5M").is_err());
        assert!(ms("PT0.0005S").unwrap_err().contains("whole milliseconds"));
        assert!(ms("P").is_err());
    }

    #[test]
    fn durations_in_every_documented_form() {
        let ms = |n| Duration::from_millis(n);
        assert_eq!(parse_duration("1500ms"), Ok(ms(1500)));
        assert_eq!(parse_duration("30s"), Ok(ms(30_000)));
        assert_eq!(parse_duration("30m"), Ok(ms(1_800_000)));
        assert_eq!(parse_duration("1h 30m"), Ok(ms(5_400_000)));
        assert_eq!(parse_duration("1h30m"), Ok(ms(5_400_000)));
        assert_eq!(parse_duration("24h"), Ok(ms(86_400_000)));
        assert_eq!(parse_duration("7d"), Ok(ms(604_800_000)));
        assert_eq!(parse_duration("1500"), Ok(ms(1500)));
        assert_eq!(parse_duration(" 2s "), Ok(ms(2000)));
    }

    #[test]
    fn duration_errors_name_the_wrong_part() {
        assert!(parse_duration("").unwrap_err().contains("empty"));
        assert!(parse_duration("30").is_ok());
        assert!(parse_duration("30 seconds").unwrap_err().contains("'seconds'"));
        assert!(parse_duration("1h 30").unwrap_err().contains("missing a unit"));
        assert!(parse_duration("-5s").unwrap_err().contains("expected a number"));
        assert!(parse_duration("1.5h").unwrap_err().contains("decimal point"));
        assert!(parse_duration("99999999999999999999d").unwrap_err().contains("too large"));
        assert!(parse_duration("999999999999999d").unwrap_err().contains("too long"));
    }

    #[test]
    fn durations_round_trip_through_their_text() {
        for ms in [0, 1, 999, 1000, 1500, 60_000, 5_400_000, 90_061_001] {
            let d = Duration::from_millis(ms);
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{ms}");
        }
        assert_eq!(format_duration(Duration::from_millis(5_400_000)), "1h 30m");
    }

    #[test]
    fn times_parse_from_rfc3339_with_offsets_and_epoch_millis() {
        let t = Timestamp::parse("2026-11-30T09:00:00+08:00").unwrap();
        assert_eq!(t.to_string(), "2026-11-30T01:00:00.000Z");
        assert_eq!(Timestamp::parse("1764464400000").unwrap(), Timestamp::from_millis(1_764_464_400_000));
        assert_eq!(Timestamp::parse("2026-11-30T12:00:00.5Z").unwrap().to_string(), "2026-11-30T12:00:00.500Z");
    }

    #[test]
    fn time_errors_say_what_is_expected() {
        let e = Timestamp::parse("tomorrow").unwrap_err();
        assert!(e.contains("RFC 3339") && e.contains("'tomorrow'"), "{e}");
        assert!(Timestamp::parse("1969-12-31T23:59:59Z").unwrap_err().contains("before 1970"));
        assert_eq!(Timestamp::parse_past_as_epoch("1969-12-31T23:59:59Z"), Ok(Timestamp::EPOCH));
        assert_eq!(Timestamp::parse_past_as_epoch("0001-01-01T00:00:00Z"), Ok(Timestamp::EPOCH));
        assert_eq!(Timestamp::parse_past_as_epoch("1970-01-01T00:00:00.001Z"), Ok(Timestamp::from_millis(1)));
        assert!(Timestamp::parse("99999999999999999").unwrap_err().contains("9999"));
    }

    #[test]
    fn serde_reads_text_or_millis_and_writes_text() {
        let t: Timestamp = serde_json::from_str("1000").unwrap();
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"1970-01-01T00:00:01.000Z\"");
        let t: Timestamp = serde_json::from_str("\"1970-01-01T00:00:02Z\"").unwrap();
        assert_eq!(t.as_millis(), 2000);
        assert!(serde_json::from_str::<Timestamp>("-1").is_err());
    }

    #[test]
    fn the_latest_instant_displays_and_parses_back() {
        // Was (found by fuzz/fuzz_targets/timestamp.rs and by the property below): the
        // latest instant was 9999-12-31T23:59:59.999Z, a day past the latest
        // that jiff represents, so `to_string` (and cron) panicked on anything after
        // 9999-12-30T22:00:00.999Z, e.g. on `Timestamp::parse("253402300799999")` or
        // on a time that `saturating_add` had clamped.
        assert_eq!(Timestamp::MAX.as_millis(), jiff::Timestamp::MAX.as_millisecond());
        assert_eq!(Timestamp::from_millis(i64::MAX).to_string(), "9999-12-30T22:00:00.999Z");
        assert_eq!(Timestamp::parse("9999-12-30T22:00:00.999Z"), Ok(Timestamp::MAX));
        assert!(Timestamp::parse("253402300799999").unwrap_err().contains("9999"));
        assert_eq!(Timestamp::MAX.saturating_add(Duration::from_secs(1)), Timestamp::MAX);
        assert_eq!(Timestamp::try_from_millis(MAX_MS + 1), None);
        assert_eq!(Timestamp::try_from_millis(-1), None);
    }

    /// Any instant, with the ends of the range and their neighbourhoods weighted up.
    fn any_timestamp() -> impl Strategy<Value = Timestamp> {
        prop_oneof![
            4 => 0..=MAX_MS,
            1 => 0..=100_000i64,
            1 => MAX_MS - 100_000..=MAX_MS,
            1 => Just(MAX_MS),
        ]
        .prop_map(Timestamp)
    }

    fn unit() -> impl Strategy<Value = (&'static str, u64)> {
        prop_oneof![
            Just(("ms", 1)),
            Just(("s", 1_000)),
            Just(("m", 60_000)),
            Just(("h", 3_600_000)),
            Just(("d", 86_400_000)),
        ]
    }

    proptest! {
        #[test]
        fn display_is_rfc_3339_utc_with_milliseconds(ms in prop_oneof![0..=MAX_MS, MAX_MS - 1_000..=MAX_MS, 0..1_000i64]) {
            let t = Timestamp::from_millis(ms);
            prop_assert_eq!(t.to_string(), t.to_jiff().strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string());
            prop_assert_eq!(Timestamp::parse(&t.to_string()), Ok(t));
        }

        #[test]
        fn every_duration_round_trips_through_its_text(
            ms in prop_oneof![any::<u64>(), 0..100_000_000u64, u64::MAX - 1_000..=u64::MAX],
        ) {
            let d = Duration::from_millis(ms);
            prop_assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }

        #[test]
        fn parsing_any_text_as_a_duration_never_panics(
            text in prop_oneof![".*", "[0-9 msdh.-]{0,24}", "[0-9]{15,25}[msdh]{0,2}"],
        ) {
            if let Ok(d) = parse_duration(&text) {
                prop_assert_eq!(parse_duration(&format_duration(d)), Ok(d), "the parsed value reads back");
            }
        }

        /// `"<n><unit>"` parts, joined by nothing or spaces, read as their sum; a sum past
        /// u64::MAX milliseconds is refused as too long, never wrapped or saturated.
        #[test]
        fn part_lists_parse_to_their_sum_or_too_long(
            parts in prop::collection::vec(
                (prop_oneof![0..1_000u64, any::<u64>(), 0..1u64 << 40], unit(), "[ ]{0,2}", any::<bool>()),
                1..6,
            ),
            padding in ("[ \t]{0,2}", "[ \t]{0,2}"),
        ) {
            let mut text = padding.0.clone();
            let mut sum = Some(0u64);
            for (number, (unit, unit_ms), separator, leading_zero) in &parts {
                let zero = if *leading_zero { "0" } else { "" };
                text.push_str(&format!("{zero}{number}{unit}{separator}"));
                sum = number.checked_mul(*unit_ms).and_then(|part| sum?.checked_add(part));
            }
            text.push_str(&padding.1);
            match sum {
                Some(ms) => prop_assert_eq!(parse_duration(&text), Ok(Duration::from_millis(ms)), "{:?}", text),
                None => {
                    let error = parse_duration(&text).unwrap_err();
                    prop_assert!(error.contains("too long"), "{:?}: {}", text, error);
                }
            }
        }

        #[test]
        fn timestamps_round_trip_through_text_json_and_epoch_millis(t in any_timestamp()) {
            let text = t.to_string();
            prop_assert_eq!(Timestamp::parse(&text), Ok(t));
            prop_assert_eq!(Timestamp::parse(&t.as_millis().to_string()), Ok(t));
            let json = serde_json::to_string(&t).unwrap();
            prop_assert_eq!(json.clone(), format!("\"{text}\""));
            prop_assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), t);
            prop_assert_eq!(serde_json::from_str::<Timestamp>(&t.as_millis().to_string()).unwrap(), t);
            prop_assert_eq!(Timestamp::try_from_millis(t.as_millis()), Some(t));
            prop_assert_eq!(Timestamp::from_millis(t.as_millis()), t);
        }

        /// The same instant written at any RFC 3339 offset (±23:59) reads as itself.
        #[test]
        fn rfc3339_at_any_offset_is_the_same_instant(
            t in any_timestamp(),
            offset_minutes in -(23 * 60 + 59)..=(23 * 60 + 59),
            fraction in prop_oneof![Just("%.3f"), Just("%.f"), Just("%.9f")],
        ) {
            let offset = jiff::tz::Offset::from_seconds(offset_minutes * 60).unwrap();
            let local = t.to_jiff().to_zoned(jiff::tz::TimeZone::fixed(offset));
            let text = local.strftime(&format!("%Y-%m-%dT%H:%M:%S{fraction}%:z")).to_string();
            prop_assert_eq!(Timestamp::parse(&text), Ok(t), "{}", text);
        }

        #[test]
        fn times_past_the_range_are_refused_or_clamped(ms in MAX_MS + 1..=i64::MAX) {
            prop_assert!(Timestamp::parse(&ms.to_string()).unwrap_err().contains("9999"));
            prop_assert!(serde_json::from_str::<Timestamp>(&ms.to_string()).is_err());
            prop_assert_eq!(Timestamp::from_millis(ms), Timestamp::MAX);
            prop_assert_eq!(Timestamp::try_from_millis(ms), None);
        }

        #[test]
        fn parsing_any_text_as_a_time_never_panics(
            text in prop_oneof![".*", "[0-9]{1,20}", "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{8,14}(Z|[+-][0-9]{2}:[0-9]{2})"],
        ) {
            if let Ok(t) = Timestamp::parse(&text) {
                prop_assert!(t <= Timestamp::MAX);
                prop_assert_eq!(Timestamp::parse(&t.to_string()), Ok(t));
            }
        }
    }
}
