//! The flags of `punctual serve` and the examples of its `--help`, which also show the
//! configuration file's every key.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use punctual_core::time::parse_duration;

use super::LogFormat;

const EXAMPLES: &str = "\
Examples:
  punctual serve                               # ./punctual-data, 127.0.0.1:7575
  punctual serve --data /var/lib/punctual --listen 0.0.0.0:7575
  punctual serve --config punctual.toml        # flags override the file
  punctual serve --token s3cret --token other  # or PUNCTUAL_TOKENS=s3cret,other
  punctual serve --store redis://127.0.0.1:6379
  punctual serve --tls-cert cert.pem --tls-key key.pem   # HTTPS; SIGHUP reloads both
  PUNCTUAL_STORE=redis://:PASSWORD@10.0.0.5:6379 punctual serve   # not in `ps`
  punctual serve --store redis-cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000
  punctual serve --store redis-sentinel://10.0.0.1:26379,10.0.0.2:26379/mymaster
  RUST_LOG=debug punctual serve --log-format json

Configuration file (TOML; every key optional; unknown keys are an error):
  listen = \"127.0.0.1:7575\"
  data = \"./punctual-data\"            # or: store = \"redis://127.0.0.1:6379\"
  tokens = [\"s3cret\"]
  log_format = \"text\"                 # or \"json\"
  grace_period = \"10s\"
  request_timeout = \"30s\"
  max_payload_bytes = 65536
  max_batch = 10000
  max_body_bytes = 33554432
  max_overdue = \"1m\"                # /readyz names queues whose due tasks wait longer
  strict_queues = false               # true: only the [queues.\"…\"] below take tasks (else 404)
  tls_cert = \"/etc/punctual/cert.pem\"  # HTTPS: PEM chain and key, both or neither;
  tls_key = \"/etc/punctual/key.pem\"    #   SIGHUP re-reads them

  [redis]                             # with store = \"redis://…\" only
  prefix = \"punctual\"                 # of every key: deployments can share a Redis
  wait_replicas = 0                   # after each write, WAIT for this many replicas
  timeout = \"5s\"                      # no call waits longer for Redis: then 503
  shard_order_slack = \"1s\"            # sharded queues: due order across shards within this

  [queues.\"order.cancel\"]             # defaults for tasks of this queue
  max_attempts = 10
  backoff = { initial = \"1s\", factor = 2.0, max = \"1h\" }
  shards = 1                          # Redis: split a busy queue over N hash tags
  repeat = { every = \"24h\" }          # for tasks that set no repeat of their own
  dead_retention = \"30d\"             # delete dead tasks 30 days after they died (default: keep)
  history_retention = \"30d\"          # keep task histories 30 days after their latest event (default 7d)

  [egress]                            # where actions and tasks' targets may connect; on a
                                      #   shared store every server needs the same [egress]
                                      #   and [targets] (a mismatch is logged, in /readyz)
  allow = [\"127.0.0.1\"]               # besides public addresses: IPs, CIDRs (10.0.0.0/8),
                                      #   host names (hooks.internal, *.corp.example)
  allow_private = false               # true: 10/8, 172.16/12, 192.168/16, fc00::/7, 100.64/10

  [targets]                           # tasks that carry their own HTTP target
  secret_env = \"TARGET_SECRET\"        # signs them where the queue's action has no secret
  previous_secret_env = \"OLD_SECRET\"  # while rotating: signs too (a second v1), then remove

  [telemetry]                         # traces over OTLP/HTTP (off without an endpoint)
  otlp_endpoint = \"http://127.0.0.1:4318\"  # the receiver's base URL (/v1/traces is added);
                                      #   default: OTEL_EXPORTER_OTLP_ENDPOINT
  service_name = \"punctual\"           # default: OTEL_SERVICE_NAME, then punctual
  export_interval = \"5s\"              # spans wait at most this long to be sent

  [queues.\"order.cancel\".action]      # push: the server runs the handler
  kind = \"webhook\"                    # webhook | email | wecom | dingtalk | feishu | slack
  url = \"http://127.0.0.1:8080/hooks/order-cancel\"
  secret_env = \"ORDER_HOOK_SECRET\"    # signs deliveries (Punctual-Signature)
  previous_secret_env = \"OLD_HOOK_SECRET\"  # while rotating: signs too (docs/webhooks.md)
  timeout = \"10s\"
  concurrency = 32
  final_statuses = [400, 413, 415, 422]  # answers that send a task to dead (the default);
                                      #   every other non-2xx is retried

  [queues.\"flow.remind\".action]
  kind = \"wecom\"
  secret_env = \"WECOM_KEY\"            # the robot's key
  text = \"{{ assignee }}: step {{ step }} is overdue since {{ due_local }}\"
  mention = [\"{{ assignee_id }}\"]
  rate = \"20/1m\"                     # on Redis: for every server together
  timezone = \"Asia/Shanghai\"

  [[access]]                          # a scoped token (those in tokens may do everything)
  token_env = \"SHOP_TOKEN\"            # or token = \"…\"
  permissions = [\"schedule\", \"read\"]  # read | schedule | work | admin (default: all)
  queues = [\"order.*\"]                # name patterns, * = any run (default: every queue)

Durations are written \"1500ms\", \"30s\", \"1h 30m\", \"7d\" or as integer milliseconds.
A queue without an action is drained by pull workers (POST /v1/queues/{queue}/lease).
Check a file without starting: punctual check-config FILE.
Logs go to stderr; RUST_LOG filters them (default: info).
SIGTERM or SIGINT: stop accepting, let running requests finish within the grace period
(long polls answer at once with no leases), make every write durable, exit 0.
SIGHUP: re-read the config file's access rules (tokens, [[access]]), in force for the next
request; a file that does not validate is logged with its line and changes nothing; other
changes to the file are named in the log as taking a restart. With TLS, also re-read the
certificate and key; new connections get them, open ones stay; files that do not load are
logged and the previous certificate kept.";

/// The flags of `punctual serve`.
#[derive(Debug, Clone, Default, Args)]
#[command(after_long_help = EXAMPLES)]
pub struct ServeArgs {
    /// TOML configuration file; flags override its values.
    #[arg(long, short = 'c', value_name = "FILE", env = "PUNCTUAL_CONFIG")]
    pub(crate) config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:7575].
    #[arg(long, value_name = "HOST:PORT")]
    pub(crate) listen: Option<String>,
    /// Directory of the embedded store, created if missing [default: ./punctual-data].
    #[arg(long, value_name = "DIR", conflicts_with = "store")]
    pub(crate) data: Option<PathBuf>,
    /// A shared store instead of the embedded one, for many servers sharing the work:
    /// redis://HOST:PORT[/DB], redis-cluster://HOST:PORT,HOST:PORT,… or
    /// redis-sentinel://HOST:PORT,…/NAME[/DB] (the primary Sentinel names NAME);
    /// rediss://, rediss-cluster://, rediss-sentinel:// over TLS, trusting
    /// SSL_CERT_FILE if set; or in
    /// PUNCTUAL_STORE, which keeps a password in the URL out of the process list.
    #[arg(long, value_name = "URL", env = "PUNCTUAL_STORE", hide_env_values = true)]
    pub(crate) store: Option<String>,
    /// A bearer token clients must send (Authorization: Bearer TOKEN); repeatable, or
    /// comma-separated in PUNCTUAL_TOKENS. Without tokens the API is open.
    #[arg(
        long = "token",
        value_name = "TOKEN",
        env = "PUNCTUAL_TOKENS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub(crate) tokens: Vec<String>,
    /// Log format on stderr [default: text].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub(crate) log_format: Option<LogFormat>,
    /// On SIGTERM/SIGINT, how long running requests may take to finish [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) grace_period: Option<Duration>,
    /// The longest a request may take, reading its body included; a lease request gets
    /// its wait (up to 60s) on top [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) request_timeout: Option<Duration>,
    /// The largest task payload, serialized as JSON, in bytes [default: 65536].
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_payload_bytes: Option<usize>,
    /// The most tasks or acks in one batch request [default: 10000].
    #[arg(long, value_name = "N")]
    pub(crate) max_batch: Option<usize>,
    /// The largest body of a batch request, in bytes [default: 33554432 (32 MiB)].
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_body_bytes: Option<usize>,
    /// /readyz names the queues whose oldest due task has waited longer than this for
    /// a consumer; it stays ready (alert on punctual_oldest_overdue_seconds) [default: off].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) max_overdue: Option<Duration>,
    /// Refuse to schedule or lease tasks of a queue the config file does not declare
    /// ([queues."NAME"]), with 404 naming the nearest declared queue [file: strict_queues].
    #[arg(long)]
    pub(crate) strict_queues: bool,
    /// Serve HTTPS (HTTP/2 and HTTP/1.1 by ALPN) with this PEM certificate chain, the
    /// server's certificate first; needs --tls-key. SIGHUP re-reads both [file: tls_cert].
    #[arg(long, value_name = "FILE")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert (PKCS#8, RSA or EC) [file: tls_key].
    #[arg(long, value_name = "FILE")]
    pub(crate) tls_key: Option<PathBuf>,
}
