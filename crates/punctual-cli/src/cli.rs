//! The command line as clap sees it: every subcommand, its flags, and help that
//! teaches by example. Parsing only; [`crate::commands`] runs what was parsed.
//!
//! Checks that need no server happen here, so they are usage errors (exit 2) before
//! any request: `--payload` must be JSON, `--server` an http(s) URL, names non-empty,
//! `--delay` and `--at` exclusive, `--target-header` of the form `NAME: VALUE`.
//! Durations and times are passed through as typed: the server owns their syntax and
//! names the wrong part when it refuses one. The `--target-*` flags are checked
//! together, as one target, once parsed (`commands::schedule_body`).

use std::path::Path;

use clap::builder::NonEmptyStringValueParser;
use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use punctual_core::TargetMethod;
use reqwest::Url;
use serde_json::Value;

use crate::client::parse_server_url;

const IMPORT_AFTER_HELP: &str = "\
Examples:
  punctual import keyspace --redis redis://127.0.0.1:6379 --match 'flow:reminder:*' \\
      --strip-prefix flow:reminder: --queue flow.reminder --dry-run

See punctual import keyspace --help, and docs/migrate-from-keyspace-notifications.md for
the cut-over plan.";

const IMPORT_KEYSPACE_AFTER_HELP: &str = "\
Examples:
  # What would be imported: reads Redis, writes nothing
  punctual import keyspace --redis redis://127.0.0.1:6379 --match 'flow:reminder:*' \\
      --strip-prefix flow:reminder: --queue flow.reminder --dry-run

  # Import, and delete each key once punctual has its task (the cut-over's step 3)
  punctual import keyspace --redis redis://:s3cret@10.0.0.5:6379/0 --match 'flow:reminder:*' \\
      --strip-prefix flow:reminder: --queue flow.reminder --payload json --delete-source

Each key with a TTL becomes a task in --queue, due when the key would expire (now +
its remaining TTL); its key is the Redis key without --strip-prefix. Tasks are sent
with if_exists keep, so a task already in punctual is left as it is and a re-run
imports nothing twice. Skipped and counted: keys without a TTL, keys that are not
strings (hashes, lists… carry no value to import), keys that expire while being read,
keys that do not start with --strip-prefix or are not valid task keys (1-512 bytes of
UTF-8, no control characters), with --payload value a value that is not UTF-8, with
--payload json a value that is not JSON; each is named on standard error (the first
50).

Redis is never blocked: SCAN in pages of 1000, pipelined reads (PEXPIRETIME or PTTL,
and GET), one batch request per page. --delete-source deletes a key only after the
server confirmed its task, and only if its value and expiry are still what was read
(one script per key compares and deletes); a changed key is kept and counted. It needs
Redis 7 (PEXPIRETIME) and refuses to run on an older one. Progress goes to standard
error, the counts to standard output (--json: as JSON).

Exit status: 0 when done (skipped keys are counted, not errors), 1 when Redis or the
server cannot be reached or the server refused keys (named on standard error), 2 on a
usage error (a bad --match pattern, a --strip-prefix no matched key can start with, a
bad --payload).";

const TOP_AFTER_HELP: &str = "\
Examples:
  punctual serve                                       # start a server on 127.0.0.1:7575
  punctual schedule order.cancel order-1234 --delay 30m --payload '{\"order_id\": 1234}'
  punctual get order.cancel order-1234
  punctual ls                                          # every queue with its counts
  punctual ls order.cancel                             # that queue's tasks, in due order
  punctual cancel order.cancel order-1234
  punctual cancel order.cancel --tag pi-9              # every task of the queue tagged pi-9
  punctual queue pause order.cancel                    # lease and deliver nothing of it until resumed
  punctual import keyspace --redis redis://127.0.0.1:6379 --match 'flow:*' --queue flow.reminder --dry-run

Client commands talk to the server at --server (env PUNCTUAL_SERVER, default
http://127.0.0.1:7575) with --token (env PUNCTUAL_TOKEN). They print tables; --json prints
the server's JSON. Exit status: 0 success, 1 refused by the server, not found or
unreachable, 2 usage error.

Run 'punctual <COMMAND> --help' for a command's flags and examples.";

const SCHEDULE_AFTER_HELP: &str = "\
Examples:
  # Cancel order 1234 in 30 minutes unless it is paid first
  punctual schedule order.cancel order-1234 --delay 30m --payload '{\"order_id\": 1234}'

  # At a fixed time (RFC 3339 with any offset, or epoch milliseconds)
  punctual schedule report.daily 2026-11-30 --at 2026-11-30T09:00:00+08:00

  # Every 24 hours, three times in all, tagged so the workflow can be cancelled at once
  punctual schedule reminder.chief pi-9 --delay 1h --repeat-every 24h --repeat-times 3 --tag pi-9

  # Weekdays at 09:00 Shanghai time
  punctual schedule report.daily weekday --repeat-cron '0 9 * * MON-FRI' --tz Asia/Shanghai

  # Create only if absent; leave an existing task untouched
  punctual schedule order.cancel order-1234 --delay 30m --if-exists keep

  # The server itself calls your endpoint when the task is due (an HTTP target)
  punctual schedule order.cancel order-1234 --delay 30m --payload '{\"order_id\": 1234}' \\
      --target-url https://shop.example.com/hooks/cancel --target-header 'X-Tenant: acme'

Scheduling the same QUEUE and KEY again replaces the task (new due time, payload and
policies) unless --if-exists says otherwise, so a key names one pending action.
Durations: 1500ms, 30s, 30m, '1h 30m', 24h, 7d, or integer milliseconds. With neither
--delay nor --at the task is due now. Policies not given take the queue's defaults.

With --target-url the server delivers the task when due, as a webhook of its own: POST
(or --target-method) with the standard delivery body (or --target-body), signed when
the queue or the server has a secret, answered as docs/webhooks.md says; pull workers
never lease it. The other --target-* flags need --target-url.";

const CHECK_CONFIG_AFTER_HELP: &str = "\
Examples:
  punctual check-config punctual.toml
  WECOM_KEY=... punctual check-config /etc/punctual.toml

Checks what punctual serve --config would: unknown keys, bad values and URLs, template
syntax, time zones, and that every secret_env / url_env / password_env variable is set
(in this environment). Exit status 0 when the file is valid, 1 with the file, line and
reason when it is not.";

const GET_AFTER_HELP: &str = "\
Examples:
  punctual get order.cancel order-1234
  punctual get order.cancel 'key with spaces/and slashes' --json

Exit status 1 when the task does not exist (done and cancelled tasks are deleted).";

const CANCEL_AFTER_HELP: &str = "\
Examples:
  punctual cancel order.cancel order-1234
  punctual cancel flow.reminder --tag pi-9      # the workflow moved on: drop its reminders

A leased (running) task is cancelled for good: no retry, no repeat. Exit status 1 when
the task does not exist. With --json, prints {\"outcome\": \"cancelled\", \"queue\", \"key\"};
with --tag, the server's {\"cancelled\": N} (0 when no task carries the tag, exit 0).";

const LS_AFTER_HELP: &str = "\
Examples:
  punctual ls                                   # queues: counts and next due time
  punctual ls order.cancel                      # the first 100 tasks, in due order
  punctual ls order.cancel --state leased       # only the running ones
  punctual ls flow.reminder --tag pi-9          # only the tasks tagged pi-9
  punctual ls order.cancel --limit 1000 --json  # for scripts (next_cursor to continue)
  punctual ls order.cancel --cursor <CURSOR>    # continue where a listing stopped

Pages are fetched until --limit tasks; when more remain, the output says so and gives
the cursor to continue from.";

const STATS_AFTER_HELP: &str = "\
Examples:
  punctual stats                  # every queue, with a total
  punctual stats order.cancel     # one queue
  punctual stats --json

NEXT DUE is the earliest due task; OLDEST OVERDUE how long the most overdue task has
waited past its due time (a sign that handlers are not keeping up); LAG how late recent
tasks fired after their due time.";

const DEAD_AFTER_HELP: &str = "\
Tasks die after max_attempts failed tries, or when a handler answers 'fail'. They are
kept until retried or removed.

Examples:
  punctual dead ls order.cancel
  punctual dead retry order.cancel order-1234
  punctual dead retry order.cancel               # every dead task of the queue
  punctual dead rm order.cancel order-1234";

const DEAD_LS_AFTER_HELP: &str = "\
Examples:
  punctual dead ls order.cancel
  punctual dead ls order.cancel --limit 1000 --json";

const DEAD_RETRY_AFTER_HELP: &str = "\
Examples:
  punctual dead retry order.cancel order-1234   # one dead task
  punctual dead retry order.cancel --tag pi-9   # the dead tasks tagged pi-9
  punctual dead retry order.cancel              # every dead task of the queue

Each task is scheduled again, due now, with its attempts reset. With a KEY, exit status
1 when no dead task has that key; otherwise it says how many were retried (0 is not an
error). With --json, prints the task, or the server's {\"retried\": N}.";

const DEAD_RM_AFTER_HELP: &str = "\
Examples:
  punctual dead rm order.cancel order-1234

Exit status 1 when no dead task has that key.";

const QUEUE_AFTER_HELP: &str = "\
A queue's settings (task defaults, push action, concurrency, rate, shards, targets) are
stored by the server and shared by every node, changed without a restart. A queue of the
server's config file is changed in that file; it can still be paused and resumed.

Examples:
  punctual queue ls
  punctual queue get order.cancel
  punctual queue set order.cancel --file order-cancel.json
  punctual queue pause order.cancel
  punctual queue resume order.cancel
  punctual queue purge order.cancel --state dead --yes
  punctual queue rm order.cancel";

const QUEUE_LS_AFTER_HELP: &str = "\
Examples:
  punctual queue ls           # counts, next due time and whether each queue is paused
  punctual queue ls --json

The same list as punctual ls without a queue.";

const QUEUE_GET_AFTER_HELP: &str = "\
Examples:
  punctual queue get order.cancel
  punctual queue get order.cancel --json > order-cancel.json   # edit, then queue set

Exit status 1 when the queue has no settings (its tasks take the built-in defaults).";

const QUEUE_SET_AFTER_HELP: &str = "\
Examples:
  # order-cancel.json: {\"defaults\": {\"max_attempts\": 10},
  #   \"action\": {\"kind\": \"webhook\", \"url\": \"https://shop.example.com/hooks/cancel\",
  #              \"secret_env\": \"ORDER_HOOK_SECRET\"}, \"concurrency\": 16, \"rate\": \"20/1m\"}
  punctual queue set order.cancel --file order-cancel.json

  # Only if nobody changed them since version 3 (what queue get showed)
  punctual queue set order.cancel --file order-cancel.json --if-version 3

  # Change only the fields given, keep the others
  echo '{\"concurrency\": 4}' | punctual queue set order.cancel --file - --patch

The file holds the settings object of punctual queue get --json (its read-only fields,
such as version and paused, are ignored); fields left out take their defaults, or with
--patch keep their stored values. A secret is named by an environment variable of the
server (secret_env, password_env, url_env), never given. Exit status 1 when the server
refuses the settings (the message names the field) or --if-version is stale; 2 when the
file cannot be read or is not JSON.";

const QUEUE_PAUSE_AFTER_HELP: &str = "\
Examples:
  punctual queue pause order.cancel

A paused queue keeps accepting schedules, cancels and reads; nothing of it is leased or
delivered (running deliveries finish) until it is resumed. The pause is stored: it
lasts across restarts and holds on every node.";

const QUEUE_RESUME_AFTER_HELP: &str = "\
Examples:
  punctual queue resume order.cancel

The tasks that fell due while the queue was paused fire at once, in due order.";

const QUEUE_PURGE_AFTER_HELP: &str = "\
Examples:
  punctual queue purge order.cancel --state dead --yes     # drop every dead task
  punctual queue purge order.cancel --state scheduled      # asks first on a terminal
  punctual queue purge order.cancel --yes                  # every task, leased ones too

Cancels the queue's tasks in that state for good (leased ones as by cancel: their acks
then fail). Asks for confirmation on a terminal; elsewhere (scripts, pipes) it needs
--yes and exits 2 without it.";

const QUEUE_RM_AFTER_HELP: &str = "\
Examples:
  punctual queue rm order.cancel
  punctual queue rm order.cancel --if-version 4

Removes the stored settings; the queue's tasks stay and take the built-in defaults.
Exit status 1 when the queue has no settings or --if-version is stale.";

/// The `punctual` command line.
#[derive(Debug, Parser)]
#[command(
    name = "punctual",
    version,
    about = "Durable delayed tasks that fire on time",
    after_help = TOP_AFTER_HELP,
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
    #[command(after_help = CHECK_CONFIG_AFTER_HELP)]
    CheckConfig(CheckConfigArgs),
    /// Measure fire lag, bursts, throughput and the cost of pending tasks, in process or over HTTP, beside Redis keyspace notifications, a ZSet polled every second and BullMQ
    #[command(after_help = punctual_bench::AFTER_HELP)]
    Bench(Box<punctual_bench::BenchArgs>),
    #[command(flatten)]
    Client(ClientCommand),
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
    #[command(after_help = SCHEDULE_AFTER_HELP)]
    Schedule(Box<ScheduleArgs>),
    /// Show one task
    #[command(after_help = GET_AFTER_HELP)]
    Get(TaskArgs),
    /// Cancel a task so it never fires, or every task of a queue carrying a tag
    #[command(after_help = CANCEL_AFTER_HELP)]
    Cancel(CancelArgs),
    /// List the queues, or one queue's tasks in due order
    #[command(after_help = LS_AFTER_HELP)]
    Ls(LsArgs),
    /// Counts, next due time, overdue and fire lag per queue
    #[command(after_help = STATS_AFTER_HELP)]
    Stats(StatsArgs),
    /// List, retry or remove dead tasks (those that used up their attempts)
    #[command(after_help = DEAD_AFTER_HELP, subcommand_required = true)]
    Dead(DeadArgs),
    /// Show and change a queue's settings; pause, resume or purge it
    #[command(after_help = QUEUE_AFTER_HELP, subcommand_required = true)]
    Queue(QueueArgs),
    /// Move tasks kept elsewhere into punctual (Redis keys with a TTL)
    #[command(after_help = IMPORT_AFTER_HELP, subcommand_required = true)]
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
    /// When the key exists: replace it (the default), keep it untouched, or error (exit 1)
    #[arg(long, value_enum, value_name = "MODE")]
    pub(crate) if_exists: Option<IfExists>,
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
pub(crate) struct DeadArgs {
    #[command(subcommand)]
    pub(crate) command: DeadCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum DeadCommand {
    /// List a queue's dead tasks
    #[command(after_help = DEAD_LS_AFTER_HELP)]
    Ls(DeadLsArgs),
    /// Schedule dead tasks again, due now, with their attempts reset: one, those with a tag, or all
    #[command(after_help = DEAD_RETRY_AFTER_HELP)]
    Retry(DeadRetryArgs),
    /// Delete a dead task for good
    #[command(after_help = DEAD_RM_AFTER_HELP)]
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
    #[command(after_help = QUEUE_LS_AFTER_HELP)]
    Ls(QueueLsArgs),
    /// Show a queue's settings: source, task defaults, action, limits, paused, version
    #[command(after_help = QUEUE_GET_AFTER_HELP)]
    Get(QueueNameArgs),
    /// Create or replace a queue's settings from a JSON file
    #[command(after_help = QUEUE_SET_AFTER_HELP)]
    Set(QueueSetArgs),
    /// Stop leasing and delivering a queue's tasks until it is resumed
    #[command(after_help = QUEUE_PAUSE_AFTER_HELP)]
    Pause(QueueNameArgs),
    /// Lease and deliver a paused queue's tasks again
    #[command(after_help = QUEUE_RESUME_AFTER_HELP)]
    Resume(QueueNameArgs),
    /// Cancel every task of a queue in a state, for good
    #[command(after_help = QUEUE_PURGE_AFTER_HELP)]
    Purge(QueuePurgeArgs),
    /// Remove a queue's settings (its tasks stay)
    #[command(after_help = QUEUE_RM_AFTER_HELP)]
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
    #[command(after_help = IMPORT_KEYSPACE_AFTER_HELP)]
    Keyspace(Box<KeyspaceArgs>),
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

/// `--payload` of `import keyspace`.
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
    punctual_redis::keyspace::check_url(text).map(|()| text.to_owned()).map_err(|e| {
        let reason = match e {
            punctual_core::Error::Invalid { reason, .. } => reason,
            other => other.to_string(),
        };
        format!("not a Redis URL ({reason}); write e.g. redis://127.0.0.1:6379 or redis://:PASSWORD@HOST:6379/0")
    })
}

/// `--queue`: a valid queue name, so a typo is a usage error before Redis is read.
fn queue_arg(text: &str) -> Result<String, String> {
    punctual_core::QueueName::new(text).map(|_| text.to_owned()).map_err(|e| match e {
        punctual_core::Error::Invalid { reason, .. } => reason,
        other => other.to_string(),
    })
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
    TargetMethod::parse(text).map_err(|e| match e {
        punctual_core::Error::Invalid { reason, .. } => reason,
        other => other.to_string(),
    })
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
    if path != "-" {
        return read_json_file(path, "settings");
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
        .map_err(|e| format!("cannot read the settings from standard input: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("the settings on standard input are not valid JSON: {e}"))
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
    use punctual_bench::{Acks, BenchStore, Workload};

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
            if sub.get_name() == "serve" {
                continue;
            }
            assert!(sub.get_after_help().is_some_and(|h| h.to_string().contains("Examples:")), "{}", sub.get_name());
            if sub.get_name() == "check-config" {
                // Reads a local file: no server, so no client flags.
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
    fn bench_reads_stores_sizes_and_the_baselines_switch() {
        let bench = |args: &[&str]| match parse(args).map(|cli| cli.command) {
            Ok(Command::Bench(args)) => Ok(args),
            Ok(other) => panic!("not bench: {other:?}"),
            Err(e) => Err(e),
        };
        let args = bench(&["bench", "spread"]).unwrap();
        assert_eq!(
            (args.workload, &args.store, args.tasks, args.baselines),
            (Workload::Spread, &BenchStore::Embedded, None, None)
        );
        assert_eq!((args.window.as_secs(), args.duration.as_secs()), (20, 10));
        assert_eq!(
            (args.serve, args.loops, args.lease_max, args.long_poll.as_secs(), args.acks),
            (false, 50, 100, 2, Acks::Batch),
            "the pull loops' defaults"
        );
        let args = bench(&[
            "bench",
            "burst",
            "--serve",
            "--store",
            "private-redis",
            "--loops",
            "4",
            "--lease-max",
            "1000",
            "--long-poll",
            "0s",
            "--acks",
            "each",
        ])
        .unwrap();
        assert_eq!(
            (args.serve, &args.store, args.loops, args.lease_max, args.long_poll.is_zero(), args.acks),
            (true, &BenchStore::PrivateRedis, 4, 1000, true, Acks::Each)
        );
        let args = bench(&[
            "bench",
            "all",
            "--store",
            "redis://127.0.0.1:6400",
            "--tasks",
            "200",
            "--window",
            "1s",
            "--baselines",
        ])
        .unwrap();
        assert_eq!(
            (&args.store, args.tasks, args.window.as_millis(), args.baselines),
            (&BenchStore::Redis("redis://127.0.0.1:6400".into()), Some(200), 1000, Some(true))
        );
        assert_eq!(
            bench(&["bench", "burst", "--store", "private-redis", "--baselines=false"]).unwrap().baselines,
            Some(false)
        );
        let args = bench(&["bench", "scale"]).unwrap();
        assert_eq!((args.primaries, args.servers, args.shards), (None, None, None));
        let args = bench(&["bench", "scale", "--primaries", "1,3", "--servers", "2", "--shards", "32"]).unwrap();
        assert_eq!((args.primaries, args.servers, args.shards), (Some(vec![1, 3]), Some(2), Some(32)));
        assert_eq!(
            bench(&["bench", "pending", "--store", "private-cluster"]).unwrap().store,
            BenchStore::PrivateCluster
        );
        for wrong in [
            &["bench", "spread", "--store", "redis-cluster://a:1"][..],
            &["bench", "spread", "--store", "sqlite"],
            &["bench", "spread", "--window", "0s"],
            &["bench", "spread", "--tasks", "0"],
            &["bench", "sprint"],
            &["bench", "spread", "--server", "http://x", "--store", "private-redis"],
            &["bench", "spread", "--server", "http://x", "--serve"],
            &["bench", "burst", "--serve", "--loops", "0"],
            &["bench", "burst", "--serve", "--loops", "1001"],
            &["bench", "burst", "--serve", "--lease-max", "0"],
            &["bench", "burst", "--serve", "--lease-max", "1001"],
            &["bench", "burst", "--serve", "--long-poll", "61s"],
            &["bench", "burst", "--serve", "--acks", "sometimes"],
            // The pull loops' settings apply over HTTP only.
            &["bench", "burst", "--lease-max", "10"],
            &["bench", "burst", "--long-poll", "1s"],
            &["bench", "burst", "--acks", "each"],
        ] {
            assert_eq!(bench(wrong).unwrap_err().exit_code(), 2, "{wrong:?}");
        }
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
