//! The Lua scripts, each `lua/common.lua` followed by its own file (but `lua/ids.lua`
//! and `lua/rate.lua`, which work on no shard). Loaded once per Redis node and called by SHA; redis-rs
//! reloads a script the node answers NOSCRIPT for (after a restart or a `SCRIPT
//! FLUSH`).

use redis::Script;

const COMMON: &str = include_str!("lua/common.lua");

/// Every script, compiled (hashed) once.
#[derive(Debug)]
pub(crate) struct Scripts {
    pub(crate) schedule: Script,
    pub(crate) lease: Script,
    pub(crate) complete: Script,
    pub(crate) extend: Script,
    pub(crate) release: Script,
    pub(crate) reap: Script,
    pub(crate) retry_dead: Script,
    pub(crate) delete: Script,
    pub(crate) cancel_tag: Script,
    pub(crate) list: Script,
    pub(crate) list_tag: Script,
    pub(crate) retry_dead_many: Script,
    pub(crate) sweep_dead: Script,
    pub(crate) stats: Script,
    pub(crate) ids: Script,
    pub(crate) rate: Script,
}

fn with_common(body: &str) -> Script {
    Script::new(&format!("{COMMON}\n{body}"))
}

impl Scripts {
    pub(crate) fn new() -> Scripts {
        Scripts {
            schedule: with_common(include_str!("lua/schedule.lua")),
            lease: with_common(include_str!("lua/lease.lua")),
            complete: with_common(include_str!("lua/complete.lua")),
            extend: with_common(include_str!("lua/extend.lua")),
            release: with_common(include_str!("lua/release.lua")),
            reap: with_common(include_str!("lua/reap.lua")),
            retry_dead: with_common(include_str!("lua/retry_dead.lua")),
            delete: with_common(include_str!("lua/delete.lua")),
            cancel_tag: with_common(include_str!("lua/cancel_tag.lua")),
            list: with_common(include_str!("lua/list.lua")),
            list_tag: with_common(include_str!("lua/list_tag.lua")),
            retry_dead_many: with_common(include_str!("lua/retry_dead_many.lua")),
            sweep_dead: with_common(include_str!("lua/sweep_dead.lua")),
            stats: with_common(include_str!("lua/stats.lua")),
            ids: Script::new(include_str!("lua/ids.lua")),
            rate: Script::new(include_str!("lua/rate.lua")),
        }
    }
}
