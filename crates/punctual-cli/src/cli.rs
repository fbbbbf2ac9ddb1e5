//! The command line as clap sees it: every subcommand, its flags, and help that
//! teaches by example ([`help`]). Parsing only; [`crate::commands`] runs what was
//! parsed. `punctual bench` is parsed by the `punctual-bench` binary, which
//! [`crate::bench`] hands its arguments to as typed.
//!
//! Checks that need no server happen here, so they are usage errors (exit 2) before
//! any request: `--payload` must be JSON, `--server` an http(s) URL, names non-empty,
//! `--delay` and `--at` exclusive, `--target-header` of the form `NAME: VALUE`.
//! Durations and times are passed through as typed: the server owns their syntax and
//! names the wrong part when it refuses one. The `--target-*` flags are checked
//! together, as one target, once parsed (`commands::schedule_body`).

pub(crate) mod backup;
pub(crate) mod calendar;
pub(crate) mod cron;
mod help;
pub(crate) mod migrate;
pub(crate) mod outbox;
pub(crate) mod timing;

use std::ffi::OsString;
use std::path::Path;

use clap::builder::NonEmptyStringValueParser;
use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use punctual_core::TargetMethod;
use reqwest::Url;
use serde_json::Value;

use crate::client::parse_server_url;
pub(crate) use cron::CronSyntaxArg;
pub(crate) use timing::TimingArgs;

/// The `punctual` command line.
#[derive(Debug, Parser)]
#[command(
    name = "punctual",
    version,
    about = "Durable delayed tasks that fire on time",
    after_help = help::TOP,
    disable_help_subcommand = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the server (HTTP API, engine, embedded store by default).
    Serve(punctual_server::ServeArgs),
    /// Check a server configuration file without starting anything
    #[command(after_help = help::CHECK_CONFIG)]
    CheckConfig(CheckConfigArgs),
    /// Measure fire lag, bursts, throughput and the cost of pending tasks, in process or over HTTP, beside Redis keyspace notifications, a ZSet polled every second and BullMQ (runs punctual-bench)
    #[command(disable_help_flag = true)]
    Bench(BenchArgs),
    /// Try a cron expression: its next occurrences, in any of the three syntaxes
    #[command(after_help = cron::NEXT, subcommand_required = true)]
    Cron(cron::CronArgs),
    /// The outbox: create its tables in your database, or see how far behind its drain is
    #[command(after_help = outbox::OUTBOX, subcommand_required = true)]
    Outbox(outbox::OutboxArgs),
    /// Copy the embedded store to one file, consistently, while the server runs
    #[command(after_help = backup::BACKUP)]
    Backup(backup::BackupArgs),
    /// Make a backup the embedded store of a directory (the server stopped)
    #[command(after_help = backup::RESTORE)]
    Restore(backup::RestoreArgs),
    /// Move every task, setting and calendar to another store (embedded, Redis, Cluster), then compare
    #[command(after_help = migrate::MIGRATE)]
    Migrate(migrate::MigrateArgs),
    #[command(flatten)]
    Client(ClientCommand),
}

/// `punctual bench ARGS…`: every argument, `--help` included, for `punctual-bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// The benchmark's arguments (see punctual bench --help)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
    pub(crate) args: Vec<OsString>,
}

/// `punctual check-config FILE`.
#[derive(Debug, Args)]
pub(crate) struct CheckConfigArgs {
    /// The TOML file, as given to punctual serve --config
    pub(crate) file: std::path::PathBuf,
}

/// The subcommands that talk to a running server.
#[derive(Debug, Subcommand)]
pub(crate) enum ClientCommand {
    /// Create a task, or replace the one with the same key
    #[command(after_help = help::SCHEDULE)]
    Schedule(Box<ScheduleArgs>),
    /// Show one task
    #[command(after_help = help::GET)]
    Get(TaskArgs),
    /// What happened to a task: every change, who made it, each try and its answer
    #[command(after_help = help::HISTORY)]
    History(TaskArgs),
    /// Cancel a task so it never fires, or every task of a queue carrying a tag
    #[command(after_help = help::CANCEL)]
    Cancel(CancelArgs),
    /// List the queues, or one queue's tasks in due order
    #[command(after_help = help::LS)]
    Ls(LsArgs),
    /// Counts, next due time, overdue and fire lag per queue
    #[command(after_help = help::STATS)]
    Stats(StatsArgs),
    /// List, retry or remove dead tasks (those that used up their attempts)
    #[command(after_help = help::DEAD, subcommand_required = true)]
    Dead(DeadArgs),
    /// List a queue's groups (tasks given --group) with their tasks by state
    #[command(after_help = help::GROUPS, subcommand_required = true)]
    Groups(GroupsArgs),
    /// Show and change a queue's settings; pause, resume or purge it
    #[command(after_help = help::QUEUE, subcommand_required = true)]
    Queue(QueueArgs),
    /// Working-time calendars: list, show, create or replace, remove
    #[command(after_help = calendar::HELP, subcommand_required = true)]
    Calendar(calendar::CalendarArgs),
    /// Move tasks kept elsewhere into punctual (Redis keys with a TTL, Redisson delayed queues)
    #[command(after_help = help::IMPORT, subcommand_required = true)]
    Import(ImportArgs),
}

/// Where the server is and how to print; every client subcommand takes these.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Client options")]
pub(crate) struct ClientArgs {
    /// The server's base URL
    #[arg(
        long,
        env = "PUNCTUAL_SERVER",
        value_name = "URL",
        default_value = "http://127.0.0.1:7575",
        hide_env_values = true,
        value_parser = parse_server_url
    )]
    pub(crate) server: Url,
    /// Bearer token, for a server started with --token
    #[arg(long, env = "PUNCTUAL_TOKEN", value_name = "T", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// Print the server's JSON (pretty) instead of a table
    #[arg(long)]
    pub(crate) json: bool,
}

/// `punctual cancel QUEUE KEY | --tag T`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("which").args(["key", "tag"]).required(true)))]
pub(crate) struct CancelArgs {
    /// The queue (e.g. order.cancel)
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) queue: String,
    /// The task's key in that queue
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) key: Option<String>,
    /// Instead of one key: every task of the queue carrying this tag
    #[arg(long, value_name = "T", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) tag: Option<String>,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// One task: its queue and key.
#[derive(Debug, Args)]
pub(crate) struct TaskArgs {
    /// The queue (e.g. order.cancel)
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) queue: String,
    /// The task's key in that queue (any UTF-8, e.g. order-1234)
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) key: String,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("repeat_rule").args(["repeat_every", "repeat_cron"])))]
pub(crate) struct ScheduleArgs {
    /// The queue; it selects the handler (e.g. order.cancel)
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) queue: String,
    /// The task's key in that queue: scheduling the same key again replaces the task
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) key: String,
    /// Due this long from now (30s, 30m, '1h 30m', 7d, or milliseconds)
    #[arg(long, value_name = "D", conflicts_with = "at", value_parser = duration_arg)]
    pub(crate) delay: Option<String>,
    /// Due at this time (RFC 3339 such as 2026-11-30T09:00:00+08:00, or epoch ms)
    #[arg(long, value_name = "T", value_parser = time_arg)]
    pub(crate) at: Option<String>,
    /// The JSON the handler receives, or @FILE to read it from a file
    #[arg(long, value_name = "JSON", value_parser = parse_payload)]
    pub(crate) payload: Option<Value>,
    /// Fire again this long after each due time (fixed rate; missed ones are skipped)
    #[arg(long, value_name = "D", conflicts_with = "repeat_cron", value_parser = duration_arg)]
    pub(crate) repeat_every: Option<String>,
    /// Fire again at the times of a cron expression (e.g. '0 9 * * MON-FRI')
    #[arg(long, value_name = "EXPR")]
    pub(crate) repeat_cron: Option<String>,
    /// The IANA time zone of --repeat-cron (default UTC)
    #[arg(long, value_name = "ZONE", requires = "repeat_cron")]
    pub(crate) tz: Option<String>,
    /// How --repeat-cron is written: vixie (default), spring (6 fields, seconds first,
    /// ? L W #) or quartz (Sunday = 1, an optional year); see punctual cron next
    #[arg(long, value_enum, value_name = "SYNTAX", requires = "repeat_cron")]
    pub(crate) cron_syntax: Option<CronSyntaxArg>,
    /// How many times to fire in all, the first included
    #[arg(long, value_name = "N", requires = "repeat_rule", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) repeat_times: Option<u32>,
    /// The last time a repetition may be due
    #[arg(long, value_name = "T", requires = "repeat_rule", value_parser = time_arg)]
    pub(crate) repeat_until: Option<String>,
    /// A label for cancelling related tasks together (repeatable)
    #[arg(long = "tag", value_name = "T", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) tags: Vec<String>,
    /// Give up (the task goes dead) after this many failed tries
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_attempts: Option<u32>,
    /// 0 (the default) to 9: once due, handed out before the queue's due tasks of lower priority
    #[arg(long, value_name = "0-9", value_parser = clap::value_parser!(u8).range(0..=9))]
    pub(crate) priority: Option<u8>,
    /// A group such as a customer: the queue's group_concurrency bounds its leased
    /// tasks, and groups take turns, so one group's backlog never starves another's
    #[arg(long, value_name = "G", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) group: Option<String>,
    /// Debounce: a burst of schedules of this key fires once, with the last payload, due
    /// at the last one's time but no later than D after the burst's first (e.g. 10m)
    #[arg(long, value_name = "D", value_parser = duration_arg)]
    pub(crate) debounce_max: Option<String>,
    /// Dedupe window: for D after this task completed, a schedule of its key is kept and
    /// creates nothing (e.g. 1h)
    #[arg(long, value_name = "D", value_parser = duration_arg)]
    pub(crate) unique_for: Option<String>,
    /// With --unique-for: the window holds the key after the task went dead too
    #[arg(long, requires = "unique_for")]
    pub(crate) unique_dead: bool,
    /// Count --delay in this working-time calendar (whole days as working days), or
    /// with --at move a time outside working hours to its next opening; a repeat runs
    /// in its working time (punctual calendar ls)
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) calendar: Option<String>,
    /// When the key exists: replace it (the default), keep it untouched, or error (exit 1)
    #[arg(long, value_enum, value_name = "MODE")]
    pub(crate) if_exists: Option<IfExists>,
    #[command(flatten)]
    pub(crate) timing: TimingArgs,
    /// The server delivers the task to this http(s) URL when due, instead of a handler
    #[arg(long, value_name = "URL", help_heading = "HTTP target")]
    pub(crate) target_url: Option<String>,
    /// The target's method: POST (default), PUT, PATCH, GET (sent without a body) or DELETE
    #[arg(long, value_name = "M", help_heading = "HTTP target", value_parser = target_method_arg)]
    pub(crate) target_method: Option<TargetMethod>,
    /// A header sent to the target, such as 'X-Tenant: acme' (repeatable)
    #[arg(
        long = "target-header",
        value_name = "NAME: VALUE",
        help_heading = "HTTP target",
        value_parser = target_header_arg
    )]
    pub(crate) target_headers: Vec<(String, String)>,
    /// How long the target may take to answer, 1s to 60s (default 10s)
    #[arg(long, value_name = "D", help_heading = "HTTP target", value_parser = duration_arg)]
    pub(crate) target_timeout: Option<String>,
    /// The body sent instead of the standard delivery body: JSON, or @FILE
    #[arg(long, value_name = "JSON", help_heading = "HTTP target", value_parser = parse_target_body)]
    pub(crate) target_body: Option<Value>,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// `if_exists` of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum IfExists {
    Replace,
    Keep,
    Error,
}

impl IfExists {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            IfExists::Replace => "replace",
            IfExists::Keep => "keep",
            IfExists::Error => "error",
        }
    }
}

/// Task states a listing can filter on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum State {
    Scheduled,
    Leased,
    Dead,
}

impl State {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            State::Scheduled => "scheduled",
            State::Leased => "leased",
            State::Dead => "dead",
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct LsArgs {
    /// The queue whose tasks to list; without it, list the queues
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) queue: Option<String>,
    /// Only tasks in this state
    #[arg(long, value_enum, requires = "queue")]
    pub(crate) state: Option<State>,
    /// Only tasks carrying this tag
    #[arg(long, value_name = "T", requires = "queue", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) tag: Option<String>,
    #[command(flatten)]
    pub(crate) page: PageArgs,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// How much of a task list to fetch.
#[derive(Debug, Clone, Args)]
pub(crate) struct PageArgs {
    /// Show at most this many tasks
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) limit: u32,
    /// Continue a listing from the cursor an earlier one printed
    #[arg(long, value_name = "CURSOR")]
    pub(crate) cursor: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    /// Only this queue
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) queue: Option<String>,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

#[derive(Debug, Args)]
pub(crate) struct GroupsArgs {
    #[command(subcommand)]
    pub(crate) command: GroupsCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum GroupsCommand {
    /// List a queue's groups that have tasks, by name, with their tasks by state
    #[command(after_help = help::GROUPS_LS)]
    Ls(GroupsLsArgs),
}

/// `punctual groups ls QUEUE`.
#[derive(Debug, Args)]
pub(crate) struct GroupsLsArgs {
    /// The queue
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) queue: String,
    /// Show at most this many groups
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) limit: u32,
    /// Continue a listing from the cursor an earlier one printed
    #[arg(long, value_name = "CURSOR")]
    pub(crate) cursor: Option<String>,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

#[derive(Debug, Args)]
pub(crate) struct DeadArgs {
    #[command(subcommand)]
    pub(crate) command: DeadCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum DeadCommand {
    /// List a queue's dead tasks
    #[command(after_help = help::DEAD_LS)]
    Ls(DeadLsArgs),
    /// Schedule dead tasks again, due now, with their attempts reset: one, those with a tag, or all
    #[command(after_help = help::DEAD_RETRY)]
    Retry(DeadRetryArgs),
    /// Delete a dead task for good
    #[command(after_help = help::DEAD_RM)]
    Rm(TaskArgs),
}

/// `punctual dead retry QUEUE [KEY | --tag T]`.
#[derive(Debug, Args)]
pub(crate) struct DeadRetryArgs {
    /// The queue
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) queue: String,
    /// The dead task's key; without it (and --tag), every dead task of the queue
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) key: Option<String>,
    /// Instead of one key: the dead tasks carrying this tag
    #[arg(long, value_name = "T", conflicts_with = "key", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) tag: Option<String>,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

#[derive(Debug, Args)]
pub(crate) struct DeadLsArgs {
    /// The queue
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) queue: String,
    #[command(flatten)]
    pub(crate) page: PageArgs,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

#[derive(Debug, Args)]
pub(crate) struct QueueArgs {
    #[command(subcommand)]
    pub(crate) command: QueueCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum QueueCommand {
    /// List the queues: counts, next due time, paused
    #[command(after_help = help::QUEUE_LS)]
    Ls(QueueLsArgs),
    /// Show a queue's settings: source, task defaults, action, limits, paused, version
    #[command(after_help = help::QUEUE_GET)]
    Get(QueueNameArgs),
    /// Create or replace a queue's settings from a JSON file
    #[command(after_help = help::QUEUE_SET)]
    Set(QueueSetArgs),
    /// Stop leasing and delivering a queue's tasks until it is resumed
    #[command(after_help = help::QUEUE_PAUSE)]
    Pause(QueueNameArgs),
    /// Lease and deliver a paused queue's tasks again
    #[command(after_help = help::QUEUE_RESUME)]
    Resume(QueueNameArgs),
    /// Cancel every task of a queue in a state, for good
    #[command(after_help = help::QUEUE_PURGE)]
    Purge(QueuePurgeArgs),
    /// Remove a queue's settings (its tasks stay)
    #[command(after_help = help::QUEUE_RM)]
    Rm(QueueRmArgs),
}

/// `punctual queue ls`.
#[derive(Debug, Args)]
pub(crate) struct QueueLsArgs {
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// One queue.
#[derive(Debug, Args)]
pub(crate) struct QueueNameArgs {
    /// The queue (e.g. order.cancel)
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) queue: String,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// `punctual queue set QUEUE --file F [--if-version N] [--patch]`.
#[derive(Debug, Args)]
pub(crate) struct QueueSetArgs {
    /// The queue (e.g. order.cancel)
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) queue: String,
    /// The settings as a JSON file, or - to read them from standard input
    #[arg(long, value_name = "FILE", value_parser = parse_settings_file)]
    pub(crate) file: Value,
    /// Only if the settings are still at this version (as queue get shows it)
    #[arg(long, value_name = "N")]
    pub(crate) if_version: Option<u64>,
    /// Change only the top-level fields the file gives; keep the others as stored
    #[arg(long)]
    pub(crate) patch: bool,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// `punctual queue rm QUEUE [--if-version N]`.
#[derive(Debug, Args)]
pub(crate) struct QueueRmArgs {
    /// The queue (e.g. order.cancel)
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) queue: String,
    /// Only if the settings are still at this version (as queue get shows it)
    #[arg(long, value_name = "N")]
    pub(crate) if_version: Option<u64>,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// `punctual queue purge QUEUE [--state S] [--yes]`.
#[derive(Debug, Args)]
pub(crate) struct QueuePurgeArgs {
    /// The queue (e.g. order.cancel)
    #[arg(value_parser = NonEmptyStringValueParser::new())]
    pub(crate) queue: String,
    /// Which tasks: scheduled, dead, or all (leased ones too)
    #[arg(long, value_enum, default_value_t = PurgeState::All)]
    pub(crate) state: PurgeState,
    /// Purge without asking
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    #[command(subcommand)]
    pub(crate) command: ImportCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ImportCommand {
    /// Schedule a task for each Redis key with a TTL, due when the key would expire
    #[command(after_help = help::IMPORT_KEYSPACE)]
    Keyspace(Box<KeyspaceArgs>),
    /// Schedule a task for each element a Redisson RDelayedQueue still delays, due when Redisson would deliver it
    #[command(after_help = help::IMPORT_REDISSON)]
    Redisson(Box<RedissonArgs>),
}

/// `punctual import keyspace --redis URL --match PATTERN --queue Q …`.
#[derive(Debug, Args)]
pub(crate) struct KeyspaceArgs {
    /// The Redis the keys are in (redis://[:PASSWORD@]HOST:PORT[/DB], rediss:// for TLS)
    #[arg(long, value_name = "URL", value_parser = redis_url_arg)]
    pub(crate) redis: String,
    /// Which keys: a Redis glob, as SCAN MATCH reads it (e.g. 'flow:reminder:*')
    #[arg(long = "match", value_name = "PATTERN", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) pattern: String,
    /// The punctual queue the tasks go to (e.g. flow.reminder)
    #[arg(long, value_name = "Q", value_parser = queue_arg)]
    pub(crate) queue: String,
    /// Cut this from the start of each Redis key to make the task key; keys that do not start with it are skipped
    #[arg(long, value_name = "P")]
    pub(crate) strip_prefix: Option<String>,
    /// What the task carries: the value as a JSON string, the value parsed as JSON (a value that is not JSON is skipped and named), or nothing
    #[arg(long, value_enum, value_name = "MODE", default_value_t = PayloadMode::Value)]
    pub(crate) payload: PayloadMode,
    /// Delete each key from Redis once its task is stored, if it did not change meanwhile (Redis 7 or newer)
    #[arg(long)]
    pub(crate) delete_source: bool,
    /// With --delete-source: keys expiring sooner than this are left to the expiry listener
    #[arg(long, value_name = "D", default_value = "5s", value_parser = std_duration_arg)]
    pub(crate) min_ttl: std::time::Duration,
    /// Read and report what would be imported and deleted; write nothing, to Redis or to punctual
    #[arg(long)]
    pub(crate) dry_run: bool,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// `punctual import redisson --redis URL --delayed-queue NAME --codec C --queue Q …`.
#[derive(Debug, Args)]
pub(crate) struct RedissonArgs {
    /// The Redis the delayed queue is in (redis://[:PASSWORD@]HOST:PORT[/DB], rediss:// for TLS)
    #[arg(long, value_name = "URL", value_parser = redis_url_arg)]
    pub(crate) redis: String,
    /// The name of the queue the RDelayedQueue feeds, as given to Redisson (getDelayedQueue(redisson.getBlockingQueue(NAME)))
    #[arg(long, value_name = "NAME", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) delayed_queue: String,
    /// The codec the queue was created with: string (StringCodec) or json-jackson (JsonJacksonCodec); others are refused
    #[arg(long, value_name = "CODEC", value_parser = redisson_codec_arg)]
    pub(crate) codec: RedissonCodec,
    /// The punctual queue the tasks go to (e.g. order.cancel)
    #[arg(long, value_name = "Q", value_parser = queue_arg)]
    pub(crate) queue: String,
    /// What the task carries: the text as a JSON string (value, the default with --codec string), the value as JSON (json, the default with --codec json-jackson), or nothing
    #[arg(long, value_enum, value_name = "MODE")]
    pub(crate) payload: Option<PayloadMode>,
    /// Take each task's key from this top-level field of the element's JSON (a string or an integer) instead of redisson-<its id>
    #[arg(long, value_name = "FIELD", value_parser = NonEmptyStringValueParser::new())]
    pub(crate) key_field: Option<String>,
    /// With --codec json-jackson: keep Jackson's type hints (@class properties, ["java.util.ArrayList", [...]] wrappers) in the payload
    #[arg(long)]
    pub(crate) keep_type_hints: bool,
    /// Read and report what would be imported and removed; write nothing, to Redis or to punctual
    #[arg(long)]
    pub(crate) dry_run: bool,
    #[command(flatten)]
    pub(crate) client: ClientArgs,
}

/// `--codec` of `import redisson`: the Redisson codecs whose values are text or JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedissonCodec {
    /// `StringCodec`: the value is UTF-8 text.
    String,
    /// `JsonJacksonCodec`: the value is JSON written by Jackson with default typing.
    JsonJackson,
}

/// `--codec`: `string` or `json-jackson`, also written as Redisson's class names
/// (`StringCodec`, `org.redisson.codec.JsonJacksonCodec`). Any other codec is refused
/// with its name, why, and the codecs that are read.
fn redisson_codec_arg(text: &str) -> Result<RedissonCodec, String> {
    let simple = text.rsplit('.').next().unwrap_or(text).to_lowercase().replace(['-', '_'], "");
    let simple = simple.strip_suffix("codec").unwrap_or(&simple);
    let why = match simple {
        "string" => return Ok(RedissonCodec::String),
        "jsonjackson" => return Ok(RedissonCodec::JsonJackson),
        "kryo5" | "kryo" => "Kryo's binary format (Kryo5Codec is Redisson's default codec)",
        "marshalling" => "JBoss Marshalling's binary format",
        "fst" => "FST's binary format",
        "serialization" => "Java serialization",
        "smile" | "smilejackson" => "Smile, a binary JSON",
        "cbor" | "cborjackson" => "CBOR, a binary JSON",
        "msgpack" | "msgpackjackson" => "MessagePack, a binary JSON",
        "avro" | "avrojackson" => "Avro's binary format",
        "ion" | "ionjackson" => "Amazon Ion's binary format",
        "snappy" | "snappyv2" | "lz4" | "lz4v2" | "zstd" => "another codec's bytes, compressed",
        "typedjsonjackson" => {
            "JSON of one fixed class, without type hints: import it with --codec json-jackson, whose JSON \
             reading takes it as it is (add --keep-type-hints to leave every array as written)"
        }
        _ => "a format this import does not know",
    };
    Err(format!(
        "the codec '{text}' is not read: it stores {why}. punctual import redisson reads the codecs that store \
         text or JSON: string (StringCodec) and json-jackson (JsonJacksonCodec); move elements of other codecs \
         with a Java program that polls them and schedules each with a punctual client"
    ))
}

/// `--payload` of `import keyspace` and `import redisson`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PayloadMode {
    /// The string value, as a JSON string
    Value,
    /// The value parsed as JSON
    Json,
    /// No payload (the key says it all)
    None,
}

/// The task states a purge takes (`?state=` of the API).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum PurgeState {
    Scheduled,
    Dead,
    All,
}

impl PurgeState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PurgeState::Scheduled => "scheduled",
            PurgeState::Dead => "dead",
            PurgeState::All => "all",
        }
    }
}

/// `--redis`: a URL the Redis client can connect with (its syntax only).
fn redis_url_arg(text: &str) -> Result<String, String> {
    punctual_redis::source::check_url(text).map(|()| text.to_owned()).map_err(|e| {
        format!("not a Redis URL ({}); write e.g. redis://127.0.0.1:6379 or redis://:PASSWORD@HOST:6379/0", reason(e))
    })
}

/// `--queue`: a valid queue name, so a typo is a usage error before Redis is read.
fn queue_arg(text: &str) -> Result<String, String> {
    punctual_core::QueueName::new(text).map(|_| text.to_owned()).map_err(reason)
}

/// What a flag (or its checker) says of a refused value: the reason of an invalid-input error
/// (without the field, which is the flag), else the whole error.
pub(crate) fn reason(error: punctual_core::Error) -> String {
    match error {
        punctual_core::Error::Invalid { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// `--min-ttl`: a duration of the API's syntax, read here (it is used here).
fn std_duration_arg(text: &str) -> Result<std::time::Duration, String> {
    punctual_core::parse_duration(text)
}

/// `--delay`, `--repeat-every`: read as the server reads them, so a typo is a usage
/// error (exit 2) as a bad `--payload` is; sent as typed.
fn duration_arg(text: &str) -> Result<String, String> {
    punctual_core::parse_duration(text).map(|_| text.to_owned())
}

/// `--at`, `--repeat-until`: as [`duration_arg`], for times.
fn time_arg(text: &str) -> Result<String, String> {
    punctual_core::Timestamp::parse(text).map(|_| text.to_owned())
}

/// `--payload`: JSON text, or `@FILE` holding JSON (no JSON text starts with `@`).
fn parse_payload(text: &str) -> Result<Value, String> {
    json_arg(text, "payload")
}

/// `--target-body`: as `--payload`.
fn parse_target_body(text: &str) -> Result<Value, String> {
    json_arg(text, "target-body")
}

/// JSON text or `@FILE` for the flag `--{flag}`; a mistake shows how to quote it.
fn json_arg(text: &str, flag: &str) -> Result<Value, String> {
    if let Some(path) = text.strip_prefix('@') {
        return read_json_file(path, &flag.replace('-', " "));
    }
    serde_json::from_str(text).map_err(|e| {
        format!(
            "not valid JSON ({e}); quote it for the shell, e.g. --{flag} '{{\"order_id\": 1234}}', \
             and write strings with double quotes: --{flag} '\"text\"'"
        )
    })
}

/// `--target-method`: a method of the contract, in any case.
fn target_method_arg(text: &str) -> Result<TargetMethod, String> {
    TargetMethod::parse(text).map_err(reason)
}

/// `--target-header 'NAME: VALUE'`: split at the first `:`, both sides trimmed (the
/// form curl takes). Whether the header may be sent is checked with the whole target,
/// in [`crate::commands::schedule_body`].
fn target_header_arg(text: &str) -> Result<(String, String), String> {
    match text.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_owned(), value.trim().to_owned())),
        _ => Err(format!("'{text}' is not a header: write NAME: VALUE, such as --target-header 'X-Tenant: acme'")),
    }
}

/// `queue set --file`: a file holding JSON, or `-` for standard input. Read while
/// parsing, as `--payload @FILE` is, so a file that is missing or not JSON is a usage
/// error (exit 2) and the server is never called.
fn parse_settings_file(path: &str) -> Result<Value, String> {
    parse_json_file(path, "settings")
}

/// The JSON in the file at `path`, or on standard input for `-`; errors name it as
/// holding `what`.
pub(crate) fn parse_json_file(path: &str, what: &str) -> Result<Value, String> {
    if path != "-" {
        return read_json_file(path, what);
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
        .map_err(|e| format!("cannot read the {what} from standard input: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("the {what} on standard input: not valid JSON: {e}"))
}

/// The JSON in the file at `path`; errors name the file as holding `what`. serde_json's
/// message ends with the line and column at fault.
fn read_json_file(path: &str, what: &str) -> Result<Value, String> {
    let content =
        std::fs::read_to_string(Path::new(path)).map_err(|e| format!("cannot read the {what} file '{path}': {e}"))?;
    serde_json::from_str(&content).map_err(|e| format!("the {what} file '{path}' is not valid JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use clap::error::ErrorKind;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("punctual").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_client_subcommand_has_a_description_and_examples() {
        let mut cli = Cli::command();
        cli.build();
        let mut leaves = Vec::new();
        for sub in cli.get_subcommands() {
            assert!(sub.get_about().is_some(), "{} has no description", sub.get_name());
            if sub.get_name() == "serve" || sub.get_name() == "bench" {
                // Flags of their own: the server's, and the punctual-bench binary's.
                continue;
            }
            assert!(sub.get_after_help().is_some_and(|h| h.to_string().contains("Examples:")), "{}", sub.get_name());
            if ["check-config", "cron", "outbox", "backup", "restore", "migrate"].contains(&sub.get_name()) {
                // Read a local file, compute from the expression alone, speak to the
                // application's database, or work on the store's directory: no server,
                // so no client flags.
                continue;
            }
            if sub.has_subcommands() {
                leaves.extend(sub.get_subcommands().cloned());
            } else {
                leaves.push(sub.clone());
            }
        }
        for leaf in leaves {
            assert!(leaf.get_about().is_some(), "{} has no description", leaf.get_name());
            assert!(leaf.get_after_help().is_some_and(|h| h.to_string().contains("Examples:")), "{}", leaf.get_name());
            for flag in ["server", "token", "json"] {
                assert!(leaf.get_arguments().any(|a| a.get_id() == flag), "{} lacks --{flag}", leaf.get_name());
            }
        }
    }

    #[test]
    fn schedule_takes_every_flag_of_the_api() {
        let cli = parse(&[
            "schedule",
            "order.cancel",
            "订单/1 x@y",
            "--delay",
            "30m",
            "--payload",
            r#"{"order_id": 1234}"#,
            "--repeat-every",
            "24h",
            "--repeat-times",
            "3",
            "--tag",
            "a",
            "--tag",
            "b",
            "--max-attempts",
            "5",
            "--if-exists",
            "keep",
            "--server",
            "http://localhost:9",
            "--token",
            "s3cret",
            "--json",
        ])
        .unwrap();
        let Command::Client(ClientCommand::Schedule(args)) = cli.command else { panic!("not schedule") };
        assert_eq!(args.key, "订单/1 x@y");
        assert_eq!(args.payload, Some(serde_json::json!({"order_id": 1234})));
        assert_eq!(args.tags, ["a", "b"]);
        assert_eq!(args.if_exists, Some(IfExists::Keep));
        assert_eq!(args.client.server.as_str(), "http://localhost:9/");
        assert_eq!(args.client.token.as_deref(), Some("s3cret"));
        assert!(args.client.json);
    }

    #[test]
    fn usage_errors_are_caught_before_any_request() {
        let bad_payload = parse(&["schedule", "q", "k", "--payload", "{order_id: 1}"]).unwrap_err();
        assert_eq!(bad_payload.kind(), ErrorKind::ValueValidation);
        assert!(bad_payload.to_string().contains("not valid JSON"), "{bad_payload}");
        assert_eq!(bad_payload.exit_code(), 2);

        let both = parse(&["schedule", "q", "k", "--delay", "1s", "--at", "2026-01-01T00:00:00Z"]).unwrap_err();
        assert_eq!(both.kind(), ErrorKind::ArgumentConflict);
        assert_eq!(both.exit_code(), 2);

        for args in [
            &["schedule", "q", ""][..],
            &["get", "q"],
            &["schedule", "q", "k", "--if-exists", "sometimes"],
            &["schedule", "q", "k", "--max-attempts", "0"],
            &["schedule", "q", "k", "--repeat-times", "3"],
            &["schedule", "q", "k", "--repeat-every", "1h", "--repeat-cron", "0 9 * * *"],
            &["schedule", "q", "k", "--tz", "UTC"],
            &["ls", "--state", "leased"],
            &["ls", "q", "--limit", "0"],
            &["get", "q", "k", "--server", "ftp://x"],
            &["dead"],
            &["cancel", "q"],
            &["cancel", "q", "k", "--tag", "t"],
            &["cancel", "q", "--tag", ""],
            &["ls", "--tag", "t"],
            &["dead", "retry", "q", "k", "--tag", "t"],
            &["queue"],
            &["queue", "get"],
            &["queue", "set", "q"],
            &["queue", "set", "q", "--file", "/no/such/settings.json"],
            &["queue", "rm", "q", "--if-version", "three"],
            &["queue", "purge", "q", "--state", "leased"],
        ] {
            let e = parse(args).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
        }
    }

    #[test]
    fn target_flags_are_read_as_typed_and_their_syntax_checked_while_parsing() {
        let cli = parse(&[
            "schedule",
            "q",
            "k",
            "--target-url",
            "https://shop.example.com/hooks/cancel",
            "--target-method",
            "patch",
            "--target-header",
            "X-Tenant:  acme ",
            "--target-header",
            "X-Empty:",
            "--target-timeout",
            "1500ms",
            "--target-body",
            "\"text\"",
        ])
        .unwrap();
        let Command::Client(ClientCommand::Schedule(args)) = cli.command else { panic!("not schedule") };
        assert_eq!(args.target_url.as_deref(), Some("https://shop.example.com/hooks/cancel"));
        assert_eq!(args.target_method, Some(TargetMethod::Patch));
        let headers = [("X-Tenant".to_owned(), "acme".to_owned()), ("X-Empty".to_owned(), String::new())];
        assert_eq!(args.target_headers, headers);
        assert_eq!(args.target_timeout.as_deref(), Some("1500ms"));
        assert_eq!(args.target_body, Some(serde_json::json!("text")));

        let no_colon =
            parse(&["schedule", "q", "k", "--target-url", "https://h.example/x", "--target-header", "X-Tenant"])
                .unwrap_err();
        assert_eq!(no_colon.exit_code(), 2);
        let message = no_colon.to_string();
        assert!(message.contains("--target-header"), "{message}");
        assert!(message.contains("write NAME: VALUE, such as --target-header 'X-Tenant: acme'"), "{message}");
        let method = parse(&["schedule", "q", "k", "--target-url", "https://h.example/x", "--target-method", "TRACE"])
            .unwrap_err();
        assert!(method.to_string().contains("use POST, PUT, PATCH, GET or DELETE"), "{method}");
        let body = parse(&["schedule", "q", "k", "--target-url", "https://h.example/x", "--target-body", "{a: 1}"])
            .unwrap_err();
        assert!(body.to_string().contains("e.g. --target-body '{\"order_id\": 1234}'"), "{body}");
        for args in [
            &["schedule", "q", "k", "--target-url", "https://h.example/x", "--target-header", ": v"][..],
            &["schedule", "q", "k", "--target-url", "https://h.example/x", "--target-timeout", "ten seconds"],
            &["schedule", "q", "k", "--target-url", "https://h.example/x", "--target-body", "@/no/such/body.json"],
        ] {
            assert_eq!(parse(args).unwrap_err().exit_code(), 2, "{args:?}");
        }
    }

    #[test]
    fn bench_takes_every_argument_as_typed_help_included() {
        let cli = parse(&["bench", "--tasks", "5", "--help", "-q", "--", "x"]).unwrap();
        let Command::Bench(args) = cli.command else { panic!("not bench") };
        assert_eq!(args.args, ["--tasks", "5", "--help", "-q", "--", "x"]);
        let Command::Bench(args) = parse(&["bench"]).unwrap().command else { panic!("not bench") };
        assert!(args.args.is_empty(), "punctual-bench says what is missing");
    }

    /// A fresh directory of this test process, removed by the test.
    fn tempfile_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("punctual-cli-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn payloads_can_come_from_a_file() {
        let dir = tempfile_dir("payload");
        let file = dir.join("p.json");
        std::fs::write(&file, r#"{"big": [1, 2, 3]}"#).unwrap();
        assert_eq!(parse_payload(&format!("@{}", file.display())), Ok(serde_json::json!({"big": [1, 2, 3]})));
        assert!(parse_payload("@/no/such/file").unwrap_err().contains("cannot read"));
        assert_eq!(parse_payload("\"text\""), Ok(serde_json::json!("text")));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn settings_files_are_json_and_a_bad_one_names_the_file_and_position() {
        let dir = tempfile_dir("settings");
        let good = dir.join("good.json");
        std::fs::write(&good, r#"{"concurrency": 4}"#).unwrap();
        let cli =
            parse(&["queue", "set", "q", "--file", good.to_str().unwrap(), "--if-version", "3", "--patch"]).unwrap();
        let Command::Client(ClientCommand::Queue(QueueArgs { command: QueueCommand::Set(args) })) = cli.command else {
            panic!("not queue set")
        };
        assert_eq!((args.file, args.if_version, args.patch), (serde_json::json!({"concurrency": 4}), Some(3), true));

        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{\n  \"defaults\": {\"max_attempts\": 0,}\n}").unwrap();
        let e = parse(&["queue", "set", "q", "--file", bad.to_str().unwrap()]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let message = e.to_string();
        assert!(message.contains(&format!("the settings file '{}' is not valid JSON", bad.display())), "{message}");
        assert!(message.contains("trailing comma at line 2 column 34"), "{message}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn purge_takes_all_by_default_and_yes() {
        let purge = |args: &[&str]| match parse(args).unwrap().command {
            Command::Client(ClientCommand::Queue(QueueArgs { command: QueueCommand::Purge(args) })) => {
                (args.state, args.yes)
            }
            other => panic!("not queue purge: {other:?}"),
        };
        assert_eq!(purge(&["queue", "purge", "q"]), (PurgeState::All, false));
        assert_eq!(purge(&["queue", "purge", "q", "--state", "dead", "--yes"]), (PurgeState::Dead, true));
        assert_eq!(purge(&["queue", "purge", "q", "-y", "--state", "scheduled"]), (PurgeState::Scheduled, true));
    }

    #[test]
    fn dead_subcommands_take_queue_and_key() {
        let cli = parse(&["dead", "rm", "q", "k", "--json"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Client(ClientCommand::Dead(DeadArgs { command: DeadCommand::Rm(TaskArgs { .. }) }))
        ));
        let cli = parse(&["dead", "ls", "q", "--limit", "5"]).unwrap();
        let Command::Client(ClientCommand::Dead(DeadArgs { command: DeadCommand::Ls(args) })) = cli.command else {
            panic!()
        };
        assert_eq!(args.page.limit, 5);
        let retry = |args: &[&str]| match parse(args).unwrap().command {
            Command::Client(ClientCommand::Dead(DeadArgs { command: DeadCommand::Retry(args) })) => {
                (args.key, args.tag)
            }
            other => panic!("not dead retry: {other:?}"),
        };
        assert_eq!(retry(&["dead", "retry", "q"]), (None, None), "every dead task");
        assert_eq!(retry(&["dead", "retry", "q", "--tag", "t"]), (None, Some("t".into())));
        assert_eq!(retry(&["dead", "retry", "q", "k"]), (Some("k".into()), None));
    }
}
