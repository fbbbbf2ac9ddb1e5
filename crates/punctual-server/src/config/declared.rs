//! The queues the server's config file declares (its `[queues."…"]` tables), and what
//! the server refuses for the others and for the queues it delivers itself.
//!
//! - `GET /v1/queues` lists every declared queue, with zero counts while it holds no
//!   task, beside every queue that holds one ([`Declared::with_counts`]), so a queue
//!   of the file shows in `punctual ls` and the dashboard before its first task.
//! - With `strict_queues`, a schedule (one task, or each item of a batch) and a lease
//!   naming a queue the file does not declare are `404 not_found`, naming the nearest
//!   declared queue when one is a few edits away ([`Declared::check`]): a misspelled
//!   `flow.remnid` fails loudly instead of storing tasks nobody will take.
//! - A lease on a queue with a push action is `409 conflict` naming the action
//!   ([`push_refusal`]): its tasks belong to the action, and a task a pull worker took
//!   would never reach the action's receiver.
//!
//! Invariants: both refusals come before anything is stored or leased, so a refused
//! call changes nothing; a queue name that is not valid at all is `400`, as without
//! these checks; reads, cancels and dead-task calls are never refused here, so tasks
//! of a queue dropped from the file can still be found and cancelled.

use std::collections::{BTreeMap, BTreeSet};

use punctual_core::QueueName;
use punctual_core::store::QueueStats;

use crate::error::ApiError;

/// At most this many declared names are listed in a refusal without a near one.
const LISTED: usize = 5;

/// The declared queues and whether others are refused.
#[derive(Debug, Clone, Default)]
pub(crate) struct Declared {
    names: BTreeSet<QueueName>,
    strict: bool,
}

impl Declared {
    pub(crate) fn new(names: impl IntoIterator<Item = QueueName>, strict: bool) -> Declared {
        Declared { names: names.into_iter().collect(), strict }
    }

    /// `Ok` when `queue` is a valid name the server takes: any, unless strict, then a
    /// declared one.
    pub(crate) fn check(&self, queue: &str) -> Result<(), ApiError> {
        let name = QueueName::new(queue)?;
        if !self.strict || self.names.contains(&name) {
            return Ok(());
        }
        Err(ApiError::NotFound(match self.nearest(queue) {
            Some(near) => format!("no queue '{queue}': did you mean '{near}'?"),
            None => {
                let mut known: Vec<&str> = self.names.iter().take(LISTED).map(QueueName::as_str).collect();
                if self.names.len() > LISTED {
                    known.push("…");
                }
                format!(
                    "no queue '{queue}': with strict_queues the server takes only the queues of its config file ({})",
                    known.join(", ")
                )
            }
        }))
    }

    /// The declared queue fewest edits away from `queue` (letters inserted, deleted,
    /// replaced or swapped), when that is at most a third of its length (and at least
    /// one edit): a typo, not another name. Ties go to the first in name order.
    fn nearest(&self, queue: &str) -> Option<&QueueName> {
        let allowed = (queue.chars().count() / 3).max(1);
        self.names
            .iter()
            .map(|name| (strsim::osa_distance(queue, name.as_str()), name))
            .filter(|(distance, _)| *distance <= allowed)
            .min_by_key(|(distance, _)| *distance)
            .map(|(_, name)| name)
    }

    /// `stats` (sorted by name, queues holding a task) with every declared queue
    /// added with zero counts where it holds none; sorted by name.
    pub(crate) fn with_counts(&self, stats: Vec<QueueStats>) -> Vec<QueueStats> {
        let mut all: BTreeMap<QueueName, QueueStats> =
            self.names.iter().map(|name| (name.clone(), QueueStats::new(name.clone(), 0, 0, 0, None))).collect();
        all.extend(stats.into_iter().map(|s| (s.name.clone(), s)));
        all.into_values().collect()
    }
}

/// The `409` of a lease on `queue`, when `kind` is the kind of its push action.
pub(crate) fn push_refusal(queue: &str, kind: &str) -> ApiError {
    ApiError::Conflict(format!(
        "queue '{queue}' has a {kind} action: the server delivers its tasks, so pull workers cannot lease them"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(names: &[&str], strict: bool) -> Declared {
        Declared::new(names.iter().map(|n| QueueName::new(*n).unwrap()), strict)
    }

    fn refusal(d: &Declared, queue: &str) -> String {
        match d.check(queue) {
            Err(ApiError::NotFound(message)) => message,
            other => panic!("{queue}: expected a 404, got {other:?}"),
        }
    }

    #[test]
    fn a_typo_names_the_nearest_declared_queue() {
        let d = declared(&["flow.remind", "flow.escalate", "order.cancel"], true);
        assert_eq!(refusal(&d, "flow.remnid"), "no queue 'flow.remnid': did you mean 'flow.remind'?");
        assert_eq!(refusal(&d, "order.cancle"), "no queue 'order.cancle': did you mean 'order.cancel'?");
        assert_eq!(refusal(&d, "flow.remindd"), "no queue 'flow.remindd': did you mean 'flow.remind'?");
        assert_eq!(refusal(&d, "flow.escalat"), "no queue 'flow.escalat': did you mean 'flow.escalate'?");
        let far = refusal(&d, "billing");
        assert_eq!(
            far,
            "no queue 'billing': with strict_queues the server takes only the queues of its config file \
             (flow.escalate, flow.remind, order.cancel)"
        );
        for ok in ["flow.remind", "flow.escalate", "order.cancel"] {
            assert!(d.check(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn many_declared_queues_are_listed_in_part() {
        let names: Vec<String> = (0..8).map(|i| format!("queue-{i}")).collect();
        let d = declared(&names.iter().map(String::as_str).collect::<Vec<_>>(), true);
        let message = refusal(&d, "something.else.entirely");
        assert!(message.ends_with("(queue-0, queue-1, queue-2, queue-3, queue-4, …)"), "{message}");
    }

    #[test]
    fn without_strict_every_valid_name_passes_and_a_bad_name_is_400_either_way() {
        let open = declared(&["flow.remind"], false);
        assert!(open.check("flow.remnid").is_ok());
        for d in [open, declared(&["flow.remind"], true)] {
            assert!(matches!(d.check("bad/name"), Err(ApiError::Invalid { .. })), "{d:?}");
        }
    }

    #[test]
    fn declared_queues_are_listed_with_zero_counts_beside_those_holding_tasks() {
        let d = declared(&["b", "d"], false);
        let stats = vec![
            QueueStats::new(QueueName::new("a").unwrap(), 1, 0, 0, None),
            QueueStats::new(QueueName::new("b").unwrap(), 2, 1, 3, None),
        ];
        let listed: Vec<(String, u64, u64, u64)> =
            d.with_counts(stats).into_iter().map(|s| (s.name.to_string(), s.scheduled, s.leased, s.dead)).collect();
        let expected = [("a", 1, 0, 0), ("b", 2, 1, 3), ("d", 0, 0, 0)].map(|(n, s, l, d)| (n.to_owned(), s, l, d));
        assert_eq!(listed, expected);
    }
}
