//! How results are shown: a progress bar per phase on stderr while a workload runs,
//! then a table per workload on stdout, or with `--json` one JSON object per workload
//! (in an array) holding its parameters, figures, baselines and notes.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
// The tables of `punctual ls` and of the bench's reports look the same: one function.
pub(crate) use punctual_client::output::table;

use super::stats::{LagStats, ratio};

/// Makes the progress bars, drawn together on stderr (a phase may show two at once:
/// tasks scheduled and tasks fired); none with `--quiet` or when stderr is not a
/// terminal.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    bars: Option<MultiProgress>,
}

impl Progress {
    pub(crate) fn new(quiet: bool) -> Progress {
        let shown = !quiet && std::io::stderr().is_terminal();
        Progress { bars: shown.then(MultiProgress::new) }
    }

    /// A bar counting `len` items of a phase.
    pub(crate) fn bar(&self, len: u64, phase: &str) -> ProgressBar {
        let Some(bars) = &self.bars else { return ProgressBar::hidden() };
        let style = ProgressStyle::with_template("{msg:>32} [{bar:30}] {human_pos}/{human_len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let bar = bars.add(ProgressBar::new(len).with_style(style).with_message(phase.to_owned()));
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }

    /// A counter for a phase of unknown length (one that runs for a fixed time).
    pub(crate) fn counter(&self, phase: &str) -> ProgressBar {
        let Some(bars) = &self.bars else { return ProgressBar::hidden() };
        let style = ProgressStyle::with_template("{msg:>32} {spinner} {human_pos} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = bars.add(ProgressBar::new_spinner().with_style(style).with_message(phase.to_owned()));
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }
}

/// A heading line and a two-column table of figures.
pub(crate) fn figures(title: &str, rows: Vec<(String, String)>) -> String {
    let rows = rows.into_iter().map(|(name, value)| vec![name, value]).collect();
    format!("{title}\n{}", table(&["FIGURE", "VALUE"], rows, &[1]))
}

/// One figure of a report: punctual's value and, when BullMQ ran beside it, BullMQ's
/// and the ratio punctual / BullMQ (none for counts such as duplicates).
#[derive(Debug)]
pub(crate) struct Figure {
    pub(crate) name: String,
    pub(crate) ours: String,
    pub(crate) theirs: Option<String>,
    pub(crate) ratio: Option<String>,
}

impl Figure {
    /// A figure BullMQ has no counterpart of.
    pub(crate) fn ours(name: impl Into<String>, ours: String) -> Figure {
        Figure { name: name.into(), ours, theirs: None, ratio: None }
    }

    /// A figure with BullMQ's beside it (when it ran) and the ratio.
    pub(crate) fn beside(
        name: impl Into<String>,
        ours: String,
        theirs: Option<String>,
        ratio: Option<String>,
    ) -> Figure {
        Figure { name: name.into(), ours, theirs, ratio }
    }
}

/// Ends a workload's table: how BullMQ ran (`approach`, when it did), then each note.
pub(crate) fn with_footer(mut text: String, approach: Option<&str>, notes: &[String]) -> String {
    if let Some(approach) = approach {
        text.push_str(&format!("\n{approach}"));
    }
    for note in notes {
        text.push_str(&format!("\nnote: {note}"));
    }
    text
}

/// A heading and a table of figures: two columns, or with `bullmq` (its version) four:
/// punctual's value, BullMQ's and the ratio punctual / BullMQ.
pub(crate) fn figures_beside(title: &str, rows: Vec<Figure>, bullmq: Option<&str>) -> String {
    let Some(version) = bullmq else {
        return figures(title, rows.into_iter().map(|f| (f.name, f.ours)).collect());
    };
    let header = format!("BULLMQ {version}");
    let rows = rows
        .into_iter()
        .map(|f| vec![f.name, f.ours, f.theirs.unwrap_or_default(), f.ratio.unwrap_or_default()])
        .collect();
    format!("{title}\n{}", table(&["FIGURE", "PUNCTUAL", &header, "PUNCTUAL / BULLMQ"], rows, &[1, 2, 3]))
}

/// `0.42×`, `3.10×`, `12×`.
pub(crate) fn times(ratio: f64) -> String {
    if ratio >= 10.0 { format!("{ratio:.0}×") } else { format!("{ratio:.2}×") }
}

/// One row of a lag table: an approach and its lag, with the ratio to `ours` at p50
/// and p99 when it is a baseline.
pub(crate) fn lag_row(approach: &str, lag: &LagStats, ours: Option<&LagStats>) -> Vec<String> {
    let ratio = match ours {
        Some(ours) => format!("{:.0}× / {:.0}×", ratio(lag.p50, ours.p50), ratio(lag.p99, ours.p99)),
        None => "-".into(),
    };
    vec![
        approach.to_owned(),
        lag.p50.to_string(),
        lag.p90.to_string(),
        lag.p99.to_string(),
        lag.p999.to_string(),
        lag.max.to_string(),
        thousands(lag.count as f64),
        ratio,
    ]
}

/// A table of lag rows made with [`lag_row`].
pub(crate) fn lag_table(rows: Vec<Vec<String>>) -> String {
    table(
        &["APPROACH", "P50 MS", "P90 MS", "P99 MS", "P99.9 MS", "MAX MS", "FIRED", "RATIO P50 / P99"],
        rows,
        &[1, 2, 3, 4, 5, 6, 7],
    )
}

/// `12,345` (rounded to a whole number, thousands separated).
pub(crate) fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 && digits != "0" { format!("-{out}") } else { out }
}

/// `12,345/s`.
pub(crate) fn rate(per_second: f64) -> String {
    format!("{}/s", thousands(per_second))
}

/// `850 ms`, `12.3 s`.
pub(crate) fn millis(ms: u64) -> String {
    if ms < 10_000 { format!("{} ms", thousands(ms as f64)) } else { format!("{:.1} s", ms as f64 / 1000.0) }
}

/// `33.8 MiB`.
pub(crate) fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_easily() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(-1000.0), "-1,000");
        assert_eq!(rate(43925.2), "43,925/s");
        assert_eq!(millis(850), "850 ms");
        assert_eq!(millis(12_345), "12.3 s");
        assert_eq!(mib(33 * 1024 * 1024), "33.0 MiB");
        assert_eq!((times(0.4183), times(12.4)), ("0.42×".to_owned(), "12×".to_owned()));
    }

    #[test]
    fn bullmq_gets_a_column_when_it_ran() {
        let rows = || {
            vec![
                Figure::beside("drained in", millis(900), Some(millis(3_000)), Some(times(0.3))),
                Figure::ours("fired twice", "0".into()),
            ]
        };
        let with = figures_beside("burst", rows(), Some("6.7.0"));
        assert!(with.contains("BULLMQ 6.7.0") && with.contains("PUNCTUAL / BULLMQ"), "{with}");
        assert!(with.contains("3,000 ms") && with.contains("0.30×"), "{with}");
        let without = figures_beside("burst", rows(), None);
        assert!(without.contains("VALUE") && !without.contains("BULLMQ"), "{without}");
    }

    #[test]
    fn baselines_show_their_ratio_to_punctual() {
        let ours = LagStats::of(vec![0, 1, 2]);
        let theirs = LagStats::of(vec![500, 510, 990]);
        let row = lag_row("poller", &theirs, Some(&ours));
        assert_eq!(row[7], "510× / 495×");
        assert!(lag_table(vec![row]).starts_with("APPROACH"));
    }
}
