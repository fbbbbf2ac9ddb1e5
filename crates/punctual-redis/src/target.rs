//! Which Redis: the store URL as an operator writes it (`redis://`, `rediss://`,
//! `redis-cluster://h1:p1,h2:p2`, `rediss-cluster://h1:p1,h2:p2`), read into a
//! [`Target`], and the redaction of the passwords such a URL may carry.
//!
//! Invariant: every node of a `rediss-cluster://` target is a `rediss://` URL, so the
//! Cluster client, and the wake-up follower that subscribes through the same nodes,
//! speak TLS to each of them (redis-rs refuses initial nodes of mixed TLS modes).
//!
//! Invariant: a password given in a URL never reaches a log line, an error message or
//! a `Debug` output: everything here that shows a URL shows it [`redacted`].

use std::fmt;

use punctual_core::{Error, Result};
use redis::{ConnectionInfo, IntoConnectionInfo};

/// Which Redis. Its `Debug` hides passwords (see [`redacted`]).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// One Redis (`redis://host:port/db`).
    Single(String),
    /// A Redis Cluster, given any of its nodes.
    Cluster(Vec<String>),
}

impl Target {
    /// Reads `redis://…` or `rediss://…` (one Redis) or
    /// `redis-cluster://h1:p1,h2:p2,…` (a Cluster), `rediss-cluster://…` over TLS.
    pub fn parse(url: &str) -> Result<Target> {
        if let Some(nodes) = url.strip_prefix("rediss-cluster://") {
            return cluster(nodes, "rediss-cluster", "rediss");
        }
        if let Some(nodes) = url.strip_prefix("redis-cluster://") {
            return cluster(nodes, "redis-cluster", "redis");
        }
        if url.starts_with("redis://") || url.starts_with("rediss://") {
            info(url)?;
            return Ok(Target::Single(url.to_owned()));
        }
        Err(Error::invalid(
            "store",
            format!(
                "'{}' is not a Redis address: use redis://host:port, rediss://host:port (TLS), \
                 redis-cluster://h1:p1,h2:p2 or rediss-cluster://h1:p1,h2:p2 (Cluster over TLS)",
                redacted(url)
            ),
        ))
    }
}

/// A Cluster from the nodes of `<scheme>://h1:p1,h2:p2,…` (what follows the scheme),
/// each as `<node_scheme>://h:p`: `rediss` for TLS to every node, its certificate
/// verified.
fn cluster(nodes: &str, scheme: &str, node_scheme: &str) -> Result<Target> {
    let nodes: Vec<String> =
        nodes.split(',').map(str::trim).filter(|n| !n.is_empty()).map(|n| format!("{node_scheme}://{n}")).collect();
    if nodes.is_empty() {
        return Err(Error::invalid("store", format!("{scheme}:// needs at least one host:port")));
    }
    for node in &nodes {
        info(node)?;
    }
    Ok(Target::Cluster(nodes))
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Single(url) => f.debug_tuple("Single").field(&redacted(url)).finish(),
            Target::Cluster(urls) => {
                f.debug_tuple("Cluster").field(&urls.iter().map(|u| redacted(u)).collect::<Vec<_>>()).finish()
            }
        }
    }
}

/// `url` with every password replaced by `***` (`redis://user:***@host:6379`), for
/// logs and error messages: a Redis URL may carry the password of the server.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let nodes: Vec<String> = rest
        .split(',')
        .map(|node| match node.rsplit_once('@') {
            Some((userinfo, host)) => match userinfo.split_once(':') {
                Some((user, _password)) => format!("{user}:***@{host}"),
                None => node.to_owned(),
            },
            None => node.to_owned(),
        })
        .collect();
    format!("{scheme}://{}", nodes.join(","))
}

/// The connection info of one node's URL; an error names the URL redacted.
pub(crate) fn info(url: &str) -> Result<ConnectionInfo> {
    url.into_connection_info().map_err(|e| Error::invalid("store", format!("{}: {e}", redacted(url))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RedisConfig;

    #[test]
    fn passwords_in_redis_urls_are_never_shown() {
        for (url, shown) in [
            ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
            ("redis://:s3cret@127.0.0.1:6379", "redis://:***@127.0.0.1:6379"),
            ("rediss://app:s3cret@cache.internal:6380/2", "rediss://app:***@cache.internal:6380/2"),
            ("redis://app@h:1", "redis://app@h:1"),
            ("redis://:p@ss:word@h:1", "redis://:***@h:1"),
            ("redis-cluster://:s3cret@h1:1,:s3cret@h2:2", "redis-cluster://:***@h1:1,:***@h2:2"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(redacted(url), shown);
        }
        let target = Target::parse("redis://:s3cret@127.0.0.1:6379").unwrap();
        assert!(!format!("{target:?}").contains("s3cret"), "{target:?}");
        let config = RedisConfig::new(Target::parse("redis-cluster://:s3cret@h1:1,:s3cret@h2:2").unwrap());
        assert!(!format!("{config:?}").contains("s3cret"));
        let e = Target::parse("redis://:s3cret@[bad").unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }

    #[test]
    fn a_tls_cluster_is_tls_to_every_node_and_hides_its_passwords() {
        let target = Target::parse("rediss-cluster://:s3cret@h1:7000, :s3cret@h2:7001,").unwrap();
        assert_eq!(target, Target::Cluster(vec!["rediss://:s3cret@h1:7000".into(), "rediss://:s3cret@h2:7001".into()]));
        let Target::Cluster(nodes) = &target else { unreachable!("parsed as a Cluster just above") };
        for node in nodes {
            let addr = info(node).unwrap().addr().clone();
            assert!(matches!(addr, redis::ConnectionAddr::TcpTls { insecure: false, .. }), "TLS, verified: {addr:?}");
        }
        assert!(!format!("{target:?}").contains("s3cret"), "{target:?}");
        let config = RedisConfig::new(target);
        assert!(!format!("{config:?}").contains("s3cret"), "{config:?}");
        assert_eq!(
            redacted("rediss-cluster://:s3cret@h1:1,app:s3cret@h2:2"),
            "rediss-cluster://:***@h1:1,app:***@h2:2"
        );

        let e = Target::parse("rediss-cluster://").unwrap_err();
        assert!(e.to_string().contains("rediss-cluster:// needs at least one host:port"), "{e}");
        let e = Target::parse("rediss-cluster://:s3cret@[bad,h2:1").unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        let e = Target::parse("memcached://:s3cret@h:1").unwrap_err();
        assert!(e.to_string().contains("rediss-cluster://h1:p1,h2:p2"), "the error lists the TLS Cluster: {e}");
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}
