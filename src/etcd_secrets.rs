//! `farm-apiserver etcd-secrets`: the Secrets of the etcd of `manifests/ha`, made in the cluster
//! by a Job of that install, so that the install itself holds nothing private: a CA of its own
//! (`<etcd>-ca`, mounted nowhere), the members' certificate for clients and peers
//! (`<etcd>-certs`) and the server's client certificate (`farm-apiserver-etcd-client`). Each is
//! made only when missing (another `kubectl apply` runs the Job again and keeps what exists), a
//! missing member or client Secret from the kept CA.

use crate::certs::{self, Error as CertsError};
use crate::tls;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};

/// Options of `etcd-secrets`.
#[derive(clap::Args, Clone, Debug)]
pub struct EtcdSecretsArgs {
    /// The namespace of etcd and the server; the one the Job runs in when unset.
    #[arg(long)]
    pub namespace: Option<String>,
    /// The headless Service of the etcd StatefulSet.
    #[arg(long, default_value = "etcd")]
    pub etcd_service: String,
    /// The server's name (its client certificate's common name).
    #[arg(long, default_value = "farm-apiserver")]
    pub service: String,
    /// Days the CA and the certificates are valid.
    #[arg(long, default_value_t = 3650)]
    pub validity_days: u32,
}

/// Errors of `etcd-secrets`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cluster's configuration could not be read.
    #[error("the cluster: {0}")]
    Cluster(#[from] kube::Error),
    /// Certificates could not be made.
    #[error(transparent)]
    Certs(#[from] CertsError),
    /// The kept CA is unusable.
    #[error("Secret {0} holds no usable CA (ca.crt, ca.key): delete it to make a new one")]
    Ca(String),
}

/// Makes the missing Secrets; returns what it did, a line each.
pub async fn run(args: &EtcdSecretsArgs) -> Result<Vec<String>, Error> {
    let client = kube::Client::try_default().await?;
    let namespace = args.namespace.clone().unwrap_or_else(|| client.default_namespace().to_string());
    let secrets: Api<Secret> = Api::namespaced(client, &namespace);
    let validity = tls::Validity::days_from_now(args.validity_days);
    let mut done = Vec::new();
    let ca_name = format!("{}-ca", args.etcd_service);
    let ca = match secrets.get_opt(&ca_name).await? {
        Some(kept) => {
            done.push(format!("kept secret/{ca_name}"));
            ca_of(&kept).ok_or_else(|| Error::Ca(ca_name.clone()))?
        }
        None => {
            let ca = tls::new_ca_valid(&ca_name, validity).map_err(CertsError::from)?;
            let files = [("ca.crt", &ca.cert_pem), ("ca.key", &ca.key_pem)];
            let made = create(&secrets, certs::pem_secret(&ca_name, &namespace, "etcd", &files), &mut done).await?;
            ca_of(&made).ok_or_else(|| Error::Ca(ca_name.clone()))?
        }
    };
    for secret in certs::etcd_secrets_valid(&ca, &args.etcd_service, &args.service, &namespace, validity)? {
        let name = secret.metadata.name.clone().unwrap_or_default();
        match secrets.get_opt(&name).await? {
            Some(_) => done.push(format!("kept secret/{name}")),
            None => {
                create(&secrets, secret, &mut done).await?;
            }
        }
    }
    Ok(done)
}

/// Creates `secret`; when another run made it meanwhile, returns that one.
async fn create(secrets: &Api<Secret>, secret: Secret, done: &mut Vec<String>) -> Result<Secret, Error> {
    let name = secret.metadata.name.clone().unwrap_or_default();
    match secrets.create(&PostParams::default(), &secret).await {
        Ok(made) => {
            done.push(format!("created secret/{name}"));
            Ok(made)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => {
            done.push(format!("kept secret/{name} (made meanwhile)"));
            Ok(secrets.get(&name).await?)
        }
        Err(e) => Err(e.into()),
    }
}

/// The CA a kept Secret holds.
fn ca_of(secret: &Secret) -> Option<tls::Ca> {
    let data = secret.data.as_ref()?;
    let text = |key: &str| String::from_utf8(data.get(key)?.0.clone()).ok();
    Some(tls::Ca { cert_pem: text("ca.crt")?, key_pem: text("ca.key")? })
}
