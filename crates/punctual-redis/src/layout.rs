//! The layout version of punctual's keys in Redis (`<p>:layout`, see `keys`), so that
//! a punctual never works on keys it cannot read.
//!
//! - **Recorded once**: the first process to find no version writes this one with
//!   `SET NX` (a new store, or one written by a punctual from before the version was
//!   recorded, whose keys are this layout: every change to them so far was an
//!   addition an older punctual ignores, see `keys`).
//! - **A newer layout is refused** at connect, with both versions named: its keys may
//!   mean what this punctual cannot know.
//! - **Put back after a reset**: Redis found emptied records it again (`identity`).
//!
//! A change of layout that an older punctual would misread raises [`LAYOUT`]; the
//! connect of a newer punctual then upgrades the keys of an older one in place before
//! it records the new version.

use punctual_core::store::corrupt;
use punctual_core::{Error, Result};

use crate::conn::Conn;
use crate::keys;

/// The layout of the keys this punctual writes.
pub const LAYOUT: i64 = 1;

/// Records [`LAYOUT`] where Redis holds no version, and refuses a newer one.
pub(crate) async fn check(conn: &Conn, prefix: &str) -> Result<()> {
    let key = keys::layout(prefix);
    conn.query::<()>(redis::cmd("SET").arg(&key).arg(LAYOUT).arg("NX")).await?;
    let stored: Option<String> = conn.query(redis::cmd("GET").arg(&key)).await?;
    // Deleted again in between (a flush): recorded at the next check of the identity.
    let Some(stored) = stored else { return Ok(()) };
    let found: i64 = stored
        .parse()
        .map_err(|_| corrupt(format!("the layout version in {key} is '{}', not a number", stored.escape_default())))?;
    if found > LAYOUT {
        return Err(Error::Unavailable(format!(
            "the store at prefix '{prefix}' in Redis was written by a newer punctual (layout {found}, this one reads \
             {LAYOUT}); upgrade punctual"
        )));
    }
    Ok(())
}
