//! Serving certificates: loaded from PEM files, or generated with rcgen (a CA and a serving
//! certificate it signs, so clients can trust the CA as kubectl and rustls expect), and turned
//! into a rustls `ServerConfig` offering HTTP/2 and HTTP/1.1, TLS 1.2 and 1.3 only.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use std::sync::Arc;

/// Errors making or loading certificates.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A PEM file held no usable certificate or key.
    #[error("{0}")]
    Pem(String),
    /// rcgen failed.
    #[error("generating a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the certificate or key.
    #[error("configuring TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

/// `Result` with this module's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A serving certificate, its key and the CA that clients should trust, all PEM.
#[derive(Clone)]
pub struct Certs {
    /// The CA certificate (the `caBundle` / kubeconfig `certificate-authority-data`).
    pub ca_pem: String,
    /// The serving certificate chain.
    pub cert_pem: String,
    /// The serving key.
    pub key_pem: String,
}

impl std::fmt::Debug for Certs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certs").field("ca_pem", &"<pem>").field("key_pem", &"<redacted>").finish()
    }
}

/// The SANs every generated serving certificate carries, besides the ones asked for.
pub const DEFAULT_SANS: [&str; 2] = ["localhost", "127.0.0.1"];

/// A certificate authority: its certificate and key, PEM.
#[derive(Clone)]
pub struct Ca {
    /// The CA certificate.
    pub cert_pem: String,
    /// The CA key.
    pub key_pem: String,
}

/// When a certificate is valid: from `not_before` to `not_after`. The default is rcgen's, from
/// 1975 to 4096 (for certificates nobody renews).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Validity {
    /// The first moment it is valid; `None` for rcgen's default.
    pub not_before: Option<time::OffsetDateTime>,
    /// The last; `None` for rcgen's default.
    pub not_after: Option<time::OffsetDateTime>,
}

impl Validity {
    /// Valid from `not_before` to `not_after`.
    pub fn between(not_before: time::OffsetDateTime, not_after: time::OffsetDateTime) -> Self {
        Self { not_before: Some(not_before), not_after: Some(not_after) }
    }

    /// Valid from five minutes ago (for clocks a little behind this one) for `days` days.
    pub fn days_from_now(days: u32) -> Self {
        let now = time::OffsetDateTime::now_utc();
        Self::between(now - time::Duration::minutes(5), now + time::Duration::days(i64::from(days.max(1))))
    }

    fn apply(self, params: &mut CertificateParams) {
        if let Some(not_before) = self.not_before {
            params.not_before = not_before;
        }
        if let Some(not_after) = self.not_after {
            params.not_after = not_after;
        }
    }
}

/// Makes a new CA named `name`, valid for ever (in practice).
pub fn new_ca(name: &str) -> Result<Ca> {
    new_ca_valid(name, Validity::default())
}

/// Makes a new CA named `name`, valid as `validity` says.
pub fn new_ca_valid(name: &str, validity: Validity) -> Result<Ca> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    validity.apply(&mut params);
    let cert = params.self_signed(&key)?;
    Ok(Ca { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

/// What an issued certificate may be used for (its extended key usages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// A server's certificate (TLS server authentication).
    Server,
    /// A client's certificate (TLS client authentication), such as an etcd client's.
    Client,
    /// Both, as an etcd member presents to clients and to its peers.
    ServerAndClient,
}

/// Issues a serving certificate for `names` (DNS names or IP addresses; the first is the CN) from `ca`.
pub fn issue(ca: &Ca, names: &[String]) -> Result<Certs> {
    issue_for(ca, names.first().map_or("localhost", String::as_str), names, Usage::Server)
}

/// Issues a certificate named `common_name` with the subject alternative `names` (DNS names,
/// wildcards such as `*.etcd.ns.svc`, or IP addresses; none for a client) for `usage` from `ca`.
pub fn issue_for(ca: &Ca, common_name: &str, names: &[String], usage: Usage) -> Result<Certs> {
    issue_valid(ca, common_name, names, usage, Validity::default())
}

/// As [`issue_for`], valid as `validity` says.
pub fn issue_valid(ca: &Ca, common_name: &str, names: &[String], usage: Usage, validity: Validity) -> Result<Certs> {
    let ca_key = KeyPair::from_pem(&ca.key_pem)?;
    let issuer = Issuer::from_ca_cert_pem(&ca.cert_pem, ca_key)?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(names.to_vec())?;
    params.distinguished_name.push(DnType::CommonName, common_name);
    params.extended_key_usages = match usage {
        Usage::Server => vec![ExtendedKeyUsagePurpose::ServerAuth],
        Usage::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
        Usage::ServerAndClient => vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth],
    };
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    validity.apply(&mut params);
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Certs { ca_pem: ca.cert_pem.clone(), cert_pem: cert.pem(), key_pem: key.serialize_pem() })
}

/// The names a serving certificate for the Service `service` in `namespace` carries: the name
/// the aggregator dials (`<service>.<namespace>.svc`, first) and its other forms, plus
/// `localhost` and `127.0.0.1` for port-forwards and local runs.
pub fn service_names(service: &str, namespace: &str) -> Vec<String> {
    vec![
        format!("{service}.{namespace}.svc"),
        service.to_string(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc.cluster.local"),
        "localhost".to_string(),
        "127.0.0.1".to_string(),
    ]
}

/// Makes a CA named `ca_name` and a serving certificate for `sans` plus `localhost` and `127.0.0.1`.
pub fn generate(ca_name: &str, sans: &[String]) -> Result<Certs> {
    let mut names: Vec<String> = Vec::new();
    for name in sans.iter().map(String::as_str).chain(DEFAULT_SANS) {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    issue(&new_ca(ca_name)?, &names)
}

/// Reads a PEM certificate chain and key from files. The CA handed to clients is the last
/// certificate of the chain (the issuer when the file holds a chain).
pub fn load(cert_file: &str, key_file: &str) -> Result<Certs> {
    let read = |path: &str| std::fs::read_to_string(path).map_err(|source| Error::Read { path: path.into(), source });
    let cert_pem = read(cert_file)?;
    let key_pem = read(key_file)?;
    let chain = parse_chain(&cert_pem)?;
    let ca_pem = pem_block("CERTIFICATE", chain.last().map(|c| c.as_ref()).unwrap_or_default());
    Ok(Certs { ca_pem, cert_pem, key_pem })
}

fn pem_block(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

fn parse_chain(pem: &str) -> Result<Vec<CertificateDer<'static>>> {
    let chain: Vec<_> = rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::Pem(format!("parsing certificates: {e}")))?;
    if chain.is_empty() {
        return Err(Error::Pem("no certificate found in the certificate file".into()));
    }
    Ok(chain)
}

fn parse_key(pem: &str) -> Result<PrivateKeyDer<'static>> {
    rustls_pemfile::private_key(&mut pem.as_bytes())
        .map_err(|e| Error::Pem(format!("parsing the private key: {e}")))?
        .ok_or_else(|| Error::Pem("no private key found in the key file".into()))
}

/// The crypto provider used everywhere (ring: no C toolchain beyond cc needed).
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A rustls server configuration serving `certificate`: TLS 1.2+, ALPN h2 and http/1.1; client
/// certificates requested (not required) when `request_client_certs`.
pub fn server_config(certificate: Arc<ReloadingCertificate>, request_client_certs: bool) -> Result<Arc<ServerConfig>> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?;
    let builder = if request_client_certs {
        builder.with_client_cert_verifier(Arc::new(RequestClientCertificate { provider: provider() }))
    } else {
        builder.with_no_client_auth()
    };
    let mut config = builder.with_cert_resolver(certificate);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_certificates_make_a_server_config() {
        let certs = generate("test-ca", &["widget-apiserver.widget-system.svc".into()]).unwrap();
        assert!(certs.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        server_config(ReloadingCertificate::new(&certs).unwrap(), false).unwrap();
    }

    #[test]
    fn loading_files_uses_the_last_certificate_as_ca() {
        let certs = generate("test-ca", &[]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        std::fs::write(&cert, format!("{}{}", certs.cert_pem, certs.ca_pem)).unwrap();
        std::fs::write(&key, &certs.key_pem).unwrap();
        let loaded = load(cert.to_str().unwrap(), key.to_str().unwrap()).unwrap();
        assert_eq!(loaded.ca_pem.trim(), certs.ca_pem.trim());
    }

    /// A client certificate named `name` from `ca`, valid until `not_after`.
    fn client_chain(ca: &Ca, name: &str, not_after: time::OffsetDateTime) -> Vec<CertificateDer<'static>> {
        let issuer = Issuer::from_ca_cert_pem(&ca.cert_pem, KeyPair::from_pem(&ca.key_pem).unwrap()).unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.not_after = not_after;
        vec![params.signed_by(&KeyPair::generate().unwrap(), &issuer).unwrap().der().clone()]
    }

    #[test]
    fn chain_verdicts_are_remembered_per_chain_and_never_past_the_certificate() {
        let (trusted, other) = (new_ca("trusted").unwrap(), new_ca("other").unwrap());
        let verifier = ChainVerifier::new(&trusted.cert_pem).unwrap().unwrap();
        let soon = time::OffsetDateTime::now_utc() + time::Duration::seconds(20);
        let later = time::OffsetDateTime::now_utc() + time::Duration::days(30);
        let (good, ending, foreign) = (
            client_chain(&trusted, "front-proxy", later),
            client_chain(&trusted, "ending", soon),
            client_chain(&other, "front-proxy", later),
        );
        for _ in 0..2 {
            assert!(verifier.verifies(&good));
            assert!(verifier.verifies(&ending));
            assert!(!verifier.verifies(&foreign), "another CA's chain is refused, from the memo too");
            assert!(!verifier.verifies(&[]));
        }
        // The leaf's subject comes with the verdict, read once.
        let subject = verifier.verified_subject(&good).expect("verified");
        assert_eq!(subject.as_ref().as_ref().map(|s| s.common_name.as_str()), Some("front-proxy"));
        assert!(Arc::ptr_eq(&subject, &verifier.verified_subject(&good).expect("verified")));
        assert!(verifier.verified_subject(&foreign).is_none());
        let verdicts = verifier.verdicts.lock();
        let until = |chain: &[CertificateDer<'static>]| verdicts[chain].until;
        let now = std::time::SystemTime::now();
        assert!(until(&good) <= now + VERDICT_TTL && until(&good) > now + VERDICT_TTL / 2);
        assert!(until(&ending) <= std::time::UNIX_EPOCH + std::time::Duration::from_secs(soon.unix_timestamp() as u64));
        // A new bundle is a new verifier: what the old one trusted is verified again.
        let renewed = ChainVerifier::new(&other.cert_pem).unwrap().unwrap();
        assert!(!renewed.verifies(&good) && renewed.verifies(&foreign));
    }

    #[test]
    fn a_missing_key_is_an_error_not_a_panic() {
        let certs = Certs { ca_pem: String::new(), cert_pem: "nope".into(), key_pem: String::new() };
        assert!(ReloadingCertificate::new(&certs).is_err());
    }
}

/// The client certificate chain a connection presented, attached to each of its requests.
/// The chain is *not* verified by the handshake (only possession of the key is); the
/// authenticator verifies it against the CAs in force for each request (remembering a chain's
/// verdict per CA bundle, see [`ChainVerifier`]), so CA changes apply without restarting or
/// re-handshaking.
#[derive(Clone, Debug, Default)]
pub struct PeerCertificates(pub Arc<Vec<CertificateDer<'static>>>);

/// Asks every client for a certificate, accepts connections without one, and checks that a
/// presented certificate's key signed the handshake.
#[derive(Debug)]
struct RequestClientCertificate {
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::server::danger::ClientCertVerifier for RequestClientCertificate {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        // No hints: Go clients (the aggregator) then send their one certificate whatever its issuer.
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// Verifies client certificate chains against a set of CAs (PEM), for one purpose.
pub struct ChainVerifier {
    verifier: Arc<dyn rustls::server::danger::ClientCertVerifier>,
    /// Recent verdicts by chain: a connection presents one chain for all its requests, and
    /// verifying its signatures costs tens of µs (RSA) per request. A verdict is kept for at
    /// most [`VERDICT_TTL`], never past the leaf's `notAfter`; a new CA bundle is a new
    /// verifier, so it never sees the old bundle's verdicts.
    verdicts: parking_lot::Mutex<std::collections::HashMap<Vec<CertificateDer<'static>>, Verdict>>,
}

/// How long a chain's verdict is reused.
const VERDICT_TTL: std::time::Duration = std::time::Duration::from_secs(60);
/// Chains remembered at most (the memo starts over when full).
const VERDICTS_KEPT: usize = 1_024;

/// Whether a chain verified, until when that answer holds, and its leaf's subject (read once
/// per verdict: parsing the certificate for every request was 4 to 5% of a GET's CPU).
#[derive(Clone, Debug)]
struct Verdict {
    verified: Option<Arc<Option<Subject>>>,
    until: std::time::SystemTime,
}

/// A client certificate's subject: its common name and organizations (the user and groups of
/// client certificate authentication).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// The first common name.
    pub common_name: String,
    /// Every organization.
    pub organizations: Vec<String>,
}

impl std::fmt::Debug for ChainVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChainVerifier")
    }
}

impl ChainVerifier {
    /// A verifier trusting the certificates in `ca_pem`; `None` when it holds none.
    pub fn new(ca_pem: &str) -> Result<Option<Self>> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
            let cert = cert.map_err(|e| Error::Pem(format!("parsing a CA certificate: {e}")))?;
            roots.add(cert).map_err(|e| Error::Pem(format!("a CA certificate is unusable: {e}")))?;
        }
        if roots.is_empty() {
            return Ok(None);
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| Error::Pem(format!("building a verifier: {e}")))?;
        Ok(Some(Self { verifier, verdicts: Default::default() }))
    }

    /// Whether `chain` (leaf first) chains to one of the CAs and is valid now for client auth.
    pub fn verifies(&self, chain: &[CertificateDer<'static>]) -> bool {
        self.verified_subject(chain).is_some()
    }

    /// When `chain` (leaf first) chains to one of the CAs and is valid now for client auth, its
    /// leaf's subject (`None` inside when the leaf has no readable common name); `None` when it
    /// does not verify.
    pub fn verified_subject(&self, chain: &[CertificateDer<'static>]) -> Option<Arc<Option<Subject>>> {
        let now = std::time::SystemTime::now();
        if let Some(verdict) = self.verdicts.lock().get(chain).filter(|v| now < v.until) {
            return verdict.verified.clone();
        }
        let (leaf, intermediates) = chain.split_first()?;
        let verified = self
            .verifier
            .verify_client_cert(leaf, intermediates, UnixTime::since_unix_epoch(since_epoch(now)))
            .is_ok()
            .then(|| Arc::new(subject(leaf)));
        let until = not_after(leaf).map_or(now, |end| end.min(now + VERDICT_TTL));
        let mut verdicts = self.verdicts.lock();
        if verdicts.len() >= VERDICTS_KEPT {
            verdicts.clear();
        }
        verdicts.insert(chain.to_vec(), Verdict { verified: verified.clone(), until });
        verified
    }
}

/// `time` as a duration since the Unix epoch (zero before it).
fn since_epoch(time: std::time::SystemTime) -> std::time::Duration {
    time.duration_since(std::time::UNIX_EPOCH).unwrap_or_default()
}

/// The end of a DER certificate's validity; `None` when it cannot be read.
fn not_after(cert: &CertificateDer<'_>) -> Option<std::time::SystemTime> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let seconds = u64::try_from(parsed.validity().not_after.timestamp()).ok()?;
    Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds))
}

/// The subject's common name and organizations of a DER certificate.
pub fn subject(cert: &CertificateDer<'_>) -> Option<Subject> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let subject = parsed.subject();
    let common_name = subject.iter_common_name().next()?.as_str().ok()?.to_string();
    let organizations = subject.iter_organization().filter_map(|o| o.as_str().ok().map(str::to_string)).collect();
    Some(Subject { common_name, organizations })
}

/// The address of the client's end of the connection a request came on (for the audit log's
/// `sourceIPs`), also as text, written once per connection.
#[derive(Clone, Debug)]
pub struct PeerAddress {
    /// The address.
    pub ip: std::net::IpAddr,
    /// `ip` as text.
    pub text: Arc<str>,
}

/// Wraps axum-server's rustls acceptor to attach the client's certificate chain and address to
/// every request of the connection as [`PeerCertificates`] and [`PeerAddress`] extensions.
#[derive(Clone)]
pub struct PeerCertificateAcceptor {
    /// The TLS acceptor.
    pub inner: axum_server::tls_rustls::RustlsAcceptor,
}

/// The per-connection service that inserts the chain.
#[derive(Clone)]
pub struct WithPeerCertificates<S> {
    inner: S,
    certificates: PeerCertificates,
    address: Option<PeerAddress>,
}

impl<S, B> tower::Service<http::Request<B>> for WithPeerCertificates<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        request.extensions_mut().insert(self.certificates.clone());
        if let Some(address) = &self.address {
            request.extensions_mut().insert(address.clone());
        }
        self.inner.call(request)
    }
}

impl<S: Send + 'static> axum_server::accept::Accept<tokio::net::TcpStream, S> for PeerCertificateAcceptor {
    type Stream = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Service = WithPeerCertificates<S>;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<(Self::Stream, Self::Service)>> + Send>>;

    fn accept(&self, stream: tokio::net::TcpStream, service: S) -> Self::Future {
        let inner = self.inner.clone();
        // Each response leaves in as few writes as TLS makes of it; with Nagle's algorithm on, the
        // last, short segment of an answer waits for the client's delayed ACK (tens of ms on
        // loopback). The kube-apiserver (Go's net package) and nginx set it too. A socket that
        // refuses it still serves.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY not set on an accepted connection");
        }
        let address = stream.peer_addr().ok().map(|a| PeerAddress { ip: a.ip(), text: a.ip().to_string().into() });
        Box::pin(async move {
            let (stream, service) = inner.accept(stream, service).await?;
            let chain =
                stream.get_ref().1.peer_certificates().map(|c| c.iter().map(|d| d.clone().into_owned()).collect());
            let certificates = PeerCertificates(Arc::new(chain.unwrap_or_default()));
            Ok((stream, WithPeerCertificates { inner: service, certificates, address }))
        })
    }
}

/// The serving certificate, swappable while the server runs: new handshakes use the latest one,
/// established connections keep theirs.
#[derive(Debug)]
pub struct ReloadingCertificate {
    current: parking_lot::RwLock<Arc<rustls::sign::CertifiedKey>>,
}

impl ReloadingCertificate {
    /// Starts with `certs`.
    pub fn new(certs: &Certs) -> Result<Arc<Self>> {
        Ok(Arc::new(Self { current: parking_lot::RwLock::new(certified_key(certs)?) }))
    }

    /// When the certificate served now expires, in Unix seconds.
    pub fn not_after(&self) -> Option<i64> {
        let current = self.current.read().clone();
        let leaf = current.cert.first()?;
        let (_, parsed) = x509_parser::parse_x509_certificate(leaf.as_ref()).ok()?;
        Some(parsed.validity().not_after.timestamp())
    }

    /// Whether the certificate served now is the first of `cert_pem`.
    pub fn serves(&self, cert_pem: &str) -> bool {
        let current = self.current.read().clone();
        let first = rustls_pemfile::certs(&mut cert_pem.as_bytes()).next().and_then(|c| c.ok());
        first.is_some_and(|first| current.cert.first() == Some(&first))
    }

    /// Replaces the certificate; an unusable one is refused and the old one stays.
    pub fn replace(&self, certs: &Certs) -> Result<()> {
        *self.current.write() = certified_key(certs)?;
        Ok(())
    }

    /// Watches `cert_file` and `key_file`, reloading when either changes (checked every
    /// `interval`); a broken pair is logged and ignored until it is fixed.
    pub fn watch_files(self: &Arc<Self>, cert_file: String, key_file: String, interval: std::time::Duration) {
        let this = self.clone();
        tokio::spawn(async move {
            let stamp = |path: &str| std::fs::metadata(path).ok().map(|m| (m.modified().ok(), m.len()));
            let mut last = (stamp(&cert_file), stamp(&key_file));
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                let now = (stamp(&cert_file), stamp(&key_file));
                if now == last {
                    continue;
                }
                match load(&cert_file, &key_file).and_then(|certs| this.replace(&certs)) {
                    Ok(()) => {
                        tracing::info!(cert_file, "reloaded the serving certificate");
                        last = now;
                    }
                    Err(e) => tracing::warn!(cert_file, error = %e, "not reloading the serving certificate yet"),
                }
            }
        });
    }
}

impl rustls::server::ResolvesServerCert for ReloadingCertificate {
    fn resolve(&self, _hello: rustls::server::ClientHello<'_>) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.current.read().clone())
    }
}

fn certified_key(certs: &Certs) -> Result<Arc<rustls::sign::CertifiedKey>> {
    let chain = parse_chain(&certs.cert_pem)?;
    let key = parse_key(&certs.key_pem)?;
    let key = provider().key_provider.load_private_key(key)?;
    let certified = rustls::sign::CertifiedKey::new(chain, key);
    certified.keys_match().map_err(Error::Rustls)?;
    Ok(Arc::new(certified))
}
