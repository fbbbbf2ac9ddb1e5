//! The Redis half of `punctual import redisson`: reads the elements a Redisson
//! `RDelayedQueue` still delays, and removes one once punctual holds its task. It knows
//! neither Redisson's codecs nor HTTP; what to make of an element is the caller's.
//!
//! Redisson's layout, for a delayed queue in front of the destination queue `NAME`
//! (`RedissonDelayedQueue.java`): the sorted set `redisson_delay_queue_timeout:{NAME}`
//! scores each element by its due time (epoch ms, the offering client's clock) and the
//! list `redisson_delay_queue:{NAME}` holds the same members in the order offered.
//! Each member is `struct.pack('Bc0Lc0', …)` of a random id and the codec's bytes
//! ([`unpack`]). When an element comes due, a Redisson client's transfer task moves its
//! value to the list `NAME` and removes the member from both keys in one script; those
//! are no longer delayed and this module leaves them alone. (A name that already holds
//! a `{` is not wrapped in another: [`keys`].)
//!
//! Invariants:
//!
//! - **It never blocks Redis.** [`Walk`] reads pages of the list from its head with one
//!   short read-only script each (`lua/redisson_read_page.lua`), then sweeps the sorted
//!   set with `ZSCAN`; a removal is one script call per element doing O(log N) plus a
//!   short `LREM` walk (`lua/redisson_remove.lua`), pipelined.
//! - **It removes only what is still delayed, atomically.** The removal script removes
//!   the member from both keys only if the sorted set still holds it; one that Redisson
//!   moved meanwhile (or the application removed) is left to Redisson.
//! - **Every element delayed for the whole walk is returned, once.** The list pass may
//!   skip members when Redisson removes some from before the walk's position; the sweep
//!   of the sorted set then returns every member the pass did not, and members the
//!   sorted set holds but the list lacks.
//!
//! Errors are the crate's, as in [`crate::source`]; a key of the wrong type is
//! `Invalid`.

use std::collections::HashSet;

use punctual_core::{Error, Result};
use redis::Value;
use redis::aio::MultiplexedConnection;

use crate::conn::map_err;

/// Members read by one call of the read script.
const PAGE: usize = 1_000;
/// The `COUNT` hint of each `ZSCAN` of the sweep.
const SWEEP_COUNT: usize = 1_000;

const READ_PAGE: &str = include_str!("lua/redisson_read_page.lua");
const REMOVE: &str = include_str!("lua/redisson_remove.lua");

/// The three keys of the delayed queue in front of the destination queue `NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    /// `redisson_delay_queue_timeout:{NAME}`: the members by due time.
    pub timeout_set: String,
    /// `redisson_delay_queue:{NAME}`: the members in the order offered.
    pub list: String,
    /// `NAME`: where Redisson moves the values that came due.
    pub destination: String,
}

/// The keys Redisson uses for the delayed queue in front of `name` (its
/// `RedissonObject.prefixName`: the name in braces, unless it holds a `{` already).
pub fn keys(name: &str) -> Keys {
    let prefixed = |prefix: &str| {
        if name.contains('{') { format!("{prefix}:{name}") } else { format!("{prefix}:{{{name}}}") }
    };
    Keys {
        timeout_set: prefixed("redisson_delay_queue_timeout"),
        list: prefixed("redisson_delay_queue"),
        destination: name.to_owned(),
    }
}

/// A member split into its parts (see [`unpack`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packed<'a> {
    /// The random id Redisson gave the element when it was offered (8 bytes).
    pub id: &'a [u8],
    /// The value as the queue's codec wrote it.
    pub value: &'a [u8],
}

/// Splits a member packed by Redisson's `struct.pack('Bc0Lc0', #id, id, #value,
/// value)`: one byte of length and the id, then eight bytes of length
/// (little-endian) and the value. Anything else is an `Err` with what is wrong.
pub fn unpack(member: &[u8]) -> std::result::Result<Packed<'_>, String> {
    let (&id_len, rest) = member.split_first().ok_or("it is empty")?;
    let id_len = usize::from(id_len);
    if rest.len() < id_len + 8 {
        return Err(format!("{} bytes are too few for an id of {id_len} bytes and a length", member.len()));
    }
    let (id, rest) = rest.split_at(id_len);
    let (len, value) = rest.split_at(8);
    let len = u64::from_le_bytes(len.try_into().expect("split at 8"));
    if u64::try_from(value.len()).ok() != Some(len) {
        return Err(format!("its value's length says {len} bytes, and {} follow", value.len()));
    }
    Ok(Packed { id, value })
}

/// Packs a member as Redisson does: the inverse of [`unpack`] (tests write with it).
pub fn pack(id: &[u8], value: &[u8]) -> Vec<u8> {
    let id_len = u8::try_from(id.len()).expect("an id of at most 255 bytes");
    let mut member = Vec::with_capacity(1 + id.len() + 8 + value.len());
    member.push(id_len);
    member.extend_from_slice(id);
    member.extend_from_slice(&(value.len() as u64).to_le_bytes());
    member.extend_from_slice(value);
    member
}

/// An element as read: its member and, when the sorted set holds it, its due time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub member: Vec<u8>,
    /// Its score (epoch ms); `None` when only the list holds it, which Redisson never
    /// moves to the destination queue.
    pub due_at_ms: Option<i64>,
}

/// How many members each key held when [`DelayedQueue::sizes`] read them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sizes {
    /// Members of the timeout set: the elements still delayed.
    pub delayed: u64,
    /// Members of the list.
    pub listed: u64,
    /// Values in the destination queue: moved there by Redisson, no longer delayed.
    pub in_destination: u64,
}

/// What the removal script did with one element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removed {
    /// It was still delayed: removed from both keys.
    Yes,
    /// The timeout set no longer held it: Redisson moved it (or the application
    /// removed it); left alone.
    Taken,
}

/// A Redisson delayed queue in a Redis, connected.
#[derive(Debug)]
pub struct DelayedQueue {
    conn: MultiplexedConnection,
    keys: Keys,
}

impl DelayedQueue {
    /// Connects to the Redis at `url` and checks the types of the queue's keys: a key
    /// that exists with another type than Redisson gives it is `Invalid`, naming it.
    /// Keys that do not exist are fine: an empty queue ([`Self::names`] lists those that
    /// exist).
    pub async fn open(url: &str, name: &str) -> Result<DelayedQueue> {
        let conn = crate::source::connect(url).await?;
        let queue = DelayedQueue { conn, keys: keys(name) };
        let types: Vec<String> = redis::pipe()
            .cmd("TYPE")
            .arg(&queue.keys.timeout_set)
            .cmd("TYPE")
            .arg(&queue.keys.list)
            .cmd("TYPE")
            .arg(&queue.keys.destination)
            .query_async(&mut queue.conn.clone())
            .await
            .map_err(map_err)?;
        let expected =
            [(&queue.keys.timeout_set, "zset"), (&queue.keys.list, "list"), (&queue.keys.destination, "list")];
        for ((key, wanted), found) in expected.into_iter().zip(&types) {
            if found != wanted && found != "none" {
                return Err(Error::invalid(
                    "redis",
                    format!("{key} holds a {found}, where a Redisson delayed queue keeps a {wanted}"),
                ));
            }
        }
        Ok(queue)
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// How many members each key holds now (one pipeline).
    pub async fn sizes(&self) -> Result<Sizes> {
        let (delayed, listed, in_destination): (u64, u64, u64) = redis::pipe()
            .cmd("ZCARD")
            .arg(&self.keys.timeout_set)
            .cmd("LLEN")
            .arg(&self.keys.list)
            .cmd("LLEN")
            .arg(&self.keys.destination)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(map_err)?;
        Ok(Sizes { delayed, listed, in_destination })
    }

    /// The names of the delayed queues this Redis holds (from their timeout sets, by
    /// `SCAN`), at most `limit`, sorted: to tell a user who named none that exists.
    pub async fn names(&self, limit: usize) -> Result<Vec<String>> {
        let prefix = "redisson_delay_queue_timeout:";
        let mut conn = self.conn.clone();
        let mut names = std::collections::BTreeSet::new();
        let mut cursor = 0_u64;
        loop {
            let (next, found): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{prefix}*"))
                .arg("COUNT")
                .arg(SWEEP_COUNT)
                .query_async(&mut conn)
                .await
                .map_err(map_err)?;
            for key in found {
                let rest = key.strip_prefix(prefix).unwrap_or(&key);
                let braced = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')).filter(|r| !r.contains('{'));
                names.insert(braced.unwrap_or(rest).to_owned());
            }
            cursor = next;
            if cursor == 0 || names.len() >= limit {
                return Ok(names.into_iter().take(limit).collect());
            }
        }
    }

    /// A walk over the delayed elements from the start. `removes` tells it whether the
    /// caller removes what it imports (a real run) or leaves everything (a dry run).
    pub async fn walk(&self, removes: bool) -> Result<Walk> {
        Ok(Walk {
            conn: self.conn.clone(),
            keys: self.keys.clone(),
            read_sha: load(&mut self.conn.clone(), READ_PAGE).await?,
            removes,
            position: 0,
            sweep: None,
            done: false,
            seen: HashSet::new(),
        })
    }

    /// Loads the removal script (`SCRIPT LOAD`).
    pub async fn remover(&self) -> Result<Remover> {
        let mut conn = self.conn.clone();
        let sha = load(&mut conn, REMOVE).await?;
        Ok(Remover { conn, keys: self.keys.clone(), sha })
    }
}

async fn load(conn: &mut MultiplexedConnection, script: &str) -> Result<String> {
    redis::cmd("SCRIPT").arg("LOAD").arg(script).query_async(conn).await.map_err(map_err)
}

/// The delayed elements, page after page: first the list from its head, then a sweep
/// of the timeout set for what the list pass did not return. Each member is returned
/// once (it remembers every member it returned, so it holds them all in memory).
#[derive(Debug)]
pub struct Walk {
    conn: MultiplexedConnection,
    keys: Keys,
    read_sha: String,
    removes: bool,
    /// The list index the next page starts at: members before it were returned and
    /// are still there (the caller left them).
    position: usize,
    /// `Some(cursor)` once the list pass is over and the sweep has begun.
    sweep: Option<u64>,
    done: bool,
    seen: HashSet<Vec<u8>>,
}

impl Walk {
    /// The next elements not returned before (never an empty page), or `None` at the
    /// end. In a walk that `removes`, handle each page (remove what is imported) before
    /// asking for the next: what is still in the list then is taken as left.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Pending>>> {
        while !self.done {
            let fresh = match self.sweep {
                None => self.list_page().await?,
                Some(cursor) => self.sweep_page(cursor).await?,
            };
            if !fresh.is_empty() {
                return Ok(Some(fresh));
            }
        }
        Ok(None)
    }

    async fn list_page(&mut self) -> Result<Vec<Pending>> {
        let flat: Vec<Value> = redis::cmd("EVALSHA")
            .arg(&self.read_sha)
            .arg(2)
            .arg(&self.keys.list)
            .arg(&self.keys.timeout_set)
            .arg(self.position)
            .arg(PAGE)
            .query_async(&mut self.conn)
            .await
            .map_err(map_err)?;
        if flat.is_empty() {
            self.sweep = Some(0);
            return Ok(Vec::new());
        }
        let mut fresh = Vec::new();
        let mut pairs = flat.into_iter();
        while let (Some(member), Some(score)) = (pairs.next(), pairs.next()) {
            let member: Vec<u8> = redis::from_redis_value(member).map_err(|e| map_err(e.into()))?;
            let due_at_ms = match score {
                Value::Nil => None,
                score => Some(score_ms(score)?),
            };
            if !self.seen.insert(member.clone()) {
                // Returned before and still in the list: the caller left it there.
                self.position += 1;
                continue;
            }
            if !self.removes {
                self.position += 1;
            }
            fresh.push(Pending { member, due_at_ms });
        }
        Ok(fresh)
    }

    async fn sweep_page(&mut self, cursor: u64) -> Result<Vec<Pending>> {
        let (next, flat): (u64, Vec<Value>) = redis::cmd("ZSCAN")
            .arg(&self.keys.timeout_set)
            .arg(cursor)
            .arg("COUNT")
            .arg(SWEEP_COUNT)
            .query_async(&mut self.conn)
            .await
            .map_err(map_err)?;
        self.sweep = Some(next);
        self.done = next == 0;
        let mut fresh = Vec::new();
        let mut pairs = flat.into_iter();
        while let (Some(member), Some(score)) = (pairs.next(), pairs.next()) {
            let member: Vec<u8> = redis::from_redis_value(member).map_err(|e| map_err(e.into()))?;
            if self.seen.insert(member.clone()) {
                fresh.push(Pending { member, due_at_ms: Some(score_ms(score)?) });
            }
        }
        Ok(fresh)
    }
}

/// A score as Redis writes it (`%.17g`), in whole milliseconds.
fn score_ms(score: Value) -> Result<i64> {
    let text: String = redis::from_redis_value(score).map_err(|e| map_err(e.into()))?;
    let score: f64 =
        text.parse().map_err(|_| Error::Internal(format!("Redis answered the score {text:?}, not a number")))?;
    Ok(score.round() as i64)
}

/// The removal script, loaded; made by [`DelayedQueue::remover`].
#[derive(Debug)]
pub struct Remover {
    conn: MultiplexedConnection,
    keys: Keys,
    sha: String,
}

impl Remover {
    /// Removes each of `members` the timeout set still holds, from both keys; one
    /// script call per member, pipelined; the answers are in the order of `members`.
    /// Call it only for elements whose task punctual holds.
    pub async fn remove_if_delayed(&self, members: &[&[u8]]) -> Result<Vec<Removed>> {
        if members.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for member in members {
            pipe.cmd("EVALSHA").arg(&self.sha).arg(2).arg(&self.keys.timeout_set).arg(&self.keys.list).arg(*member);
        }
        let answers: Vec<i64> = pipe.query_async(&mut self.conn.clone()).await.map_err(map_err)?;
        Ok(answers.into_iter().map(|answer| if answer == 1 { Removed::Yes } else { Removed::Taken }).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use punctual_testkit::redis::{RedisServer, server};

    async fn connection(redis: &RedisServer) -> MultiplexedConnection {
        redis::Client::open(redis.url()).unwrap().get_multiplexed_async_connection().await.unwrap()
    }

    /// Offers as Redisson does: the member in the timeout set and at the list's tail.
    async fn offer(conn: &mut MultiplexedConnection, keys: &Keys, member: &[u8], due_at_ms: i64) {
        redis::pipe()
            .cmd("ZADD")
            .arg(&keys.timeout_set)
            .arg(due_at_ms)
            .arg(member)
            .ignore()
            .cmd("RPUSH")
            .arg(&keys.list)
            .arg(member)
            .ignore()
            .exec_async(conn)
            .await
            .unwrap();
    }

    async fn all(walk: &mut Walk) -> Vec<Pending> {
        let mut read = Vec::new();
        while let Some(page) = walk.next_page().await.unwrap() {
            assert!(!page.is_empty());
            read.extend(page);
        }
        read
    }

    #[test]
    fn keys_follow_redissons_prefix_name() {
        let plain = keys("orders");
        assert_eq!(plain.timeout_set, "redisson_delay_queue_timeout:{orders}");
        assert_eq!(plain.list, "redisson_delay_queue:{orders}");
        assert_eq!(plain.destination, "orders");
        let tagged = keys("{shop}cancel");
        assert_eq!(tagged.timeout_set, "redisson_delay_queue_timeout:{shop}cancel");
        assert_eq!(tagged.list, "redisson_delay_queue:{shop}cancel");
    }

    #[test]
    fn members_unpack_what_pack_wrote_and_name_what_is_wrong() {
        let member = pack(&[1, 2, 3, 4, 5, 6, 7, 8], b"hello");
        assert_eq!(member.len(), 1 + 8 + 8 + 5);
        assert_eq!(unpack(&member), Ok(Packed { id: &[1, 2, 3, 4, 5, 6, 7, 8], value: b"hello" }));
        assert_eq!(unpack(&pack(b"", b"")), Ok(Packed { id: b"", value: b"" }));
        assert!(unpack(b"").unwrap_err().contains("empty"));
        assert!(unpack(&member[..12]).unwrap_err().contains("too few"));
        assert!(unpack(&member[..member.len() - 1]).unwrap_err().contains("says 5 bytes, and 4 follow"));
        assert!(unpack(b"plain text").is_err(), "not Redisson's packing");
    }

    /// Redis' own `struct.pack`, as Redisson's offer script calls it, writes what
    /// [`pack`] writes.
    #[tokio::test]
    async fn pack_matches_the_lua_struct_pack_redisson_uses() {
        let redis = server();
        let mut conn = connection(&redis).await;
        let packed: Vec<u8> = redis::cmd("EVAL")
            .arg("return struct.pack('Bc0Lc0', string.len(ARGV[1]), ARGV[1], string.len(ARGV[2]), ARGV[2])")
            .arg(0)
            .arg(&b"\x01\x02\x03\x04\x05\x06\x07\x08"[..])
            .arg("{\"n\":1}")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(packed, pack(b"\x01\x02\x03\x04\x05\x06\x07\x08", b"{\"n\":1}"));
    }

    /// 2,500 members over several pages, plus one only in the list and one only in the
    /// timeout set: a dry walk returns each once, with its score, and touches nothing.
    #[tokio::test]
    async fn a_walk_returns_every_member_once_with_its_due_time() {
        let redis = server();
        let mut conn = connection(&redis).await;
        let keys = keys("orders");
        for i in 0..2_500_i64 {
            offer(&mut conn, &keys, &pack(&i.to_le_bytes(), b"v"), 1_000_000 + i).await;
        }
        let list_only = pack(b"list-only", b"v");
        redis::cmd("RPUSH").arg(&keys.list).arg(&list_only).exec_async(&mut conn).await.unwrap();
        let set_only = pack(b"set-only", b"v");
        redis::cmd("ZADD").arg(&keys.timeout_set).arg(7).arg(&set_only).exec_async(&mut conn).await.unwrap();

        let queue = DelayedQueue::open(&redis.url(), "orders").await.unwrap();
        assert_eq!(queue.sizes().await.unwrap(), Sizes { delayed: 2_501, listed: 2_501, in_destination: 0 });
        let read = all(&mut queue.walk(false).await.unwrap()).await;
        assert_eq!(read.len(), 2_502);
        let members: HashSet<&[u8]> = read.iter().map(|p| p.member.as_slice()).collect();
        assert_eq!(members.len(), 2_502, "each once");
        assert_eq!(read[0], Pending { member: pack(&0_i64.to_le_bytes(), b"v"), due_at_ms: Some(1_000_000) });
        assert!(read.contains(&Pending { member: list_only, due_at_ms: None }));
        assert_eq!(read.last(), Some(&Pending { member: set_only, due_at_ms: Some(7) }), "found by the sweep");
        assert_eq!(queue.sizes().await.unwrap().delayed, 2_501, "a dry walk removes nothing");
    }

    /// A real run: the caller removes what it imports and leaves some; Redisson moves
    /// members from before the walk's position meanwhile (shifting the list). Every
    /// member is still returned exactly once, and what was removed is gone.
    #[tokio::test]
    async fn a_removing_walk_survives_members_moved_under_it() {
        let redis = server();
        let mut conn = connection(&redis).await;
        let keys = keys("orders");
        let members: Vec<Vec<u8>> = (0..3_000_i64).map(|i| pack(&i.to_le_bytes(), b"v")).collect();
        for (i, member) in members.iter().enumerate() {
            offer(&mut conn, &keys, member, 1_000 + i as i64).await;
        }
        let queue = DelayedQueue::open(&redis.url(), "orders").await.unwrap();
        let remover = queue.remover().await.unwrap();
        let mut walk = queue.walk(true).await.unwrap();
        let (mut returned, mut left) = (Vec::new(), Vec::new());
        while let Some(page) = walk.next_page().await.unwrap() {
            // Every tenth is left (a value that does not decode, say); the rest removed.
            let (keep, take): (Vec<_>, Vec<_>) = page
                .iter()
                .partition(|p| i64::from_le_bytes(unpack(&p.member).unwrap().id.try_into().unwrap()) % 10 == 0);
            let take: Vec<&[u8]> = take.iter().map(|p| p.member.as_slice()).collect();
            assert!(remover.remove_if_delayed(&take).await.unwrap().iter().all(|r| *r == Removed::Yes));
            left.extend(keep.iter().map(|p| p.member.clone()));
            // Redisson moves the two oldest members left behind, as if they came due.
            for gone in left.drain(..left.len().min(2)) {
                redis::pipe()
                    .cmd("ZREM")
                    .arg(&keys.timeout_set)
                    .arg(&gone)
                    .cmd("LREM")
                    .arg(&keys.list)
                    .arg(1)
                    .arg(&gone)
                    .exec_async(&mut conn)
                    .await
                    .unwrap();
            }
            returned.extend(page.into_iter().map(|p| p.member));
        }
        let unique: HashSet<&Vec<u8>> = returned.iter().collect();
        assert_eq!((returned.len(), unique.len()), (3_000, 3_000), "every member once");
        let sizes = queue.sizes().await.unwrap();
        assert_eq!((sizes.delayed, sizes.listed), (left.len() as u64, left.len() as u64), "only the left ones stay");
    }

    #[tokio::test]
    async fn removal_leaves_an_element_redisson_took() {
        let redis = server();
        let mut conn = connection(&redis).await;
        let keys = keys("orders");
        let (a, b) = (pack(b"a", b"1"), pack(b"b", b"2"));
        offer(&mut conn, &keys, &a, 5).await;
        offer(&mut conn, &keys, &b, 6).await;
        let queue = DelayedQueue::open(&redis.url(), "orders").await.unwrap();
        let remover = queue.remover().await.unwrap();
        // Redisson's transfer of `b`: the value to the destination, the member out of both.
        redis::pipe()
            .cmd("RPUSH")
            .arg("orders")
            .arg("2")
            .cmd("ZREM")
            .arg(&keys.timeout_set)
            .arg(&b)
            .cmd("LREM")
            .arg(&keys.list)
            .arg(1)
            .arg(&b)
            .exec_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(remover.remove_if_delayed(&[&a, &b]).await.unwrap(), [Removed::Yes, Removed::Taken]);
        assert_eq!(queue.sizes().await.unwrap(), Sizes { delayed: 0, listed: 0, in_destination: 1 });
    }

    #[tokio::test]
    async fn keys_of_another_type_are_refused_and_names_are_found() {
        let redis = server();
        let mut conn = connection(&redis).await;
        redis::cmd("SET").arg("orders").arg("x").exec_async(&mut conn).await.unwrap();
        let e = DelayedQueue::open(&redis.url(), "orders").await.unwrap_err();
        assert!(e.to_string().contains("orders holds a string, where a Redisson delayed queue keeps a list"), "{e}");
        offer(&mut conn, &keys("mail"), &pack(b"a", b"1"), 5).await;
        offer(&mut conn, &keys("{shop}cancel"), &pack(b"a", b"1"), 5).await;
        let queue = DelayedQueue::open(&redis.url(), "absent").await.unwrap();
        assert_eq!(queue.sizes().await.unwrap(), Sizes::default());
        assert_eq!(queue.names(20).await.unwrap(), ["mail", "{shop}cancel"]);
    }
}
