//! The delivery policy, which every node sharing a store must share: the effective
//! `[egress]` (where push actions and tasks' HTTP targets may connect) and `[targets]`
//! (the secret that signs target deliveries). Any node may lease any task of a shared
//! store, so a node whose policy refuses an address sends to dead a delivery another
//! node would make. Nodes do not pass such tasks to each other: they detect the
//! difference and report it.
//!
//! - [`DeliveryPolicy`]: a node's policy as a fingerprint (SHA-256 of one canonical
//!   text: policies that allow the same, written differently, have one fingerprint;
//!   the built-in refused ranges are part of it, since another version may refuse
//!   others; the targets secret only as a digest) and a summary for people.
//! - [`Announcer`]: on a shared store (Redis, Cluster, Sentinel), every
//!   [`ANNOUNCE_EVERY`] the node announces its fingerprint and summary, holding for
//!   [`ANNOUNCEMENT_TTL`], and reads the other live nodes'. A node whose fingerprint
//!   differs is a mismatch: an error in the log once per change (and a line when it
//!   ends), `punctual_delivery_policy_mismatch` 1 in `/metrics`, a warning in the body
//!   of `/readyz` (which stays ready: the fault is the set of nodes, not this one),
//!   and a note on the `last_error` of every HTTP delivery (a target, a webhook, a
//!   chat robot) the egress policy refuses meanwhile. A node that stops withdraws its
//!   announcement; one that dies drops out when its announcement expires. The
//!   embedded store has one node: nothing to compare, no announcer.
//!
//! Invariant: [`PolicyPeers`] holds what the latest announcement found; a store that
//! cannot be reached changes nothing (the nodes found before are still reported).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use punctual_actions::{EgressPolicy, RefusalNote, SigningSecrets, hex};
use punctual_core::Clock;
use punctual_redis::{Announcement, RedisNodes};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

/// How often a node announces its policy and reads the others'.
const ANNOUNCE_EVERY: Duration = Duration::from_secs(2);

/// How long an announcement holds: a node that stopped announcing (killed, or cut off
/// from the store) drops out of the others' view after this.
const ANNOUNCEMENT_TTL: Duration = Duration::from_secs(10);

/// What of a node's configuration decides where it delivers: `[egress]` and
/// `[targets]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeliveryPolicy {
    /// Lowercase hex SHA-256 of the canonical text (see the module docs).
    fingerprint: String,
    /// `[egress] allow_private = false, allow = ["127.0.0.1"] and [targets] secret: none`.
    summary: String,
}

impl DeliveryPolicy {
    pub(crate) fn new(egress: &EgressPolicy, targets_secret: Option<&SigningSecrets>) -> DeliveryPolicy {
        let digest = |secret: &punctual_actions::Secret| hex(&Sha256::digest(secret.expose().as_bytes()));
        let secret = match targets_secret {
            Some(secrets) => match secrets.previous() {
                None => format!("sha256 {}", digest(secrets.current())),
                Some(previous) => format!("sha256 {} previous {}", digest(secrets.current()), digest(previous)),
            },
            None => "none".to_owned(),
        };
        let canonical = format!(
            "punctual delivery policy 1\n[egress] {}\nrefused unless allowed:\n{}\n[targets] secret {secret}\n",
            egress.canonical(),
            EgressPolicy::refused_ranges()
        );
        let summary = format!(
            "[egress] {} and [targets] secret: {}",
            egress.canonical(),
            if targets_secret.is_some() { "set" } else { "none" }
        );
        DeliveryPolicy { fingerprint: hex(&Sha256::digest(canonical.as_bytes())), summary }
    }

    /// What the node announces: the fingerprint, a space, the summary.
    fn announcement(&self) -> String {
        format!("{} {}", self.fingerprint, self.summary)
    }

    /// The policy another node announced (an announcement without a space is all
    /// fingerprint, and its summary unknown).
    fn announced(text: &str) -> DeliveryPolicy {
        let (fingerprint, summary) = text.split_once(' ').unwrap_or((text, "(not given)"));
        DeliveryPolicy { fingerprint: fingerprint.to_owned(), summary: summary.to_owned() }
    }
}

/// Another live node whose policy differs from this node's.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Differing {
    node: String,
    summary: String,
}

/// The live nodes, `node` left out, whose announced policy differs from `mine`, in
/// name order.
fn differing(node: &str, mine: &DeliveryPolicy, live: &BTreeMap<String, String>) -> Vec<Differing> {
    live.iter()
        .filter(|(name, _)| name.as_str() != node)
        .map(|(name, text)| (name, DeliveryPolicy::announced(text)))
        .filter(|(_, theirs)| theirs.fingerprint != mine.fingerprint)
        .map(|(name, theirs)| Differing { node: name.clone(), summary: theirs.summary })
        .collect()
}

/// What is wrong and what to do, for the log and `/readyz`.
fn report(node: &str, mine: &DeliveryPolicy, differ: &[Differing]) -> String {
    let others: Vec<String> = differ
        .iter()
        .map(|d| {
            // Equal summaries: what differs is what a summary does not show.
            let hidden = if d.summary == mine.summary {
                " (the same as this node's in what is shown: the [targets] secrets differ, or the nodes run \
                 punctual versions that refuse other built-in ranges)"
            } else {
                ""
            };
            format!("node {} has {}{hidden}", d.node, d.summary)
        })
        .collect();
    format!(
        "the delivery policy differs between nodes sharing this store: {}, while this node ({node}) has {}. Every \
         node sharing a store must have the same [egress] and [targets]: a task leased by a node whose policy \
         refuses its address goes dead there, though another node would deliver it. Give every node the same \
         [egress] and [targets] tables and restart those that differ",
        others.join("; "),
        mine.summary
    )
}

/// The note added to a refused delivery's `last_error` while nodes differ.
fn refusal_note(node: &str, differ: &[Differing]) -> String {
    let names: Vec<&str> = differ.iter().map(|d| d.node.as_str()).collect();
    format!(
        "this node ({node}) has another delivery policy than {} sharing the store, which may allow it: every node \
         sharing a store must have the same [egress] and [targets]",
        names.join(", ")
    )
}

/// Live nodes whose policy differs from this node's, and the sentence that reports
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mismatch {
    differ: Vec<Differing>,
    report: String,
}

/// What the latest announcement found (`None`: every live node has this node's
/// policy): shared by the [`Announcer`], `/readyz` and `/metrics`. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct PolicyPeers(Arc<Mutex<Option<Mismatch>>>);

impl PolicyPeers {
    /// Whether a live node's policy differs from this node's.
    pub(crate) fn mismatch(&self) -> bool {
        self.0.lock().expect("policy peers lock poisoned").is_some()
    }

    /// The report of the nodes that differ, if any.
    pub(crate) fn warning(&self) -> Option<String> {
        self.0.lock().expect("policy peers lock poisoned").as_ref().map(|m| m.report.clone())
    }

    /// Records what an announcement found; whether the nodes that differ changed.
    fn update(&self, found: Option<Mismatch>) -> bool {
        let mut held = self.0.lock().expect("policy peers lock poisoned");
        let changed = held.as_ref().map(|m| &m.differ) != found.as_ref().map(|m| &m.differ);
        *held = found;
        changed
    }
}

/// Announces this node's policy on a shared store and reports the nodes that differ
/// (see the module docs).
#[derive(Debug)]
pub(crate) struct Announcer {
    pub(crate) nodes: RedisNodes,
    /// This node's name among the others: `host:port (pid N)`.
    pub(crate) node: String,
    pub(crate) policy: DeliveryPolicy,
    pub(crate) peers: PolicyPeers,
    /// The note of the actions' refusals.
    pub(crate) note: RefusalNote,
    pub(crate) clock: Arc<dyn Clock>,
}

impl Announcer {
    /// Announces once, so that `/readyz` and `/metrics` are right from the first
    /// request, then every [`ANNOUNCE_EVERY`] in a task of its own until `stop`, when
    /// it withdraws the announcement.
    pub(crate) async fn start(self, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let announcement =
            Announcement { node: self.node.clone(), text: self.policy.announcement(), ttl: ANNOUNCEMENT_TTL };
        let mut failing = None;
        self.announce(&announcement, &mut failing).await;
        tokio::spawn(async move {
            let mut every = tokio::time::interval(ANNOUNCE_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            every.tick().await; // The first tick is now: announced above.
            loop {
                tokio::select! {
                    _ = every.tick() => self.announce(&announcement, &mut failing).await,
                    _ = stop.cancelled() => break,
                }
            }
            if let Err(e) = self.nodes.withdraw(&self.node).await {
                tracing::debug!(error = %e, "cannot withdraw this node's delivery policy; it expires");
            }
        })
    }

    /// Announces this node's policy and takes in the others'; `failing` is the last
    /// failure logged, so that a lasting one is one line. The time is this node's
    /// clock: on Redis, Redis' time as the node measures it.
    async fn announce(&self, announcement: &Announcement, failing: &mut Option<String>) {
        match self.nodes.announce(announcement, self.clock.now()).await {
            Ok(live) => {
                *failing = None;
                self.found(&live);
            }
            // Unreachable: the store's connection logs that, once.
            Err(e) if e.is_transient() => {}
            Err(e) => {
                let text = e.to_string();
                if failing.as_ref() != Some(&text) {
                    tracing::warn!(error = %text, "cannot announce this node's delivery policy to the other nodes");
                    *failing = Some(text);
                }
            }
        }
    }

    /// Takes in what an announcement found: logs a change, sets the note.
    fn found(&self, live: &BTreeMap<String, String>) {
        let differ = differing(&self.node, &self.policy, live);
        let found =
            (!differ.is_empty()).then(|| Mismatch { report: report(&self.node, &self.policy, &differ), differ });
        if !self.peers.update(found.clone()) {
            return;
        }
        match found {
            Some(Mismatch { differ, report }) => {
                tracing::error!(node = %self.node, "{report}");
                self.note.set(Some(refusal_note(&self.node, &differ)));
            }
            None => {
                tracing::info!(node = %self.node, "the delivery policy of every live node sharing this store is this node's again");
                self.note.set(None);
            }
        }
    }
}

/// This node's name among those sharing the store: `web-1:7575 (pid 4242)`, unique
/// as long as no two nodes share a host name, a port and a process id.
pub(crate) fn node_name(port: u16) -> String {
    let host = hostname::get().map(|h| h.to_string_lossy().into_owned()).unwrap_or_else(|_| "unknown-host".into());
    format!("{host}:{port} (pid {})", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signing(text: &str) -> SigningSecrets {
        SigningSecrets::new(punctual_actions::Secret::new(text))
    }

    fn egress(entries: &[&str]) -> EgressPolicy {
        entries.iter().fold(EgressPolicy::public_only(), |policy, entry| policy.allow(entry).unwrap())
    }

    #[test]
    fn policies_that_allow_the_same_have_one_fingerprint() {
        let written = egress(&["127.0.0.1", "10.0.0.0/8", "hooks.internal.example"]);
        let rewritten = egress(&["10.0.0.0/9", "HOOKS.internal.example.", "10.128.0.0/9", "127.0.0.1/32"]);
        let secret = signing("whsec-1");
        let one = DeliveryPolicy::new(&written, Some(&secret));
        assert_eq!(one, DeliveryPolicy::new(&rewritten, Some(&signing("whsec-1"))));
        assert_eq!(one.fingerprint.len(), 64);
        assert_eq!(
            one.summary,
            r#"[egress] allow_private = false, allow = ["10.0.0.0/8", "127.0.0.1", "hooks.internal.example"] and [targets] secret: set"#
        );
        assert!(!one.announcement().contains("whsec-1"), "the secret is never announced");
        // Anything that decides a delivery changes it.
        for other in [
            DeliveryPolicy::new(&written, None),
            DeliveryPolicy::new(&written, Some(&signing("whsec-2"))),
            DeliveryPolicy::new(
                &written,
                Some(&secret.clone().with_previous(punctual_actions::Secret::new("whsec-0"))),
            ),
            DeliveryPolicy::new(&written.clone().allow_private(true), Some(&secret)),
            DeliveryPolicy::new(&egress(&["127.0.0.1", "10.0.0.0/8"]), Some(&secret)),
        ] {
            assert_ne!(other.fingerprint, one.fingerprint, "{other:?}");
        }
    }

    #[test]
    fn nodes_whose_announced_fingerprint_differs_are_reported_with_their_policy() {
        let mine = DeliveryPolicy::new(&egress(&["127.0.0.1"]), None);
        let public = DeliveryPolicy::new(&EgressPolicy::public_only(), None);
        let live: BTreeMap<String, String> = [
            ("a:1 (pid 1)", mine.announcement()),
            ("b:1 (pid 2)", public.announcement()),
            ("c:1 (pid 3)", mine.announcement()),
            ("d:1 (pid 4)", "garbled".to_owned()),
        ]
        .into_iter()
        .map(|(node, text)| (node.to_owned(), text))
        .collect();
        let differ = differing("a:1 (pid 1)", &mine, &live);
        let names: Vec<&str> = differ.iter().map(|d| d.node.as_str()).collect();
        assert_eq!(names, ["b:1 (pid 2)", "d:1 (pid 4)"]);
        let text = report("a:1 (pid 1)", &mine, &differ);
        assert!(text.contains(r#"node b:1 (pid 2) has [egress] allow_private = false, allow = []"#), "{text}");
        assert!(text.contains(r#"this node (a:1 (pid 1)) has [egress] allow_private = false, allow = ["127.0.0.1"]"#));
        assert!(text.contains("Every node sharing a store must have the same [egress] and [targets]"), "{text}");
        assert!(differing("a:1 (pid 1)", &mine, &BTreeMap::new()).is_empty());

        // Alike in what the summary shows: the report says what else differs.
        let one = DeliveryPolicy::new(&egress(&["127.0.0.1"]), Some(&signing("s1")));
        let two = DeliveryPolicy::new(&egress(&["127.0.0.1"]), Some(&signing("s2")));
        let live = BTreeMap::from([("e:1 (pid 5)".to_owned(), two.announcement())]);
        let text = report("a:1 (pid 1)", &one, &differing("a:1 (pid 1)", &one, &live));
        assert!(text.contains("the [targets] secrets differ"), "{text}");
    }

    #[test]
    fn peers_change_only_when_the_differing_nodes_do() {
        let peers = PolicyPeers::default();
        assert!(!peers.mismatch() && peers.warning().is_none());
        let b = Mismatch { differ: vec![Differing { node: "b".into(), summary: "x".into() }], report: "b".into() };
        assert!(peers.update(Some(b.clone())));
        assert!(peers.mismatch());
        assert_eq!(peers.warning().as_deref(), Some("b"));
        assert!(!peers.update(Some(b)), "the same nodes: no change to log");
        assert!(peers.update(None));
        assert!(!peers.mismatch());
        assert!(!peers.update(None));
    }
}
