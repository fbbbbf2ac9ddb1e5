//! What a token may do and how a presented token is recognised: [`Permission`]s on the
//! queues some [`QueuePattern`]s match make a [`Grant`]; an unlimited token has the
//! grant with everything; [`Auth`] holds every configured token with its grant.
//!
//! Invariant: tokens are kept only as SHA-256 digests; [`Auth::identify`] compares
//! the digest of the presented token with every configured one in constant time
//! (`subtle`) and selects the match without a branch, so neither the timing nor the
//! order of a mismatch tells anything about a token; no token value is ever logged or
//! shown (`AccessToken`'s `Debug` leaves it out).

use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use crate::error::ApiError;

/// What a token may do (API.md, "Auth").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Permission {
    /// Get, list, stats.
    Read,
    /// Create, update, cancel.
    Schedule,
    /// Lease, ack, extend.
    Work,
    /// Dead tasks, queue settings, pause, resume, purge.
    Admin,
}

impl Permission {
    /// Every permission, in the order API.md lists them.
    pub const ALL: [Permission; 4] = [Permission::Read, Permission::Schedule, Permission::Work, Permission::Admin];

    /// The name used in the config file, the API and messages.
    pub fn name(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Schedule => "schedule",
            Permission::Work => "work",
            Permission::Admin => "admin",
        }
    }

    /// The permission of a name; the error says which names there are.
    pub fn parse(name: &str) -> Result<Permission, String> {
        Permission::ALL.into_iter().find(|p| p.name() == name).ok_or_else(|| {
            format!("'{name}' is not a permission: use read, schedule, work or admin (see API.md, \"Auth\")")
        })
    }

    fn bit(self) -> u8 {
        match self {
            Permission::Read => 1,
            Permission::Schedule => 2,
            Permission::Work => 4,
            Permission::Admin => 8,
        }
    }
}

/// A queue name pattern: the characters of a queue name (`A-Z a-z 0-9 . _ : -`) and
/// `*`, which stands for any run of them, empty included and dots included: `order.*`
/// matches `order.cancel` and `order.eu.refund` but not `order`; `*` matches every
/// queue; a pattern without `*` matches only the queue of that name. At most 128
/// characters, like a queue name.
#[derive(Clone, PartialEq, Eq)]
pub struct QueuePattern(String);

impl QueuePattern {
    /// The longest pattern.
    const MAX_LEN: usize = 128;

    /// The pattern of `text`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<QueuePattern, String> {
        if text.is_empty() {
            return Err("a queue pattern cannot be empty: write a queue name, or use * for a run of characters".into());
        }
        if text.len() > QueuePattern::MAX_LEN {
            return Err(format!("the queue pattern '{text}' is longer than {} characters", QueuePattern::MAX_LEN));
        }
        if let Some(bad) = text.chars().find(|c| !(c.is_ascii_alphanumeric() || "._:-*".contains(*c))) {
            return Err(format!(
                "the queue pattern '{text}' holds '{bad}': a pattern is made of A-Z a-z 0-9 . _ : - \
                 and * (any run of characters), e.g. order.*"
            ));
        }
        Ok(QueuePattern(text.to_owned()))
    }

    /// The pattern that matches every queue.
    pub fn any() -> QueuePattern {
        QueuePattern("*".into())
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `queue` matches: `*` matches any run of characters, everything else
    /// itself. Linear backtracking over the last `*`, so no input makes it slow.
    pub fn matches(&self, queue: &str) -> bool {
        let (pattern, text) = (self.0.as_bytes(), queue.as_bytes());
        let (mut p, mut t) = (0, 0);
        // The position after the last `*` seen, and where in `text` it began to match.
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            if p < pattern.len() && pattern[p] == b'*' {
                star = Some((p + 1, t));
                p += 1;
            } else if p < pattern.len() && pattern[p] == text[t] {
                p += 1;
                t += 1;
            } else if let Some((after, from)) = star {
                // Let the last `*` take one more character and try again from there.
                p = after;
                t = from + 1;
                star = Some((after, from + 1));
            } else {
                return false;
            }
        }
        pattern[p..].iter().all(|b| *b == b'*')
    }

    fn is_any(&self) -> bool {
        self.0.bytes().all(|b| b == b'*')
    }
}

impl std::fmt::Debug for QueuePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// What one token may do: its permissions, on the queues its patterns match; and the
/// name it goes by in logs (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grant {
    name: String,
    /// One bit per [`Permission`].
    permissions: u8,
    /// Never empty.
    queues: Vec<QueuePattern>,
}

impl Grant {
    /// Everything on every queue, by the name `name`: a token of `tokens`, or no auth
    /// at all.
    pub(crate) fn all(name: impl Into<String>) -> Grant {
        Grant::new(name.into(), &Permission::ALL, vec![QueuePattern::any()])
    }

    fn new(name: String, permissions: &[Permission], queues: Vec<QueuePattern>) -> Grant {
        debug_assert!(!queues.is_empty(), "a grant covers at least one pattern");
        Grant { name, permissions: permissions.iter().fold(0, |bits, p| bits | p.bit()), queues }
    }

    /// The name the token goes by: its `[[access]]` table's `name`.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Whether the grant holds `permission` on some queue.
    pub(crate) fn has(&self, permission: Permission) -> bool {
        self.permissions & permission.bit() != 0
    }

    /// Whether the grant holds `permission` on `queue`.
    pub(crate) fn may(&self, permission: Permission, queue: &str) -> bool {
        self.has(permission) && self.queues.iter().any(|p| p.matches(queue))
    }

    /// Whether the grant holds `permission` on every queue there may be.
    pub(crate) fn may_everywhere(&self, permission: Permission) -> bool {
        self.has(permission) && self.queues.iter().any(QueuePattern::is_any)
    }

    /// The permissions held, in API.md's order.
    pub(crate) fn permissions(&self) -> Vec<Permission> {
        Permission::ALL.into_iter().filter(|p| self.has(*p)).collect()
    }

    /// The queue patterns, as written.
    pub(crate) fn queues(&self) -> &[QueuePattern] {
        &self.queues
    }

    /// `403` unless the grant holds `permission` on `queue`.
    pub(crate) fn check(&self, permission: Permission, queue: &str) -> Result<(), ApiError> {
        if self.may(permission, queue) { Ok(()) } else { Err(ApiError::Forbidden(self.refusal(permission, queue))) }
    }

    /// Why the grant does not hold `permission` on `queue`: the permission, the queue,
    /// and what the token has instead.
    pub(crate) fn refusal(&self, permission: Permission, queue: &str) -> String {
        format!("this token lacks the {} permission on queue '{queue}'; {}", permission.name(), self.describe())
    }

    /// `403` unless the grant holds `permission` on some queue (`what` is the call).
    pub(crate) fn check_any(&self, permission: Permission, what: &str) -> Result<(), ApiError> {
        if self.has(permission) {
            return Ok(());
        }
        Err(ApiError::Forbidden(format!(
            "{what} needs the {} permission, which this token lacks on every queue; {}",
            permission.name(),
            self.describe()
        )))
    }

    /// `403` unless the grant holds `permission` on every queue (`what` is the call).
    pub(crate) fn check_everywhere(&self, permission: Permission, what: &str) -> Result<(), ApiError> {
        if self.may_everywhere(permission) {
            return Ok(());
        }
        Err(ApiError::Forbidden(format!(
            "{what} shows every queue, so it needs the {} permission on every queue (queues = [\"*\"]), \
             which this token lacks; {}",
            permission.name(),
            self.describe()
        )))
    }

    /// "it has read, schedule on queues order.*, billing" (or "no permission").
    fn describe(&self) -> String {
        let permissions: Vec<&str> = self.permissions().iter().map(|p| p.name()).collect();
        let queues: Vec<&str> = self.queues.iter().map(QueuePattern::as_str).collect();
        if permissions.is_empty() {
            return "it has no permission".into();
        }
        format!("it has {} on queues {}", permissions.join(", "), queues.join(", "))
    }
}

/// A token of the config file's `[[access]]` table, validated.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    token: String,
    grant: Arc<Grant>,
    rate: Option<punctual_core::policy::Rate>,
}

impl AccessToken {
    /// A token with these permissions (empty: all of them) on the queues these
    /// patterns match (empty: every queue).
    pub fn new(token: impl Into<String>, permissions: &[Permission], queues: Vec<QueuePattern>) -> AccessToken {
        let permissions = if permissions.is_empty() { &Permission::ALL[..] } else { permissions };
        let queues = if queues.is_empty() { vec![QueuePattern::any()] } else { queues };
        let grant = Grant::new(AccessToken::DEFAULT_NAME.to_owned(), permissions, queues);
        AccessToken { token: token.into(), grant: Arc::new(grant), rate: None }
    }

    /// The name of a token given none.
    pub const DEFAULT_NAME: &str = "access";

    /// The same token, going by `name` in logs.
    pub fn named(mut self, name: impl Into<String>) -> AccessToken {
        Arc::make_mut(&mut self.grant).name = name.into();
        self
    }

    /// The same token, its requests limited to `rate` on each server.
    pub fn limited_to(mut self, rate: punctual_core::policy::Rate) -> AccessToken {
        self.rate = Some(rate);
        self
    }

    /// The token itself (to compare with others at start-up; never to log).
    pub(crate) fn token(&self) -> &str {
        &self.token
    }
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a secret: it stays out of every debug print.
        f.debug_struct("AccessToken")
            .field("token", &"…")
            .field("grant", &self.grant)
            .field("rate", &self.rate)
            .finish()
    }
}

/// The configured bearer tokens, as digests with their grants and ingress limits.
#[derive(Debug)]
pub(crate) struct Auth {
    digests: Vec<[u8; 32]>,
    tokens: Vec<Identified>,
}

/// What a presented token is: its grant, and its ingress limit if it has one.
#[derive(Debug, Clone)]
pub(crate) struct Identified {
    pub(crate) grant: Arc<Grant>,
    pub(crate) limit: Option<Arc<super::IngressLimit>>,
}

impl Auth {
    /// `tokens` may do everything; each of `scoped` what its grant says.
    pub(crate) fn new(tokens: &[String], scoped: &[AccessToken]) -> Auth {
        // Unlimited tokens have no table to name them: each goes by its place in the list.
        let unlimited = tokens.iter().enumerate().map(|(i, t)| {
            let grant = Arc::new(Grant::all(format!("tokens.{}", i + 1)));
            (digest(t.as_bytes()), Identified { grant, limit: None })
        });
        let limited = scoped.iter().map(|s| {
            let limit = s.rate.map(|rate| Arc::new(super::IngressLimit::new(rate)));
            (digest(s.token.as_bytes()), Identified { grant: Arc::clone(&s.grant), limit })
        });
        let (digests, tokens) = unlimited.chain(limited).unzip();
        Auth { digests, tokens }
    }

    /// Whether requests need a token at all.
    pub(crate) fn required(&self) -> bool {
        !self.digests.is_empty()
    }

    /// The grant and limit of `presented`, if it is one of the tokens. Every digest is
    /// compared, in constant time, and the index of the match selected without
    /// branching on it.
    pub(crate) fn identify(&self, presented: &[u8]) -> Option<Identified> {
        let presented = digest(presented);
        let mut found = subtle::Choice::from(0u8);
        let mut index = 0u64;
        for (i, d) in self.digests.iter().enumerate() {
            let equal = d.ct_eq(&presented);
            index.conditional_assign(&(i as u64), equal);
            found |= equal;
        }
        let found: bool = found.into();
        found.then(|| self.tokens[usize::try_from(index).expect("an index of the digests")].clone())
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> QueuePattern {
        QueuePattern::parse(text).unwrap()
    }

    #[test]
    fn patterns_match_whole_names_with_star_for_any_run() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("order.*", &["order.cancel", "order.", "order.eu.refund"], &["order", "orders.x", "x.order.cancel"]),
            ("*", &["a", "order.cancel", "*"], &[]),
            ("billing", &["billing"], &["billing.x", "billin", "xbilling", "Billing"]),
            ("*.cancel", &["order.cancel", ".cancel", "a.b.cancel"], &["order.cancel2", "cancel"]),
            ("a*b*c", &["abc", "axxbyyc", "abbbc", "acbc"], &["ab", "acb", "abcx"]),
            ("flow.*.remind", &["flow.x.remind", "flow.a.b.remind"], &["flow.remind", "flow.x.remind.y"]),
        ];
        for (text, yes, no) in cases {
            let p = pattern(text);
            for q in *yes {
                assert!(p.matches(q), "{text} matches {q}");
            }
            for q in *no {
                assert!(!p.matches(q), "{text} does not match {q}");
            }
        }
        // Backtracking stays linear-ish: a long near miss answers at once.
        let long = "a".repeat(128);
        assert!(!pattern("*a*a*a*a*a*b").matches(&long));
    }

    #[test]
    fn bad_patterns_say_what_a_pattern_is() {
        for (text, needle) in [("", "empty"), ("order/*", "'/'"), ("ord er", "' '"), ("é", "'é'")] {
            let e = QueuePattern::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
        assert!(QueuePattern::parse(&"a".repeat(129)).unwrap_err().contains("longer than 128"));
        assert!(QueuePattern::parse(&"a".repeat(128)).is_ok());
    }

    #[test]
    fn permissions_have_their_api_names() {
        for p in Permission::ALL {
            assert_eq!(Permission::parse(p.name()), Ok(p));
        }
        let e = Permission::parse("write").unwrap_err();
        assert!(e.contains("'write'") && e.contains("read, schedule, work or admin"), "{e}");
    }

    #[test]
    fn a_grant_holds_its_permissions_on_its_queues_only() {
        let scoped = AccessToken::new("t", &[Permission::Read, Permission::Schedule], vec![pattern("order.*")]);
        let g = &scoped.grant;
        assert!(g.may(Permission::Read, "order.cancel") && g.may(Permission::Schedule, "order.x"));
        assert!(!g.may(Permission::Read, "billing") && !g.may(Permission::Work, "order.cancel"));
        assert!(g.has(Permission::Read) && !g.may_everywhere(Permission::Read));
        let e = g.check(Permission::Work, "order.cancel").unwrap_err();
        let message = e.detail().message;
        assert_eq!(e.status().as_u16(), 403);
        assert_eq!(
            message,
            "this token lacks the work permission on queue 'order.cancel'; it has read, schedule on queues order.*"
        );
        assert!(g.check_everywhere(Permission::Read, "GET /metrics").unwrap_err().detail().message.contains("read"));
        let everything = AccessToken::new("u", &[], Vec::new());
        assert_eq!(
            *everything.grant,
            Grant::all(AccessToken::DEFAULT_NAME),
            "left out: every permission on every queue"
        );
        assert!(Grant::all("x").may_everywhere(Permission::Admin));
    }

    #[test]
    fn tokens_are_identified_exactly_with_their_grant() {
        let reader = AccessToken::new("reader", &[Permission::Read], Vec::new());
        let auth = Auth::new(&["s3cret".into(), "other".into()], std::slice::from_ref(&reader));
        assert!(auth.required());
        assert_eq!(auth.identify(b"s3cret").map(|i| i.grant).as_deref(), Some(&Grant::all("tokens.1")));
        assert_eq!(auth.identify(b"other").map(|i| i.grant).as_deref(), Some(&Grant::all("tokens.2")));
        assert_eq!(auth.identify(b"reader").map(|i| i.grant).as_deref(), Some(&*reader.grant));
        for bad in [&b""[..], b"s3cre", b"s3cret ", b"S3CRET", b"reade", b"readerx"] {
            assert!(auth.identify(bad).is_none(), "{bad:?}");
        }
        assert!(!Auth::new(&[], &[]).required());
        assert!(Auth::new(&[], &[]).identify(b"").is_none());
    }

    #[test]
    fn a_token_never_shows_in_debug_output() {
        let token = AccessToken::new("very-secret-value", &[Permission::Read], Vec::new());
        assert!(!format!("{token:?}").contains("very-secret-value"));
        assert!(format!("{token:?}").contains("permissions"));
    }
}
