//! HTTPS: the certificate and key of `--tls-cert` / `--tls-key`, and their reload on
//! SIGHUP.
//!
//! One rustls `ServerConfig` (ring provider, ALPN `h2` then `http/1.1`) lives for the
//! whole run; it asks [`Certificates`] for the certificate of each handshake. A reload
//! reads both files again and, only when they parse and the key matches the
//! certificate, swaps the one held there: handshakes after it get the new certificate,
//! connections already open keep the session they negotiated, and a reload that fails
//! leaves the old certificate in place (the caller logs why).
//!
//! Invariant: [`Certificates`] always holds a certificate whose key matches it — it is
//! built from one that loaded, and replaced only by another that did.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use anyhow::Context;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::crypto::{CryptoProvider, ring};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::{ServerConfig, version};

/// Where the certificate chain and the private key are read from (both PEM).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsFiles {
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
}

/// The TLS side of a listener: the acceptor of its connections and the certificate it
/// serves, which [`Tls::reload`] replaces.
#[derive(Clone)]
pub(crate) struct Tls {
    files: TlsFiles,
    provider: Arc<CryptoProvider>,
    certificates: Arc<Certificates>,
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("files", &self.files).finish_non_exhaustive()
    }
}

impl Tls {
    /// Reads `files` and builds the acceptor; an error names the file at fault and what
    /// to do about it.
    pub(crate) fn load(files: TlsFiles) -> anyhow::Result<Tls> {
        let provider = Arc::new(ring::default_provider());
        let first = certified_key(&files, &provider)?;
        let certificates = Arc::new(Certificates(RwLock::new(first)));
        let mut config = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&[&version::TLS13, &version::TLS12])
            .context("cannot set up TLS with the ring provider")?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(&certificates) as Arc<dyn ResolvesServerCert>);
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = TlsAcceptor::from(Arc::new(config));
        Ok(Tls { files, provider, certificates, acceptor })
    }

    /// The files, for the log lines.
    pub(crate) fn files(&self) -> &TlsFiles {
        &self.files
    }

    pub(crate) fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// Reads the files again; on success new handshakes get the new certificate, on an
    /// error the old one stays.
    pub(crate) fn reload(&self) -> anyhow::Result<()> {
        let fresh = certified_key(&self.files, &self.provider)?;
        self.certificates.replace(fresh);
        Ok(())
    }
}

/// The certificate every handshake gets, replaced by a reload.
#[derive(Debug)]
struct Certificates(RwLock<Arc<CertifiedKey>>);

impl Certificates {
    fn replace(&self, fresh: Arc<CertifiedKey>) {
        // A poisoned lock only means a panic while swapping an `Arc`: the value is whole.
        *self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner) = fresh;
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner)))
    }
}

/// The chain of `files.cert` with the key of `files.key`, checked to match.
fn certified_key(files: &TlsFiles, provider: &CryptoProvider) -> anyhow::Result<Arc<CertifiedKey>> {
    let chain = read_chain(&files.cert)?;
    let key = read_key(&files.key)?;
    let signing = provider.key_provider.load_private_key(key).map_err(|e| {
        anyhow::anyhow!(
            "{}: cannot use this private key ({e}); give an RSA, ECDSA or Ed25519 key in PEM (PKCS#8, PKCS#1 or SEC1)",
            files.key.display()
        )
    })?;
    let certified = CertifiedKey::new(chain, signing);
    if let Err(e) = certified.keys_match() {
        // `Unknown`: the key cannot tell its public half; the handshake will check it.
        if !matches!(e, tokio_rustls::rustls::Error::InconsistentKeys(tokio_rustls::rustls::InconsistentKeys::Unknown))
        {
            anyhow::bail!(
                "{}: the private key does not belong to the certificate in {} ({e}); give the key the certificate \
                 was issued for",
                files.key.display(),
                files.cert.display()
            );
        }
    }
    Ok(Arc::new(certified))
}

fn read_chain(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let pem = std::fs::read(path)
        .with_context(|| format!("{}: cannot read the TLS certificate (--tls-cert, tls_cert)", path.display()))?;
    let chain = CertificateDer::pem_slice_iter(&pem).collect::<Result<Vec<_>, _>>().map_err(|e| {
        anyhow::anyhow!("{}: not a PEM certificate chain ({e}); give the certificate, then its issuers", path.display())
    })?;
    if chain.is_empty() {
        anyhow::bail!(
            "{}: no certificate in it (no -----BEGIN CERTIFICATE----- block); give the PEM certificate chain",
            path.display()
        );
    }
    Ok(chain)
}

fn read_key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    let pem = std::fs::read(path)
        .with_context(|| format!("{}: cannot read the TLS private key (--tls-key, tls_key)", path.display()))?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
        anyhow::anyhow!(
            "{}: no private key in it ({e}); give the PEM private key (-----BEGIN PRIVATE KEY-----)",
            path.display()
        )
    })
}
