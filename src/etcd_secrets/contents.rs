//! What the etcd Secrets hold, read and written: the CA Secret (`ca.crt`, the bundle every
//! member and client trusts; `signer.crt`/`signer.key`, the CA that signs now;
//! `next-signer.crt`/`next-signer.key` while a rotation is under way; the first installs wrote
//! `ca.crt` and `ca.key` alone, read as a signer trusted alone), and the two `kubernetes.io/tls`
//! Secrets of the members and of the server (`tls.crt`, `tls.key`, `ca.crt`).

use apiserver_kit::certificates::material::{self, Authority, Keyed, Trusted, keys};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use std::collections::BTreeMap;

/// The key of the first installs' CA key.
const LEGACY_CA_KEY: &str = "ca.key";

/// The CAs a CA Secret holds.
pub fn authority_of(secret: &Secret) -> Result<Authority, String> {
    let empty = BTreeMap::new();
    let data = secret.data.as_ref().unwrap_or(&empty);
    if data.contains_key(keys::SIGNER_CERT) {
        return Authority::from_data(data);
    }
    let trusted =
        Trusted::of_bundle(&material::text(data, keys::TRUSTED)?).map_err(|e| format!("{}: {e}", keys::TRUSTED))?;
    Ok(Authority { trusted, signer: material::keyed(data, keys::TRUSTED, LEGACY_CA_KEY)?, next: None })
}

/// The certificate a `kubernetes.io/tls` Secret holds, if it holds a readable one.
pub fn leaf_of(secret: &Secret) -> Option<Keyed> {
    material::keyed(secret.data.as_ref()?, keys::LEAF_CERT, keys::LEAF_KEY).ok()
}

/// Whether `authority` trusts a CA that the bundle of the `kubernetes.io/tls` Secret `kept`
/// lacks.
pub fn gains_a_ca(kept: &Secret, authority: &Authority) -> bool {
    let bundle = kept.data.as_ref().and_then(|d| d.get(keys::TRUSTED));
    let held = bundle.and_then(|b| Trusted::of_bundle(&String::from_utf8_lossy(&b.0)).ok()).unwrap_or_default();
    authority.trusted.iter().any(|ca| !held.iter().any(|h| h.facts.der == ca.facts.der))
}

/// A `kubernetes.io/tls` Secret's data: `leaf` and the bundle.
pub fn leaf_data(leaf: &Keyed, bundle: &str) -> BTreeMap<String, ByteString> {
    [(keys::LEAF_CERT, &leaf.cert_pem), (keys::LEAF_KEY, &leaf.key_pem), (keys::TRUSTED, &bundle.to_string())]
        .into_iter()
        .map(|(key, pem)| (key.to_string(), ByteString(pem.as_bytes().to_vec())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use apiserver_kit::tls;

    fn secret(data: BTreeMap<String, ByteString>) -> Secret {
        Secret { data: Some(data), ..Default::default() }
    }

    #[test]
    fn a_first_install_ca_reads_as_a_signer_trusted_alone() {
        let ca = tls::new_ca("etcd-ca").unwrap();
        let legacy = [("ca.crt", &ca.cert_pem), ("ca.key", &ca.key_pem)]
            .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())));
        let authority = authority_of(&secret(legacy.into())).unwrap();
        assert_eq!(authority.signer.cert_pem, ca.cert_pem);
        assert_eq!(authority.trusted.len(), 1);
        assert!(authority.next.is_none());
        assert_eq!(authority_of(&secret(authority.to_data())).unwrap(), authority);
    }

    #[test]
    fn a_rotation_under_way_reads_back_as_written_and_a_missing_key_is_named() {
        let keyed = |name: &str| {
            let ca = tls::new_ca(name).unwrap();
            Keyed::new(ca.cert_pem, ca.key_pem).unwrap()
        };
        let (signer, next) = (keyed("old"), keyed("new"));
        let trusted = Trusted::of_bundle(&format!("{}{}", signer.cert_pem, next.cert_pem)).unwrap();
        let authority = Authority { trusted, signer, next: Some(next) };
        let mut data = authority.to_data();
        assert_eq!(authority_of(&secret(data.clone())).unwrap(), authority);
        data.remove(keys::NEXT_KEY);
        assert_eq!(authority_of(&secret(data)).unwrap_err(), "no next-signer.key");
        assert!(leaf_of(&Secret::default()).is_none());
        let leaf = tls::issue(&authority.signer.as_ca(), &["m".into()]).unwrap();
        let leaf = Keyed::new(leaf.cert_pem, leaf.key_pem).unwrap();
        let one = Authority { trusted: authority.trusted[..1].to_vec(), ..authority.clone() };
        let members = secret(leaf_data(&leaf, &one.bundle()));
        assert!(gains_a_ca(&members, &authority), "the next CA is not in the members' bundle");
        assert!(!gains_a_ca(&members, &one));
        assert!(!gains_a_ca(&secret(leaf_data(&leaf, &authority.bundle())), &authority));
    }
}
