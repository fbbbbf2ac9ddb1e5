//! A rate limit: at most `count` deliveries per window of `per`. Only the value and
//! its text form live here; counting deliveries against it is the actions' (one
//! process) or the Redis store's (every process sharing it).

use std::fmt;
use std::time::Duration;

use crate::time::parse_duration;

/// `count` deliveries per `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub count: u32,
    pub per: Duration,
}

impl Rate {
    /// Parses `"20/1m"`, `"5/s"`, `"100/1h"`: a count, a slash, a duration (a bare
    /// unit means one of it).
    pub fn parse(text: &str) -> Result<Rate, String> {
        let usage = || format!("'{text}' is not a rate: write COUNT/DURATION such as \"20/1m\" or \"5/1s\"");
        let (count, per) = text.split_once('/').ok_or_else(usage)?;
        let count: u32 = count.trim().parse().map_err(|_| usage())?;
        if count == 0 {
            return Err(format!("'{text}': a rate allows at least 1 delivery"));
        }
        let per = per.trim();
        let per = if per.bytes().all(|b| b.is_ascii_alphabetic()) { format!("1{per}") } else { per.to_owned() };
        let per = parse_duration(&per).map_err(|e| format!("'{text}': {e}"))?;
        if per.is_zero() {
            return Err(format!("'{text}': the window must be longer than 0"));
        }
        Ok(Rate { count, per })
    }
}

impl fmt::Display for Rate {
    /// As [`Rate::parse`] reads it: `20/1m`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.count, crate::time::format_duration(self.per))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse() {
        assert_eq!(Rate::parse("20/1m").unwrap(), Rate { count: 20, per: Duration::from_secs(60) });
        assert_eq!(Rate::parse("5/s").unwrap(), Rate { count: 5, per: Duration::from_secs(1) });
        assert_eq!(Rate::parse(" 100 / 1h ").unwrap(), Rate { count: 100, per: Duration::from_secs(3600) });
        for bad in ["20", "x/1m", "0/1m", "20/0s", "20/soon", "-1/1m"] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
    }
}
