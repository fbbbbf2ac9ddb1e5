//! The numeric lists of Spring's and Quartz's fields (`*`, `N`, `N-M`, each with an
//! optional `/S`, comma-separated), with the rules in which the two differ: whether a
//! range may wrap past the field's end (Quartz's `22-2`), how large a step may be, and
//! what `*` spans. Names are mapped to numbers before (Spring) or by `value` (Quartz).

/// One field: its name in messages, its values, and what `*` (and `*/S`) spans.
pub(super) struct Field {
    pub(super) name: &'static str,
    pub(super) min: u32,
    pub(super) max: u32,
    /// Spring's day-of-week takes 0–7 but its `*/2` steps through 1–7.
    pub(super) star: (u32, u32),
    /// Quartz: the largest step of `*/S` and `N/S`.
    pub(super) max_step: Option<u32>,
}

/// How one syntax writes lists.
pub(super) struct Rules {
    /// Quartz: a range whose end is below its start runs past the field's end and
    /// wraps (`22-2` is 22, 23, 0, 1, 2). Spring refuses it.
    pub(super) wrap: bool,
    /// Spring's day-of-week: 7 at the start of a range is Sunday as 0 (`SUN-TUE`).
    pub(super) seven_starts_at_zero: bool,
}

/// The error for `text` in `field`: completes "'<expr>' …".
pub(super) fn refusal(text: &str, field: &Field, why: &str) -> String {
    format!("has '{text}' in the {} field: {why}", field.name)
}

/// Parses the list `text` and calls `insert` with each value it names. `value` reads
/// one value (a number, or a name where the syntax has them) and says why not.
pub(super) fn parse_list(
    text: &str,
    field: &Field,
    rules: &Rules,
    value: &dyn Fn(&str) -> Result<u32, String>,
    insert: &mut dyn FnMut(u32),
) -> Result<(), String> {
    for item in text.split(',') {
        let refuse = |why: &str| refusal(text, field, why);
        if item.is_empty() {
            return Err(refuse("an empty item in the list"));
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(parse_step(step, range, field).map_err(|why| refuse(&why))?)),
            None => (item, None),
        };
        let read = |text: &str| {
            let n = value(text).map_err(|why| refuse(&why))?;
            if (field.min..=field.max).contains(&n) {
                Ok(n)
            } else {
                Err(refuse(&format!("{n} is outside {}–{}", field.min, field.max)))
            }
        };
        let (low, high) = if range == "*" {
            field.star
        } else if let Some((low, high)) = range.split_once('-') {
            let (mut low, high) = (read(low)?, read(high)?);
            if rules.seven_starts_at_zero && low == 7 {
                low = 0;
            }
            if low > high && !rules.wrap {
                return Err(refuse(&format!("the range {range} runs backwards: write it from low to high")));
            }
            (low, high)
        } else {
            let single = read(range)?;
            // `N/S` runs from N to the field's end.
            (single, if step.is_some() { field.max } else { single })
        };
        // A wrapping range runs on past the end: values count from `min` modulo the
        // field's size.
        let size = field.max - field.min + 1;
        let end = if high < low { high + size } else { high };
        for v in (low..=end).step_by(step.unwrap_or(1) as usize) {
            insert(field.min + (v - field.min) % size);
        }
    }
    Ok(())
}

/// A step: a whole number of at least 1 (and at most `field.max_step` after `*` or a
/// single value, as Quartz wants).
fn parse_step(step: &str, range: &str, field: &Field) -> Result<u32, String> {
    let n: u32 = step
        .parse()
        .ok()
        .filter(|n| *n >= 1 && step.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| format!("'{step}' is not a step: use a whole number of at least 1"))?;
    if let Some(max) = field.max_step
        && n > max
        && !range.contains('-')
    {
        return Err(format!("the step {n} is over {max}, the most this field takes"));
    }
    Ok(n)
}

/// A number written with digits only (no sign).
pub(super) fn number(text: &str) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'{text}' is not a number"));
    }
    text.parse().map_err(|_| format!("'{text}' is too large"))
}
