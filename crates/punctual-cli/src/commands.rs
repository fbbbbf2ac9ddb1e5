//! The client subcommands: each turns its parsed arguments into API calls and returns
//! the text to print — the server's JSON with `--json`, a table or block otherwise.
//!
//! Request bodies are built by pure functions ([`schedule_body`]) so their shape is
//! unit-tested without a server.
//!
//! A command that would destroy without being told to (`queue purge` without `--yes`
//! where there is no terminal to ask on), or a schedule whose `--target-*` flags do
//! not make a target, fails with a [`UsageError`](crate::UsageError), which `main` turns into exit status
//! 2, as clap's own errors; nothing is sent to the server first.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::{Context, Result};
use punctual_core::{Target, parse_duration};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::cli::{
    CancelArgs, ClientCommand, DeadCommand, DeadRetryArgs, GroupsCommand, GroupsLsArgs, ImportCommand, LsArgs,
    PageArgs, PurgeState, QueueCommand, QueueNameArgs, QueuePurgeArgs, QueueRmArgs, QueueSetArgs, ScheduleArgs,
    StatsArgs, TaskArgs, TimingArgs,
};
use crate::client::{Client, ClientError, Json, Method, Request, StatusCode};
use crate::{UsageError, connect, if_match, json, render};

/// Tasks asked for per request while following `next_cursor`.
const PAGE_SIZE: u32 = 100;

/// A duration or time as the API takes it: digits only are milliseconds (a JSON
/// number), anything else goes as the string typed, for the server to read.
fn duration_or_time(text: &str) -> Value {
    let trimmed = text.trim();
    match trimmed.parse::<u64>() {
        Ok(ms) if trimmed.bytes().all(|b| b.is_ascii_digit()) => json!(ms),
        _ => json!(text),
    }
}

/// The timing flags given (`misfire`, `misfire_after`, `catch_up_max`, `overlap`,
/// `jitter`), added to a task body.
fn insert_timing(timing: &TimingArgs, body: &mut Map<String, Value>) {
    if let Some(misfire) = timing.misfire {
        body.insert("misfire".into(), json!(misfire.as_str()));
    }
    if let Some(after) = &timing.misfire_after {
        body.insert("misfire_after".into(), duration_or_time(after));
    }
    if let Some(n) = timing.catch_up_max {
        body.insert("catch_up_max".into(), json!(n));
    }
    if let Some(overlap) = timing.overlap {
        body.insert("overlap".into(), json!(overlap.as_str()));
    }
    if let Some(jitter) = &timing.jitter {
        body.insert("jitter".into(), duration_or_time(jitter));
    }
}

/// The body of `PUT /v1/queues/{queue}/tasks/{key}`: only what was given, so the
/// server applies its defaults to the rest. A `--target-*` flag that is wrong is a
/// [`UsageError`] naming it (see [`target`]).
pub(crate) fn schedule_body(args: &ScheduleArgs) -> Result<Value, UsageError> {
    let mut body = Map::new();
    if let Some(delay) = &args.delay {
        body.insert("delay".into(), duration_or_time(delay));
    }
    if let Some(at) = &args.at {
        body.insert("due_at".into(), duration_or_time(at));
    }
    if let Some(payload) = &args.payload {
        body.insert("payload".into(), payload.clone());
    }
    let mut repeat = Map::new();
    if let Some(every) = &args.repeat_every {
        repeat.insert("every".into(), duration_or_time(every));
    }
    if let Some(cron) = &args.repeat_cron {
        repeat.insert("cron".into(), json!(cron));
    }
    if let Some(tz) = &args.tz {
        repeat.insert("tz".into(), json!(tz));
    }
    if let Some(syntax) = args.cron_syntax {
        repeat.insert("cron_syntax".into(), json!(syntax.core().as_str()));
    }
    if let Some(times) = args.repeat_times {
        repeat.insert("times".into(), json!(times));
    }
    if let Some(until) = &args.repeat_until {
        repeat.insert("until".into(), duration_or_time(until));
    }
    if !repeat.is_empty() {
        body.insert("repeat".into(), Value::Object(repeat));
    }
    if !args.tags.is_empty() {
        body.insert("tags".into(), json!(args.tags));
    }
    if let Some(n) = args.max_attempts {
        body.insert("max_attempts".into(), json!(n));
    }
    if let Some(level) = args.priority {
        body.insert("priority".into(), json!(level));
    }
    if let Some(group) = &args.group {
        body.insert("group".into(), json!(group));
    }
    if let Some(max_wait) = &args.debounce_max {
        body.insert("debounce".into(), json!({"max_wait": duration_or_time(max_wait)}));
    }
    if let Some(window) = &args.unique_for {
        let window = duration_or_time(window);
        let unique = if args.unique_dead { json!({"window": window, "dead": true}) } else { window };
        body.insert("unique_for".into(), unique);
    }
    if let Some(calendar) = &args.calendar {
        body.insert("calendar".into(), json!(calendar));
        if args.at.is_some() {
            body.insert("align".into(), json!("next_open"));
        }
    }
    if let Some(mode) = args.if_exists {
        body.insert("if_exists".into(), json!(mode.as_str()));
    }
    insert_timing(&args.timing, &mut body);
    if let Some(target) = target(args)? {
        body.insert("target".into(), target);
    }
    Ok(Value::Object(body))
}

/// The `target` of a schedule, from `--target-url` and the flags that shape it: only
/// the fields given, so the server fills in the contract's defaults.
///
/// The target is first built with the core's [`Target`], the rules the server applies
/// (a URL with a host, headers it may send, none twice, their limits, the timeout's
/// range), so a mistake is a usage error naming the flag and nothing is sent. Whether
/// the host may be reached is the server's egress policy: it answers 400 `target.url`.
fn target(args: &ScheduleArgs) -> Result<Option<Value>, UsageError> {
    let Some(url) = &args.target_url else {
        let given = [
            ("--target-method", args.target_method.is_some()),
            ("--target-header", !args.target_headers.is_empty()),
            ("--target-timeout", args.target_timeout.is_some()),
            ("--target-body", args.target_body.is_some()),
        ];
        return match given.iter().find(|(_, given)| *given) {
            Some((flag, _)) => Err(UsageError(format!(
                "{flag} needs --target-url, the address the server delivers the task to \
                 (e.g. --target-url https://shop.example.com/hooks/cancel {flag} …)"
            ))),
            None => Ok(None),
        };
    };
    let refused =
        |flag: &'static str| move |e: punctual_core::Error| UsageError(format!("{flag}: {}", crate::cli::reason(e)));
    let mut check = Target::new(url.as_str()).map_err(refused("--target-url"))?;
    for (name, value) in &args.target_headers {
        check = check.header(name.as_str(), value.as_str()).map_err(refused("--target-header"))?;
    }
    if let Some(timeout) = &args.target_timeout {
        // Read by clap already; this is the same parser.
        let timeout = parse_duration(timeout).map_err(|reason| UsageError(format!("--target-timeout: {reason}")))?;
        check.timeout(timeout).map_err(refused("--target-timeout"))?;
    }

    let mut target = Map::new();
    target.insert("url".into(), json!(url));
    if let Some(method) = args.target_method {
        target.insert("method".into(), json!(method.as_str()));
    }
    if !args.target_headers.is_empty() {
        let headers = args.target_headers.iter().map(|(name, value)| (name.clone(), json!(value))).collect();
        target.insert("headers".into(), Value::Object(headers));
    }
    if let Some(timeout) = &args.target_timeout {
        // A string even when it is digits: a target's timeout is a duration string.
        target.insert("timeout".into(), json!(timeout));
    }
    if let Some(body) = &args.target_body {
        target.insert("body".into(), body.clone());
    }
    Ok(Some(Value::Object(target)))
}

/// Runs one client subcommand and returns what to print.
pub(crate) async fn run(command: ClientCommand) -> Result<String> {
    match command {
        ClientCommand::Schedule(args) => schedule(*args).await,
        ClientCommand::Get(args) => get(args).await,
        ClientCommand::History(args) => history(args).await,
        ClientCommand::Cancel(args) => cancel(args).await,
        ClientCommand::Ls(args) => ls(args).await,
        ClientCommand::Stats(args) => stats(args).await,
        ClientCommand::Dead(args) => dead(args.command).await,
        ClientCommand::Groups(args) => match args.command {
            GroupsCommand::Ls(args) => groups_ls(args).await,
        },
        ClientCommand::Queue(args) => queue(args.command).await,
        ClientCommand::Calendar(args) => crate::calendar::run(args.command).await,
        ClientCommand::Import(args) => match args.command {
            ImportCommand::Keyspace(args) => crate::import::keyspace(*args).await,
            ImportCommand::Redisson(args) => crate::import::redisson(*args).await,
        },
    }
}

async fn schedule(args: ScheduleArgs) -> Result<String> {
    let body = schedule_body(&args)?;
    let client = connect(&args.client)?;
    let answer = client.put(&["v1", "queues", &args.queue, "tasks", &args.key], &body).await?.json()?;
    Ok(if args.client.json {
        json::pretty(&answer.text)
    } else {
        render::schedule_outcome(&answer.value, &render::Now::read()?)
    })
}

async fn get(args: TaskArgs) -> Result<String> {
    let client = connect(&args.client)?;
    let task = client.get(&["v1", "queues", &args.queue, "tasks", &args.key], &[]).await?;
    Ok(if args.client.json { json::pretty(&task.text) } else { render::task_block(&task.value, &render::Now::read()?) })
}

async fn history(args: TaskArgs) -> Result<String> {
    let client = connect(&args.client)?;
    let history = client.get(&["v1", "queues", &args.queue, "tasks", &args.key, "history"], &[]).await?;
    Ok(if args.client.json {
        json::pretty(&history.text)
    } else {
        render::history_table(&history.value, &render::Now::read()?)
    })
}

async fn cancel(args: CancelArgs) -> Result<String> {
    let client = connect(&args.client)?;
    let (queue, json) = (&args.queue, args.client.json);
    match (&args.key, &args.tag) {
        (Some(key), _) => {
            client.delete(&["v1", "queues", queue, "tasks", key]).await?;
            Ok(if json {
                outcome_json("cancelled", queue, Some(key))
            } else {
                format!("Cancelled task '{key}' in queue {queue}.")
            })
        }
        (None, tag) => {
            // clap requires a key or a tag.
            let tag = tag.as_deref().unwrap_or_default();
            let answer = client.delete(&["v1", "queues", queue, "tags", tag]).await?.json()?;
            let count = counted(&answer.value, "cancelled")?;
            Ok(if json {
                json::pretty(&answer.text)
            } else {
                format!("Cancelled {} tagged '{tag}' in queue {queue}.", plural(count, "task"))
            })
        }
    }
}

/// What `--json` prints for a `204` (the server sends no body):
/// `{"outcome": …, "queue": …, "key": …}`, the key only when there is one.
fn outcome_json(outcome: &str, queue: &str, key: Option<&str>) -> String {
    let mut fields = vec![("outcome", json::string(outcome)), ("queue", json::string(queue))];
    if let Some(key) = key {
        fields.push(("key", json::string(key)));
    }
    let fields: Vec<(&str, &str)> = fields.iter().map(|(name, value)| (*name, value.as_str())).collect();
    json::pretty(&json::object(&fields))
}

/// The count `answer[field]` of a bulk answer (`{"cancelled": N}`).
fn counted(answer: &Value, field: &str) -> Result<usize> {
    let count = answer[field].as_u64().ok_or_else(|| ClientError::Protocol {
        detail: format!("the server's answer has no '{field}' count: {answer}"),
    })?;
    Ok(usize::try_from(count).unwrap_or(usize::MAX))
}

async fn ls(args: LsArgs) -> Result<String> {
    let client = connect(&args.client)?;
    let now = &render::Now::read()?;
    let Some(queue) = &args.queue else { return list_queues(&client, args.client.json, now).await };
    let state = args.state.map(|s| s.as_str());
    let filter = Filter { state, tag: args.tag.as_deref() };
    let list = collect(&client, &["v1", "queues", queue, "tasks"], filter, &args.page).await?;
    if args.client.json {
        return Ok(list.to_json());
    }
    if list.tasks.is_empty() {
        let what = state.map_or_else(|| "tasks".to_owned(), |s| format!("{s} tasks"));
        let tagged = args.tag.as_deref().map(|tag| format!(" tagged '{tag}'")).unwrap_or_default();
        let more = if args.page.cursor.is_some() { "more " } else { "" };
        return Ok(format!("No {more}{what}{tagged} in queue {queue}."));
    }
    Ok(list.with_note(render::task_table(&list.tasks, now)))
}

/// Every queue with its counts and whether it is paused (`ls`, `queue ls`).
async fn list_queues(client: &Client, as_json: bool, now: &render::Now) -> Result<String> {
    let answer = client.get(&["v1", "queues"], &[]).await?;
    if as_json {
        return Ok(json::pretty(&answer.text));
    }
    let queues = array(&answer.value, "queues")?;
    Ok(if queues.is_empty() { no_queues() } else { render::queue_table(queues, now) })
}

async fn stats(args: StatsArgs) -> Result<String> {
    let client = connect(&args.client)?;
    let now = &render::Now::read()?;
    if let Some(queue) = &args.queue {
        let detail = client.get(&["v1", "queues", queue], &[]).await?;
        return Ok(if args.client.json { json::pretty(&detail.text) } else { render::queue_block(&detail.value, now) });
    }
    let overview = client.get(&["v1", "queues"], &[]).await?;
    let mut details: Vec<Json> = Vec::new();
    for queue in array(&overview.value, "queues")? {
        let name = queue["name"].as_str().context("the server listed a queue without a name")?;
        details.push(client.get(&["v1", "queues", name], &[]).await?);
    }
    if args.client.json {
        let items: Vec<&str> = details.iter().map(|d| d.text.trim()).collect();
        return Ok(json::pretty(&json::object(&[("queues", &format!("[{}]", items.join(",")))])));
    }
    let values: Vec<Value> = details.into_iter().map(|d| d.value).collect();
    Ok(if values.is_empty() { no_queues() } else { render::stats_table(&values, now) })
}

async fn groups_ls(args: GroupsLsArgs) -> Result<String> {
    let client = connect(&args.client)?;
    let limit = args.limit.to_string();
    let mut query = vec![("limit", limit.as_str())];
    if let Some(cursor) = &args.cursor {
        query.push(("cursor", cursor.as_str()));
    }
    let answer = client.get(&["v1", "queues", &args.queue, "groups"], &query).await?;
    if args.client.json {
        return Ok(json::pretty(&answer.text));
    }
    let groups = answer.value["groups"].as_array().cloned().unwrap_or_default();
    if groups.is_empty() {
        let more = if args.cursor.is_some() { "more " } else { "" };
        return Ok(format!("No {more}groups in queue {}.", args.queue));
    }
    let table = render::groups_table(&groups);
    Ok(match answer.value["next_cursor"].as_str() {
        None => table,
        Some(cursor) => format!(
            "{table}\n\n{} shown; more remain. Continue with --cursor '{cursor}', or raise --limit.",
            plural(groups.len(), "group")
        ),
    })
}

async fn dead(command: DeadCommand) -> Result<String> {
    match command {
        DeadCommand::Ls(args) => {
            let client = connect(&args.client)?;
            let list = collect(&client, &["v1", "queues", &args.queue, "dead"], Filter::default(), &args.page).await?;
            if args.client.json {
                return Ok(list.to_json());
            }
            if list.tasks.is_empty() {
                let more = if args.page.cursor.is_some() { "more " } else { "" };
                return Ok(format!("No {more}dead tasks in queue {}.", args.queue));
            }
            Ok(list.with_note(render::dead_table(&list.tasks, &render::Now::read()?)))
        }
        DeadCommand::Retry(args) => dead_retry(args).await,
        DeadCommand::Rm(args) => {
            let client = connect(&args.client)?;
            client.delete(&["v1", "queues", &args.queue, "dead", &args.key]).await?;
            Ok(if args.client.json {
                outcome_json("removed", &args.queue, Some(&args.key))
            } else {
                format!("Removed dead task '{}' from queue {}.", args.key, args.queue)
            })
        }
    }
}

/// `dead retry QUEUE KEY` (one task), or `dead retry QUEUE [--tag T]` (in bulk).
async fn dead_retry(args: DeadRetryArgs) -> Result<String> {
    let client = connect(&args.client)?;
    let queue = &args.queue;
    if let Some(key) = &args.key {
        let task = client.post(&["v1", "queues", queue, "dead", key, "retry"]).await?;
        return Ok(if args.client.json {
            json::pretty(&task.text)
        } else {
            format!(
                "Task '{key}' in queue {queue} is scheduled again, due {}, attempts reset.",
                render::time_with_relative(&task.value["due_at"], &render::Now::read()?)
            )
        });
    }
    let body = match &args.tag {
        Some(tag) => json!({"tag": tag}),
        None => json!({}),
    };
    let answer = client.post_json(&["v1", "queues", queue, "dead", "retry"], &body).await?.json()?;
    let count = counted(&answer.value, "retried")?;
    Ok(if args.client.json {
        json::pretty(&answer.text)
    } else {
        let which = args.tag.as_deref().map(|tag| format!(" tagged '{tag}'")).unwrap_or_default();
        format!("Retried {}{which} in queue {queue}: due now, attempts reset.", plural(count, "dead task"))
    })
}

/// `/v1/queues/{queue}/settings`.
fn settings_path(queue: &str) -> [&str; 4] {
    ["v1", "queues", queue, "settings"]
}

async fn queue(command: QueueCommand) -> Result<String> {
    match command {
        QueueCommand::Ls(args) => list_queues(&connect(&args.client)?, args.client.json, &render::Now::read()?).await,
        QueueCommand::Get(args) => {
            let client = connect(&args.client)?;
            let settings = client.get(&settings_path(&args.queue), &[]).await?;
            Ok(if args.client.json {
                json::pretty(&settings.text)
            } else {
                render::settings_block(&settings.value, &render::Now::read()?)
            })
        }
        QueueCommand::Set(args) => queue_set(args).await,
        QueueCommand::Pause(args) => pause_or_resume(args, "pause").await,
        QueueCommand::Resume(args) => pause_or_resume(args, "resume").await,
        QueueCommand::Purge(args) => purge(args).await,
        QueueCommand::Rm(args) => queue_rm(args).await,
    }
}

/// `queue set`: `PUT` the file's settings (`PATCH` with `--patch`), conditional with
/// `--if-version`; says what happened, then shows the settings now in force.
async fn queue_set(args: QueueSetArgs) -> Result<String> {
    let client = connect(&args.client)?;
    let queue = &args.queue;
    let version = args.if_version.map(|v| v.to_string());
    let headers = if_match(version.as_deref());
    let method = if args.patch { Method::PATCH } else { Method::PUT };
    let path = settings_path(queue);
    let answer = client.request(Request { body: Some(&args.file), headers: &headers, ..Request::new(method, &path) });
    let answer = answer.await?;
    let status = answer.status;
    let settings = answer.json()?;
    if args.client.json {
        return Ok(json::pretty(&settings.text));
    }
    let version = &settings.value["version"];
    let said = match (args.patch, status) {
        (true, _) => format!("Updated the settings of queue {queue} (now version {version})."),
        (false, StatusCode::CREATED) => format!("Created the settings of queue {queue} (version {version})."),
        (false, _) => format!("Replaced the settings of queue {queue} (now version {version})."),
    };
    Ok(format!("{said}\n\n{}", render::settings_block(&settings.value, &render::Now::read()?)))
}

/// `queue pause` and `queue resume` (`action` is the route's last segment): the state
/// the server answers with.
async fn pause_or_resume(args: QueueNameArgs, action: &str) -> Result<String> {
    let client = connect(&args.client)?;
    let queue = &args.queue;
    let settings = client.post(&["v1", "queues", queue, action]).await?;
    if args.client.json {
        return Ok(json::pretty(&settings.text));
    }
    Ok(match settings.value["paused"].as_bool() {
        Some(true) => format!(
            "Queue {queue} is paused: none of its tasks is leased or delivered until \
             punctual queue resume {queue}. It still takes schedules and cancels."
        ),
        Some(false) => format!("Queue {queue} is running: its due tasks are leased and delivered, in due order."),
        None => {
            return Err(ClientError::Protocol {
                detail: format!("the server's answer does not say whether the queue is paused: {}", settings.text),
            }
            .into());
        }
    })
}

/// `queue purge`: confirmed by `--yes` or on a terminal, then one `DELETE`.
async fn purge(args: QueuePurgeArgs) -> Result<String> {
    let client = connect(&args.client)?;
    let queue = &args.queue;
    if !args.yes {
        confirm_purge(&client, queue, args.state).await?;
    }
    let path = ["v1", "queues", queue, "tasks"];
    let query = [("state", args.state.as_str())];
    let answer = client.request(Request { query: &query, ..Request::new(Method::DELETE, &path) }).await?.json()?;
    let count = counted(&answer.value, "cancelled")?;
    Ok(if args.client.json {
        json::pretty(&answer.text)
    } else {
        format!("Cancelled {} in queue {queue}.", plural(count, purged_word(args.state)))
    })
}

/// What a purge of `state` cancels, as the word counted: "scheduled task".
fn purged_word(state: PurgeState) -> &'static str {
    match state {
        PurgeState::Scheduled => "scheduled task",
        PurgeState::Dead => "dead task",
        PurgeState::All => "task",
    }
}

/// Asks on the terminal whether to purge, saying how many tasks it would cancel now.
/// Without a terminal, a usage error: a script must say `--yes`.
async fn confirm_purge(client: &Client, queue: &str, state: PurgeState) -> Result<()> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Err(UsageError(format!(
            "a purge cancels tasks of queue {queue} for good; pass --yes to confirm (there is no terminal to ask on)"
        ))
        .into());
    }
    let detail = client.get(&["v1", "queues", queue], &[]).await?;
    let count = |field: &str| detail.value[field].as_u64().unwrap_or(0);
    let held = match state {
        PurgeState::Scheduled => count("scheduled"),
        PurgeState::Dead => count("dead"),
        PurgeState::All => count("scheduled") + count("leased") + count("dead"),
    };
    let held = usize::try_from(held).unwrap_or(usize::MAX);
    let question = format!("Cancel {} of queue {queue} for good? [y/N] ", plural(held, purged_word(state)));
    if confirm(&question, &mut std::io::stdin().lock(), &mut std::io::stderr())? {
        Ok(())
    } else {
        anyhow::bail!("not confirmed: nothing was purged")
    }
}

/// Writes `question` and reads one line: yes for `y` or `yes`, in any case.
fn confirm(question: &str, input: &mut impl BufRead, output: &mut impl Write) -> Result<bool> {
    output.write_all(question.as_bytes()).and_then(|()| output.flush()).context("cannot ask for confirmation")?;
    let mut answer = String::new();
    input.read_line(&mut answer).context("cannot read the confirmation")?;
    Ok(matches!(answer.trim().to_lowercase().as_str(), "y" | "yes"))
}

/// `queue rm`: `DELETE` of the settings, conditional with `--if-version`.
async fn queue_rm(args: QueueRmArgs) -> Result<String> {
    let client = connect(&args.client)?;
    let queue = &args.queue;
    let version = args.if_version.map(|v| v.to_string());
    let headers = if_match(version.as_deref());
    let path = settings_path(queue);
    client.request(Request { headers: &headers, ..Request::new(Method::DELETE, &path) }).await?;
    Ok(if args.client.json {
        outcome_json("removed", queue, None)
    } else {
        format!("Removed the settings of queue {queue}; its tasks stay and take the built-in defaults.")
    })
}

fn no_queues() -> String {
    "No queues yet: a queue appears with its first task, or when the server's config file\n\
     declares it ([queues.\"NAME\"]). Schedule one with: punctual schedule QUEUE KEY --delay 30m"
        .into()
}

/// `answer[field]` as an array, or an error naming what is missing.
fn array<'a>(answer: &'a Value, field: &str) -> Result<&'a Vec<Value>> {
    answer[field].as_array().ok_or_else(|| {
        ClientError::Protocol { detail: format!("the server's answer has no '{field}' list: {answer}") }.into()
    })
}

/// Tasks gathered from one or more pages.
#[derive(Debug)]
struct Listing {
    /// Each task as the server wrote it, for `--json`.
    raw: Vec<Box<RawValue>>,
    /// The same, parsed, for tables.
    tasks: Vec<Value>,
    /// Where to continue; `None` when nothing remains.
    next_cursor: Option<String>,
}

impl Listing {
    /// The API's list shape, `{"tasks", "next_cursor"}`, over all pages fetched.
    fn to_json(&self) -> String {
        let cursor = self.next_cursor.as_deref().map_or_else(|| "null".to_owned(), json::string);
        json::pretty(&json::object(&[("tasks", &json::array(&self.raw)), ("next_cursor", &cursor)]))
    }

    /// `table`, followed by how to see more when more remain.
    fn with_note(&self, table: String) -> String {
        match &self.next_cursor {
            None => table,
            Some(cursor) => format!(
                "{table}\n\n{} shown; more remain. Continue with --cursor '{cursor}', or raise --limit.",
                plural(self.tasks.len(), "task")
            ),
        }
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") }
}

/// What a listing keeps: tasks in a state, carrying a tag.
#[derive(Debug, Clone, Copy, Default)]
struct Filter<'a> {
    state: Option<&'a str>,
    tag: Option<&'a str>,
}

/// Follows `next_cursor` from `page.cursor` until `page.limit` tasks or the end. When
/// the limit is reached with a cursor in hand, one more one-task request tells whether
/// anything really remains, so "more remain" is never said of an exhausted list.
async fn collect(client: &Client, segments: &[&str], filter: Filter<'_>, page: &PageArgs) -> Result<Listing> {
    let limit = usize::try_from(page.limit).unwrap_or(usize::MAX);
    let mut raw: Vec<Box<RawValue>> = Vec::new();
    let mut cursor = page.cursor.clone();
    loop {
        let want = (limit - raw.len()).min(PAGE_SIZE as usize);
        let got = fetch_page(client, segments, filter, want, cursor.as_deref()).await?;
        let empty = got.tasks.is_empty();
        raw.extend(got.tasks);
        cursor = got.next_cursor.filter(|c| !c.is_empty());
        // An empty page with a cursor would loop for ever on a misbehaving server.
        if cursor.is_none() || raw.len() >= limit || empty {
            break;
        }
    }
    if raw.len() >= limit
        && let Some(next) = &cursor
    {
        let peek = fetch_page(client, segments, filter, 1, Some(next)).await?;
        if peek.tasks.is_empty() {
            cursor = None;
        }
    }
    let tasks = raw
        .iter()
        .map(|task| serde_json::from_str(task.get()))
        .collect::<Result<Vec<Value>, _>>()
        .context("the server sent a task that is not JSON")?;
    Ok(Listing { raw, tasks, next_cursor: cursor })
}

/// One page of a task list, tasks kept as the server wrote them.
#[derive(Debug, serde::Deserialize)]
struct Page {
    tasks: Vec<Box<RawValue>>,
    #[serde(default)]
    next_cursor: Option<String>,
}

async fn fetch_page(
    client: &Client,
    segments: &[&str],
    filter: Filter<'_>,
    limit: usize,
    cursor: Option<&str>,
) -> Result<Page> {
    let limit = limit.to_string();
    let mut query = vec![("limit", limit.as_str())];
    if let Some(state) = filter.state {
        query.push(("state", state));
    }
    if let Some(tag) = filter.tag {
        query.push(("tag", tag));
    }
    if let Some(cursor) = cursor {
        query.push(("cursor", cursor));
    }
    let answer = client.get(segments, &query).await?;
    let page = serde_json::from_str(&answer.text).map_err(|e| ClientError::Protocol {
        detail: format!("the server's answer is not a task list ({e}): {}", answer.text.trim()),
    })?;
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn schedule_args(args: &[&str]) -> ScheduleArgs {
        let cli = Cli::try_parse_from(["punctual", "schedule", "q", "k"].iter().chain(args)).unwrap();
        let Command::Client(ClientCommand::Schedule(args)) = cli.command else { panic!("not schedule") };
        *args
    }

    /// The body `punctual schedule q k ARGS` sends.
    fn body_of(args: &[&str]) -> Value {
        schedule_body(&schedule_args(args)).unwrap()
    }

    /// The usage error `punctual schedule q k ARGS` stops at, before any request.
    fn refusal_of(args: &[&str]) -> String {
        schedule_body(&schedule_args(args)).unwrap_err().0
    }

    #[test]
    fn a_bare_schedule_sends_an_empty_body_so_the_server_applies_defaults() {
        assert_eq!(body_of(&[]), json!({}));
    }

    #[test]
    fn a_calendar_counts_the_delay_or_aligns_the_time() {
        let body = body_of(&["--delay", "8h", "--calendar", "cn-office"]);
        assert_eq!(body, json!({"delay": "8h", "calendar": "cn-office"}));
        let body = body_of(&["--at", "2026-12-05T10:00:00+08:00", "--calendar", "cn-office"]);
        assert_eq!(body, json!({"due_at": "2026-12-05T10:00:00+08:00", "calendar": "cn-office", "align": "next_open"}));
    }

    #[test]
    fn the_timing_flags_become_the_tasks_timing_fields() {
        let body = body_of(&["--repeat-every", "1h", "--misfire", "fire-all", "--catch-up-max", "3"]);
        assert_eq!(body, json!({"repeat": {"every": "1h"}, "misfire": "fire_all", "catch_up_max": 3}));
        let body = body_of(&["--misfire", "skip", "--misfire-after", "10m", "--overlap", "queue", "--jitter", "30s"]);
        assert_eq!(body, json!({"misfire": "skip", "misfire_after": "10m", "overlap": "queue", "jitter": "30s"}));
    }

    #[test]
    fn schedule_bodies_carry_exactly_what_was_given() {
        let body = body_of(&[
            "--delay",
            "1h 30m",
            "--payload",
            r#"{"order_id": 1234}"#,
            "--repeat-every",
            "24h",
            "--repeat-times",
            "3",
            "--tag",
            "pi-9",
            "--max-attempts",
            "5",
            "--if-exists",
            "error",
        ]);
        assert_eq!(
            body,
            json!({
                "delay": "1h 30m", "payload": {"order_id": 1234},
                "repeat": {"every": "24h", "times": 3}, "tags": ["pi-9"],
                "max_attempts": 5, "if_exists": "error"
            })
        );
    }

    #[test]
    fn a_group_is_sent_as_given_and_an_empty_one_is_refused() {
        assert_eq!(body_of(&["--group", "customer-42"]), json!({"group": "customer-42"}));
        let argv = ["punctual", "schedule", "q", "k", "--group", ""];
        assert!(Cli::try_parse_from(argv).is_err(), "an empty group is a usage error");
    }

    #[test]
    fn a_priority_is_sent_as_given_and_one_out_of_range_is_refused() {
        assert_eq!(body_of(&["--priority", "9"]), json!({"priority": 9}));
        assert_eq!(body_of(&[]), json!({}), "no priority: the server's default");
        assert_eq!(body_of(&["--debounce-max", "10m"]), json!({"debounce": {"max_wait": "10m"}}));
        assert_eq!(body_of(&["--debounce-max", "1500"]), json!({"debounce": {"max_wait": 1500}}), "digits are ms");
        assert_eq!(body_of(&["--unique-for", "1h"]), json!({"unique_for": "1h"}));
        let dead = body_of(&["--unique-for", "10m", "--unique-dead"]);
        assert_eq!(dead, json!({"unique_for": {"window": "10m", "dead": true}}));
        let alone = Cli::try_parse_from(["punctual", "schedule", "q", "k", "--unique-dead"]).unwrap_err();
        assert!(alone.to_string().contains("--unique-for"), "--unique-dead needs a window: {alone}");
        for bad in [&["--priority", "10"][..], &["--priority=-1"], &["--priority", "high"]] {
            let argv = ["punctual", "schedule", "q", "k"].iter().chain(bad);
            let refused = Cli::try_parse_from(argv).unwrap_err();
            assert!(refused.to_string().contains("--priority"), "{bad:?}: {refused}");
        }
    }

    #[test]
    fn cron_syntax_goes_with_the_cron_expression() {
        let body = body_of(&["--repeat-cron", "0 0 9 ? * MON-FRI", "--cron-syntax", "spring"]);
        assert_eq!(body, json!({"repeat": {"cron": "0 0 9 ? * MON-FRI", "cron_syntax": "spring"}}));
    }

    #[test]
    fn times_and_cron_pass_through_and_digits_are_milliseconds() {
        let body = body_of(&[
            "--at",
            "2026-11-30T09:00:00+08:00",
            "--repeat-cron",
            "0 9 * * MON-FRI",
            "--tz",
            "Asia/Shanghai",
        ]);
        assert_eq!(
            body,
            json!({"due_at": "2026-11-30T09:00:00+08:00", "repeat": {"cron": "0 9 * * MON-FRI", "tz": "Asia/Shanghai"}})
        );
        assert_eq!(body_of(&["--delay", "1500"]), json!({"delay": 1500}));
        assert_eq!(body_of(&["--at", "1764464400000"]), json!({"due_at": 1_764_464_400_000u64}));
        // Sent as typed, once read as the server reads it: a typo is a usage error.
        assert_eq!(body_of(&["--delay", "1h 30m"]), json!({"delay": "1h 30m"}));
        let typo = Cli::try_parse_from(["punctual", "schedule", "q", "k", "--delay", "30 seconds"]).unwrap_err();
        assert_eq!(typo.exit_code(), 2);
        assert!(typo.to_string().contains("'seconds' in '30 seconds' is not a unit"), "{typo}");
    }

    #[test]
    fn a_target_carries_exactly_the_flags_given() {
        assert_eq!(
            body_of(&["--delay", "30m", "--target-url", "https://shop.example.com/hooks/cancel"]),
            json!({"delay": "30m", "target": {"url": "https://shop.example.com/hooks/cancel"}})
        );
        let body = body_of(&[
            "--target-url",
            "https://shop.example.com/hooks/cancel?v=2",
            "--target-method",
            "put",
            "--target-header",
            "X-Tenant: acme",
            "--target-header",
            "Authorization:Bearer a:b ",
            "--target-timeout",
            "30s",
            "--target-body",
            r#"{"order_id": 1234}"#,
        ]);
        assert_eq!(
            body,
            json!({"target": {"url": "https://shop.example.com/hooks/cancel?v=2", "method": "PUT",
                              "headers": {"X-Tenant": "acme", "Authorization": "Bearer a:b"},
                              "timeout": "30s", "body": {"order_id": 1234}}})
        );
        // Digits are milliseconds, sent as the string typed: a target's timeout is a
        // duration string.
        assert_eq!(
            body_of(&["--target-url", "https://h.example/x", "--target-timeout", "1500"])["target"]["timeout"],
            "1500"
        );
    }

    #[test]
    fn target_flags_without_a_url_or_against_the_rules_are_usage_errors_naming_the_flag() {
        for (args, flag) in [
            (&["--target-method", "PUT"][..], "--target-method"),
            (&["--target-header", "X-Tenant: acme"], "--target-header"),
            (&["--target-timeout", "5s"], "--target-timeout"),
            (&["--target-body", "{}"], "--target-body"),
        ] {
            let message = refusal_of(args);
            assert!(message.starts_with(&format!("{flag} needs --target-url")), "{args:?}: {message}");
        }
        let url = |extra: &[&'static str]| {
            let mut args = vec!["--target-url", "https://h.example/x"];
            args.extend_from_slice(extra);
            refusal_of(&args)
        };
        let message = refusal_of(&["--target-url", "ftp://h.example/x"]);
        assert_eq!(message, "--target-url: a target url is http or https, not 'ftp'");
        assert!(refusal_of(&["--target-url", "not a url"]).starts_with("--target-url: 'not a url' is not a URL"));
        let message = url(&["--target-header", "Host: evil.example"]);
        assert!(message.starts_with("--target-header: header 'Host' cannot be set"), "{message}");
        let message = url(&["--target-header", "X-A: 1", "--target-header", "x-a: 2"]);
        assert_eq!(message, "--target-header: header 'x-a' is given twice");
        let message = url(&["--target-header", "X Bad: 1"]);
        assert!(message.starts_with("--target-header: 'X Bad' is not a header name"), "{message}");
        assert_eq!(url(&["--target-timeout", "61s"]), "--target-timeout: a target's timeout is 1s to 60s, not 1m 1s");
    }

    #[test]
    fn listings_say_when_more_remain() {
        let raw = || RawValue::from_string("{}".into()).unwrap();
        let more = Listing { raw: vec![raw(), raw()], tasks: vec![json!({}); 2], next_cursor: Some("c1".into()) };
        assert_eq!(
            more.with_note("T".into()),
            "T\n\n2 tasks shown; more remain. Continue with --cursor 'c1', or raise --limit."
        );
        assert_eq!(more.to_json(), "{\n  \"tasks\": [\n    {},\n    {}\n  ],\n  \"next_cursor\": \"c1\"\n}");
        let done = Listing { raw: vec![], tasks: vec![], next_cursor: None };
        assert_eq!(done.with_note("T".into()), "T");
        assert_eq!(done.to_json(), "{\n  \"tasks\": [],\n  \"next_cursor\": null\n}");
    }

    #[test]
    fn a_purge_is_confirmed_only_by_y_or_yes() {
        for (typed, confirmed) in
            [("y\n", true), ("YES\n", true), (" yes \n", true), ("n\n", false), ("\n", false), ("", false)]
        {
            let mut asked = Vec::new();
            let answer = confirm("Cancel 3 tasks? [y/N] ", &mut typed.as_bytes(), &mut asked).unwrap();
            assert_eq!(answer, confirmed, "{typed:?}");
            assert_eq!(asked, b"Cancel 3 tasks? [y/N] ");
        }
    }

    /// The commands against a fake server: what goes over the wire, what is printed.
    mod over_http {
        use super::*;
        use crate::fake_server::{FakeServer, Request};

        async fn run_args(server: &FakeServer, args: &[&str]) -> Result<String> {
            let argv = ["punctual"].iter().chain(args).copied().chain(["--server", &server.url]);
            let Command::Client(command) = Cli::try_parse_from(argv).unwrap().command else { panic!("serve") };
            run(command).await
        }

        fn task(key: &str) -> Value {
            json!({
                "queue": "q", "key": key, "state": "scheduled", "due_at": "2099-01-01T00:00:00.000Z",
                "payload": {"x": 1}, "attempts": 0, "max_attempts": 20,
                "backoff": {"initial": "1s", "factor": 2.0, "max": "1h"}, "repeat": null, "tags": [],
                "version": 1, "created_at": "2025-01-01T00:00:00.000Z", "updated_at": "2025-01-01T00:00:00.000Z",
                "lease_expires_at": null, "last_error": null
            })
        }

        fn query(request: &Request) -> Vec<(String, String)> {
            let url = reqwest::Url::parse(&format!("http://x{}", request.target)).unwrap();
            url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
        }

        #[tokio::test]
        async fn schedule_sends_the_key_as_one_encoded_segment_with_the_token() {
            let server = FakeServer::start(|r| {
                let key = if r.target.ends_with("a%2Fb%20c%40d") { "a/b c@d" } else { "?" };
                (201, json!({"outcome": "created", "task": task(key)}).to_string())
            })
            .await;
            let out = run_args(
                &server,
                &["schedule", "q", "a/b c@d", "--delay", "30m", "--payload", r#"{"x": 1}"#, "--token", "s3cret"],
            )
            .await
            .unwrap();
            assert!(out.starts_with("Created task 'a/b c@d' in queue q, due 2099-01-01T00:00:00.000Z (in "), "{out}");
            let requests = server.requests();
            assert_eq!(requests.len(), 1);
            let r = &requests[0];
            assert_eq!((r.method.as_str(), r.target.as_str()), ("PUT", "/v1/queues/q/tasks/a%2Fb%20c%40d"));
            assert_eq!(r.header("authorization"), Some("Bearer s3cret"));
            assert_eq!(r.header("content-type"), Some("application/json"));
            assert_eq!(serde_json::from_str::<Value>(&r.body).unwrap(), json!({"delay": "30m", "payload": {"x": 1}}));
        }

        #[tokio::test]
        async fn schedule_sends_the_target_and_get_shows_it() {
            let target = json!({"url": "https://shop.example.com/hooks/cancel", "method": "PUT",
                                "headers": {"X-Tenant": "acme", "X-Trace": "t-1"}, "timeout": "10s"});
            let with_target = {
                let mut t = task("k");
                t["target"] = target.clone();
                t
            };
            let answer = with_target.clone();
            let server = FakeServer::start(move |r| match r.method.as_str() {
                "PUT" => (201, json!({"outcome": "created", "task": answer}).to_string()),
                _ => (200, answer.to_string()),
            })
            .await;
            let out = run_args(
                &server,
                &[
                    "schedule",
                    "q",
                    "k",
                    "--target-url",
                    "https://shop.example.com/hooks/cancel",
                    "--target-method",
                    "PUT",
                    "--target-header",
                    "X-Tenant: acme",
                    "--target-header",
                    "X-Trace: t-1",
                ],
            )
            .await
            .unwrap();
            assert!(
                out.ends_with(
                    "\nDelivered by the server to PUT https://shop.example.com/hooks/cancel (2 headers, timeout 10s)."
                ),
                "{out}"
            );
            let sent: Value = serde_json::from_str(&server.requests()[0].body).unwrap();
            assert_eq!(
                sent,
                json!({"target": {"url": "https://shop.example.com/hooks/cancel", "method": "PUT",
                                  "headers": {"X-Tenant": "acme", "X-Trace": "t-1"}}})
            );

            let out = run_args(&server, &["get", "q", "k"]).await.unwrap();
            assert!(
                out.lines()
                    .any(|l| l == "Target    PUT https://shop.example.com/hooks/cancel (2 headers, timeout 10s)"),
                "{out}"
            );
            let out = run_args(&server, &["get", "q", "k", "--json"]).await.unwrap();
            assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), with_target, "--json: the server's object");
        }

        #[tokio::test]
        async fn a_target_against_the_rules_sends_nothing() {
            let server = FakeServer::start(|_| (500, String::new())).await;
            let e = run_args(&server, &["schedule", "q", "k", "--target-header", "X-A: 1"]).await.unwrap_err();
            assert!(e.downcast_ref::<UsageError>().is_some(), "exit 2: {e:#}");
            let e = run_args(
                &server,
                &["schedule", "q", "k", "--target-url", "https://h.example/x", "--target-header", "Connection: close"],
            )
            .await
            .unwrap_err();
            assert!(e.downcast_ref::<UsageError>().is_some(), "exit 2: {e:#}");
            assert!(server.requests().is_empty(), "nothing sent");
        }

        #[tokio::test]
        async fn json_output_is_the_servers_json_in_its_key_order() {
            let body = r#"{"outcome":"kept","task":{"queue":"q","key":"k","state":"scheduled","attempts":0}}"#;
            let server = FakeServer::start(move |_| (200, body.to_owned())).await;
            let out = run_args(&server, &["schedule", "q", "k", "--if-exists", "keep", "--json"]).await.unwrap();
            assert_eq!(
                out,
                "{\n  \"outcome\": \"kept\",\n  \"task\": {\n    \"queue\": \"q\",\n    \"key\": \"k\",\n    \
                 \"state\": \"scheduled\",\n    \"attempts\": 0\n  }\n}"
            );
        }

        #[tokio::test]
        async fn refusals_carry_the_servers_message_and_field() {
            let server = FakeServer::start(|_| {
                let error = json!({"error": {"code": "invalid_argument", "field": "delay",
                    "message": "'30 seconds' is not a duration: 'seconds' is not a unit"}});
                (400, error.to_string())
            })
            .await;
            // A value the server refuses though the client reads it.
            let e = run_args(&server, &["schedule", "q", "k", "--delay", "30s"]).await.unwrap_err();
            assert_eq!(format!("{e:#}"), "delay: '30 seconds' is not a duration: 'seconds' is not a unit");
        }

        #[tokio::test]
        async fn a_missing_task_is_an_error_with_the_servers_message() {
            let server = FakeServer::start(|_| {
                (404, json!({"error": {"code": "not_found", "message": "no task 'k' in queue 'q'"}}).to_string())
            })
            .await;
            let e = run_args(&server, &["get", "q", "k"]).await.unwrap_err();
            assert_eq!(format!("{e:#}"), "no task 'k' in queue 'q'");
            let e = run_args(&server, &["cancel", "q", "k"]).await.unwrap_err();
            assert_eq!(format!("{e:#}"), "no task 'k' in queue 'q'");
        }

        #[tokio::test]
        async fn a_missing_token_is_pointed_out() {
            let server = FakeServer::start(|_| {
                (
                    401,
                    json!({"error": {"code": "unauthorized", "message": "a valid bearer token is required"}})
                        .to_string(),
                )
            })
            .await;
            // An empty --token (as from an empty PUNCTUAL_TOKEN) counts as none.
            let e = run_args(&server, &["ls", "--token", ""]).await.unwrap_err();
            assert_eq!(
                format!("{e:#}"),
                "a valid bearer token is required (this server requires a token: pass --token or set PUNCTUAL_TOKEN)"
            );
            assert_eq!(server.requests()[0].header("authorization"), None);
        }

        #[tokio::test]
        async fn a_forbidden_call_says_so_with_the_servers_message() {
            let message = "this token lacks the schedule permission on queue 'billing'; it has read on queues order.*";
            let server = FakeServer::start(move |_| {
                (403, json!({"error": {"code": "forbidden", "message": message}}).to_string())
            })
            .await;
            for args in [&["schedule", "billing", "k", "--token", "t"][..], &["cancel", "billing", "k", "--token", "t"]]
            {
                let e = run_args(&server, args).await.unwrap_err();
                assert_eq!(format!("{e:#}"), format!("forbidden: {message}"), "{args:?}");
            }
        }

        #[tokio::test]
        async fn cancel_and_dead_routes() {
            let server = FakeServer::start(|r| match (r.method.as_str(), r.target.as_str()) {
                ("DELETE", "/v1/queues/q/tasks/k") | ("DELETE", "/v1/queues/q/dead/k") => (204, String::new()),
                ("POST", "/v1/queues/q/dead/k/retry") => (200, task("k").to_string()),
                _ => (404, json!({"error": {"code": "not_found", "message": "unexpected"}}).to_string()),
            })
            .await;
            assert_eq!(run_args(&server, &["cancel", "q", "k"]).await.unwrap(), "Cancelled task 'k' in queue q.");
            let out = run_args(&server, &["cancel", "q", "k", "--json"]).await.unwrap();
            assert_eq!(
                serde_json::from_str::<Value>(&out).unwrap(),
                json!({"outcome": "cancelled", "queue": "q", "key": "k"})
            );
            let out = run_args(&server, &["dead", "retry", "q", "k"]).await.unwrap();
            assert!(out.starts_with("Task 'k' in queue q is scheduled again, due 2099-01-01T00:00:00.000Z"), "{out}");
            assert_eq!(
                run_args(&server, &["dead", "rm", "q", "k"]).await.unwrap(),
                "Removed dead task 'k' from queue q."
            );
        }

        fn settings(version: u64, paused: bool) -> Value {
            json!({"queue": "q", "source": "api", "defaults": {"max_attempts": 20, "backoff": null, "repeat": null},
                   "action": null, "concurrency": 32, "rate": null, "shards": 1, "targets": true,
                   "paused": paused, "version": version, "updated_at": "2025-01-01T00:00:00.000Z"})
        }

        #[tokio::test]
        async fn queue_set_puts_or_patches_the_file_with_if_match_and_says_what_happened() {
            let dir = std::env::temp_dir().join(format!("punctual-cli-queue-set-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join("s.json");
            std::fs::write(&file, r#"{"defaults": {"max_attempts": 3}}"#).unwrap();
            let file = file.to_str().unwrap();
            let server = FakeServer::start(|r| match (r.method.as_str(), r.header("if-match")) {
                ("PUT", None) => (201, settings(1, false).to_string()),
                ("PUT", Some("1")) => (200, settings(2, false).to_string()),
                ("PATCH", None) => (200, settings(3, false).to_string()),
                _ => (409, json!({"error": {"code": "conflict", "message": "moved"}}).to_string()),
            })
            .await;
            let out = run_args(&server, &["queue", "set", "q", "--file", file]).await.unwrap();
            assert!(out.starts_with("Created the settings of queue q (version 1).\n\nQueue "), "{out}");
            let out = run_args(&server, &["queue", "set", "q", "--file", file, "--if-version", "1"]).await.unwrap();
            assert!(out.starts_with("Replaced the settings of queue q (now version 2)."), "{out}");
            let out = run_args(&server, &["queue", "set", "q", "--file", file, "--patch"]).await.unwrap();
            assert!(out.starts_with("Updated the settings of queue q (now version 3)."), "{out}");
            let e = run_args(&server, &["queue", "set", "q", "--file", file, "--if-version", "7"]).await.unwrap_err();
            assert_eq!(format!("{e:#}"), "moved");
            let requests = server.requests();
            let sent: Vec<(&str, &str, Option<&str>)> =
                requests.iter().map(|r| (r.method.as_str(), r.target.as_str(), r.header("if-match"))).collect();
            assert_eq!(
                sent,
                [
                    ("PUT", "/v1/queues/q/settings", None),
                    ("PUT", "/v1/queues/q/settings", Some("1")),
                    ("PATCH", "/v1/queues/q/settings", None),
                    ("PUT", "/v1/queues/q/settings", Some("7")),
                ]
            );
            for r in &requests {
                assert_eq!(serde_json::from_str::<Value>(&r.body).unwrap(), json!({"defaults": {"max_attempts": 3}}));
            }
            std::fs::remove_dir_all(dir).unwrap();
        }

        #[tokio::test]
        async fn queue_get_pause_resume_purge_and_rm_routes() {
            let server = FakeServer::start(|r| match (r.method.as_str(), r.target.as_str()) {
                ("GET", "/v1/queues/q%2Fx/settings") => (200, settings(4, false).to_string()),
                ("POST", "/v1/queues/q/pause") => (200, settings(5, true).to_string()),
                ("POST", "/v1/queues/q/resume") => (200, settings(6, false).to_string()),
                ("DELETE", "/v1/queues/q/tasks?state=dead") => (200, json!({"cancelled": 1}).to_string()),
                ("DELETE", "/v1/queues/q/tasks?state=all") => (200, json!({"cancelled": 12}).to_string()),
                ("DELETE", "/v1/queues/q/settings") => (204, String::new()),
                _ => (404, json!({"error": {"code": "not_found", "message": "queue 'q' has no settings"}}).to_string()),
            })
            .await;
            let out = run_args(&server, &["queue", "get", "q/x"]).await.unwrap();
            assert!(
                out.starts_with("Queue         q\nSource        api") && out.contains("\nVersion       4\n"),
                "{out}"
            );
            let e = run_args(&server, &["queue", "get", "q"]).await.unwrap_err();
            assert_eq!(format!("{e:#}"), "queue 'q' has no settings");
            let out = run_args(&server, &["queue", "pause", "q"]).await.unwrap();
            assert!(out.starts_with("Queue q is paused: "), "{out}");
            let out = run_args(&server, &["queue", "resume", "q"]).await.unwrap();
            assert!(out.starts_with("Queue q is running: "), "{out}");
            let out = run_args(&server, &["queue", "purge", "q", "--state", "dead", "--yes"]).await.unwrap();
            assert_eq!(out, "Cancelled 1 dead task in queue q.");
            let out = run_args(&server, &["queue", "purge", "q", "--yes"]).await.unwrap();
            assert_eq!(out, "Cancelled 12 tasks in queue q.");
            let out = run_args(&server, &["queue", "rm", "q", "--if-version", "6", "--json"]).await.unwrap();
            assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), json!({"outcome": "removed", "queue": "q"}));
            let rm = server.requests().into_iter().last().unwrap();
            assert_eq!((rm.method.as_str(), rm.header("if-match")), ("DELETE", Some("6")));
        }

        #[tokio::test]
        async fn queue_ls_is_ls_with_the_paused_column() {
            let server = FakeServer::start(|_| {
                let queues = json!({"queues": [{"name": "a", "scheduled": 1, "leased": 0, "dead": 0,
                                                "next_due_at": null, "paused": true}]});
                (200, queues.to_string())
            })
            .await;
            let out = run_args(&server, &["queue", "ls"]).await.unwrap();
            assert_eq!(out, run_args(&server, &["ls"]).await.unwrap());
            let lines: Vec<&str> = out.lines().collect();
            assert!(lines[0].ends_with("PAUSED") && lines[1].ends_with("yes"), "{out}");
        }

        /// Five tasks; like many cursor APIs, a full page carries a cursor even when it
        /// happens to end the list.
        async fn five_tasks() -> FakeServer {
            FakeServer::start(|r| {
                let q = query(r);
                let get = |name: &str| q.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
                let limit: usize = get("limit").and_then(|l| l.parse().ok()).unwrap_or(100);
                let offset: usize = get("cursor").and_then(|c| c.parse().ok()).unwrap_or(0);
                let end = (offset + limit).min(5);
                let tasks: Vec<Value> = (offset..end).map(|i| task(&format!("k{i}"))).collect();
                let next = if end - offset == limit { json!(end.to_string()) } else { Value::Null };
                (200, json!({"tasks": tasks, "next_cursor": next}).to_string())
            })
            .await
        }

        #[tokio::test]
        async fn listings_follow_cursors_up_to_the_limit_and_say_when_more_remain() {
            let server = five_tasks().await;
            let out = run_args(&server, &["ls", "q", "--limit", "3", "--state", "scheduled"]).await.unwrap();
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), 6, "{out}");
            assert!(lines[1].starts_with("k0 ") && lines[3].starts_with("k2 "), "{out}");
            assert_eq!(lines[5], "3 tasks shown; more remain. Continue with --cursor '3', or raise --limit.");
            let targets: Vec<String> = server.requests().iter().map(|r| r.target.clone()).collect();
            assert_eq!(
                targets,
                ["/v1/queues/q/tasks?limit=3&state=scheduled", "/v1/queues/q/tasks?limit=1&state=scheduled&cursor=3"]
            );

            let out = run_args(&server, &["ls", "q", "--cursor", "3", "--json"]).await.unwrap();
            let page: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(page["tasks"].as_array().unwrap().len(), 2);
            assert_eq!(page["next_cursor"], Value::Null);
        }

        #[tokio::test]
        async fn a_cursor_at_the_very_end_is_not_reported_as_more() {
            let server = five_tasks().await;
            let out = run_args(&server, &["ls", "q", "--limit", "5", "--json"]).await.unwrap();
            let page: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(page["tasks"].as_array().unwrap().len(), 5);
            assert_eq!(page["next_cursor"], Value::Null, "the peek found nothing after the cursor");
            let out = run_args(&server, &["dead", "ls", "q", "--limit", "5"]).await.unwrap();
            assert!(!out.contains("more remain"), "{out}");
        }

        #[tokio::test]
        async fn empty_results_say_so() {
            let server = FakeServer::start(|r| {
                if r.target.starts_with("/v1/queues?") || r.target == "/v1/queues" {
                    (200, json!({"queues": []}).to_string())
                } else {
                    (200, json!({"tasks": [], "next_cursor": null}).to_string())
                }
            })
            .await;
            assert_eq!(run_args(&server, &["ls", "q"]).await.unwrap(), "No tasks in queue q.");
            assert_eq!(run_args(&server, &["ls", "q", "--state", "dead"]).await.unwrap(), "No dead tasks in queue q.");
            assert_eq!(run_args(&server, &["dead", "ls", "q"]).await.unwrap(), "No dead tasks in queue q.");
            assert!(run_args(&server, &["ls"]).await.unwrap().starts_with("No queues yet"));
            assert!(run_args(&server, &["stats"]).await.unwrap().starts_with("No queues yet"));
        }

        #[tokio::test]
        async fn stats_asks_each_queue_for_its_detail() {
            let server = FakeServer::start(|r| match r.target.as_str() {
                "/v1/queues" => (200, json!({"queues": [{"name": "a", "scheduled": 1, "leased": 0, "dead": 0, "next_due_at": null},
                                                        {"name": "b:x", "scheduled": 2, "leased": 0, "dead": 1, "next_due_at": null}]}).to_string()),
                path => {
                    let name = path.trim_start_matches("/v1/queues/").replace("%3A", ":");
                    (200, json!({"name": name, "scheduled": 1, "leased": 0, "dead": 0, "next_due_at": null,
                                 "oldest_overdue_ms": 0, "lag_ms": {"p50": 3, "p99": 9}}).to_string())
                }
            })
            .await;
            let out = run_args(&server, &["stats", "--json"]).await.unwrap();
            let stats: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(stats["queues"][1]["name"], "b:x");
            assert_eq!(stats["queues"][1]["lag_ms"]["p99"], 9);
            let out = run_args(&server, &["stats"]).await.unwrap();
            assert!(out.lines().last().unwrap().starts_with("total (2 queues)"), "{out}");
        }

        #[tokio::test]
        async fn a_server_that_is_not_punctual_is_named() {
            let server = FakeServer::start(|_| (200, "<html>hello</html>".into())).await;
            let e = run_args(&server, &["ls"]).await.unwrap_err();
            assert!(format!("{e:#}").contains("is --server the address of a punctual server?"), "{e:#}");
        }
    }
}
