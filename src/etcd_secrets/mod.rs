//! `farm-apiserver etcd-secrets`: the certificates of the etcd of `manifests/ha`, made and
//! renewed in the cluster (the install holds nothing private): a CA of its own (Secret
//! `<etcd>-ca`, mounted nowhere), the members' certificate for clients and peers
//! (`<etcd>-certs`) and the server's client certificate (`farm-apiserver-etcd-client`). The
//! install's Job runs it once; a CronJob runs it again every few hours.
//!
//! Each run renews what falls due, as the server renews its serving certificate
//! ([`apiserver_kit::certificates::plan`]): a certificate after two thirds of its validity; a CA
//! by a rotation with overlap. The new CA joins the bundle of every Secret (at two thirds of the
//! old CA's validity, or at once with `--rotate-ca`) and the members are restarted one at a time
//! (etcd reads its trusted CAs only when it starts; the server rereads its files). A later run
//! makes the new CA sign once it has been in the bundle for `--settle-seconds` (the Pods'
//! mounted Secrets are updated meanwhile) and every member accepts a certificate of it on its
//! client and peer ports; the old CA stays trusted until it expires. etcd reads its own
//! certificate at each handshake, so renewals need no restart.

mod contents;

use crate::certs::{self, ETCD_CLIENT_SECRET_NAME};
use apiserver_kit::certificates::material::Authority;
use apiserver_kit::certificates::plan::{self, AuthorityPolicy};
use apiserver_kit::certificates::probe;
use apiserver_kit::tls;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use std::collections::BTreeMap;
use std::time::Duration;

/// The pod-template annotation whose change restarts the members: the CA bundle's digest.
pub const TRUST_ANNOTATION: &str = "farm.example.com/etcd-trusted-cas";
/// etcd's client and peer ports, as `manifests/ha` serves them.
const PORTS: [u16; 2] = [2379, 2380];

/// Options of `etcd-secrets`.
#[derive(clap::Args, Clone, Debug)]
pub struct EtcdSecretsArgs {
    /// The namespace of etcd and the server; the one the Job runs in when unset.
    #[arg(long)]
    pub namespace: Option<String>,
    /// The headless Service of the etcd StatefulSet (and the StatefulSet's name).
    #[arg(long, default_value = "etcd")]
    pub etcd_service: String,
    /// The server's name (its client certificate's common name).
    #[arg(long, default_value = "farm-apiserver")]
    pub service: String,
    /// The Secret of the server's client certificate.
    #[arg(long, default_value = ETCD_CLIENT_SECRET_NAME)]
    pub client_secret: String,
    /// Days a CA is valid.
    #[arg(long, default_value_t = 365)]
    pub ca_validity_days: u32,
    /// Days a member's or the server's certificate is valid; renewed after two thirds.
    #[arg(long, default_value_t = 90)]
    pub validity_days: u32,
    /// Start a CA rotation now: a new CA joins the bundle, and the runs that follow make it
    /// sign as soon as every member trusts it.
    #[arg(long, env = "FARM_ROTATE_CA")]
    pub rotate_ca: bool,
    /// Seconds a new CA is in the bundle before it may sign: a kubelet updates a mounted
    /// Secret within its sync period (a minute by default), and the server rereads its files
    /// every 10 s.
    #[arg(long, env = "FARM_SETTLE_SECONDS", default_value_t = 300)]
    pub settle_seconds: i64,
}

/// Errors of `etcd-secrets`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cluster's configuration could not be read, or a request failed (a conflict with
    /// another run included: the Job runs again).
    #[error("the cluster: {0}")]
    Cluster(#[from] kube::Error),
    /// Certificates could not be made.
    #[error(transparent)]
    Tls(#[from] tls::Error),
    /// The kept CA is unusable.
    #[error("Secret {0} holds no usable CA ({1}): delete it to make a new one")]
    Ca(String, String),
}

/// The cluster objects a run reads and writes.
struct Cluster<'a> {
    secrets: Api<Secret>,
    statefulsets: Api<StatefulSet>,
    namespace: String,
    args: &'a EtcdSecretsArgs,
}

/// Makes what is missing and renews what falls due; returns what it did, a line each.
pub async fn run(args: &EtcdSecretsArgs) -> Result<Vec<String>, Error> {
    let client = kube::Client::try_default().await?;
    let namespace = args.namespace.clone().unwrap_or_else(|| client.default_namespace().to_string());
    let cluster = Cluster {
        secrets: Api::namespaced(client.clone(), &namespace),
        statefulsets: Api::namespaced(client, &namespace),
        namespace,
        args,
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let now = i64::try_from(now).unwrap_or(i64::MAX);
    let mut done = Vec::new();
    let authority = cluster.authority(now, &mut done).await?;
    let bundle = authority.bundle();
    // A CA the members do not trust yet (a rotation, or a new CA after the signing one expired)
    // needs them restarted.
    let mut restart = authority.next.is_some();
    let members = format!("{}-certs", args.etcd_service);
    for (name, subject, usage) in cluster.leaves() {
        let kept = cluster.secrets.get_opt(&name).await?;
        restart |= name == members && kept.as_ref().is_some_and(|k| contents::gains_a_ca(k, &authority));
        let leaf = match kept.as_ref().and_then(contents::leaf_of) {
            Some(leaf) if !plan::leaf_due(now, &leaf.facts, &authority.signer, &subject.1) => leaf,
            _ => {
                done.push(format!("a new certificate for secret/{name}"));
                let length = days(args.validity_days);
                plan::issue(now, &authority.signer, (&subject.0, &subject.1), usage, length)?
            }
        };
        let data = contents::leaf_data(&leaf, &bundle);
        cluster.write(&name, kept, data, Some("kubernetes.io/tls"), &mut done).await?;
    }
    if restart {
        cluster.restart_members(&bundle, &mut done).await?;
    }
    Ok(done)
}

impl Cluster<'_> {
    /// The CA Secret's CAs, refreshed, promoted when due, and written.
    async fn authority(&self, now: i64, done: &mut Vec<String>) -> Result<Authority, Error> {
        let name = format!("{}-ca", self.args.etcd_service);
        let kept = self.secrets.get_opt(&name).await?;
        let current = match &kept {
            Some(secret) => Some(contents::authority_of(secret).map_err(|reason| Error::Ca(name.clone(), reason))?),
            None => self.adopted_ca(done).await?,
        };
        let policy = AuthorityPolicy { ca_name: name.clone(), ca_validity: days(self.args.ca_validity_days) };
        let mut changes = Vec::new();
        let mut authority = plan::refresh(now, current.as_ref(), self.args.rotate_ca, &policy, &mut changes)?;
        done.extend(changes.drain(..).map(str::to_string));
        if let Some(next) = &authority.next {
            let settled = plan::made_at(next, &policy) + self.args.settle_seconds - now;
            match settled > 0 {
                true => done.push(format!("the new CA signs in {settled} s at the earliest (mounted Secrets update)")),
                false => match self.every_member_trusts(now, &authority).await? {
                    Ok(line) => {
                        done.push(line);
                        authority.promote(&mut changes);
                    }
                    Err(why) => done.push(format!("the new CA does not sign yet: {why}")),
                },
            }
        }
        done.extend(changes.iter().map(|change| change.to_string()));
        self.write(&name, kept, authority.to_data(), None, done).await?;
        Ok(authority)
    }

    /// The CA that the chart's first versions kept in the members' Secret (`ca.crt`, `ca.key`),
    /// taken over, so that an upgrade keeps the certificates the members trust.
    async fn adopted_ca(&self, done: &mut Vec<String>) -> Result<Option<Authority>, Error> {
        let member = format!("{}-certs", self.args.etcd_service);
        let Some(secret) = self.secrets.get_opt(&member).await? else { return Ok(None) };
        if !secret.data.as_ref().is_some_and(|d| d.contains_key("ca.key")) {
            return Ok(None);
        }
        let authority = contents::authority_of(&secret).map_err(|reason| Error::Ca(member.clone(), reason))?;
        done.push(format!("took over the CA of secret/{member}"));
        Ok(Some(authority))
    }

    /// Whether every member of the StatefulSet accepts a client certificate of the next CA on
    /// its client and peer ports: `Ok(Err(why))` when one does not (yet).
    async fn every_member_trusts(&self, now: i64, authority: &Authority) -> Result<Result<String, String>, Error> {
        let Some(next) = &authority.next else { return Ok(Err("no rotation under way".into())) };
        let service = &self.args.etcd_service;
        let Some(members) = self.statefulsets.get_opt(service).await? else {
            return Ok(Err(format!("no statefulset/{service}")));
        };
        let replicas = members.spec.replicas.unwrap_or(1);
        let subject = ("etcd-secrets-probe", &[][..]);
        let probe = plan::issue(now, next, subject, tls::Usage::Client, Duration::from_secs(600))?;
        let client = tls::Certs { ca_pem: String::new(), cert_pem: probe.cert_pem, key_pem: probe.key_pem };
        let bundle = authority.bundle();
        for member in 0..replicas {
            let host = format!("{service}-{member}.{service}.{}.svc", self.namespace);
            for port in PORTS {
                let answer = probe::answers_with_client_certificate(&host, port, "/version", &bundle, &client).await;
                if let Err(why) = answer {
                    return Ok(Err(format!("{host}:{port} does not accept it: {why}")));
                }
            }
        }
        Ok(Ok(format!("all {replicas} members accept the new CA on ports {PORTS:?}")))
    }

    /// The leaf Secrets: name, common name and names, usage.
    fn leaves(&self) -> [(String, (String, Vec<String>), tls::Usage); 2] {
        let (etcd, service) = (&self.args.etcd_service, &self.args.service);
        let names = certs::etcd_member_names(etcd, &self.namespace);
        [
            (format!("{etcd}-certs"), (etcd.clone(), names), tls::Usage::ServerAndClient),
            (self.args.client_secret.clone(), (service.clone(), Vec::new()), tls::Usage::Client),
        ]
    }

    /// Creates or updates the Secret `name` (`kept` as read) to hold `data`; a conflict with
    /// another run fails this one.
    async fn write(
        &self,
        name: &str,
        kept: Option<Secret>,
        data: BTreeMap<String, ByteString>,
        type_: Option<&str>,
        done: &mut Vec<String>,
    ) -> Result<(), Error> {
        match kept {
            Some(secret) if secret.data.as_ref() == Some(&data) => done.push(format!("kept secret/{name}")),
            Some(secret) => {
                let secret = Secret { data: Some(data), ..secret };
                self.secrets.replace(name, &PostParams::default(), &secret).await?;
                done.push(format!("updated secret/{name}"));
            }
            None => {
                let files: Vec<(String, String)> =
                    data.iter().map(|(k, v)| (k.clone(), String::from_utf8_lossy(&v.0).into_owned())).collect();
                let files: Vec<(&str, &String)> = files.iter().map(|(k, v)| (k.as_str(), v)).collect();
                let app = if name == self.args.client_secret { self.args.service.as_str() } else { "etcd" };
                let mut secret = certs::pem_secret(name, &self.namespace, app, &files);
                secret.type_ = type_.map(str::to_string);
                self.secrets.create(&PostParams::default(), &secret).await?;
                done.push(format!("created secret/{name}"));
            }
        }
        Ok(())
    }

    /// Makes the members load `bundle`: the StatefulSet's Pods are replaced one at a time when
    /// their template does not carry its digest yet.
    async fn restart_members(&self, bundle: &str, done: &mut Vec<String>) -> Result<(), Error> {
        use sha2::Digest;
        let name = &self.args.etcd_service;
        let digest: String = sha2::Sha256::digest(bundle.as_bytes())[..8].iter().map(|b| format!("{b:02x}")).collect();
        let Some(members) = self.statefulsets.get_opt(name).await? else { return Ok(()) };
        let template = members.spec.template.metadata.and_then(|m| m.annotations);
        if template.and_then(|a| a.get(TRUST_ANNOTATION).cloned()).as_deref() == Some(digest.as_str()) {
            return Ok(());
        }
        let patch =
            serde_json::json!({"spec": {"template": {"metadata": {"annotations": {TRUST_ANNOTATION: digest}}}}});
        self.statefulsets.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        done.push(format!("restarting the members of statefulset/{name} one at a time: they load the new bundle"));
        Ok(())
    }
}

fn days(days: u32) -> Duration {
    Duration::from_secs(u64::from(days) * 86_400)
}
