//! Regular expressions of the OpenAPI document, for values whose bounds JSON Schema can
//! only state through their text: whole numbers within bounds, durations within bounds
//! in the forms [`parse_duration`](punctual_core::time::parse_duration) reads, and
//! rates ([`Rate::parse`](punctual_actions::Rate::parse)).
//!
//! Invariant, tested against the server's own parsers: every text a pattern matches is
//! read as a value within its bounds. The converse holds for the forms each function
//! lists; spellings that are right only once their parts are added up (`"30s 30s"`,
//! `"1h 90m"`) are left out, since a pattern cannot add.
//!
//! Patterns use only what ECMA-262, Python's `re` and Rust's `regex` read alike:
//! classes, groups, alternation and repetition, whitespace spelt out as characters
//! (`\s` means different characters to each).

/// What `str::trim` removes (Unicode White_Space), as a class.
const SPACE: &str = "[\t\n\u{b}\u{c}\r \u{85}\u{a0}\u{1680}\u{2000}-\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}]";

const SECOND: u64 = 1_000;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;
const WEEK: u64 = 7 * DAY;

/// The units of the plain form, largest first, with their size in milliseconds.
const PLAIN: [(&str, u64); 5] = [("d", DAY), ("h", HOUR), ("m", MINUTE), ("s", SECOND), ("ms", 1)];

/// A component of the ISO 8601 form: its designator, size, and the most of it that
/// `jiff` (which reads that form) takes alone; one less when other components follow.
struct Iso {
    designator: char,
    size: u64,
    most: u64,
    /// Written after `T`.
    time: bool,
}

/// The components of the ISO 8601 form, in their order (years and months, whose length
/// varies, are refused by the server).
const ISO: [Iso; 5] = [
    Iso { designator: 'W', size: WEEK, most: 1_043_497, time: false },
    Iso { designator: 'D', size: DAY, most: 7_304_484, time: false },
    Iso { designator: 'H', size: HOUR, most: 879_100_127, time: true },
    Iso { designator: 'M', size: MINUTE, most: 42_227_550_707, time: true },
    Iso { designator: 'S', size: SECOND, most: 1_902_545_624_836, time: true },
];

/// The whole text of a duration from `lo` to `hi` milliseconds, in these forms:
/// whole milliseconds (`"1500"`); `<number><unit>` parts from the largest unit down
/// (`"30s"`, `"1h 30m"`, `"90m 30s"`, `"1s 500ms"`), each part after the first within
/// its unit's range (`59` minutes at most); ISO 8601 alike (`"PT30M"`, `"P1DT2H"`,
/// `"PT1.5S"`); whitespace around the whole, between parts and before a unit. A part
/// that is not the last stays a whole unit below the bound (`"59s 999ms"` is at most
/// `60s`, `"60s 0ms"` is left out).
pub(crate) fn duration(lo: u64, hi: u64) -> String {
    format!("^{}$", duration_text(lo, hi))
}

/// The text of [`duration`], not anchored.
fn duration_text(lo: u64, hi: u64) -> String {
    debug_assert!(lo <= hi, "bounds in order");
    let mut forms = vec![whole_number(lo, hi, true)];
    for (i, (unit, size)) in PLAIN.iter().enumerate() {
        if let Some(single) = leading(lo, hi, *size, 0, u64::MAX, true) {
            forms.push(format!("{single}{SPACE}*{unit}"));
        }
        let rest: String = PLAIN[i + 1..]
            .iter()
            .zip(&PLAIN[i..])
            .map(|((unit, size), (_, above))| {
                format!("(?:{SPACE}*{}{SPACE}*{unit})?", whole_number(0, above / size - 1, true))
            })
            .collect();
        if let Some(first) = leading(lo, hi, *size, size - 1, u64::MAX, true).filter(|_| !rest.is_empty()) {
            forms.push(format!("{first}{SPACE}*{unit}{rest}"));
        }
    }
    for (i, component) in ISO.iter().enumerate() {
        if let Some(single) = leading(lo, hi, component.size, 0, component.most, false) {
            forms.push(iso(&ISO[i..i + 1], &single, false));
        }
        if let Some(first) = leading(lo, hi, component.size, component.size - 1, component.most - 1, false) {
            forms.push(iso(&ISO[i..], &first, true));
        }
    }
    format!("{SPACE}*(?:{}){SPACE}*", forms.join("|"))
}

/// The whole text of a rate as `Rate::parse` reads it: a count of at least 1, a slash,
/// and a window longer than 0, a duration or a bare unit (`"20/1m"`, `" 5 / s "`).
pub(crate) fn rate() -> String {
    let count = whole_number(1, u64::from(u32::MAX), true);
    let units = PLAIN.map(|(unit, _)| unit).join("|");
    format!("^{SPACE}*\\+?{count}{SPACE}*/(?:{}|{SPACE}*(?:{units}){SPACE}*)$", duration_text(1, u64::MAX))
}

/// The leading number of a duration whose first part has `size` and the parts after it
/// add up to at most `rest`: the numbers that keep the whole from `lo` to `hi` (and at
/// most `most`), or none.
fn leading(lo: u64, hi: u64, size: u64, rest: u64, most: u64, leading_zeros: bool) -> Option<String> {
    let least = lo.div_ceil(size);
    let greatest = (hi.checked_sub(rest)? / size).min(most);
    (least <= greatest).then(|| whole_number(least, greatest, leading_zeros))
}

/// An ISO 8601 duration whose first component is `components[0]`, numbered by
/// `first`; with `rest`, the later components may follow, each within its range, and
/// seconds may have up to three decimals.
fn iso(components: &[Iso], first: &str, rest: bool) -> String {
    let part = |i: usize| -> String {
        let component = &components[i];
        let number = if i == 0 { first.to_owned() } else { natural(components, i) };
        let decimals = if component.designator == 'S' && rest { "(?:[.,][0-9]{1,3})?" } else { "" };
        let designator = component.designator;
        format!("{number}{decimals}[{designator}{}]", designator.to_ascii_lowercase())
    };
    let later = if rest { components.len() } else { 1 };
    let date: Vec<usize> = (0..later).filter(|i| !components[*i].time).collect();
    let time: Vec<usize> = (0..later).filter(|i| components[*i].time).collect();
    let optional = |i: &usize| if *i == 0 { part(0) } else { format!("(?:{})?", part(*i)) };
    let date_text: String = date.iter().map(optional).collect();
    let time_text = match date.first() {
        // A date component leads: the time components are optional, and `T` is
        // written only before one of them.
        Some(_) if !time.is_empty() => {
            let starts = (0..time.len()).map(|k| {
                let tail: String = time[k + 1..].iter().map(|i| format!("(?:{})?", part(*i))).collect();
                format!("{}{tail}", part(time[k]))
            });
            format!("(?:[Tt](?:{}))?", starts.collect::<Vec<_>>().join("|"))
        }
        Some(_) => String::new(),
        None => format!("[Tt]{}", time.iter().map(optional).collect::<String>()),
    };
    format!("[Pp]{date_text}{time_text}")
}

/// The range of a component that follows others: below one of the component before it.
fn natural(components: &[Iso], i: usize) -> String {
    whole_number(0, components[i - 1].size / components[i].size - 1, false)
}

/// Decimal text of a whole number from `lo` to `hi` (not anchored); with
/// `leading_zeros`, any number of zeros may come first.
pub(crate) fn whole_number(lo: u64, hi: u64, leading_zeros: bool) -> String {
    debug_assert!(lo <= hi, "bounds in order");
    let mut alternatives = Vec::new();
    for length in digits(lo)..=digits(hi) {
        let shortest = if length == 1 { 0 } else { 10u128.pow(length - 1) };
        let low = u128::from(lo).max(shortest);
        let high = u128::from(hi).min(10u128.pow(length) - 1);
        if low <= high {
            alternatives.push(same_length(low.to_string().as_bytes(), high.to_string().as_bytes()));
        }
    }
    let zeros = if leading_zeros { "0*" } else { "" };
    format!("{zeros}{}", group(&alternatives.join("|")))
}

fn digits(n: u64) -> u32 {
    n.checked_ilog10().unwrap_or(0) + 1
}

/// The numbers from `lo` to `hi`, written with as many digits as each other.
fn same_length(lo: &[u8], hi: &[u8]) -> String {
    let (Some((&first, lo_rest)), Some((&last, hi_rest))) = (lo.split_first(), hi.split_first()) else {
        return String::new();
    };
    if first == last {
        return format!("{}{}", first as char, group(&same_length(lo_rest, hi_rest)));
    }
    let n = lo_rest.len();
    let mut alternatives = Vec::new();
    let mut from = first;
    if lo_rest.iter().any(|d| *d != b'0') {
        alternatives.push(format!("{}{}", first as char, group(&same_length(lo_rest, &vec![b'9'; n]))));
        from += 1;
    }
    let mut to = last;
    let mut tail = None;
    if hi_rest.iter().any(|d| *d != b'9') {
        tail = Some(format!("{}{}", last as char, group(&same_length(&vec![b'0'; n], hi_rest))));
        to -= 1;
    }
    if from <= to {
        let class = if from == to { (from as char).to_string() } else { format!("[{}-{}]", from as char, to as char) };
        let any = match n {
            0 => String::new(),
            1 => "[0-9]".to_owned(),
            n => format!("[0-9]{{{n}}}"),
        };
        alternatives.push(format!("{class}{any}"));
    }
    alternatives.extend(tail);
    alternatives.join("|")
}

/// `pattern` as one unit of a larger one.
fn group(pattern: &str) -> String {
    if pattern.contains('|') { format!("(?:{pattern})") } else { pattern.to_owned() }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use punctual_core::time::{format_duration, parse_duration};
    use std::time::Duration;

    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        let schema = serde_json::json!({"type": "string", "pattern": pattern});
        jsonschema::validator_for(&schema).expect("the pattern compiles").is_valid(&serde_json::json!(text))
    }

    fn ms(text: &str) -> Option<u64> {
        parse_duration(text).ok().map(|d| u64::try_from(d.as_millis()).expect("fits"))
    }

    #[test]
    fn whole_numbers_in_range_and_no_others() {
        for (lo, hi) in [(0, 0), (0, 9), (3, 7), (0, 1200), (7, 1003), (99, 101), (1000, 1000), (15, 999)] {
            let pattern = format!("^{}$", whole_number(lo, hi, false));
            for n in 0..=1300 {
                assert_eq!(matches(&pattern, &n.to_string()), (lo..=hi).contains(&n), "{n} in {lo}..={hi}");
            }
        }
        let zeros = format!("^{}$", whole_number(5, 60, true));
        assert!(matches(&zeros, "0005") && matches(&zeros, "060") && !matches(&zeros, "0061"));
        let widest = format!("^{}$", whole_number(0, u64::MAX, false));
        assert!(matches(&widest, &u64::MAX.to_string()));
        assert!(!matches(&widest, "18446744073709551616") && !matches(&widest, "99999999999999999999"));
    }

    #[test]
    fn jiff_reads_each_iso_component_up_to_its_most() {
        let rests = ["6DT23H59M59.999S", "T23H59M59.999S", "59M59.999S", "59.999S", ".999S"];
        for (component, rest) in ISO.iter().zip(rests) {
            let (prefix, d) = if component.time { ("PT", component.designator) } else { ("P", component.designator) };
            assert!(ms(&format!("{prefix}{}{d}", component.most)).is_some(), "{prefix}…{d}");
            assert!(ms(&format!("{prefix}{}{d}", component.most + 1)).is_none(), "{prefix}…{d} + 1");
            let before = if d == 'S' { String::new() } else { d.to_string() };
            let followed = format!("{prefix}{}{before}{rest}", component.most - 1);
            assert!(ms(&followed).is_some(), "{followed}");
        }
    }

    /// The bounds the document states.
    const BOUNDS: [(u64, u64); 5] =
        [(0, 60_000), (1_000, 43_200_000), (1_000, 60_000), (1_000, u64::MAX), (0, u64::MAX)];

    #[test]
    fn durations_at_and_beyond_their_bounds() {
        let wait = duration(0, 60_000);
        for text in ["0", "60000", "0ms", "60s", "1m", "59s 999ms", " 1m ", "PT60S", "PT1M", "PT59.999S", "pt1m", "0d"]
        {
            assert!(matches(&wait, text), "{text:?} is a wait");
        }
        for text in ["60001", "61s", "2m", "1m 1ms", "PT61S", "PT1H", "1h", "x", "", "60s 0ms", "P", "PT", "P1DT"] {
            assert!(!matches(&wait, text), "{text:?} is not a wait");
        }
        let lease = duration(1_000, 43_200_000);
        for text in ["1s", "1000ms", "12h", "11h 59m 59s 999ms", "1h 30m", "90m 30s", "PT12H", "PT1H30M", "PT1.5S"] {
            assert!(matches(&lease, text), "{text:?} is a lease");
        }
        for text in ["999ms", "0s", "13h", "12h 1ms", "1d", "PT0.5S", "P1D"] {
            assert!(!matches(&lease, text), "{text:?} is not a lease");
        }
    }

    #[test]
    fn every_duration_in_canonical_forms_is_matched() {
        for (lo, hi) in BOUNDS {
            let pattern = duration(lo, hi);
            // At the top of u64, the greatest leading parts are written alone (see `duration`).
            let top = if hi == u64::MAX { hi - 2 * WEEK } else { hi };
            let mut values = vec![lo, top, lo.saturating_add(1), top - 1, (lo / 2).saturating_add(top / 2)];
            values.extend([1, 999, 1_000, 1_500, 59_999, 60_000, 90_061_001, 43_200_000, 86_400_000, 694_861_001]);
            for v in values.into_iter().filter(|v| (lo..=hi).contains(v)) {
                let canonical = format_duration(Duration::from_millis(v));
                assert!(matches(&pattern, &canonical), "{canonical:?} in {lo}..={hi}");
                assert!(matches(&pattern, &v.to_string()), "{v} in {lo}..={hi}");
                if v % SECOND == 0 && v / SECOND <= ISO[4].most {
                    assert!(matches(&pattern, &format!("PT{}S", v / SECOND)), "PT{}S in {lo}..={hi}", v / SECOND);
                }
            }
        }
    }

    #[test]
    fn rates_as_the_server_reads_them() {
        let pattern = rate();
        for text in ["20/1m", "5/s", " 100 / 1h ", "+3/PT1M", "4294967295/1ms", "1/1h 30m"] {
            assert!(matches(&pattern, text), "{text:?} is a rate");
            assert!(punctual_actions::Rate::parse(text).is_ok(), "{text:?} is read");
        }
        for text in ["20", "x/1m", "0/1m", "20/0s", "20/soon", "-1/1m", "4294967296/1s", "20/1m/1m"] {
            assert!(!matches(&pattern, text), "{text:?} is not a rate");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// What the rate pattern matches, the server reads as a rate.
        #[test]
        fn what_the_rate_pattern_matches_is_a_rate(
            text in proptest::string::string_regex(&rate()[1..rate().len() - 1]).expect("proptest reads the pattern"),
        ) {
            prop_assert!(punctual_actions::Rate::parse(&text).is_ok(), "{:?}", text);
        }
    }

    /// A bound of [`BOUNDS`] and a text its pattern matches.
    fn matched() -> impl Strategy<Value = ((u64, u64), String)> {
        (0..BOUNDS.len()).prop_flat_map(|i| {
            let pattern = duration(BOUNDS[i].0, BOUNDS[i].1);
            let unanchored = &pattern[1..pattern.len() - 1];
            (Just(BOUNDS[i]), proptest::string::string_regex(unanchored).expect("proptest reads the pattern"))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// What a pattern matches, the server reads as a duration within its bounds.
        #[test]
        fn what_a_pattern_matches_is_read_within_its_bounds(((lo, hi), text) in matched()) {
            let value = ms(&text);
            prop_assert!(value.is_some_and(|v| (lo..=hi).contains(&v)), "{:?} reads as {:?}", text, value);
        }
    }
}
