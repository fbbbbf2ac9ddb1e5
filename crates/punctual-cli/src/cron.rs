//! `punctual cron next`: a cron expression's next occurrences, computed here by the
//! same code the server schedules repeats with (`punctual_core::CronRule`), no server
//! needed. An expression or zone the server would refuse is a usage error (exit 2).

use anyhow::Result;
use punctual_core::policy::CronRule;
use punctual_core::{Clock, SystemClock, Timestamp};
use serde_json::json;

use crate::UsageError;
use crate::cli::cron::{CronArgs, CronCommand, CronNextArgs};

/// Runs `punctual cron …`; the text to print.
pub(crate) fn run(args: CronArgs) -> Result<String> {
    match args.command {
        CronCommand::Next(args) => next(&args),
    }
}

fn next(args: &CronNextArgs) -> Result<String> {
    let syntax = args.syntax.core();
    let rule = CronRule::with_syntax(&args.expr, &args.tz, syntax).map_err(|e| UsageError(e.to_string()))?;
    let from = match &args.from {
        Some(text) => Timestamp::parse(text).map_err(|e| UsageError(format!("--from: {e}")))?,
        None => SystemClock.now(),
    };
    let zone = jiff::tz::TimeZone::get(&args.tz).map_err(|e| UsageError(format!("--tz: {e}")))?;
    let mut occurrences = Vec::new();
    let mut after = from;
    while occurrences.len() < args.count as usize
        && let Some(next) = rule.next_after(after)
    {
        let instant = next.to_jiff();
        occurrences.push(instant.display_with_offset(zone.to_offset(instant)).to_string());
        after = next;
    }
    if args.json {
        let answer = json!({
            "cron": rule.expr(),
            "cron_syntax": syntax.as_str(),
            "tz": rule.tz(),
            "from": from.to_string(),
            "next": occurrences,
        });
        return Ok(serde_json::to_string_pretty(&answer)?);
    }
    Ok(occurrences.join("\n"))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    /// What `punctual ARGS…` prints, or its error.
    fn run_cli(args: &[&str]) -> Result<String> {
        let cli = Cli::try_parse_from(std::iter::once("punctual").chain(args.iter().copied()))?;
        let Command::Cron(args) = cli.command else { panic!("not a cron command") };
        run(args)
    }

    /// Arguments split at spaces, the expression between `|`s kept whole.
    fn words(line: &str) -> Vec<&str> {
        let mut parts = line.split('|');
        let (before, expr, after) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
        before.split_whitespace().chain([expr]).chain(after.split_whitespace()).collect()
    }

    #[test]
    fn prints_the_next_occurrences_in_the_zones_offset() {
        let spring =
            "cron next|0 30 1 * * *|--syntax spring --tz America/New_York --from 2026-10-31T12:00:00Z --count 3";
        let lines = run_cli(&words(spring)).unwrap();
        // 01:30 happens twice on 2026-11-01; Spring fires at both.
        assert_eq!(lines, "2026-11-01T01:30:00-04:00\n2026-11-01T01:30:00-05:00\n2026-11-02T01:30:00-05:00");
        let quartz =
            "cron next|0 0 18 L * ? 2026|--syntax quartz --tz Europe/Berlin --from 2026-11-01T00:00:00Z --json";
        let json = run_cli(&words(quartz));
        let json: serde_json::Value = serde_json::from_str(&json.unwrap()).unwrap();
        // The year field runs out after December.
        assert_eq!(json["next"], json!(["2026-11-30T18:00:00+01:00", "2026-12-31T18:00:00+01:00"]));
        assert_eq!(
            (json["cron_syntax"].as_str(), json["from"].as_str()),
            (Some("quartz"), Some("2026-11-01T00:00:00.000Z"))
        );
    }

    #[test]
    fn a_refused_expression_is_a_usage_error_that_says_what_to_write() {
        let error = run_cli(&["cron", "next", "0 9 * * MON-FRI", "--syntax", "spring"]).unwrap_err();
        assert!(error.downcast_ref::<UsageError>().is_some(), "{error:#}");
        assert!(error.to_string().contains("put the second first"), "{error:#}");
        let error = run_cli(&["cron", "next", "0 9 * * *", "--from", "yesterday"]).unwrap_err();
        assert!(error.to_string().starts_with("--from"), "{error:#}");
    }
}
