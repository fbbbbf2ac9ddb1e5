//! The store's identity in Redis (`<p>:store`, see `keys`), its lease-signing secret
//! (`<p>:secret`), and how a process notices that Redis lost punctual's data.
//!
//! - **Minted once**: the first process to find no identity writes a random one with
//!   `SET NX`, then every process reads what is there, so processes starting together
//!   agree. Each process remembers the identity it read and stamps it on every task it
//!   reads (the first part of every delivery id).
//! - **Checked cheaply**: one `GET` every [`CHECK_EVERY`], and at once when Redis
//!   answers again after it was unreachable (a restart). Never on the path of a
//!   schedule, lease or ack.
//! - **A reset is loud**: an identity that vanished (Redis restarted without
//!   persistence, `FLUSHALL`, a failover to an empty replica) or changed (another
//!   process found it vanished first) means every task stored before is gone. The
//!   process logs an error saying so, adopts the identity Redis holds now (minting one
//!   if there is none), registers again the queues it knew (their new tasks must stay
//!   visible to every node's reaper and stats), puts back its lease-signing secret if
//!   Redis lost that too (so lease ids stay valid on every node) and the layout
//!   version (`layout`), and reports a
//!   [`StoreReset`] to its engine, which counts it (`punctual_store_resets_total`) and
//!   shows it in `/readyz`.
//!
//! Invariant: a process's identity changes only in [`check`], only to the identity
//! Redis holds at that moment, and each change is reported exactly once.
//!
//! On a Redis Cluster the identity is one key on one node: losing the whole Cluster's
//! data, or that node's, is noticed; another node that loses its share alone is not
//! (see `docs/redis.md`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use punctual_core::store::corrupt;
use punctual_core::{Clock, Result, StoreId, StoreReset};
use tokio::sync::broadcast;

use crate::clock::periodic;
use crate::conn::Conn;
use crate::{Shared, keys};

/// How often a process checks that Redis still holds its store.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(2);

/// This process's knowledge of the store's identity.
#[derive(Debug)]
pub(crate) struct Identity {
    /// The identity's bits, read on every task decode.
    bits: AtomicU64,
    /// The lease-signing secret this process handed out, put back after a reset.
    secret: Mutex<Option<[u8; 32]>>,
    resets: broadcast::Sender<StoreReset>,
}

impl Identity {
    /// Reads the identity at connect, minting it if Redis holds none (a new store, or
    /// one written by a punctual from before stores had an identity).
    pub(crate) async fn connect(conn: &Conn, prefix: &str) -> Result<Identity> {
        let (id, minted) = adopt(conn, prefix).await?;
        if minted {
            let written: bool = conn.query(redis::cmd("EXISTS").arg(keys::ids(prefix))).await?;
            let what = if written { "a store written by an earlier punctual" } else { "a new store" };
            tracing::info!(store = %id, prefix, "store identity {id} minted for {what}");
        }
        let (resets, _) = broadcast::channel(16);
        Ok(Identity { bits: AtomicU64::new(id.bits()), secret: Mutex::new(None), resets })
    }

    /// The identity this process knows.
    pub(crate) fn current(&self) -> StoreId {
        StoreId::from_bits(self.bits.load(Ordering::Relaxed))
    }

    /// Remembers the lease-signing secret this process handed out.
    pub(crate) fn remember_secret(&self, secret: [u8; 32]) {
        *self.secret.lock().expect("secret lock poisoned") = Some(secret);
    }

    /// Resets as this process notices them.
    pub(crate) fn resets(&self) -> broadcast::Receiver<StoreReset> {
        self.resets.subscribe()
    }
}

/// The identity Redis holds, after writing `fresh` if it held none; and whether
/// `fresh` was taken.
async fn adopt(conn: &Conn, prefix: &str) -> Result<(StoreId, bool)> {
    let key = keys::store(prefix);
    let fresh = StoreId::random();
    // Two calls, not `SET NX GET`: Redis 6.2 has no such combination.
    let taken: bool = conn.query(redis::cmd("SET").arg(&key).arg(fresh.to_string()).arg("NX")).await?;
    let stored: Option<String> = conn.query(redis::cmd("GET").arg(&key)).await?;
    // Deleted again in between: this process's own is as good as any.
    let stored = stored.as_deref().map(parse).transpose()?.unwrap_or(fresh);
    Ok((stored, taken && stored == fresh))
}

fn parse(stored: &str) -> Result<StoreId> {
    StoreId::parse(stored).map_err(|_| corrupt(format!("the store identity '{}' is not one", stored.escape_default())))
}

/// Checks every [`CHECK_EVERY`], and on reconnection, until the store stops.
pub(crate) async fn watch(shared: Arc<Shared>) {
    // The last failure logged, so a damaged key is one line, not one every check.
    let mut failing: Option<String> = None;
    let mut every = periodic(CHECK_EVERY);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = shared.conn.reconnected().notified() => {}
            _ = shared.stop.cancelled() => return,
        }
        match check(&shared).await {
            Ok(()) => failing = None,
            // Unreachable: the connection logs that, once.
            Err(e) if e.is_transient() => {}
            Err(e) => {
                let text = e.to_string();
                if failing.as_ref() != Some(&text) {
                    tracing::warn!(error = %text, "cannot check the store identity in Redis");
                    failing = Some(text);
                }
            }
        }
    }
}

/// Compares the identity Redis holds with the one this process knows; on a
/// difference, handles the reset as the module docs say.
pub(crate) async fn check(shared: &Shared) -> Result<()> {
    let prefix = &shared.config.prefix;
    let identity = &shared.identity;
    let known = identity.current();
    let stored: Option<String> = shared.conn.query(redis::cmd("GET").arg(keys::store(prefix))).await?;
    let stored = stored.as_deref().map(parse).transpose()?;
    if stored == Some(known) {
        return Ok(());
    }
    let (current, _) = adopt(&shared.conn, prefix).await?;
    let what = match stored {
        None => format!(
            "Redis lost punctual's data: store {known} is gone from {} (Redis restarted without persistence, \
             was flushed, or failed over to an empty replica). Every task scheduled before is gone and will not \
             fire; this node goes on as store {current}",
            keys::store(prefix)
        ),
        Some(other) => format!(
            "Redis holds another store: store {known}, which this node started with, is gone and {other} is there \
             instead (another node found Redis emptied first, or Redis failed over to other data). Every task \
             scheduled before is gone and will not fire; this node goes on as store {current}"
        ),
    };
    identity.bits.store(current.bits(), Ordering::Relaxed);
    tracing::error!(previous = %known, store = %current, prefix = %prefix, "{what}");
    shared.register_known_queues().await?;
    restore_secret(shared).await?;
    crate::layout::check(&shared.conn, prefix).await?;
    // The engine may not listen (a store used without one): nobody to tell then.
    let _ = identity.resets.send(StoreReset::new(known, current, shared.clock.now(), what));
    Ok(())
}

/// The lease-signing secret: the one in Redis, written first if Redis holds none;
/// remembered, to put back after a reset.
pub(crate) async fn secret(shared: &Shared) -> Result<[u8; 32]> {
    let key = keys::secret(&shared.config.prefix);
    let fresh: [u8; 32] = rand::random();
    shared.conn.query::<()>(redis::cmd("SET").arg(&key).arg(&fresh[..]).arg("NX")).await?;
    let stored: Vec<u8> = shared.conn.query(redis::cmd("GET").arg(&key)).await?;
    let secret: [u8; 32] = stored.try_into().map_err(|_| corrupt("the lease secret is not 32 bytes"))?;
    shared.identity.remember_secret(secret);
    Ok(secret)
}

/// Puts back this process's lease-signing secret if Redis lost it, and says so when
/// another process put a different one there first.
async fn restore_secret(shared: &Shared) -> Result<()> {
    let Some(mine) = *shared.identity.secret.lock().expect("secret lock poisoned") else { return Ok(()) };
    let key = keys::secret(&shared.config.prefix);
    shared.conn.query::<()>(redis::cmd("SET").arg(&key).arg(&mine[..]).arg("NX")).await?;
    let stored: Option<Vec<u8>> = shared.conn.query(redis::cmd("GET").arg(&key)).await?;
    if stored.is_some_and(|stored| stored != mine) {
        tracing::error!(
            "Redis holds another lease-signing secret than this node's (a node started after Redis lost its data \
             made a new one): lease ids this node hands out are refused by the other nodes, and theirs by this \
             one; restart this node"
        );
    }
    Ok(())
}
