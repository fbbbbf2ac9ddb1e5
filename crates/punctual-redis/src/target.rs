//! Which Redis: the store URL as an operator writes it (`redis://`, `rediss://`,
//! `redis-cluster://h1:p1,h2:p2`), read into a [`Target`], and the redaction of the
//! passwords such a URL may carry.
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
    /// `redis-cluster://h1:p1,h2:p2,…` (a Cluster).
    pub fn parse(url: &str) -> Result<Target> {
        if let Some(nodes) = url.strip_prefix("redis-cluster://") {
            let nodes: Vec<String> =
                nodes.split(',').map(str::trim).filter(|n| !n.is_empty()).map(|n| format!("redis://{n}")).collect();
            if nodes.is_empty() {
                return Err(Error::invalid("store", "redis-cluster:// needs at least one host:port"));
            }
            for node in &nodes {
                info(node)?;
            }
            return Ok(Target::Cluster(nodes));
        }
        if url.starts_with("redis://") || url.starts_with("rediss://") {
            info(url)?;
            return Ok(Target::Single(url.to_owned()));
        }
        Err(Error::invalid(
            "store",
            format!("'{}' is not a Redis address: use redis://host:port or redis-cluster://h1:p1,h2:p2", redacted(url)),
        ))
    }
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
}
