//! Certificates for the TLS tests, made with `openssl` in a test's temporary directory:
//! an authority, and certificates for 127.0.0.1 it signed.

use std::path::Path;
use std::process::Command;

/// Runs `openssl` with `args` in `dir`; panics with its output when it fails.
pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run openssl ({e}): install Debian's openssl package to run this test"));
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A certificate authority `<name>.pem` (key `<name>.key`) in `dir`, with the subject
/// `punctual test <name>`.
pub fn authority(dir: &Path, name: &str) {
    let (key, pem, subject) = (format!("{name}.key"), format!("{name}.pem"), format!("/CN=punctual test {name}"));
    openssl(
        dir,
        &[
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &pem, "-days", "2", "-subj",
            &subject,
        ],
    );
}

/// `<name>.pem` and `<name>.key` (EC P-256, PKCS#8) for 127.0.0.1 and localhost, with
/// the subject `punctual tls <name>`, signed by the authority `ca`.
pub fn certificate(dir: &Path, name: &str) {
    let (key, csr, pem) = (format!("{name}.key"), format!("{name}.csr"), format!("{name}.pem"));
    let subject = format!("/CN=punctual tls {name}");
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            &subject,
        ],
    );
    std::fs::write(dir.join("ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").expect("write the extensions");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &pem,
            "-days",
            "2",
            "-extfile",
            "ext",
        ],
    );
}
