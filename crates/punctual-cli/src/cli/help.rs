//! The text each subcommand's `--help` shows after its flags: examples first, then
//! what a user must know to read the answers (exit statuses, what is sent as typed).
//! Kept apart from the flags in [`super`] so the parsing reads on one screen.

pub(super) const HISTORY: &str = "\
Examples:
  # \"I was never reminded\": was the reminder created, replaced, cancelled, tried?
  punctual history flow.reminder task-77@pi-9@zhang.wei
  punctual history order.cancel order-1234 --json

One line per event, oldest first: created, replaced (which fields changed), cancelled
(by key or tag), purged, leased (the try and the lease's number), extended, released,
acked (the outcome, the handler's error, a webhook's status and answer), expired,
retried or deleted by hand. BY is the name of the access token that made the change
([[access]] name; empty for the server's own work, such as an expiry). The history
outlives the task: it is kept for the queue's history_retention (7 days unless
configured) after its latest event, at most the latest 100 events per key. Exit status
1 when there is no such task and nothing happened to one within the retention.";

pub(super) const IMPORT: &str = "\
Examples:
  punctual import keyspace --redis redis://127.0.0.1:6379 --match 'flow:reminder:*' \\
      --strip-prefix flow:reminder: --queue flow.reminder --dry-run
  punctual import redisson --redis redis://127.0.0.1:6379 --delayed-queue order-cancel \\
      --codec json-jackson --queue order.cancel --dry-run

See punctual import keyspace --help and punctual import redisson --help;
docs/migrate-from-keyspace-notifications.md and docs/migrate-from-redisson.md give the
cut-over plans.";

pub(super) const IMPORT_KEYSPACE: &str = "\
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

pub(super) const IMPORT_REDISSON: &str = "\
Examples:
  # What would be imported: reads Redis, writes nothing
  punctual import redisson --redis redis://127.0.0.1:6379 --delayed-queue order-cancel \\
      --codec json-jackson --queue order.cancel --dry-run

  # Import, each task keyed by the element's orderId, and remove what punctual holds
  punctual import redisson --redis redis://:s3cret@10.0.0.5:6379/0 --delayed-queue order-cancel \\
      --codec json-jackson --key-field orderId --queue order.cancel

  # A queue of strings, each task's payload the text
  punctual import redisson --redis redis://127.0.0.1:6379 --delayed-queue flow:reminder \\
      --codec string --queue flow.reminder

Reads the delayed queue in front of NAME: the sorted set redisson_delay_queue_timeout:{NAME}
(each element's due time) and the list redisson_delay_queue:{NAME}. Each element still
delayed becomes a task in --queue, due at its score (a time already past fires at once),
keyed redisson-<its random id in hex> (or by --key-field). Tasks are sent with
if_exists keep, so a task already in punctual is left as it is and a re-run imports
nothing twice. Once the server confirmed a task, its element is removed from both keys,
but only if Redisson has not moved it to NAME meanwhile: then Redisson delivers it,
the import's task is cancelled, and the element is counted as taken by Redisson.
Elements Redisson moved to NAME before the import are no longer delayed: they are left
to its consumers, and counted.

Codecs: string (StringCodec: the text as a JSON string, or parsed with --payload json)
and json-jackson (JsonJacksonCodec: the JSON, with Jackson's type hints stripped: every
\"@class\" property, and every [\"java.util.ArrayList\", [...]] pair of a class name and a
value replaced by the value; --keep-type-hints keeps them). Other codecs (kryo5, Redisson's
default, marshalling, fst, smile, cbor, msgpack…) store binary formats and are refused.
An element whose value does not decode with the codec, or that has no valid key, is
named on standard error (the first 50) and left in Redis.

Redis is never blocked: the list is read from its head in pages of 1000 by a short
script, the sorted set swept with ZSCAN, and each removal is one short script per
element. Progress goes to standard error, the counts to standard output (--json: as
JSON).

Exit status: 0 when done (skipped elements are counted, not errors), 1 when Redis or the
server cannot be reached or the server refused elements (named on standard error), 2 on a
usage error (a codec that is not read, a --key-field without JSON).";

pub(super) const TOP: &str = "\
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
  punctual import redisson --redis redis://127.0.0.1:6379 --delayed-queue orders --codec string --queue orders --dry-run
  punctual cron next '0 0 9 ? * MON-FRI' --syntax spring --tz Asia/Shanghai   # no server needed

Client commands talk to the server at --server (env PUNCTUAL_SERVER, default
http://127.0.0.1:7575) with --token (env PUNCTUAL_TOKEN). They print tables; --json prints
the server's JSON. Exit status: 0 success, 1 refused by the server, not found or
unreachable, 2 usage error.

Run 'punctual <COMMAND> --help' for a command's flags and examples.";

pub(super) const SCHEDULE: &str = "\
Examples:
  # Cancel order 1234 in 30 minutes unless it is paid first
  punctual schedule order.cancel order-1234 --delay 30m --payload '{\"order_id\": 1234}'

  # At a fixed time (RFC 3339 with any offset, or epoch milliseconds)
  punctual schedule report.daily 2026-11-30 --at 2026-11-30T09:00:00+08:00

  # Every 24 hours, three times in all, tagged so the workflow can be cancelled at once
  punctual schedule reminder.chief pi-9 --delay 1h --repeat-every 24h --repeat-times 3 --tag pi-9

  # Weekdays at 09:00 Shanghai time
  punctual schedule report.daily weekday --repeat-cron '0 9 * * MON-FRI' --tz Asia/Shanghai

  # The same as a Spring @Scheduled or Quartz cron writes it (try one with punctual cron next)
  punctual schedule report.daily weekday --repeat-cron '0 0 9 ? * MON-FRI' --cron-syntax spring \
      --tz Asia/Shanghai

  # Remind the approver after 8 working hours of the cn-office calendar
  punctual schedule flow.remind approve-42 --delay 8h --calendar cn-office

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

pub(super) const CHECK_CONFIG: &str = "\
Examples:
  punctual check-config punctual.toml
  WECOM_KEY=... punctual check-config /etc/punctual.toml

Checks what punctual serve --config would: unknown keys, bad values and URLs, template
syntax, time zones, and that every secret_env / url_env / password_env variable is set
(in this environment). Exit status 0 when the file is valid, 1 with the file, line and
reason when it is not.";

pub(super) const GET: &str = "\
Examples:
  punctual get order.cancel order-1234
  punctual get order.cancel 'key with spaces/and slashes' --json

Exit status 1 when the task does not exist (done and cancelled tasks are deleted).";

pub(super) const CANCEL: &str = "\
Examples:
  punctual cancel order.cancel order-1234
  punctual cancel flow.reminder --tag pi-9      # the workflow moved on: drop its reminders

A leased (running) task is cancelled for good: no retry, no repeat. Exit status 1 when
the task does not exist. With --json, prints {\"outcome\": \"cancelled\", \"queue\", \"key\"};
with --tag, the server's {\"cancelled\": N} (0 when no task carries the tag, exit 0).";

pub(super) const LS: &str = "\
Examples:
  punctual ls                                   # queues: counts and next due time
  punctual ls order.cancel                      # the first 100 tasks, in due order
  punctual ls order.cancel --state leased       # only the running ones
  punctual ls flow.reminder --tag pi-9          # only the tasks tagged pi-9
  punctual ls order.cancel --limit 1000 --json  # for scripts (next_cursor to continue)
  punctual ls order.cancel --cursor <CURSOR>    # continue where a listing stopped

Pages are fetched until --limit tasks; when more remain, the output says so and gives
the cursor to continue from.";

pub(super) const STATS: &str = "\
Examples:
  punctual stats                  # every queue, with a total
  punctual stats order.cancel     # one queue
  punctual stats --json

NEXT DUE is the earliest due task; OLDEST OVERDUE how long the most overdue task has
waited past its due time (a sign that handlers are not keeping up); LAG how late recent
tasks fired after their due time.";

pub(super) const DEAD: &str = "\
Tasks die after max_attempts failed tries, or when a handler answers 'fail'. They are
kept until retried or removed.

Examples:
  punctual dead ls order.cancel
  punctual dead retry order.cancel order-1234
  punctual dead retry order.cancel               # every dead task of the queue
  punctual dead rm order.cancel order-1234";

pub(super) const DEAD_LS: &str = "\
Examples:
  punctual dead ls order.cancel
  punctual dead ls order.cancel --limit 1000 --json";

pub(super) const GROUPS: &str = "\
Examples:
  punctual groups ls order.cancel

A task joins a group with punctual schedule --group G. With the queue setting
group_concurrency = N, at most N tasks of a group are leased at once (1: one at a
time, in due order); with group_rate = \"10/1m\", at most 10 of a group's tasks are
leased in any minute. Due tasks are handed out round robin between groups.";

pub(super) const GROUPS_LS: &str = "\
Examples:
  punctual groups ls order.cancel
  punctual groups ls order.cancel --limit 1000 --json

LEASED counts what group_concurrency limits: live leases, and expired ones the
reaper has not ended yet.";

pub(super) const DEAD_RETRY: &str = "\
Examples:
  punctual dead retry order.cancel order-1234   # one dead task
  punctual dead retry order.cancel --tag pi-9   # the dead tasks tagged pi-9
  punctual dead retry order.cancel              # every dead task of the queue

Each task is scheduled again, due now, with its attempts reset. With a KEY, exit status
1 when no dead task has that key; otherwise it says how many were retried (0 is not an
error). With --json, prints the task, or the server's {\"retried\": N}.";

pub(super) const DEAD_RM: &str = "\
Examples:
  punctual dead rm order.cancel order-1234

Exit status 1 when no dead task has that key.";

pub(super) const QUEUE: &str = "\
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

pub(super) const QUEUE_LS: &str = "\
Examples:
  punctual queue ls           # counts, next due time and whether each queue is paused
  punctual queue ls --json

The same list as punctual ls without a queue.";

pub(super) const QUEUE_GET: &str = "\
Examples:
  punctual queue get order.cancel
  punctual queue get order.cancel --json > order-cancel.json   # edit, then queue set

Exit status 1 when the queue has no settings (its tasks take the built-in defaults).";

pub(super) const QUEUE_SET: &str = "\
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

pub(super) const QUEUE_PAUSE: &str = "\
Examples:
  punctual queue pause order.cancel

A paused queue keeps accepting schedules, cancels and reads; nothing of it is leased or
delivered (running deliveries finish) until it is resumed. The pause is stored: it
lasts across restarts and holds on every node.";

pub(super) const QUEUE_RESUME: &str = "\
Examples:
  punctual queue resume order.cancel

The tasks that fell due while the queue was paused fire at once, in due order.";

pub(super) const QUEUE_PURGE: &str = "\
Examples:
  punctual queue purge order.cancel --state dead --yes     # drop every dead task
  punctual queue purge order.cancel --state scheduled      # asks first on a terminal
  punctual queue purge order.cancel --yes                  # every task, leased ones too

Cancels the queue's tasks in that state for good (leased ones as by cancel: their acks
then fail). Asks for confirmation on a terminal; elsewhere (scripts, pipes) it needs
--yes and exits 2 without it.";

pub(super) const QUEUE_RM: &str = "\
Examples:
  punctual queue rm order.cancel
  punctual queue rm order.cancel --if-version 4

Removes the stored settings; the queue's tasks stay and take the built-in defaults.
Exit status 1 when the queue has no settings or --if-version is stale.";
