//! Which Redis: the store URL as an operator writes it (`redis://`, `rediss://`,
//! `redis-cluster://h1:p1,h2:p2`, `rediss-cluster://h1:p1,h2:p2`,
//! `redis-sentinel://h1:p1,h2:p2/NAME`, `rediss-sentinel://…`), read into a [`Target`],
//! and the redaction of the passwords such a URL may carry.
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
    /// A primary and its replicas watched by Redis Sentinel: the Sentinels
    /// (`redis://h:p` each, `rediss://` over TLS), the name they know the primary by,
    /// and how its nodes are opened (`redis://[user:password@]sentinel-named/DB`, or
    /// `rediss://`: TLS, the credentials and the database, not the address, which the
    /// Sentinels tell).
    Sentinel { sentinels: Vec<String>, primary: String, node: String },
}

impl Target {
    /// Reads `redis://…` or `rediss://…` (one Redis) or
    /// `redis-cluster://h1:p1,h2:p2,…` (a Cluster), `rediss-cluster://…` over TLS, or
    /// `redis-sentinel://[user:password@]h1:p1,h2:p2/NAME[/DB]` (the primary named NAME
    /// by those Sentinels; the credentials and database are the primary's),
    /// `rediss-sentinel://…` with TLS to the Sentinels and to the nodes they name.
    pub fn parse(url: &str) -> Result<Target> {
        if let Some(rest) = url.strip_prefix("rediss-sentinel://") {
            return sentinel(rest, "rediss");
        }
        if let Some(rest) = url.strip_prefix("redis-sentinel://") {
            return sentinel(rest, "redis");
        }
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
                 redis-cluster://h1:p1,h2:p2, rediss-cluster://h1:p1,h2:p2 (Cluster over TLS) \
                 or redis-sentinel://h1:26379,h2:26379/NAME (the primary Sentinel names NAME; \
                 rediss-sentinel:// over TLS)",
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

/// A Sentinel target from what follows `redis-sentinel://` (`scheme` `redis`) or
/// `rediss-sentinel://` (`rediss`, TLS to every Sentinel and node):
/// `[user:password@]h1:p1,h2:p2/NAME[/DB]`.
fn sentinel(rest: &str, scheme: &str) -> Result<Target> {
    const USAGE: &str = "use redis-sentinel://[:password@]h1:26379,h2:26379/NAME[/DB], NAME the primary's name \
                         in the Sentinels' configuration (sentinel monitor NAME …)";
    let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hosts) = match hosts.rsplit_once('@') {
        Some((userinfo, hosts)) => (Some(userinfo), hosts),
        None => (None, hosts),
    };
    let sentinels: Vec<String> =
        hosts.split(',').map(str::trim).filter(|h| !h.is_empty()).map(|h| format!("{scheme}://{h}")).collect();
    let (primary, db) = path.split_once('/').unwrap_or((path, ""));
    if sentinels.is_empty() || primary.is_empty() {
        let given = redacted(&format!("{scheme}-sentinel://{rest}"));
        return Err(Error::invalid("store", format!("'{given}' names no Sentinel or no primary: {USAGE}")));
    }
    for sentinel in &sentinels {
        info(sentinel)?;
    }
    let userinfo = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
    let node = format!("{scheme}://{userinfo}sentinel-named/{db}");
    info(&node).map_err(|e| Error::invalid("store", format!("{e}; {USAGE}")))?;
    Ok(Target::Sentinel { sentinels, primary: primary.to_owned(), node })
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Single(url) => f.debug_tuple("Single").field(&redacted(url)).finish(),
            Target::Cluster(urls) => {
                f.debug_tuple("Cluster").field(&urls.iter().map(|u| redacted(u)).collect::<Vec<_>>()).finish()
            }
            Target::Sentinel { sentinels, primary, node } => f
                .debug_struct("Sentinel")
                .field("sentinels", sentinels)
                .field("primary", primary)
                .field("node", &redacted(node))
                .finish(),
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
            ("redis://:s3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
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

    #[test]
    fn a_sentinel_url_names_the_sentinels_the_primary_and_what_the_nodes_are_opened_with() {
        let target = Target::parse("redis-sentinel://app:s3cret@h1:26379, h2:26380/mymaster/3").unwrap();
        let Target::Sentinel { sentinels, primary, node } = &target else { panic!("a Sentinel: {target:?}") };
        assert_eq!(sentinels, &["redis://h1:26379", "redis://h2:26380"]);
        assert_eq!(primary, "mymaster");
        let settings = info(node).unwrap().redis_settings().clone();
        assert_eq!((settings.db(), settings.username(), settings.password()), (3, Some("app"), Some("s3cret")));
        assert!(!format!("{target:?}").contains("s3cret"), "{target:?}");

        let plain = Target::parse("redis-sentinel://127.0.0.1:26379/punctual").unwrap();
        let Target::Sentinel { node, .. } = &plain else { panic!("a Sentinel: {plain:?}") };
        assert_eq!(
            (info(node).unwrap().redis_settings().db(), info(node).unwrap().redis_settings().password()),
            (0, None)
        );

        for bad in ["redis-sentinel://h1:26379", "redis-sentinel://h1:26379/", "redis-sentinel:///mymaster"] {
            let e = Target::parse(bad).unwrap_err();
            assert!(e.to_string().contains("redis-sentinel://[:password@]h1:26379"), "{bad}: {e}");
        }
        let e = Target::parse("redis-sentinel://:s3cret@h1:26379/m/notanumber").unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        let tls = Target::parse("rediss-sentinel://:s3cret@h1:26379,h2:26379/m").unwrap();
        let Target::Sentinel { sentinels, node, .. } = &tls else { panic!("a Sentinel: {tls:?}") };
        for url in sentinels.iter().chain([node]) {
            let addr = info(url).unwrap().addr().clone();
            assert!(matches!(addr, redis::ConnectionAddr::TcpTls { insecure: false, .. }), "TLS, verified: {addr:?}");
        }
        assert!(!format!("{tls:?}").contains("s3cret"), "{tls:?}");
        let e = Target::parse("sentinel://h1:26379/m").unwrap_err();
        assert!(e.to_string().contains("redis-sentinel://"), "the error lists Sentinel: {e}");
    }
}
