//! `farm-apiserver certs`: the certificates and the one-file manifest a cluster install needs.
//!
//! Writes into `--out-dir` (default `certs/`, git-ignored): `ca.crt`, `ca.key`, `tls.crt`,
//! `tls.key` (keys with mode 0600) and `ca-bundle.txt`, the base64 caBundle of the APIService.
//! An existing CA in that directory is reused, so the caBundle stays the same across runs. The
//! serving certificate names `<service>`, `<service>.<namespace>`, `<service>.<namespace>.svc`
//! and `<service>.<namespace>.svc.cluster.local` (plus `localhost` and `127.0.0.1` for mirrord
//! and port-forwards). Then `--app-yaml` (default `manifests/app.yaml`, git-ignored because it
//! holds the key) is assembled from the templates in `--manifests-dir`: Namespace,
//! ServiceAccount, RBAC, the serving-certificate Secret, Deployment, Service and the APIService
//! with its caBundle filled in; the same file goes to `--ha-app-yaml` (default
//! `manifests/ha/app.yaml`), the base of the high-availability kustomize overlay.

use crate::tls;
use base64::Engine;
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
    #[arg(long, default_value = "manifests")]
    pub manifests_dir: PathBuf,
    /// The assembled manifest; `-` to skip it.
    #[arg(long, default_value = "manifests/app.yaml")]
    pub app_yaml: PathBuf,
    /// The same manifest again as the base of the high-availability kustomize overlay (kustomize
    /// loads nothing from outside an overlay's directory); `-` to skip it.
    #[arg(long, default_value = "manifests/ha/app.yaml")]
    pub ha_app_yaml: PathBuf,
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
    /// rcgen could not read the existing CA.
    #[error("the existing CA in the output directory cannot be used: {0}")]
    Ca(String),
}

/// The order of the templates in `app.yaml`; the Secret goes after the RBAC.
const TEMPLATES: [&str; 6] =
    ["namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "deployment.yaml", "service.yaml", "apiservice.yaml"];

/// The Secret the Deployment mounts.
pub const SECRET_NAME: &str = "farm-apiserver-serving-cert";

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

/// Runs `certs`; returns the caBundle.
pub fn run(args: &CertsArgs) -> Result<String, Error> {
    let (ca_crt, ca_key) = (args.out_dir.join("ca.crt"), args.out_dir.join("ca.key"));
    let ca = if ca_crt.exists() && ca_key.exists() {
        tls::Ca { cert_pem: read(&ca_crt)?, key_pem: read(&ca_key)? }
    } else {
        let ca = tls::new_ca(&format!("{}-ca", args.service))?;
        write(&ca_crt, &ca.cert_pem, false)?;
        write(&ca_key, &ca.key_pem, true)?;
        ca
    };
    let certs =
        tls::issue(&ca, &service_names(&args.service, &args.namespace)).map_err(|e| Error::Ca(e.to_string()))?;
    write(&args.out_dir.join("tls.crt"), &certs.cert_pem, false)?;
    write(&args.out_dir.join("tls.key"), &certs.key_pem, true)?;
    let bundle = b64(&ca.cert_pem);
    write(&args.out_dir.join("ca-bundle.txt"), &format!("{bundle}\n"), false)?;
    let manifest = app_yaml(args, &certs, &bundle)?;
    for path in [&args.app_yaml, &args.ha_app_yaml] {
        if path.as_os_str() != "-" {
            write(path, &manifest, true)?;
        }
    }
    Ok(bundle)
}

fn app_yaml(args: &CertsArgs, certs: &tls::Certs, bundle: &str) -> Result<String, Error> {
    let mut docs = Vec::new();
    for name in TEMPLATES {
        let text = read(&args.manifests_dir.join(name))?.replace("CA_BUNDLE", bundle);
        docs.push(text.trim().to_string());
        if name == "rbac.yaml" {
            docs.push(format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {SECRET_NAME}\n  namespace: {}\n  labels:\n    app.kubernetes.io/name: farm-apiserver\ntype: kubernetes.io/tls\ndata:\n  tls.crt: {}\n  tls.key: {}\n  ca.crt: {}",
                args.namespace,
                b64(&certs.cert_pem),
                b64(&certs.key_pem),
                b64(&certs.ca_pem)
            ));
        }
    }
    Ok(format!(
        "# Generated by `farm-apiserver certs` (make manifests). Holds a private key: do not commit.\n{}\n",
        docs.join("\n---\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dir: &Path) -> CertsArgs {
        CertsArgs {
            out_dir: dir.join("certs"),
            service: "farm-apiserver".into(),
            namespace: "farm-system".into(),
            manifests_dir: PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/manifests")),
            app_yaml: dir.join("app.yaml"),
            ha_app_yaml: dir.join("ha/app.yaml"),
        }
    }

    #[test]
    fn writes_certificates_and_an_app_manifest_and_keeps_the_ca() {
        let dir = tempfile::tempdir().unwrap();
        let first = run(&args(dir.path())).unwrap();
        let second = run(&args(dir.path())).unwrap();
        assert_eq!(first, second, "the CA is reused, so the caBundle does not change");
        let app = std::fs::read_to_string(dir.path().join("app.yaml")).unwrap();
        assert!(app.contains(&format!("caBundle: {first}")));
        assert!(!app.contains("CA_BUNDLE"));
        assert!(app.contains("kind: Secret") && app.contains(SECRET_NAME));
        assert_eq!(app.matches("\n---\n").count(), 12, "thirteen documents (an APIService per version)");
        assert_eq!(std::fs::read_to_string(dir.path().join("ha/app.yaml")).unwrap(), app, "the overlay's base");
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
}
