//! What the certificate Secret holds: the CAs clients trust (`ca.crt`, the APIServices'
//! caBundle), the CA that signs now (`signer.crt`, `signer.key`), the one that will sign next
//! while a rotation is under way (`next-signer.crt`, `next-signer.key`), and the serving
//! certificate (`tls.crt`, `tls.key`), as a `kubernetes.io/tls` Secret has them.

use crate::tls;
use k8s_openapi::ByteString;
use std::collections::BTreeMap;

/// The Secret's keys.
pub mod keys {
    /// The CAs clients trust, PEM, one after the other.
    pub const TRUSTED: &str = "ca.crt";
    /// The CA that signs serving certificates now.
    pub const SIGNER_CERT: &str = "signer.crt";
    /// Its key.
    pub const SIGNER_KEY: &str = "signer.key";
    /// The CA that signs next, already trusted.
    pub const NEXT_CERT: &str = "next-signer.crt";
    /// Its key.
    pub const NEXT_KEY: &str = "next-signer.key";
    /// The serving certificate.
    pub const LEAF_CERT: &str = "tls.crt";
    /// Its key.
    pub const LEAF_KEY: &str = "tls.key";
}

/// What the plan reads of one certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    /// Start of validity, Unix seconds.
    pub not_before: i64,
    /// End of validity, Unix seconds.
    pub not_after: i64,
    /// The subject's distinguished name, DER.
    pub subject: Vec<u8>,
    /// The issuer's distinguished name, DER.
    pub issuer: Vec<u8>,
    /// Its DNS names and IP addresses, sorted, each once.
    pub names: Vec<String>,
    /// The whole certificate, DER: two certificates are the same when these are.
    pub der: Vec<u8>,
}

impl Facts {
    /// The facts of each certificate in `pem`.
    pub fn of_pem(pem: &str) -> Result<Vec<Self>, String> {
        let ders: Vec<_> = rustls_pemfile::certs(&mut pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("parsing certificates: {e}"))?;
        ders.iter().map(|der| Self::of_der(der.as_ref())).collect()
    }

    /// The facts of one DER certificate.
    pub fn of_der(der: &[u8]) -> Result<Self, String> {
        let (_, cert) = x509_parser::parse_x509_certificate(der).map_err(|e| format!("reading a certificate: {e}"))?;
        let mut names = Vec::new();
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            for name in &san.value.general_names {
                match name {
                    x509_parser::extensions::GeneralName::DNSName(dns) => names.push(dns.to_string()),
                    x509_parser::extensions::GeneralName::IPAddress(ip) => names.extend(ip_text(ip)),
                    _ => {}
                }
            }
        }
        names.sort();
        names.dedup();
        Ok(Self {
            not_before: cert.validity().not_before.timestamp(),
            not_after: cert.validity().not_after.timestamp(),
            subject: cert.subject().as_raw().to_vec(),
            issuer: cert.issuer().as_raw().to_vec(),
            names,
            der: der.to_vec(),
        })
    }

    /// The moment `fraction` of its validity has passed.
    pub fn at_fraction(&self, numerator: i64, denominator: i64) -> i64 {
        self.not_before + (self.not_after - self.not_before).max(0) * numerator / denominator
    }
}

/// An IP address of a certificate as text.
fn ip_text(bytes: &[u8]) -> Option<String> {
    match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok().map(|b| std::net::Ipv4Addr::from(b).to_string()),
        16 => <[u8; 16]>::try_from(bytes).ok().map(|b| std::net::Ipv6Addr::from(b).to_string()),
        _ => None,
    }
}

/// A certificate with its key, PEM, and its facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keyed {
    /// The certificate.
    pub cert_pem: String,
    /// Its key.
    pub key_pem: String,
    /// What the plan reads of it.
    pub facts: Facts,
}

impl Keyed {
    /// A certificate and key read from PEM; the certificate must be one.
    pub fn new(cert_pem: String, key_pem: String) -> Result<Self, String> {
        let mut facts = Facts::of_pem(&cert_pem)?;
        if facts.len() != 1 {
            return Err(format!("{} certificates where one is due", facts.len()));
        }
        let facts = facts.remove(0);
        Ok(Self { cert_pem, key_pem, facts })
    }

    /// As a CA to sign with.
    pub fn as_ca(&self) -> tls::Ca {
        tls::Ca { cert_pem: self.cert_pem.clone(), key_pem: self.key_pem.clone() }
    }

    /// As a CA to trust.
    pub fn as_trusted(&self) -> Trusted {
        Trusted { cert_pem: self.cert_pem.clone(), facts: self.facts.clone() }
    }
}

/// A trusted CA certificate (no key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trusted {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// What the plan reads of it.
    pub facts: Facts,
}

impl Trusted {
    /// Each certificate of a PEM bundle, in its order.
    pub fn of_bundle(pem: &str) -> Result<Vec<Self>, String> {
        split_pem(pem)
            .into_iter()
            .map(|cert_pem| {
                let facts = Facts::of_pem(&cert_pem)?.pop().ok_or("an empty certificate block")?;
                Ok(Self { cert_pem, facts })
            })
            .collect()
    }
}

/// The CAs of a rotation: those trusted, the one that signs now, the one that signs next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authority {
    /// The CAs clients trust, in the order of the bundle.
    pub trusted: Vec<Trusted>,
    /// The CA that signs now.
    pub signer: Keyed,
    /// The CA that signs next, once trusted long enough.
    pub next: Option<Keyed>,
}

impl Authority {
    /// Reads the CAs of a Secret's data (`ca.crt`, `signer.*`, `next-signer.*`); `Err` says
    /// what is missing or unreadable.
    pub fn from_data(data: &BTreeMap<String, ByteString>) -> Result<Self, String> {
        let trusted = Trusted::of_bundle(&text(data, keys::TRUSTED)?).map_err(|e| format!("{}: {e}", keys::TRUSTED))?;
        let next = match data.contains_key(keys::NEXT_CERT) {
            true => Some(keyed(data, keys::NEXT_CERT, keys::NEXT_KEY)?),
            false => None,
        };
        Ok(Self { trusted, signer: keyed(data, keys::SIGNER_CERT, keys::SIGNER_KEY)?, next })
    }

    /// The Secret's data of the CAs.
    pub fn to_data(&self) -> BTreeMap<String, ByteString> {
        let mut data = BTreeMap::new();
        put(&mut data, keys::TRUSTED, &self.bundle());
        put(&mut data, keys::SIGNER_CERT, &self.signer.cert_pem);
        put(&mut data, keys::SIGNER_KEY, &self.signer.key_pem);
        if let Some(next) = &self.next {
            put(&mut data, keys::NEXT_CERT, &next.cert_pem);
            put(&mut data, keys::NEXT_KEY, &next.key_pem);
        }
        data
    }

    /// The CA bundle clients trust, PEM.
    pub fn bundle(&self) -> String {
        self.trusted.iter().map(|t| t.cert_pem.trim_end().to_string() + "\n").collect()
    }
}

/// Everything the Secret holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Material {
    /// The CAs.
    pub authority: Authority,
    /// The serving certificate.
    pub leaf: Keyed,
}

impl Material {
    /// Reads a Secret's data; `Err` says what is missing or unreadable.
    pub fn from_data(data: &BTreeMap<String, ByteString>) -> Result<Self, String> {
        Ok(Self { authority: Authority::from_data(data)?, leaf: keyed(data, keys::LEAF_CERT, keys::LEAF_KEY)? })
    }

    /// The Secret's data.
    pub fn to_data(&self) -> BTreeMap<String, ByteString> {
        let mut data = self.authority.to_data();
        put(&mut data, keys::LEAF_CERT, &self.leaf.cert_pem);
        put(&mut data, keys::LEAF_KEY, &self.leaf.key_pem);
        data
    }

    /// The CA bundle clients trust, PEM.
    pub fn bundle(&self) -> String {
        self.authority.bundle()
    }

    /// The serving certificate as the TLS listener takes it.
    pub fn serving(&self) -> tls::Certs {
        tls::Certs { ca_pem: self.bundle(), cert_pem: self.leaf.cert_pem.clone(), key_pem: self.leaf.key_pem.clone() }
    }
}

/// The PEM text under `key` of a Secret's data.
pub fn text(data: &BTreeMap<String, ByteString>, key: &str) -> Result<String, String> {
    let bytes = data.get(key).ok_or_else(|| format!("no {key}"))?;
    String::from_utf8(bytes.0.clone()).map_err(|_| format!("{key} is not PEM text"))
}

/// The certificate under `cert` and its key under `key` of a Secret's data.
pub fn keyed(data: &BTreeMap<String, ByteString>, cert: &str, key: &str) -> Result<Keyed, String> {
    Keyed::new(text(data, cert)?, text(data, key)?).map_err(|e| format!("{cert}: {e}"))
}

fn put(data: &mut BTreeMap<String, ByteString>, key: &str, text: &str) {
    data.insert(key.to_string(), ByteString(text.as_bytes().to_vec()));
}

/// Each PEM certificate block of `pem`, as text.
fn split_pem(pem: &str) -> Vec<String> {
    const END: &str = "-----END CERTIFICATE-----";
    pem.split_inclusive(END)
        .filter_map(|block| block.find("-----BEGIN CERTIFICATE-----").map(|start| format!("{}\n", &block[start..])))
        .filter(|block| block.trim_end().ends_with(END))
        .collect()
}

/// Whether every certificate of `pem` parses and one of them is `facts`'s.
pub fn bundle_holds(pem: &str, facts: &Facts) -> bool {
    Facts::of_pem(pem).is_ok_and(|all| all.iter().any(|f| f.der == facts.der))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn material() -> Material {
        let ca = tls::new_ca("test-ca").unwrap();
        let leaf = tls::issue(&ca, &["svc.ns.svc".into(), "10.0.0.1".into()]).unwrap();
        let signer = Keyed::new(ca.cert_pem.clone(), ca.key_pem).unwrap();
        let trusted = vec![Trusted { cert_pem: ca.cert_pem, facts: signer.facts.clone() }];
        Material {
            authority: Authority { trusted, signer, next: None },
            leaf: Keyed::new(leaf.cert_pem, leaf.key_pem).unwrap(),
        }
    }

    #[test]
    fn the_secret_data_reads_back_as_written() {
        let mut written = material();
        let next = tls::new_ca("next-ca").unwrap();
        let next = Keyed::new(next.cert_pem, next.key_pem).unwrap();
        written.authority.trusted.push(next.as_trusted());
        written.authority.next = Some(next);
        assert_eq!(Material::from_data(&written.to_data()).unwrap(), written);
        assert_eq!(written.leaf.facts.names, ["10.0.0.1", "svc.ns.svc"]);
        assert_eq!(written.leaf.facts.issuer, written.authority.signer.facts.subject);
        assert!(bundle_holds(&written.bundle(), &written.authority.trusted[1].facts));
    }

    #[test]
    fn unreadable_data_says_which_key() {
        let mut data = material().to_data();
        data.remove(keys::SIGNER_KEY);
        assert_eq!(Material::from_data(&data).unwrap_err(), "no signer.key");
        let mut data = material().to_data();
        data.insert(keys::LEAF_CERT.into(), ByteString(b"nope".to_vec()));
        assert!(Material::from_data(&data).unwrap_err().starts_with("tls.crt"));
        assert!(!bundle_holds("garbage", &material().authority.signer.facts));
    }
}
