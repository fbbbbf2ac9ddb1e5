//! What the `punctual` command and `punctual-bench` print, alike: tables in the house
//! style, and lines on standard output that a closed pipe ends quietly
//! (`punctual ls q | head`).
//!
//! One place for both binaries, so a table of `punctual ls` and a table of the bench's
//! report look the same, and neither binary depends on the other.

use std::io::Write;

use anyhow::{Context as _, Result};
use comfy_table::{CellAlignment, Table};

/// A table in the house style: no borders, the headers as given (upper case, by
/// convention), columns separated by three spaces; the columns numbered in `right`
/// aligned right (numbers).
pub fn table(headers: &[&str], rows: Vec<Vec<String>>, right: &[usize]) -> String {
    let mut table = Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    table.set_header(headers.to_vec());
    for row in rows {
        table.add_row(row);
    }
    for (i, column) in table.column_iter_mut().enumerate() {
        column.set_padding((0, 3));
        if right.contains(&i) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table.trim_fmt()
}

/// Prints `text` and a newline on standard output. A closed pipe is not an error: the
/// reader has seen all it wanted.
pub fn emit(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to standard output"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tables_have_no_borders_and_numbers_aligned_right() {
        let rows = vec![vec!["a".to_owned(), "1".to_owned()], vec!["bbbb".to_owned(), "1000".to_owned()]];
        let text = super::table(&["NAME", "COUNT"], rows, &[1]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines, ["NAME   COUNT", "a          1", "bbbb    1000"], "{text}");
    }
}
