//! The egress policy: where push actions (webhooks, chat robots, SMTP relays, brokers)
//! may connect.
//!
//! Invariant: no push action connects to an address the policy refuses. By
//! default only public addresses are allowed; refused unless allowed are the ranges of
//! [`REFUSED_V4`] and [`REFUSED_V6`] (unspecified, loopback, private, link-local with the
//! cloud metadata address 169.254.169.254, shared CGNAT, multicast, broadcast, reserved
//! and documentation ranges), and IPv6 addresses that embed an IPv4 address
//! (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`,
//! 6to4 `2002:aabb:ccdd::`, Teredo `2001:0::` with its server and its obfuscated
//! client address) are refused when an IPv4 address they carry is: a relay would
//! forward the connection there.
//!
//! The policy is enforced where connections are made, not on the text of a URL:
//!
//! - a host name is resolved by [`PolicyResolver`], the resolver of the shared HTTP
//!   client, which drops every refused address it resolves to and fails the connection
//!   with a [`Refusal`] when none is left — a name that resolves to a public address
//!   now and to 127.0.0.1 later (DNS rebinding) is checked again on every connection;
//! - an IP literal host bypasses any resolver, so it is checked when the action is
//!   built ([`crate::ActionSpec::check_egress`]): an action's host never changes
//!   afterwards, and the policy of a [`crate::Runtime`] is fixed;
//! - redirects are not followed and proxies from the environment (`HTTP_PROXY`, …) are
//!   not used (see `http`), so no connection goes anywhere the policy did not see.
//!
//! Allowing: an `allow` entry is an IP address (`127.0.0.1`, `::1`), a CIDR network
//! (`10.0.0.0/8`, `fd00::/8`) or a host name (`hooks.internal.example`, or
//! `*.internal.example` for every name under it). An allowed host name may resolve to
//! any address: the operator vouches for the name. `allow_private` allows the private
//! ranges (10/8, 172.16/12, 192.168/16, fc00::/7, the old site-local fec0::/10) and
//! CGNAT 100.64/10 at once, for deployments whose receivers are all internal; loopback,
//! link-local (the metadata address) and the rest still need an explicit entry.
//!
//! - SMTP and the brokers do not go through the HTTP client: their host is resolved
//!   and screened by [`EgressPolicy::resolve`] before each connection, and the
//!   connection is made to an address it allowed.
//!
//! Every node sharing a store must have the same policy. The server compares them by
//! [`EgressPolicy::canonical`] (one text for every policy that allows the same) and
//! [`EgressPolicy::refused_ranges`]; while they differ, a [`RefusalNote`] says so in the
//! `last_error` of every HTTP delivery refused.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use punctual_core::Outcome;

use crate::error::ActionError;

/// What [`EgressPolicy::resolve`] found.
#[derive(Debug)]
pub(crate) enum Resolved {
    /// The addresses a connection may use.
    Allowed(Vec<SocketAddr>),
    /// Every address the name resolved to is refused.
    Refused(Refusal),
    /// The name could not be resolved (retry: DNS may be back later).
    Failed(std::io::Error),
}

/// Why an address is refused by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddressClass {
    Unspecified,
    Loopback,
    Private,
    LinkLocal,
    SharedCgnat,
    Multicast,
    Broadcast,
    Reserved,
}

impl AddressClass {
    /// "a loopback address", for "127.0.0.1 is a loopback address".
    fn described(self) -> &'static str {
        match self {
            AddressClass::Unspecified => "an unspecified address",
            AddressClass::Loopback => "a loopback address",
            AddressClass::Private => "a private address",
            AddressClass::LinkLocal => "a link-local address (cloud metadata lives here)",
            AddressClass::SharedCgnat => "a shared (CGNAT) address",
            AddressClass::Multicast => "a multicast address",
            AddressClass::Broadcast => "the broadcast address",
            AddressClass::Reserved => "a reserved address",
        }
    }

    /// Whether `allow_private = true` allows the class.
    fn is_private(self) -> bool {
        matches!(self, AddressClass::Private | AddressClass::SharedCgnat)
    }
}

/// IPv4 ranges refused unless allowed; the first match names the class.
pub(crate) const REFUSED_V4: &[(Ipv4Net, AddressClass)] = &[
    (v4(0, 0, 0, 0, 8), AddressClass::Unspecified), // "this network", 0.0.0.0 included
    (v4(10, 0, 0, 0, 8), AddressClass::Private),
    (v4(100, 64, 0, 0, 10), AddressClass::SharedCgnat),
    (v4(127, 0, 0, 0, 8), AddressClass::Loopback),
    (v4(169, 254, 0, 0, 16), AddressClass::LinkLocal),
    (v4(172, 16, 0, 0, 12), AddressClass::Private),
    (v4(192, 0, 0, 0, 24), AddressClass::Reserved), // IETF protocol assignments
    (v4(192, 0, 2, 0, 24), AddressClass::Reserved), // documentation
    (v4(192, 168, 0, 0, 16), AddressClass::Private),
    (v4(198, 18, 0, 0, 15), AddressClass::Reserved),   // benchmarking
    (v4(198, 51, 100, 0, 24), AddressClass::Reserved), // documentation
    (v4(203, 0, 113, 0, 24), AddressClass::Reserved),  // documentation
    (v4(224, 0, 0, 0, 4), AddressClass::Multicast),
    (v4(255, 255, 255, 255, 32), AddressClass::Broadcast), // before 240/4, which holds it
    (v4(240, 0, 0, 0, 4), AddressClass::Reserved),
];

/// IPv6 ranges refused unless allowed (addresses embedding IPv4 are judged as IPv4).
pub(crate) const REFUSED_V6: &[(Ipv6Net, AddressClass)] = &[
    (v6([0, 0, 0, 0, 0, 0, 0, 0], 128), AddressClass::Unspecified),
    (v6([0, 0, 0, 0, 0, 0, 0, 1], 128), AddressClass::Loopback),
    (v6([0x0100, 0, 0, 0, 0, 0, 0, 0], 64), AddressClass::Reserved), // discard-only
    (v6([0x2001, 0x0db8, 0, 0, 0, 0, 0, 0], 32), AddressClass::Reserved), // documentation
    (v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7), AddressClass::Private),   // unique local
    (v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10), AddressClass::LinkLocal),
    (v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10), AddressClass::Private), // deprecated site-local
    (v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8), AddressClass::Multicast),
];

/// Prefixes whose last 32 bits are an IPv4 address a connection ends up at.
const EMBEDDING_V4: &[Ipv6Net] = &[
    v6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96),      // IPv4-mapped
    v6([0, 0, 0, 0, 0, 0, 0, 0], 96),           // IPv4-compatible (deprecated)
    v6([0x0064, 0xff9b, 0, 0, 0, 0, 0, 0], 96), // NAT64 well-known prefix
];

const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), prefix)
}

const fn v6(s: [u16; 8], prefix: u8) -> Ipv6Net {
    Ipv6Net::new_assert(Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]), prefix)
}

/// 6to4 (RFC 3056): `2002:AABB:CCDD::/48` carries the IPv4 address `A.B.C.D` of its
/// relay's far end.
const SIX_TO_FOUR: Ipv6Net = v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16);
/// Teredo (RFC 4380): `2001:0:SSSS:SSSS:…:CCCC:CCCC` carries its server's IPv4 address
/// and its client's, the client's with every bit inverted.
const TEREDO: Ipv6Net = v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32);

/// The IPv4 addresses `ip` carries: one for the forms of [`EMBEDDING_V4`] and 6to4,
/// two for Teredo (server, client), none otherwise (`::` and `::1` are themselves, not
/// IPv4).
fn embedded_v4(ip: Ipv6Addr) -> Vec<Ipv4Addr> {
    if ip.is_unspecified() || ip.is_loopback() {
        return Vec::new();
    }
    let bits = ip.to_bits();
    // Each cast keeps exactly the 32 bits shifted into place.
    if EMBEDDING_V4.iter().any(|net| net.contains(&ip)) {
        vec![Ipv4Addr::from_bits(bits as u32)]
    } else if SIX_TO_FOUR.contains(&ip) {
        vec![Ipv4Addr::from_bits((bits >> 80) as u32)]
    } else if TEREDO.contains(&ip) {
        vec![Ipv4Addr::from_bits((bits >> 64) as u32), Ipv4Addr::from_bits(!(bits as u32))]
    } else {
        Vec::new()
    }
}

/// The class an IPv4 address is refused as, or `None` for a public one.
fn class_of_v4(v4: Ipv4Addr) -> Option<AddressClass> {
    REFUSED_V4.iter().find(|(net, _)| net.contains(&v4)).map(|(_, class)| *class)
}

/// The class `ip` is refused as, or `None` for a public address.
pub(crate) fn class_of(ip: IpAddr) -> Option<AddressClass> {
    match ip {
        IpAddr::V4(v4) => class_of_v4(v4),
        IpAddr::V6(v6) => {
            let embedded = embedded_v4(v6);
            if embedded.is_empty() {
                REFUSED_V6.iter().find(|(net, _)| net.contains(&v6)).map(|(_, class)| *class)
            } else {
                embedded.into_iter().find_map(class_of_v4)
            }
        }
    }
}

/// An allowed host name: exact, or every name under a suffix (`*.internal.example`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Exact(String),
    Under(String),
}

impl HostPattern {
    fn matches(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.');
        match self {
            HostPattern::Exact(name) => host.eq_ignore_ascii_case(name),
            HostPattern::Under(suffix) => host
                .to_ascii_lowercase()
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }
}

/// Where HTTP push actions may connect: public addresses, plus what is allowed.
///
/// The default refuses every non-public address (see the module docs); widen it with
/// [`EgressPolicy::allow`] and [`EgressPolicy::allow_private`], then give it to
/// [`crate::Runtime::with_egress`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressPolicy {
    networks: Vec<IpNet>,
    hosts: Vec<HostPattern>,
    private: bool,
}

impl EgressPolicy {
    /// Public addresses only: the default.
    pub fn public_only() -> EgressPolicy {
        EgressPolicy::default()
    }

    /// Also allows `entry`: an IP address (`127.0.0.1`, `::1`), a CIDR network
    /// (`10.0.0.0/8`, `fd00::/8`), a host name (`hooks.internal.example`) or every name
    /// under a domain (`*.internal.example`). An IPv4 entry also allows its
    /// IPv6-mapped form.
    pub fn allow(mut self, entry: &str) -> Result<EgressPolicy, ActionError> {
        let invalid = |why: String| ActionError::invalid("egress.allow", why);
        let entry = entry.trim();
        if entry.is_empty() {
            return Err(invalid("an allow entry cannot be empty".into()));
        }
        if let Some((_, rest)) = entry.split_once("://") {
            let host = rest.split(['/', ':']).next().unwrap_or_default();
            return Err(invalid(format!("'{entry}' is a URL: write its host alone ({host})")));
        }
        if entry.contains('/') {
            let net: IpNet = entry.parse().map_err(|_| {
                invalid(format!(
                    "'{entry}' is not a CIDR network: write an address and a prefix length, e.g. 10.0.0.0/8"
                ))
            })?;
            if net.trunc() != net {
                return Err(invalid(format!("'{entry}' has bits set after its prefix: did you mean {}?", net.trunc())));
            }
            self.networks.push(net);
        } else if let Ok(ip) = entry.parse::<IpAddr>() {
            self.networks.push(IpNet::from(ip));
        } else {
            self.hosts.push(host_pattern(entry).map_err(invalid)?);
        }
        Ok(self)
    }

    /// Allows (or not) the private ranges and CGNAT at once, for all-internal
    /// deployments. Loopback and link-local still need an [`EgressPolicy::allow`] entry.
    pub fn allow_private(mut self, allow: bool) -> EgressPolicy {
        self.private = allow;
        self
    }

    /// Whether a connection to `ip` is allowed; the refusal says why not and how to
    /// allow it.
    pub fn check(&self, ip: IpAddr) -> Result<(), Refusal> {
        match self.refused_class(ip) {
            None => Ok(()),
            Some(class) => Err(Refusal { host: None, refused: vec![(ip, class)] }),
        }
    }

    /// The class `ip` is refused as under this policy, or `None` when allowed.
    fn refused_class(&self, ip: IpAddr) -> Option<AddressClass> {
        let class = class_of(ip)?;
        if self.private && class.is_private() {
            return None;
        }
        let listed = |ip: &IpAddr| self.networks.iter().any(|net| net.contains(ip));
        if listed(&ip) {
            return None;
        }
        // An address embedding IPv4 is allowed when every refused address it carries is.
        let embedded = match ip {
            IpAddr::V6(v6) => embedded_v4(v6),
            IpAddr::V4(_) => Vec::new(),
        };
        let carried_allowed = !embedded.is_empty()
            && embedded.into_iter().filter(|v4| class_of_v4(*v4).is_some()).all(|v4| listed(&IpAddr::V4(v4)));
        (!carried_allowed).then_some(class)
    }

    /// Whether `host` (a name, not an address) is allowed whatever it resolves to.
    fn allows_host(&self, host: &str) -> bool {
        self.hosts.iter().any(|pattern| pattern.matches(host))
    }

    /// Checks the host of the URL `text` when it is an IP literal, as every delivery
    /// to it will (a name is checked when it is resolved, on every connection). A text
    /// that is not a URL passes: parsing it is the caller's check.
    pub fn check_url_text(&self, text: &str) -> Result<(), Refusal> {
        match reqwest::Url::parse(text) {
            Ok(url) => self.check_url(&url),
            Err(_) => Ok(()),
        }
    }

    /// Checks the host of `url` when it is an IP literal (a name is checked when it is
    /// resolved, on every connection).
    pub(crate) fn check_url(&self, url: &reqwest::Url) -> Result<(), Refusal> {
        // The URL parser has already normalised every IPv4 spelling (`2130706433`,
        // `0x7f.1`) to dotted form; IPv6 comes in brackets.
        self.check_host(url.host_str().unwrap_or_default())
    }

    /// Checks `host` when it is an IP literal (`[::1]` in brackets or bare); a name
    /// passes here and is checked when it is resolved.
    pub(crate) fn check_host(&self, host: &str) -> Result<(), Refusal> {
        match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
            Ok(ip) => self.check(ip),
            Err(_) => Ok(()),
        }
    }

    /// Resolves `host:port` and keeps the addresses a connection may use (see
    /// [`EgressPolicy::screen`]); an IP literal is checked as it is.
    pub(crate) async fn resolve(&self, host: &str, port: u16) -> Resolved {
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = literal.parse::<IpAddr>() {
            return match self.check(ip) {
                Ok(()) => Resolved::Allowed(vec![SocketAddr::new(ip, port)]),
                Err(refusal) => Resolved::Refused(refusal),
            };
        }
        match tokio::net::lookup_host((host, port)).await {
            Ok(resolved) => match self.screen(host, resolved.collect()) {
                Ok(allowed) => Resolved::Allowed(allowed),
                Err(refusal) => Resolved::Refused(refusal),
            },
            Err(e) => Resolved::Failed(e),
        }
    }

    /// The addresses `host` resolved to that a connection may use: all of them for an
    /// allowed name, else the allowed ones; a refusal when every one is refused.
    pub(crate) fn screen(&self, host: &str, resolved: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, Refusal> {
        if self.allows_host(host) || resolved.is_empty() {
            return Ok(resolved);
        }
        let mut refused = Vec::new();
        let mut allowed = Vec::new();
        for addr in resolved {
            match self.refused_class(addr.ip()) {
                None => allowed.push(addr),
                Some(class) => refused.push((addr.ip(), class)),
            }
        }
        if allowed.is_empty() {
            return Err(Refusal { host: Some(host.to_owned()), refused });
        }
        if !refused.is_empty() {
            tracing::debug!(host, refused = ?refused, "egress policy dropped some resolved addresses");
        }
        Ok(allowed)
    }

    /// The policy in one normal form: the same text for every policy that allows the
    /// same addresses and names, however it was written. Networks are merged (an
    /// address and its `/32`, a network inside another, two halves of one), names are
    /// lowercase without a trailing dot and left out under an allowed `*.` domain that
    /// holds them, and each list is sorted: `allow_private = false, allow = ["10.0.0.0/8",
    /// "127.0.0.1", "*.corp.example", "hooks.internal.example"]`.
    pub fn canonical(&self) -> String {
        let networks = IpNet::aggregate(&self.networks)
            .into_iter()
            .map(|net| if net.prefix_len() == net.max_prefix_len() { net.addr().to_string() } else { net.to_string() });
        let covered = |pattern: &HostPattern| {
            let name = match pattern {
                HostPattern::Exact(name) | HostPattern::Under(name) => name,
            };
            self.hosts
                .iter()
                .any(|other| matches!(other, HostPattern::Under(_)) && other != pattern && other.matches(name))
        };
        let mut hosts: Vec<String> = self
            .hosts
            .iter()
            .filter(|pattern| !covered(pattern))
            .map(|pattern| match pattern {
                HostPattern::Exact(name) => name.clone(),
                HostPattern::Under(suffix) => format!("*.{suffix}"),
            })
            .collect();
        hosts.sort();
        hosts.dedup();
        let allow: Vec<String> = networks.chain(hosts).map(|entry| format!("{entry:?}")).collect();
        format!("allow_private = {}, allow = [{}]", self.private, allow.join(", "))
    }

    /// What every policy refuses unless it allows it, as text: the ranges of
    /// [`REFUSED_V4`] and [`REFUSED_V6`] and the IPv6 prefixes judged by the IPv4
    /// address they carry. Built in, so the same on every node of one version; another
    /// version may refuse other ranges.
    pub fn refused_ranges() -> String {
        let v4 = REFUSED_V4.iter().map(|(net, class)| format!("{net} is {}", class.described()));
        let v6 = REFUSED_V6.iter().map(|(net, class)| format!("{net} is {}", class.described()));
        let carried = EMBEDDING_V4.iter().chain([&SIX_TO_FOUR, &TEREDO]).map(|net| format!("{net} carries IPv4"));
        v4.chain(v6).chain(carried).collect::<Vec<_>>().join("\n")
    }
}

/// A sentence added to the `last_error` of every HTTP delivery (a webhook, a chat
/// robot, a task's target) the policy refuses, while one is set: what the server knows
/// and the policy does not (another node sharing the store allows other addresses). Shared by every action of a
/// [`crate::Runtime`]; cheap to clone, and a clone sets the same note.
#[derive(Debug, Clone, Default)]
pub struct RefusalNote(Arc<Mutex<Option<String>>>);

impl RefusalNote {
    /// Adds `note` to every refusal from now on; `None`: nothing.
    pub fn set(&self, note: Option<String>) {
        *self.0.lock().expect("refusal note lock poisoned") = note;
    }

    /// The outcome of a delivery to `what` (`target https://…`) that the policy
    /// refused: dead, with the refusal and the note, if any, as its error.
    pub(crate) fn refused(&self, what: &str, refusal: &Refusal) -> Outcome {
        tracing::warn!(target: "punctual_actions::egress", "{what}: refused: {refusal}");
        match self.0.lock().expect("refusal note lock poisoned").as_deref() {
            Some(note) => Outcome::fail(format!("{what}: refused: {refusal}; {note}")),
            None => Outcome::fail(format!("{what}: refused: {refusal}")),
        }
    }
}

/// Parses a host name entry: letters, digits, `-` and `.`, optionally `*.` first.
fn host_pattern(entry: &str) -> Result<HostPattern, String> {
    let (under, name) = match entry.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, entry),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let valid_label = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(valid_label) {
        return Err(format!(
            "'{entry}' is neither an IP address, a CIDR network (10.0.0.0/8) nor a host name \
             (hooks.internal.example, *.internal.example)"
        ));
    }
    Ok(if under { HostPattern::Under(name) } else { HostPattern::Exact(name) })
}

/// A connection the egress policy refused: the address (or the host name and every
/// address it resolved to) and why. Displayed as the sentence for `last_error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    host: Option<String>,
    refused: Vec<(IpAddr, AddressClass)>,
}

impl std::error::Error for Refusal {}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let described = |(ip, class): &(IpAddr, AddressClass)| {
            // The carried address that is refused: the reason the IPv6 address is.
            let carried = match ip {
                IpAddr::V6(v6) => embedded_v4(*v6)
                    .into_iter()
                    .find(|v4| class_of_v4(*v4).is_some())
                    .map(|v4| format!(" (IPv4 {v4} in IPv6 form)")),
                IpAddr::V4(_) => None,
            };
            format!("{ip} is {}{}", class.described(), carried.unwrap_or_default())
        };
        let hint = if self.refused.iter().all(|(_, class)| class.is_private()) {
            " (or set allow_private = true)"
        } else {
            ""
        };
        match (&self.host, self.refused.as_slice()) {
            (None, [single]) => {
                write!(f, "{}; add it to [egress] allow{hint} to permit it", described(single))
            }
            (host, refused) => {
                let list: Vec<String> = refused.iter().map(described).collect();
                let host = host.as_deref().unwrap_or("the host");
                write!(
                    f,
                    "{host} resolves only to refused addresses ({}); add \"{host}\" or the addresses to \
                     [egress] allow{hint} to permit it",
                    list.join(", ")
                )
            }
        }
    }
}

/// The shared HTTP client's resolver: the system's (getaddrinfo, like reqwest's own),
/// screened by the policy on every resolution.
#[derive(Debug)]
pub(crate) struct PolicyResolver {
    policy: Arc<EgressPolicy>,
}

impl PolicyResolver {
    pub(crate) fn new(policy: Arc<EgressPolicy>) -> PolicyResolver {
        PolicyResolver { policy }
    }
}

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = Arc::clone(&self.policy);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            // Port 0: the connector puts the URL's port on every address.
            let resolved: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed = policy.screen(&host, resolved)?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The refusal that caused `error`, if the policy refused its connection.
pub(crate) fn refusal_in<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refusal> {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(refusal) = e.downcast_ref::<Refusal>() {
            return Some(refusal);
        }
        cause = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn refused(policy: &EgressPolicy, text: &str) -> Option<AddressClass> {
        policy.refused_class(ip(text))
    }

    #[test]
    fn every_refused_range_is_refused_by_default_at_both_ends() {
        use AddressClass::*;
        let cases: &[(&str, &str, AddressClass)] = &[
            ("0.0.0.0", "0.255.255.255", Unspecified),
            ("127.0.0.0", "127.255.255.255", Loopback),
            ("10.0.0.0", "10.255.255.255", Private),
            ("172.16.0.0", "172.31.255.255", Private),
            ("192.168.0.0", "192.168.255.255", Private),
            ("169.254.0.0", "169.254.255.255", LinkLocal),
            ("100.64.0.0", "100.127.255.255", SharedCgnat),
            ("224.0.0.0", "239.255.255.255", Multicast),
            ("240.0.0.0", "255.255.255.254", Reserved),
            ("192.0.2.0", "192.0.2.255", Reserved),
            ("198.18.0.0", "198.19.255.255", Reserved),
            ("::", "::", Unspecified),
            ("::1", "::1", Loopback),
            ("fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Private),
            ("fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", LinkLocal),
            ("ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Multicast),
            ("2001:db8::", "2001:db8:ffff::1", Reserved),
        ];
        let policy = EgressPolicy::default();
        for (first, last, class) in cases {
            assert_eq!(refused(&policy, first), Some(*class), "{first}");
            assert_eq!(refused(&policy, last), Some(*class), "{last}");
        }
        assert_eq!(refused(&policy, "255.255.255.255"), Some(Broadcast));
        assert_eq!(refused(&policy, "169.254.169.254"), Some(LinkLocal), "the cloud metadata address");
    }

    #[test]
    fn public_addresses_next_to_the_refused_ranges_are_allowed() {
        let policy = EgressPolicy::default();
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert_eq!(refused(&policy, public), None, "{public}");
            assert!(policy.check(ip(public)).is_ok(), "{public}");
        }
    }

    #[test]
    fn ipv6_forms_of_ipv4_addresses_are_judged_by_the_ipv4_address() {
        use AddressClass::*;
        let policy = EgressPolicy::default();
        for (text, class) in [
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:7f00:1", Loopback),
            ("::ffff:10.1.2.3", Private),
            ("::ffff:169.254.169.254", LinkLocal),
            ("::ffff:0.0.0.0", Unspecified),
            ("::ffff:255.255.255.255", Broadcast),
            ("::ffff:100.64.0.1", SharedCgnat),
            ("::ffff:224.0.0.1", Multicast),
            ("::127.0.0.1", Loopback),
            ("::192.168.1.1", Private),
            ("64:ff9b::127.0.0.1", Loopback),
            ("64:ff9b::a9fe:a9fe", LinkLocal),
            // 6to4: 2002:AABB:CCDD:: carries A.B.C.D.
            ("2002:7f00:1::", Loopback),
            ("2002:a9fe:a9fe:1::5", LinkLocal),
            ("2002:c0a8:0101::1", Private),
            // Teredo: the server's address, then the client's with its bits inverted
            // (!127.0.0.1 = 0x80ff_fffe, !10.0.0.1 = 0xf5ff_fffe).
            ("2001:0:7f00:1::1", Loopback),
            ("2001:0:808:808::80ff:fffe", Loopback),
            ("2001:0:808:808:8000:ffff:f5ff:fffe", Private),
        ] {
            assert_eq!(refused(&policy, text), Some(class), "{text}");
        }
        // Public addresses carried in 6to4 and Teredo are public.
        assert_eq!(refused(&policy, "2002:808:808::1"), None);
        assert_eq!(refused(&policy, "2001:0:808:808::f7f7:f7f7"), None, "server 8.8.8.8, client 8.8.8.8");
        let message = policy.check(ip("2001:0:808:808::80ff:fffe")).unwrap_err().to_string();
        assert!(message.contains("(IPv4 127.0.0.1 in IPv6 form)"), "{message}");
        // Allowing every refused address a Teredo address carries allows it; one is not enough.
        let one = EgressPolicy::default().allow("127.0.0.1").unwrap();
        assert_eq!(refused(&one, "2001:0:a00:1::80ff:fffe"), Some(Private), "server 10.0.0.1 is still refused");
        let both = one.allow("10.0.0.0/8").unwrap();
        assert_eq!(refused(&both, "2001:0:a00:1::80ff:fffe"), None);
        let message = policy.check(ip("::ffff:127.0.0.1")).unwrap_err().to_string();
        assert_eq!(
            message,
            "::ffff:127.0.0.1 is a loopback address (IPv4 127.0.0.1 in IPv6 form); add it to [egress] allow to permit it"
        );
    }

    #[test]
    fn allowed_addresses_networks_and_their_mapped_forms_pass() {
        let policy = EgressPolicy::default()
            .allow("127.0.0.1")
            .unwrap()
            .allow("10.0.0.0/8")
            .unwrap()
            .allow("fd00::/8")
            .unwrap()
            .allow("::1")
            .unwrap();
        for allowed in
            ["127.0.0.1", "::ffff:127.0.0.1", "10.0.0.1", "10.255.255.255", "::ffff:10.9.9.9", "fd12::1", "::1"]
        {
            assert!(policy.check(ip(allowed)).is_ok(), "{allowed}");
        }
        for still_refused in
            ["127.0.0.2", "192.168.0.1", "172.16.0.1", "fc00::1", "169.254.169.254", "::ffff:127.0.0.2"]
        {
            assert!(policy.check(ip(still_refused)).is_err(), "{still_refused}");
        }
    }

    #[test]
    fn allow_private_allows_the_private_ranges_and_cgnat_only() {
        let policy = EgressPolicy::default().allow_private(true);
        for allowed in ["10.1.1.1", "172.20.0.1", "192.168.1.1", "100.64.0.1", "fd00::1", "::ffff:192.168.0.1"] {
            assert!(policy.check(ip(allowed)).is_ok(), "{allowed}");
        }
        for refused in ["127.0.0.1", "::1", "169.254.169.254", "fe80::1", "0.0.0.0", "224.0.0.1", "255.255.255.255"] {
            assert!(policy.check(ip(refused)).is_err(), "{refused}");
        }
    }

    #[test]
    fn refusals_say_what_the_address_is_and_how_to_allow_it() {
        let policy = EgressPolicy::default();
        assert_eq!(
            policy.check(ip("127.0.0.1")).unwrap_err().to_string(),
            "127.0.0.1 is a loopback address; add it to [egress] allow to permit it"
        );
        assert_eq!(
            policy.check(ip("10.0.0.7")).unwrap_err().to_string(),
            "10.0.0.7 is a private address; add it to [egress] allow (or set allow_private = true) to permit it"
        );
        let resolved = vec![SocketAddr::new(ip("127.0.0.1"), 0), SocketAddr::new(ip("::1"), 0)];
        assert_eq!(
            policy.screen("localhost", resolved).unwrap_err().to_string(),
            "localhost resolves only to refused addresses (127.0.0.1 is a loopback address, ::1 is a loopback \
             address); add \"localhost\" or the addresses to [egress] allow to permit it"
        );
    }

    #[test]
    fn resolved_addresses_are_screened_unless_the_name_is_allowed() {
        let public = SocketAddr::new(ip("93.184.215.14"), 0);
        let loopback = SocketAddr::new(ip("127.0.0.1"), 0);
        let metadata = SocketAddr::new(ip("169.254.169.254"), 0);
        let policy = EgressPolicy::default();
        assert_eq!(policy.screen("mixed.example", vec![loopback, public, metadata]), Ok(vec![public]));
        assert!(policy.screen("rebound.example", vec![metadata]).is_err());

        let policy = EgressPolicy::default().allow("hooks.internal.example").unwrap().allow("*.corp.example").unwrap();
        assert_eq!(policy.screen("hooks.internal.example", vec![loopback]), Ok(vec![loopback]));
        assert_eq!(policy.screen("HOOKS.Internal.Example.", vec![loopback]), Ok(vec![loopback]));
        assert_eq!(policy.screen("a.b.corp.example", vec![metadata]), Ok(vec![metadata]));
        assert!(policy.screen("corp.example", vec![loopback]).is_err(), "*. allows the names under it only");
        assert!(policy.screen("evilcorp.example", vec![loopback]).is_err());
        assert!(policy.screen("other.internal.example", vec![loopback]).is_err());
    }

    #[test]
    fn ip_literal_urls_are_checked_in_every_spelling() {
        let policy = EgressPolicy::default();
        for url in [
            "http://127.0.0.1:8080/hook",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::1]/",
            "http://[::ffff:169.254.169.254]/latest/meta-data",
            "https://10.0.0.1/",
        ] {
            assert!(policy.check_url(&reqwest::Url::parse(url).unwrap()).is_err(), "{url}");
        }
        for url in ["https://hooks.example.com/x", "http://8.8.8.8/", "http://localhost:1/"] {
            assert!(policy.check_url(&reqwest::Url::parse(url).unwrap()).is_ok(), "{url} (names wait for resolution)");
        }
    }

    fn allowing(entries: &[&str]) -> EgressPolicy {
        entries.iter().fold(EgressPolicy::default(), |policy, entry| policy.allow(entry).unwrap())
    }

    #[test]
    fn policies_that_allow_the_same_have_one_canonical_form() {
        let canonical = allowing(&["10.0.0.0/8", "127.0.0.1", "*.corp.example", "hooks.internal.example"]).canonical();
        assert_eq!(
            canonical,
            r#"allow_private = false, allow = ["10.0.0.0/8", "127.0.0.1", "*.corp.example", "hooks.internal.example"]"#
        );
        for written in [
            // Another order, duplicates, a host's /32, a name's case and trailing dot.
            &["hooks.internal.example", "*.corp.example", "127.0.0.1/32", "10.0.0.0/8", "127.0.0.1"][..],
            &["HOOKS.Internal.Example.", "10.0.0.0/8", "*.corp.example", "127.0.0.1", "*.corp.example"],
            // Networks inside another, two halves of one, names under an allowed domain.
            &[
                "10.0.0.0/9",
                "10.128.0.0/9",
                "10.1.2.3",
                "127.0.0.1",
                "*.corp.example",
                "a.corp.example",
                "hooks.internal.example",
            ],
            &["127.0.0.1", "*.eu.corp.example", "*.corp.example", "10.0.0.0/8", "hooks.internal.example"],
        ] {
            assert_eq!(allowing(written).canonical(), canonical, "{written:?}");
        }
        // Policies that allow something else differ.
        for other in [
            allowing(&["10.0.0.0/8", "127.0.0.1", "*.corp.example"]),
            allowing(&["10.0.0.0/8", "127.0.0.2", "*.corp.example", "hooks.internal.example"]),
            allowing(&["10.0.0.0/8", "127.0.0.1", "corp.example", "hooks.internal.example"]),
            allowing(&["10.0.0.0/8", "127.0.0.1", "*.corp.example", "hooks.internal.example"]).allow_private(true),
        ] {
            assert_ne!(other.canonical(), canonical, "{other:?}");
        }
        // A domain's own name is not under it; IPv6 entries keep their form.
        assert_eq!(allowing(&["corp.example", "*.corp.example"]).canonical().matches("corp.example").count(), 2);
        assert_eq!(
            allowing(&["::1", "fd00::/8"]).allow_private(true).canonical(),
            r#"allow_private = true, allow = ["::1", "fd00::/8"]"#
        );
        assert_eq!(EgressPolicy::public_only().canonical(), "allow_private = false, allow = []");
    }

    #[test]
    fn the_built_in_ranges_are_named_in_their_text() {
        let ranges = EgressPolicy::refused_ranges();
        assert!(ranges.contains("127.0.0.0/8 is a loopback address"), "{ranges}");
        assert!(ranges.contains("fc00::/7 is a private address"), "{ranges}");
        assert!(ranges.contains("2002::/16 carries IPv4"), "{ranges}");
        assert_eq!(ranges.lines().count(), REFUSED_V4.len() + REFUSED_V6.len() + EMBEDDING_V4.len() + 2);
    }

    #[test]
    fn a_refusal_carries_the_note_while_one_is_set() {
        let note = RefusalNote::default();
        let refusal = EgressPolicy::default().check(ip("127.0.0.1")).unwrap_err();
        let plain = "target http://127.0.0.1/: refused: 127.0.0.1 is a loopback address; add it to [egress] allow \
                     to permit it";
        assert_eq!(note.refused("target http://127.0.0.1/", &refusal), Outcome::fail(plain));
        let shared = note.clone();
        shared.set(Some("another node allows more".into()));
        let noted = format!("{plain}; another node allows more");
        assert_eq!(note.refused("target http://127.0.0.1/", &refusal), Outcome::fail(noted));
        shared.set(None);
        assert_eq!(note.refused("target http://127.0.0.1/", &refusal), Outcome::fail(plain));
    }

    #[test]
    fn allow_entries_are_validated() {
        for (entry, needle) in [
            ("", "empty"),
            ("10.0.0.0/33", "not a CIDR network"),
            ("10.1.2.3/8", "did you mean 10.0.0.0/8?"),
            ("http://hooks.example/x", "is a URL: write its host alone (hooks.example)"),
            ("hooks.example:8080", "neither an IP address"),
            ("hooks..example", "neither"),
            ("-bad.example", "neither"),
            ("*", "neither"),
        ] {
            let error = EgressPolicy::default().allow(entry).unwrap_err();
            assert_eq!(error.field(), "egress.allow");
            assert!(error.to_string().contains(needle), "{entry}: {error}");
        }
        assert!(EgressPolicy::default().allow("fd00::/8").is_ok());
        assert!(EgressPolicy::default().allow("hooks-1.internal.example.").is_ok());
    }
}
