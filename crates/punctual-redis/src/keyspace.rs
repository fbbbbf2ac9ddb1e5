//! The Redis half of `punctual import keyspace`: reads what the legacy approach left in
//! a Redis — string keys whose expiry is a reminder's due time — and deletes such a key
//! once punctual holds its task. It knows neither punctual's own keys nor HTTP; what to
//! make of an entry is the caller's.
//!
//! Invariants:
//!
//! - **It never blocks Redis.** [`Scan`] pages with `SCAN … COUNT`, never `KEYS`; each
//!   page is read with one non-transactional pipeline (no `MULTI`); a delete is one
//!   script call per key doing O(1) work on that key alone
//!   (`lua/delete_if_unchanged.lua`), pipelined.
//! - **It deletes only unchanged keys, atomically.** The script compares the key's type,
//!   value and `PEXPIRETIME` with what was read and deletes in the same step; a key
//!   changed or gone meanwhile is left as it is. Deleting needs each entry's
//!   `PEXPIRETIME`, which only Redis 7 or newer has, so [`LegacyKeyspace::deleter`] is
//!   refused on an older Redis.
//! - **Remaining time is Redis' own.** An entry's `remaining_ms` is its `PEXPIRETIME`
//!   minus Redis' `TIME`, read in the same pipeline (its `PTTL` before Redis 7), so no
//!   other clock has to agree with Redis'.
//!
//! Errors are the crate's: `Invalid` for a URL that is not a Redis URL or a call the
//! Redis cannot serve, `Unavailable` for a Redis that cannot be reached (the message
//! names it, its password hidden) or may answer later, `Internal` for the rest.

use punctual_core::{Error, Result};
use redis::aio::MultiplexedConnection;
use redis::{RedisResult, Value};

use crate::conn::map_err;
use crate::target::redacted;

/// The `COUNT` hint of each `SCAN`: about how many keys one page holds.
const SCAN_COUNT: usize = 1_000;

const DELETE_IF_UNCHANGED: &str = include_str!("lua/delete_if_unchanged.lua");

/// A Redis holding legacy keys, connected (one multiplexed connection, which its
/// [`Scan`]s and [`Deleter`] share).
#[derive(Debug)]
pub struct LegacyKeyspace {
    conn: MultiplexedConnection,
    /// The major version `INFO server` reported (0 when it named none).
    major_version: u32,
}

/// A string key with an expiry, as it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyEntry {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    /// Milliseconds until it expires, by Redis' clock at the read (0 at the least).
    pub remaining_ms: i64,
    /// Its `PEXPIRETIME` (epoch ms); `None` on a Redis older than 7.
    pub expire_at_ms: Option<i64>,
}

/// What reading one key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    Found(LegacyEntry),
    /// It exists but has no expiry: not a reminder of the legacy approach.
    NoTtl,
    /// It expired (or was deleted) between the `SCAN` and the read.
    Gone,
    /// A list, hash, set… with an expiry: there is no value to carry.
    NotString,
}

/// What the delete script did with one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    /// Unchanged since the read: deleted.
    Yes,
    /// Its type, value or expiry changed: left in Redis.
    Changed,
    /// It no longer existed.
    Gone,
}

impl LegacyKeyspace {
    /// Connects to the Redis at `url` (`redis://…` or `rediss://…`) and reads its
    /// version. A `url` that is not a Redis URL is `Invalid` (see
    /// [`crate::source::check_url`]); a Redis that does not answer, or refuses
    /// `INFO server`, is `Unavailable`.
    pub async fn connect(url: &str) -> Result<LegacyKeyspace> {
        let shown = redacted(url);
        let mut conn = crate::source::connect(url).await?;
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await
            .map_err(|e| Error::Unavailable(format!("Redis at {shown} does not answer INFO server ({e})")))?;
        let major_version = info
            .lines()
            .find_map(|line| line.strip_prefix("redis_version:"))
            .and_then(|version| version.trim().split('.').next()?.parse().ok())
            .unwrap_or(0);
        Ok(LegacyKeyspace { conn, major_version })
    }

    /// The Redis' major version (0 when it named none).
    pub fn major_version(&self) -> u32 {
        self.major_version
    }

    /// Whether entries carry their `PEXPIRETIME` (Redis 7 or newer), which deleting needs.
    pub fn reads_expire_times(&self) -> bool {
        self.major_version >= 7
    }

    /// A scan of the keys matching `pattern` (a Redis glob), from the start.
    pub fn scan(&self, pattern: &str) -> Scan {
        Scan {
            conn: self.conn.clone(),
            pattern: pattern.to_owned(),
            cursor: 0,
            finished: false,
            expire_times: self.reads_expire_times(),
        }
    }

    /// Loads the delete script (`SCRIPT LOAD`). `Invalid` on a Redis older than 7.
    pub async fn deleter(&self) -> Result<Deleter> {
        if !self.reads_expire_times() {
            return Err(Error::invalid(
                "redis",
                format!("deleting compares PEXPIRETIME, which needs Redis 7; this is Redis {}", self.major_version),
            ));
        }
        let mut conn = self.conn.clone();
        let sha =
            redis::cmd("SCRIPT").arg("LOAD").arg(DELETE_IF_UNCHANGED).query_async(&mut conn).await.map_err(map_err)?;
        Ok(Deleter { conn, sha })
    }
}

/// A `SCAN` of the keys matching a pattern, page after page. As with `SCAN`, a key
/// that exists for the whole scan is returned at least once, and may be returned again.
#[derive(Debug)]
pub struct Scan {
    conn: MultiplexedConnection,
    pattern: String,
    cursor: u64,
    /// `SCAN` answered cursor 0: every page was returned.
    finished: bool,
    expire_times: bool,
}

impl Scan {
    /// The next page: what was read at each key one `SCAN` call returned (at times none,
    /// as `SCAN` may answer an empty page), or `None` once the scan is complete.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Read>>> {
        if self.finished {
            return Ok(None);
        }
        let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(self.cursor)
            .arg("MATCH")
            .arg(&self.pattern)
            .arg("COUNT")
            .arg(SCAN_COUNT)
            .query_async(&mut self.conn)
            .await
            .map_err(map_err)?;
        self.cursor = next;
        self.finished = next == 0;
        if keys.is_empty() {
            return Ok(Some(Vec::new()));
        }
        read_batch(&mut self.conn, &keys, self.expire_times).await.map(Some).map_err(map_err)
    }
}

/// Reads each of `keys` in one pipeline: with `expire_times` (Redis ≥ 7) `TIME`, then
/// `PEXPIRETIME` and `GET` of each key; else `PTTL` and `GET`. Not a transaction, so a
/// key may change between its two reads: the delete script then finds it changed.
async fn read_batch(conn: &mut MultiplexedConnection, keys: &[Vec<u8>], expire_times: bool) -> RedisResult<Vec<Read>> {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    if expire_times {
        pipe.cmd("TIME");
    }
    for key in keys {
        pipe.cmd(if expire_times { "PEXPIRETIME" } else { "PTTL" }).arg(key);
        pipe.cmd("GET").arg(key);
    }
    let mut replies: Vec<RedisResult<Value>> = pipe.query_async(conn).await?;
    let now_ms = if expire_times {
        let time: (i64, i64) = redis::from_redis_value(replies.remove(0)?)?;
        Some(time.0 * 1_000 + time.1 / 1_000)
    } else {
        None
    };
    let mut replies = replies.into_iter();
    let mut reads = Vec::with_capacity(keys.len());
    for key in keys {
        let (Some(expiry), Some(value)) = (replies.next(), replies.next()) else {
            return Err(redis::RedisError::from((redis::ErrorKind::Client, "a pipeline answered too few replies")));
        };
        let expiry: i64 = redis::from_redis_value(expiry?)?;
        reads.push(match (expiry, value) {
            (-2, _) => Read::Gone,
            (-1, _) => Read::NoTtl,
            (_, Err(e)) if e.code() == Some("WRONGTYPE") => Read::NotString,
            (_, Err(e)) => return Err(e),
            (_, Ok(Value::Nil)) => Read::Gone,
            (expiry, Ok(value)) => {
                let value: Vec<u8> = redis::from_redis_value(value)?;
                let (remaining_ms, expire_at_ms) = match now_ms {
                    Some(now) => (expiry - now, Some(expiry)),
                    None => (expiry, None),
                };
                Read::Found(LegacyEntry { key: key.clone(), value, remaining_ms: remaining_ms.max(0), expire_at_ms })
            }
        });
    }
    Ok(reads)
}

/// The delete script, loaded into the legacy Redis (7 or newer) and called by its SHA;
/// made by [`LegacyKeyspace::deleter`].
#[derive(Debug)]
pub struct Deleter {
    conn: MultiplexedConnection,
    sha: String,
}

impl Deleter {
    /// Deletes each of `entries` that still holds the value and expiry it was read with,
    /// one script call per key, pipelined; the answers are in the order of `entries`.
    /// Call it only for keys whose task punctual holds. An entry read without its
    /// `PEXPIRETIME` is `Invalid`, and then nothing is deleted.
    pub async fn delete_if_unchanged(&self, entries: &[&LegacyEntry]) -> Result<Vec<Deleted>> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for entry in entries {
            let Some(expire_at) = entry.expire_at_ms else {
                return Err(Error::invalid(
                    "expire_at_ms",
                    "deleting needs the expiry read with PEXPIRETIME (Redis 7)",
                ));
            };
            pipe.cmd("EVALSHA").arg(&self.sha).arg(1).arg(&entry.key).arg(&entry.value).arg(expire_at);
        }
        let answers: Vec<i64> = pipe.query_async(&mut self.conn.clone()).await.map_err(map_err)?;
        Ok(answers
            .into_iter()
            .map(|answer| match answer {
                1 => Deleted::Yes,
                -1 => Deleted::Gone,
                _ => Deleted::Changed,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use punctual_testkit::redis::{RedisServer, server};

    async fn connection(redis: &RedisServer) -> MultiplexedConnection {
        redis::Client::open(redis.url()).unwrap().get_multiplexed_async_connection().await.unwrap()
    }

    async fn keyspace(redis: &RedisServer) -> LegacyKeyspace {
        LegacyKeyspace::connect(&redis.url()).await.unwrap()
    }

    fn found(key: &str, value: &str, remaining_ms: i64) -> LegacyEntry {
        LegacyEntry { key: key.into(), value: value.into(), remaining_ms, expire_at_ms: None }
    }

    /// Pages of a scan: every key matching the pattern is read, none outside it, and
    /// the scan ends.
    #[tokio::test]
    async fn a_scan_reads_every_matching_key_page_by_page_and_ends() {
        let redis = server();
        let mut conn = connection(&redis).await;
        let mut pipe = redis::pipe();
        for i in 0..2_500 {
            pipe.cmd("SET").arg(format!("legacy:{i}")).arg(i).arg("PX").arg(600_000).ignore();
            pipe.cmd("SET").arg(format!("other:{i}")).arg(i).arg("PX").arg(600_000).ignore();
        }
        pipe.exec_async(&mut conn).await.unwrap();

        let mut scan = keyspace(&redis).await.scan("legacy:*");
        let (mut pages, mut seen) = (0, std::collections::BTreeSet::new());
        while let Some(reads) = scan.next_page().await.unwrap() {
            pages += 1;
            for read in reads {
                let Read::Found(entry) = read else { panic!("{read:?}") };
                assert!(entry.expire_at_ms.is_some(), "Redis 7 or newer: {entry:?}");
                seen.insert(String::from_utf8(entry.key).unwrap());
            }
        }
        let expected: std::collections::BTreeSet<String> = (0..2_500).map(|i| format!("legacy:{i}")).collect();
        assert_eq!(seen, expected);
        assert!(pages > 1, "{pages} page(s) for 5,000 keys");
        assert_eq!(scan.next_page().await.unwrap(), None, "a finished scan stays finished");
    }

    #[tokio::test]
    async fn reads_tell_strings_with_a_ttl_from_the_rest() {
        let redis = server();
        let mut conn = connection(&redis).await;
        redis::pipe()
            .cmd("SET")
            .arg("ttl")
            .arg("v")
            .arg("PX")
            .arg(60_000)
            .ignore()
            .cmd("SET")
            .arg("forever")
            .arg("v")
            .ignore()
            .cmd("HSET")
            .arg("hash")
            .arg("f")
            .arg("v")
            .ignore()
            .cmd("PEXPIRE")
            .arg("hash")
            .arg(60_000)
            .ignore()
            .exec_async(&mut conn)
            .await
            .unwrap();
        let keys: Vec<Vec<u8>> = ["ttl", "forever", "hash", "missing"].iter().map(|k| k.as_bytes().to_vec()).collect();
        for expiretime in [true, false] {
            let reads = read_batch(&mut conn, &keys, expiretime).await.unwrap();
            let Read::Found(read) = &reads[0] else { panic!("{reads:?}") };
            assert_eq!((read.key.as_slice(), read.value.as_slice()), (&b"ttl"[..], &b"v"[..]));
            assert!((59_000..=60_000).contains(&read.remaining_ms), "{read:?}");
            assert_eq!(read.expire_at_ms.is_some(), expiretime);
            assert_eq!(reads[1..], [Read::NoTtl, Read::NotString, Read::Gone]);
        }
    }

    /// The delete step on its own: between the read and the delete, one key's value
    /// changes, another's TTL, a third is replaced by a hash, a fourth expires; only
    /// the key left as it was is deleted.
    #[tokio::test]
    async fn only_keys_unchanged_since_the_read_are_deleted() {
        let redis = server();
        let mut conn = connection(&redis).await;
        let names = ["same", "new-value", "new-ttl", "new-type", "gone", "same-again"];
        for name in names {
            redis::cmd("SET").arg(name).arg("v").arg("PX").arg(600_000).exec_async(&mut conn).await.unwrap();
        }
        let keys: Vec<Vec<u8>> = names.iter().map(|k| k.as_bytes().to_vec()).collect();
        let reads = read_batch(&mut conn, &keys, true).await.unwrap();
        let found: Vec<&LegacyEntry> =
            reads.iter().map(|r| if let Read::Found(f) = r { f } else { panic!("{r:?}") }).collect();

        redis::pipe()
            .cmd("SET")
            .arg("new-value")
            .arg("w")
            .arg("KEEPTTL")
            .ignore()
            .cmd("PEXPIRE")
            .arg("new-ttl")
            .arg(900_000)
            .ignore()
            .cmd("DEL")
            .arg("new-type")
            .ignore()
            .cmd("HSET")
            .arg("new-type")
            .arg("f")
            .arg("v")
            .ignore()
            .cmd("PEXPIRE")
            .arg("new-type")
            .arg(600_000)
            .ignore()
            .cmd("DEL")
            .arg("gone")
            .ignore()
            // Written again with the same value and expiry: unchanged as far as anyone can tell.
            .cmd("SET")
            .arg("same-again")
            .arg("v")
            .arg("PXAT")
            .arg(found[5].expire_at_ms.unwrap())
            .ignore()
            .exec_async(&mut conn)
            .await
            .unwrap();

        let deleter = keyspace(&redis).await.deleter().await.unwrap();
        let outcomes = deleter.delete_if_unchanged(&found).await.unwrap();
        use Deleted::*;
        assert_eq!(outcomes, [Yes, Changed, Changed, Changed, Gone, Yes]);
        let exists: Vec<i64> = {
            let mut pipe = redis::pipe();
            for name in names {
                pipe.cmd("EXISTS").arg(name);
            }
            pipe.query_async(&mut conn).await.unwrap()
        };
        assert_eq!(exists, [0, 1, 1, 1, 0, 0]);
        let value: String = redis::cmd("GET").arg("new-value").query_async(&mut conn).await.unwrap();
        assert_eq!(value, "w", "a changed key is left as it is");
    }

    #[tokio::test]
    async fn deleting_without_the_expiry_read_is_refused() {
        let redis = server();
        let deleter = keyspace(&redis).await.deleter().await.unwrap();
        let read = found("k", "v", 5);
        assert!(deleter.delete_if_unchanged(&[&read]).await.is_err());
    }
}
