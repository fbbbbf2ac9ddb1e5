//! Repeat rules: any cron expression and zone, in each syntax (Vixie, Spring, Quartz),
//! either parses or is refused without a panic. An accepted rule always has a next occurrence strictly later than the
//! instant asked about, or none at all, never an earlier or equal one (a task would
//! then fire in a loop). The same holds for fixed-rate `every` rules with limits.
#![no_main]

use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use punctual_core::policy::CronRule;
use punctual_core::{CronSyntax, Repeat, TaskMeta, Timestamp};

const ZONES: &[&str] = &["UTC", "Asia/Shanghai", "America/New_York", "Europe/London", "Australia/Lord_Howe"];

/// Read from the input: the expression's line, the zone's line, then the numbers from
/// the remaining bytes (so seeds stay readable).
#[derive(Debug, Arbitrary)]
struct Numbers {
    at_ms: i64,
    every_ms: u64,
    anchor_ms: i64,
    done: u32,
    times: Option<u32>,
    until_ms: Option<i64>,
}

fn later(rule: &Repeat, meta: &TaskMeta, now: Timestamp) {
    if let Some(next) = rule.next_after(meta, now) {
        let (anchor, done) = (meta.anchor, meta.occurrence);
        assert!(next > now, "{rule:?}: after {now:?} (anchor {anchor:?}, done {done}) came {next:?}");
        if let Some(until) = rule.until_limit() {
            assert!(next <= until, "{rule:?}: {next:?} is past until");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut lines = data.splitn(3, |b| *b == b'\n');
    let expr = String::from_utf8_lossy(lines.next().unwrap_or_default()).into_owned();
    let zone = String::from_utf8_lossy(lines.next().unwrap_or_default()).into_owned();
    let Ok(input) = Numbers::arbitrary(&mut Unstructured::new(lines.next().unwrap_or_default())) else { return };
    // A zone's line that is a number picks one of a few zones with odd rules.
    let zone = zone.parse::<usize>().ok().and_then(|i| ZONES.get(i).copied()).unwrap_or(&zone);
    let at = Timestamp::from_millis(input.at_ms);
    let mut meta = TaskMeta::default();
    meta.occurrence = input.done;
    meta.anchor = Timestamp::from_millis(input.anchor_ms);
    let mut rules = Vec::new();
    for syntax in CronSyntax::ALL {
        if let Ok(rule) = CronRule::with_syntax(&expr, zone, syntax) {
            if let Some(next) = rule.next_after(at) {
                assert!(next > at, "{rule:?}: after {at:?} came {next:?}");
            }
            rules.push(Repeat::cron_with_syntax(&expr, zone, syntax).expect("the rule parsed once"));
        }
    }
    if let Ok(rule) = Repeat::every(Duration::from_millis(input.every_ms)) {
        rules.push(rule);
    }
    for mut rule in rules {
        if let Some(n) = input.times {
            rule = match rule.clone().times(n) {
                Ok(limited) => limited,
                Err(_) => rule,
            };
        }
        if let Some(until) = input.until_ms {
            rule = rule.until(Timestamp::from_millis(until));
        }
        later(&rule, &meta, at);
        // What the API shows of a rule is read back as the same rule.
        let json = serde_json::to_string(&rule).expect("a rule serializes");
        let back: Repeat = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json} does not read back: {e}"));
        assert_eq!(back, rule, "{json}");
    }
});
