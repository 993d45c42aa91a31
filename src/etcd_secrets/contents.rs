//! What the etcd Secrets hold, read and written: the CA Secret (`ca.crt`, the bundle every
//! member and client trusts; `signer.crt`/`signer.key`, the CA that signs now;
//! `next-signer.crt`/`next-signer.key` while a rotation is under way; the first installs wrote
//! `ca.crt` and `ca.key` alone, read as a signer trusted alone), and the two `kubernetes.io/tls`
//! Secrets of the members and of the server (`tls.crt`, `tls.key`, `ca.crt`).

use apiserver_kit::certificates::material::{Keyed, Trusted, keys};
use apiserver_kit::certificates::plan::Authority;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use std::collections::BTreeMap;

/// The key of the first installs' CA key.
const LEGACY_CA_KEY: &str = "ca.key";

/// The CAs a CA Secret holds.
pub fn authority_of(secret: &Secret) -> Result<Authority, String> {
    let empty = BTreeMap::new();
    let data = secret.data.as_ref().unwrap_or(&empty);
    let text = |key: &str| -> Result<String, String> {
        let bytes = data.get(key).ok_or_else(|| format!("no {key}"))?;
        String::from_utf8(bytes.0.clone()).map_err(|_| format!("{key} is not PEM text"))
    };
    let keyed = |cert: &str, key: &str| Keyed::new(text(cert)?, text(key)?).map_err(|e| format!("{cert}: {e}"));
    let trusted = Trusted::of_bundle(&text(keys::TRUSTED)?).map_err(|e| format!("{}: {e}", keys::TRUSTED))?;
    if !data.contains_key(keys::SIGNER_CERT) {
        let signer = keyed(keys::TRUSTED, LEGACY_CA_KEY)?;
        return Ok(Authority { trusted, signer, next: None });
    }
    let next = match data.contains_key(keys::NEXT_CERT) {
        true => Some(keyed(keys::NEXT_CERT, keys::NEXT_KEY)?),
        false => None,
    };
    Ok(Authority { trusted, signer: keyed(keys::SIGNER_CERT, keys::SIGNER_KEY)?, next })
}

/// A CA Secret's data for `authority`.
pub fn authority_data(authority: &Authority) -> BTreeMap<String, ByteString> {
    let mut data = BTreeMap::new();
    let mut put = |key: &str, text: &str| data.insert(key.to_string(), ByteString(text.as_bytes().to_vec()));
    put(keys::TRUSTED, &authority.bundle());
    put(keys::SIGNER_CERT, &authority.signer.cert_pem);
    put(keys::SIGNER_KEY, &authority.signer.key_pem);
    if let Some(next) = &authority.next {
        put(keys::NEXT_CERT, &next.cert_pem);
        put(keys::NEXT_KEY, &next.key_pem);
    }
    data
}

/// The certificate a `kubernetes.io/tls` Secret holds, if it holds a readable one.
pub fn leaf_of(secret: &Secret) -> Option<Keyed> {
    let data = secret.data.as_ref()?;
    let text = |key: &str| String::from_utf8(data.get(key)?.0.clone()).ok();
    Keyed::new(text(keys::LEAF_CERT)?, text(keys::LEAF_KEY)?).ok()
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
        assert_eq!(authority_of(&secret(authority_data(&authority))).unwrap(), authority);
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
        let mut data = authority_data(&authority);
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
