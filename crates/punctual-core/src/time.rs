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

/// Milliseconds since the Unix epoch, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(i64);

/// The latest instant punctual accepts: 9999-12-30T22:00:00Z, the latest that jiff
/// (which formats and zones every instant) represents. Found by fuzzing: the end of
/// 9999-12-31 was accepted, then panicked when written out.
const MAX_MS: i64 = 253_402_207_200_000;

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// An instant from epoch milliseconds. Values outside 1970..=9999 are clamped.
    pub const fn from_millis(ms: i64) -> Timestamp {
        if ms < 0 {
            Timestamp(0)
        } else if ms > MAX_MS {
            Timestamp(MAX_MS)
        } else {
            Timestamp(ms)
        }
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
        let text = text.trim();
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            return text.parse::<i64>().ok().filter(|ms| *ms <= MAX_MS).map(Timestamp).ok_or_else(|| {
                format!("epoch milliseconds {text} are after {}, the latest time accepted", Timestamp(MAX_MS))
            });
        }
        let ts: jiff::Timestamp = text.parse().map_err(|e| {
            format!(
                "'{text}' is not a time: expected RFC 3339 such as 2026-11-30T09:00:00Z \
                 or integer epoch milliseconds ({e})"
            )
        })?;
        let ms = ts.as_millisecond();
        if ms < 0 {
            return Err(format!("'{text}' is before 1970-01-01T00:00:00Z"));
        }
        Ok(Timestamp::from_millis(ms))
    }

    /// The same instant as a `jiff::Timestamp`.
    pub fn to_jiff(self) -> jiff::Timestamp {
        jiff::Timestamp::from_millisecond(self.0).expect("Timestamp is always within jiff's range")
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 UTC with exactly three fractional digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_jiff().strftime("%Y-%m-%dT%H:%M:%S%.3fZ"))
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
            Raw::Millis(ms) if (0..=MAX_MS).contains(&ms) => Ok(Timestamp(ms)),
            Raw::Millis(ms) => Err(serde::de::Error::custom(format!(
                "epoch milliseconds {ms} are outside 1970-01-01T00:00:00.000Z..={}",
                Timestamp(MAX_MS)
            ))),
            Raw::Text(text) => Timestamp::parse(&text).map_err(serde::de::Error::custom),
        }
    }
}

/// Parses a duration: integer milliseconds as text (`"1500"`) or `<number><unit>` parts
/// separated by optional spaces (`"1h 30m"`, `"1h30m"`), units `ms`, `s`, `m`, `h`, `d`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("a duration cannot be empty: write e.g. \"30s\", \"1h 30m\" or 1500 (ms)".into());
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(Timestamp::parse("99999999999999999").unwrap_err().contains("9999"));
    }

    /// Found by fuzzing (fuzz/fuzz_targets/timestamp.rs): the last millisecond of
    /// 9999-12-31 was accepted, but jiff stops at 9999-12-30T22:00:00Z, so writing the
    /// instant out panicked (a task due then could not be shown).
    #[test]
    fn the_latest_accepted_instant_can_be_written_out() {
        let latest = Timestamp::from_millis(i64::MAX);
        assert_eq!(latest.to_string(), "9999-12-30T22:00:00.000Z");
        assert_eq!(Timestamp::parse(&latest.to_string()), Ok(latest));
        for beyond in ["253402300799999", "253402207200001"] {
            let e = Timestamp::parse(beyond).unwrap_err();
            assert!(e.contains("9999-12-30T22:00:00.000Z"), "{e}");
            assert!(serde_json::from_str::<Timestamp>(beyond).is_err());
        }
        assert!(Timestamp::parse("9999-12-31T00:00:00Z").is_err());
        assert_eq!(Timestamp::from_millis(0).saturating_add(Duration::MAX), latest);
    }

    #[test]
    fn serde_reads_text_or_millis_and_writes_text() {
        let t: Timestamp = serde_json::from_str("1000").unwrap();
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"1970-01-01T00:00:01.000Z\"");
        let t: Timestamp = serde_json::from_str("\"1970-01-01T00:00:02Z\"").unwrap();
        assert_eq!(t.as_millis(), 2000);
        assert!(serde_json::from_str::<Timestamp>("-1").is_err());
    }
}
