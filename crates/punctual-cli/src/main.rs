//! The `punctual` binary: `punctual serve` runs the server; the other subcommands are
//! a client of a running server.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "punctual", version, about = "Durable delayed tasks that fire on time")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server (HTTP API, engine, embedded store by default).
    Serve(punctual_server::ServeArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Serve(args) => punctual_server::serve(args).await,
    }
}
