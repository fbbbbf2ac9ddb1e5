//! `punctual serve`: the HTTP API of `../shared/API.md` on top of the engine.
//!
//! Entry points used by the `punctual` binary: [`ServeArgs`] (the flags of
//! `punctual serve`) and [`serve`].

use clap::Args;

/// The flags of `punctual serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {}

/// Runs the server until SIGTERM or SIGINT.
pub async fn serve(_args: ServeArgs) -> anyhow::Result<()> {
    anyhow::bail!("punctual serve is being built")
}
