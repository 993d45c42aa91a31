//! `farm-apiserver certs`: the certificates and the one-file manifest a cluster install needs.
//!
//! Writes into `--out-dir` (default `certs/`, git-ignored): `ca.crt`, `ca.key`, `tls.crt`,
//! `tls.key` (keys with mode 0600) and `ca-bundle.txt`, the base64 caBundle of the APIService.
//! An existing CA in that directory is reused, so the caBundle stays the same across runs. The
//! serving certificate names `<service>`, `<service>.<namespace>`, `<service>.<namespace>.svc`
//! and `<service>.<namespace>.svc.cluster.local` (plus `localhost` and `127.0.0.1` for
//! port-forwards and local runs). Then `--app-yaml` (default `manifests/app.yaml`, git-ignored because it
//! holds the key) is assembled from the templates in `--manifests-dir` (those of
//! `manifests/base/kustomization.yaml`, whose server manages its own certificate), switched to the
//! certificate in files: the serving-certificate Secret, the Deployment mounting it, the
//! APIServices with their caBundle filled in, without the RBAC of managed certificates. And
//! `--etcd-certs-yaml` (none by default): the Secrets of an etcd's certificates, in a file
//! (manifests/ha makes its etcd's in the cluster, `farm-apiserver etcd-secrets`).

use crate::tls;
use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use std::path::{Path, PathBuf};

/// Options of `certs`.
#[derive(clap::Args, Clone, Debug)]
pub struct CertsArgs {
    /// Where to write the CA, the serving certificate and the caBundle.
    #[arg(long, default_value = "certs")]
    pub out_dir: PathBuf,
    /// The Service in front of the server.
    #[arg(long, default_value = "farm-apiserver")]
    pub service: String,
    /// The Service's namespace.
    #[arg(long, default_value = "farm-system")]
    pub namespace: String,
    /// The manifest templates to assemble.
    #[arg(long, default_value = "manifests/base")]
    pub manifests_dir: PathBuf,
    /// The assembled manifest; `-` to skip it.
    #[arg(long, default_value = "manifests/app.yaml")]
    pub app_yaml: PathBuf,
    /// The etcd of the high-availability overlay: the Secrets of its members' certificate (for
    /// clients and peers) and of the server's etcd client certificate, from a CA of their own
    /// (`etcd-ca.crt` in `--out-dir`), for an etcd of yours with certificates in files;
    /// `-` (the default) to skip them: manifests/ha's Job makes them in the cluster.
    #[arg(long, default_value = "-")]
    pub etcd_certs_yaml: PathBuf,
    /// The headless Service of the etcd StatefulSet, in `--namespace`.
    #[arg(long, default_value = "etcd")]
    pub etcd_service: String,
}

/// Errors of `certs`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// Which file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Certificates could not be made.
    #[error(transparent)]
    Tls(#[from] tls::Error),
    /// A Secret could not be written as YAML.
    #[error("writing a Secret as YAML: {0}")]
    Yaml(String),
    /// rcgen could not read the existing CA.
    #[error("the existing CA in the output directory cannot be used: {0}")]
    Ca(String),
}

/// The templates of `app.yaml`, in the order of `manifests/base/kustomization.yaml`.
const TEMPLATES: [&str; 8] = [
    "namespace.yaml",
    "serviceaccount.yaml",
    "rbac.yaml",
    "user-roles.yaml",
    "audit-policy.yaml",
    "deployment.yaml",
    "service.yaml",
    "apiservice.yaml",
];

/// The RBAC of managed serving certificates, which certificates in files do not need.
const MANAGED_CERTIFICATE_RBAC: &str = "farm-apiserver:serving-certificate";

/// Where the Deployment of `app.yaml` mounts the serving-certificate Secret.
const CERTIFICATE_DIR: &str = "/etc/farm-apiserver/tls";

/// The Secret the Deployment mounts.
pub const SECRET_NAME: &str = "farm-apiserver-serving-cert";

/// The Secret of the server's etcd client certificate, which manifests/ha mounts.
pub const ETCD_CLIENT_SECRET_NAME: &str = "farm-apiserver-etcd-client";

fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.into(), source })
}

fn write(path: &Path, contents: &str, private: bool) -> Result<(), Error> {
    use std::io::Write;
    let io = |source| Error::Io { path: path.into(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    options.open(path).and_then(|mut f| f.write_all(contents.as_bytes())).map_err(io)
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
}

/// The serving certificate's names for a Service.
pub use tls::service_names;

/// The CA in `out_dir` named by `stem` (`<stem>.crt`, `<stem>.key`), made when missing.
fn ca(out_dir: &Path, stem: &str, name: &str) -> Result<tls::Ca, Error> {
    let (crt, key) = (out_dir.join(format!("{stem}.crt")), out_dir.join(format!("{stem}.key")));
    if crt.exists() && key.exists() {
        return Ok(tls::Ca { cert_pem: read(&crt)?, key_pem: read(&key)? });
    }
    let ca = tls::new_ca(name)?;
    write(&crt, &ca.cert_pem, false)?;
    write(&key, &ca.key_pem, true)?;
    Ok(ca)
}

/// Runs `certs`; returns the caBundle.
pub fn run(args: &CertsArgs) -> Result<String, Error> {
    let ca = ca(&args.out_dir, "ca", &format!("{}-ca", args.service))?;
    let certs =
        tls::issue(&ca, &service_names(&args.service, &args.namespace)).map_err(|e| Error::Ca(e.to_string()))?;
    write(&args.out_dir.join("tls.crt"), &certs.cert_pem, false)?;
    write(&args.out_dir.join("tls.key"), &certs.key_pem, true)?;
    let bundle = b64(&ca.cert_pem);
    write(&args.out_dir.join("ca-bundle.txt"), &format!("{bundle}\n"), false)?;
    let manifest = app_yaml(args, &certs, &bundle)?;
    if args.app_yaml.as_os_str() != "-" {
        write(&args.app_yaml, &manifest, true)?;
    }
    if let Some(path) = etcd_certs_path(args) {
        write(&path, &etcd_certs_yaml(args)?, true)?;
    }
    Ok(bundle)
}

/// Where the etcd Secrets go, if anywhere.
pub fn etcd_certs_path(args: &CertsArgs) -> Option<PathBuf> {
    (args.etcd_certs_yaml.as_os_str() != "-").then(|| args.etcd_certs_yaml.clone())
}

/// The names of the etcd members' certificate: every member of the headless Service (a
/// wildcard), the Service itself, and loopback for etcdctl inside a member's Pod.
pub fn etcd_member_names(service: &str, namespace: &str) -> Vec<String> {
    let svc = format!("{service}.{namespace}.svc");
    vec![
        format!("*.{svc}"),
        format!("*.{svc}.cluster.local"),
        svc.clone(),
        format!("{svc}.cluster.local"),
        "localhost".to_string(),
        "127.0.0.1".to_string(),
    ]
}

/// The Secret of the etcd members and the server's etcd client Secret.
fn etcd_certs_yaml(args: &CertsArgs) -> Result<String, Error> {
    let ca = ca(&args.out_dir, "etcd-ca", &format!("{}-ca", args.etcd_service))?;
    let secrets = etcd_secrets(&ca, &args.etcd_service, &args.service, &args.namespace)?;
    let docs = secrets.iter().map(yaml).collect::<Result<Vec<_>, _>>()?;
    Ok(format!(
        "# Generated by `farm-apiserver certs` (make manifests). Holds private keys: do not commit.\n{}\n",
        docs.join("\n---\n")
    ))
}

/// The Secrets of etcd's members (`<etcd_service>-certs`, a certificate for clients and peers)
/// and of the server's etcd client certificate, both from `ca`.
pub fn etcd_secrets(ca: &tls::Ca, etcd_service: &str, service: &str, namespace: &str) -> Result<[Secret; 2], Error> {
    etcd_secrets_valid(ca, etcd_service, service, namespace, tls::Validity::default())
}

/// [`etcd_secrets`] with certificates valid as `validity` says.
pub fn etcd_secrets_valid(
    ca: &tls::Ca,
    etcd_service: &str,
    service: &str,
    namespace: &str,
    validity: tls::Validity,
) -> Result<[Secret; 2], Error> {
    let names = etcd_member_names(etcd_service, namespace);
    let member = tls::issue_valid(ca, etcd_service, &names, tls::Usage::ServerAndClient, validity)?;
    let client = tls::issue_valid(ca, service, &[], tls::Usage::Client, validity)?;
    Ok([
        tls_secret(&format!("{etcd_service}-certs"), namespace, etcd_service, &member),
        tls_secret(ETCD_CLIENT_SECRET_NAME, namespace, service, &client),
    ])
}

/// `secret` as YAML.
fn yaml(secret: &Secret) -> Result<String, Error> {
    serde_saphyr::to_string(secret).map(|yaml| yaml.trim().to_string()).map_err(|e| Error::Yaml(e.to_string()))
}

/// A `kubernetes.io/tls` Secret of `certs` (tls.crt, tls.key and the CA as ca.crt).
pub fn tls_secret(name: &str, namespace: &str, app: &str, certs: &tls::Certs) -> Secret {
    let files = [("tls.crt", &certs.cert_pem), ("tls.key", &certs.key_pem), ("ca.crt", &certs.ca_pem)];
    Secret { type_: Some("kubernetes.io/tls".into()), ..pem_secret(name, namespace, app, &files) }
}

/// A Secret named `name` of the app `app` (its `app.kubernetes.io/name` label) holding the PEM
/// `files`, each under its key.
pub fn pem_secret(name: &str, namespace: &str, app: &str, files: &[(&str, &String)]) -> Secret {
    use k8s_openapi::ByteString;
    let data = files.iter().map(|(key, pem)| (key.to_string(), ByteString(pem.as_bytes().to_vec()))).collect();
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            labels: Some([("app.kubernetes.io/name".to_string(), app.to_string())].into()),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

/// The templates as one manifest with the certificates in files: the serving-certificate
/// Secret before the Deployment, which mounts it instead of managing its certificate, the
/// caBundle in each APIService, and without the RBAC of managed certificates.
fn app_yaml(args: &CertsArgs, certs: &tls::Certs, bundle: &str) -> Result<String, Error> {
    let mut docs = Vec::new();
    for name in TEMPLATES {
        let text = read(&args.manifests_dir.join(name))?;
        let objects: Vec<serde_json::Value> =
            serde_saphyr::from_multiple(&text).map_err(|e| Error::Yaml(format!("{name}: {e}")))?;
        for mut object in objects.into_iter().filter(|o| !o.is_null()) {
            if object.pointer("/metadata/name").and_then(|n| n.as_str()) == Some(MANAGED_CERTIFICATE_RBAC) {
                continue;
            }
            match object.get("kind").and_then(|k| k.as_str()) {
                Some("APIService") => object["spec"]["caBundle"] = bundle.into(),
                Some("Deployment") => {
                    docs.push(yaml(&tls_secret(SECRET_NAME, &args.namespace, "farm-apiserver", certs))?);
                    certificate_files(&mut object);
                }
                _ => {}
            }
            docs.push(serde_saphyr::to_string(&object).map_err(|e| Error::Yaml(e.to_string()))?.trim().to_string());
        }
    }
    Ok(format!(
        "# Generated by `farm-apiserver certs` (make manifests). Holds a private key: do not commit.\n{}\n",
        docs.join("\n---\n")
    ))
}

/// Makes the Deployment's server read its certificate from the mounted Secret instead of
/// managing it.
fn certificate_files(deployment: &mut serde_json::Value) {
    use serde_json::json;
    let Some(pod) = deployment.pointer_mut("/spec/template/spec") else { return };
    let volumes = pod["volumes"].as_array_mut();
    if let Some(volumes) = volumes {
        volumes.push(json!({"name": "serving-cert", "secret": {"secretName": SECRET_NAME}}));
    }
    let Some(containers) = pod["containers"].as_array_mut() else { return };
    for container in containers.iter_mut().filter(|c| c["name"] == "farm-apiserver") {
        if let Some(env) = container["env"].as_array_mut() {
            env.retain(|e| e["name"] != "FARM_CERTIFICATE_SECRET");
            env.push(json!({"name": "FARM_TLS_CERT_FILE", "value": format!("{CERTIFICATE_DIR}/tls.crt")}));
            env.push(json!({"name": "FARM_TLS_PRIVATE_KEY_FILE", "value": format!("{CERTIFICATE_DIR}/tls.key")}));
        }
        if let Some(mounts) = container["volumeMounts"].as_array_mut() {
            mounts.push(json!({"name": "serving-cert", "mountPath": CERTIFICATE_DIR, "readOnly": true}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: &Path) -> CertsArgs {
        CertsArgs {
            out_dir: dir.join("certs"),
            service: "farm-apiserver".into(),
            namespace: "farm-system".into(),
            manifests_dir: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/base")),
            app_yaml: dir.join("app.yaml"),
            etcd_certs_yaml: dir.join("ha/etcd-certs.yaml"),
            etcd_service: "etcd".into(),
        }
    }

    #[test]
    fn writes_certificates_and_an_app_manifest_and_keeps_the_ca() {
        let dir = tempfile::tempdir().unwrap();
        let first = run(&args(dir.path())).unwrap();
        let second = run(&args(dir.path())).unwrap();
        assert_eq!(first, second, "the CA is reused, so the caBundle does not change");
        let app = std::fs::read_to_string(dir.path().join("app.yaml")).unwrap();
        let objects: Vec<serde_json::Value> = serde_saphyr::from_multiple(&app).unwrap();
        let bundles = objects.iter().filter_map(|o| o.pointer("/spec/caBundle")).filter(|b| **b == first.as_str());
        assert_eq!(bundles.count(), 2, "both APIServices");
        assert!(app.contains("kind: Secret") && app.contains(SECRET_NAME));
        assert!(!app.contains(MANAGED_CERTIFICATE_RBAC) && !app.contains("FARM_CERTIFICATE_SECRET"));
        assert!(app.contains("FARM_TLS_CERT_FILE") && app.contains(&format!("mountPath: {CERTIFICATE_DIR}")));
        assert_eq!(app.matches("\n---\n").count(), 15, "sixteen documents (an APIService per version)");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("certs/tls.key")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let certs = tls::load(
            dir.path().join("certs/tls.crt").to_str().unwrap(),
            dir.path().join("certs/tls.key").to_str().unwrap(),
        )
        .unwrap();
        tls::ReloadingCertificate::new(&certs).unwrap();
    }

    #[test]
    fn writes_the_etcd_members_and_the_servers_client_secrets_from_a_ca_of_their_own() {
        use k8s_openapi::api::core::v1::Secret;
        let dir = tempfile::tempdir().unwrap();
        run(&args(dir.path())).unwrap();
        let text = std::fs::read_to_string(dir.path().join("ha/etcd-certs.yaml")).unwrap();
        let secrets: Vec<Secret> = text.split("\n---\n").map(|doc| serde_saphyr::from_str(doc).unwrap()).collect();
        let names: Vec<_> = secrets.iter().map(|s| s.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, ["etcd-certs", ETCD_CLIENT_SECRET_NAME]);
        let pem = |secret: &Secret, key: &str| String::from_utf8(secret.data.as_ref().unwrap()[key].0.clone()).unwrap();
        let etcd_ca = std::fs::read_to_string(dir.path().join("certs/etcd-ca.crt")).unwrap();
        assert_ne!(etcd_ca, std::fs::read_to_string(dir.path().join("certs/ca.crt")).unwrap());
        let usage = |secret: &Secret| {
            let (_, pem) = x509_parser::pem::parse_x509_pem(pem(secret, "tls.crt").as_bytes()).unwrap();
            let cert = pem.parse_x509().unwrap();
            let eku = cert.extended_key_usage().unwrap().unwrap().value;
            let sans = cert.subject_alternative_name().unwrap().map(|san| san.value.general_names.len());
            ((eku.server_auth, eku.client_auth), sans.unwrap_or(0), format!("{:?}", cert.subject_alternative_name()))
        };
        let (member, member_sans, text) = usage(&secrets[0]);
        assert_eq!((member, member_sans), ((true, true), 6), "members are their peers' clients too");
        assert!(text.contains("*.etcd.farm-system.svc"), "{text}");
        let (client, client_sans, _) = usage(&secrets[1]);
        assert_eq!((client, client_sans), ((false, true), 0), "a client certificate, naming no host");
        assert!(secrets.iter().all(|s| pem(s, "ca.crt") == etcd_ca && s.type_.as_deref() == Some("kubernetes.io/tls")));
    }
}
