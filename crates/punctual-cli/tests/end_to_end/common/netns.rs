//! A network namespace made for one test, joined to this one by veth pairs, whose
//! links can be cut and healed: a network partition on one machine.
//!
//! Cutting a link gives both of its ends a queue of length 0 (`tc qdisc … pfifo limit
//! 0`), so every packet is dropped in silence, as on a network that splits: nothing is
//! refused or reset, calls just go unanswered. Needs root (`ip netns`, `tc`); a test
//! that cannot make the namespace fails saying so. Dropping it deletes the namespace
//! and its links, also when the test panics.

#![allow(clippy::unwrap_used, reason = "a test helper: a panic is a failure with its line")]

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU8, Ordering};

/// Runs `ip` (or `tc`) with `args`; panics with its output when it fails.
fn run(program: &str, args: &[&str]) {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program} ({e}): install iproute2 and run the tests as root"));
    assert!(
        output.status.success(),
        "{program} {} failed: {}; network namespaces need root and iproute2",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    );
}

/// One veth pair between this namespace and the test's: `.1` of a /30 on this side,
/// `.2` in the namespace.
#[derive(Debug)]
pub struct Link {
    /// The interface on this side.
    outside: String,
    /// Its peer, in the namespace.
    inside: String,
    /// This side's address.
    pub outside_ip: Ipv4Addr,
    /// The namespace's address.
    pub inside_ip: Ipv4Addr,
}

/// A network namespace of the test's own.
#[derive(Debug)]
pub struct Namespace {
    name: String,
    links: Vec<Link>,
}

impl Namespace {
    /// Makes a namespace with its loopback up and `links` veth pairs to this one, with
    /// names and /30 subnets unique to this process.
    pub fn new(links: usize) -> Namespace {
        static MADE: AtomicU8 = AtomicU8::new(0);
        let pid = std::process::id();
        let serial = MADE.fetch_add(1, Ordering::Relaxed);
        let name = format!("punctual-{pid}-{serial}");
        run("ip", &["netns", "add", &name]);
        let mut namespace = Namespace { name, links: Vec::new() };
        run("ip", &["-n", &namespace.name, "link", "set", "lo", "up"]);
        for i in 0..links {
            // 10.<a>.<b>.<c>/30, from the pid, the namespace and the link: 16 links of
            // 16 namespaces per process.
            let slot = (pid & 0x3fff) << 8 | u32::from(serial & 0xf) << 4 | (i as u32 & 0xf);
            let base = 0x0a00_0000 | (slot << 2);
            let (outside_ip, inside_ip) = (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2));
            let (outside, inside) = (format!("pn{pid}x{serial}o{i}"), format!("pn{pid}x{serial}i{i}"));
            assert!(outside.len() <= 15, "interface name {outside} too long");
            run("ip", &["link", "add", &outside, "type", "veth", "peer", "name", &inside, "netns", &namespace.name]);
            let link = Link { outside, inside, outside_ip, inside_ip };
            run("ip", &["addr", "add", &format!("{outside_ip}/30"), "dev", &link.outside]);
            run("ip", &["link", "set", &link.outside, "up"]);
            run("ip", &["-n", &namespace.name, "addr", "add", &format!("{inside_ip}/30"), "dev", &link.inside]);
            run("ip", &["-n", &namespace.name, "link", "set", &link.inside, "up"]);
            namespace.links.push(link);
        }
        namespace
    }

    /// The namespace's name, for `ip netns exec NAME`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Link `i`.
    pub fn link(&self, i: usize) -> &Link {
        &self.links[i]
    }

    /// Drops every packet both ways on link `i`, silently.
    pub fn cut(&self, i: usize) {
        let link = &self.links[i];
        run("tc", &["qdisc", "add", "dev", &link.outside, "root", "pfifo", "limit", "0"]);
        run("tc", &["-n", &self.name, "qdisc", "add", "dev", &link.inside, "root", "pfifo", "limit", "0"]);
    }

    /// Lets packets through link `i` again.
    pub fn heal(&self, i: usize) {
        let link = &self.links[i];
        run("tc", &["qdisc", "del", "dev", &link.outside, "root"]);
        run("tc", &["-n", &self.name, "qdisc", "del", "dev", &link.inside, "root"]);
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        for link in &self.links {
            // Deleting one end deletes the pair.
            let _ = Command::new("ip").args(["link", "del", &link.outside]).output();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}
