//! Redis settings under which tasks can be lost, said at start-up: one warning line per
//! risky setting (naming the Cluster nodes that have it), worded after the table
//! "What can be lost" of `docs/redis.md`:
//!
//! - `appendonly` not `yes`: a restart of Redis loses every task (no `save` either) or
//!   every write since the last snapshot;
//! - `maxmemory-policy` other than `noeviction`: a full Redis deletes task records.
//!
//! A Redis that refuses `CONFIG GET` (managed services often do) gets one line saying
//! that these could not be checked. Nothing here stops the store from starting.

use std::collections::HashMap;

use redis::FromRedisValue;

use crate::conn::Conn;

/// The settings read, as Redis names them.
const SETTINGS: [&str; 4] = ["appendonly", "save", "maxmemory-policy", "maxmemory"];

/// Reads the settings of every primary and logs what they put at risk.
pub(crate) async fn warn_about_settings(conn: &Conn) {
    let mut nodes: Vec<(String, HashMap<String, String>)> = Vec::new();
    // One setting per call: Redis 6.2 takes one name per CONFIG GET.
    for setting in SETTINGS {
        let answers = match conn.on_every_primary(redis::cmd("CONFIG").arg("GET").arg(setting)).await {
            Ok(answers) => answers,
            Err(e) => return unchecked(&e.to_string()),
        };
        for (node, answer) in answers {
            let Ok(values) = HashMap::<String, String>::from_redis_value(answer.clone()) else {
                return unchecked(&format!("{answer:?}"));
            };
            match nodes.iter_mut().find(|(name, _)| *name == node) {
                Some((_, known)) => known.extend(values),
                None => nodes.push((node, values)),
            }
        }
    }
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    for warning in warnings(&nodes) {
        tracing::warn!(setting = warning.setting, "{}", warning.text);
    }
}

fn unchecked(why: &str) {
    tracing::info!(
        "cannot read Redis' settings ({why}): check that appendonly is yes and maxmemory-policy is noeviction, or \
         tasks can be lost (docs/redis.md, \"What can be lost\")"
    );
}

#[derive(Debug, PartialEq, Eq)]
struct Warning {
    setting: &'static str,
    text: String,
}

/// What the settings of these nodes put at risk: one warning per setting, naming the
/// nodes that have it when there are several.
fn warnings<'a>(nodes: &'a [(String, HashMap<String, String>)]) -> Vec<Warning> {
    let get = |values: &HashMap<String, String>, name: &str| values.get(name).cloned().unwrap_or_default();
    let mut found: Vec<(&'static str, String, Vec<&str>)> = Vec::new();
    let mut note = |setting: &'static str, text: String, node: &'a str| match found.iter_mut().find(|f| f.1 == text) {
        Some((_, _, nodes)) => nodes.push(node),
        None => found.push((setting, text, vec![node])),
    };
    for (node, values) in nodes {
        if get(values, "appendonly") != "yes" {
            let save = get(values, "save");
            let text = if save.is_empty() {
                "Redis keeps nothing on disk (appendonly no, save \"\"): when Redis restarts (kill -9, out of memory, \
                 a reboot) every task is lost. Set appendonly yes (docs/redis.md, \"What can be lost\")"
                    .to_owned()
            } else {
                format!(
                    "Redis runs without its append-only file (appendonly no, snapshots only: save \"{save}\"): when \
                     Redis restarts, every schedule, cancel, lease and ack since the last snapshot is lost (minutes \
                     of writes). Set appendonly yes (docs/redis.md, \"What can be lost\")"
                )
            };
            note("appendonly", text, node);
        }
        let policy = get(values, "maxmemory-policy");
        if policy != "noeviction" {
            let maxmemory = get(values, "maxmemory");
            let when = if maxmemory == "0" {
                format!("maxmemory-policy {policy}, no maxmemory yet): once given a maxmemory and full, it deletes")
            } else {
                format!("maxmemory-policy {policy}, maxmemory {maxmemory}): once it is full it deletes")
            };
            let text = format!(
                "Redis may evict keys ({when} task records and indexes without a trace, and those tasks never fire. \
                 Set maxmemory-policy noeviction (docs/redis.md, \"What can be lost\")"
            );
            note("maxmemory-policy", text, node);
        }
    }
    let several = nodes.len() > 1;
    found
        .into_iter()
        .map(|(setting, text, on)| Warning {
            setting,
            text: if several { format!("{text}; nodes {}", on.join(", ")) } else { text },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, settings: &[(&str, &str)]) -> (String, HashMap<String, String>) {
        (name.to_owned(), settings.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect())
    }

    #[test]
    fn safe_settings_give_no_warning() {
        let safe = [("appendonly", "yes"), ("save", ""), ("maxmemory-policy", "noeviction"), ("maxmemory", "0")];
        assert_eq!(warnings(&[node("", &safe)]), vec![]);
    }

    #[test]
    fn each_risky_setting_gives_one_warning_naming_what_is_lost() {
        let risky = [("appendonly", "no"), ("save", ""), ("maxmemory-policy", "allkeys-lru"), ("maxmemory", "100mb")];
        let found = warnings(&[node("", &risky)]);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].setting, "appendonly");
        assert!(found[0].text.contains("every task is lost"), "{}", found[0].text);
        assert_eq!(found[1].setting, "maxmemory-policy");
        assert!(found[1].text.contains("allkeys-lru") && found[1].text.contains("never fire"), "{}", found[1].text);
        assert!(found[1].text.contains("maxmemory 100mb"), "{}", found[1].text);
        let snapshots = [("appendonly", "no"), ("save", "3600 1"), ("maxmemory-policy", "noeviction")];
        let found = warnings(&[node("", &snapshots)]);
        assert_eq!(found.len(), 1);
        assert!(found[0].text.contains("since the last snapshot"), "{}", found[0].text);
    }

    #[test]
    fn a_cluster_gets_one_line_per_setting_naming_its_nodes() {
        let risky = [("appendonly", "no"), ("save", ""), ("maxmemory-policy", "noeviction")];
        let safe = [("appendonly", "yes"), ("maxmemory-policy", "noeviction")];
        let found = warnings(&[node("a:1", &risky), node("b:2", &safe), node("c:3", &risky)]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].text.ends_with("; nodes a:1, c:3"), "{}", found[0].text);
    }
}
