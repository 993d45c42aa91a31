//! Cluster objects the server keeps in memory (Namespaces, admission's webhook configurations,
//! policies, their bindings and params), each kind by a kube-rs reflector that runs until the
//! server stops and says in the log what RBAC rule is missing when the cluster forbids watching
//! it, and what waits meanwhile.

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::reflector::{Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use std::hash::Hash;
use tokio_util::sync::CancellationToken;

/// What a reflector is for: what waits while it cannot list (for the log), and whether its
/// objects keep the managed fields most readers never need (a policy's params keep them: an
/// expression may read them).
#[derive(Clone, Copy)]
pub struct Purpose {
    /// What waits until the objects are listed (`writes that admission may apply to are
    /// refused`), and how to do without them (a flag).
    pub waiting: &'static str,
    /// Whether the objects keep their managed fields.
    pub keep_managed_fields: bool,
}

/// Starts a reflector over `api` until `stopping` is cancelled; `on_event` runs after each event
/// has reached the store.
pub fn reflect<K>(
    api: Api<K>,
    dynamic: K::DynamicType,
    stopping: CancellationToken,
    purpose: Purpose,
    on_event: impl Fn() + Send + 'static,
) -> Store<K>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let plural = K::plural(&dynamic).to_string();
    let group = K::group(&dynamic).to_string();
    let writer = Writer::new(dynamic);
    let reader = writer.as_reader();
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(move |object| {
            if !purpose.keep_managed_fields {
                object.meta_mut().managed_fields = None;
            }
        })
        .reflect(writer);
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        loop {
            let event = tokio::select! {
                () = stopping.cancelled() => return,
                event = stream.next() => event,
            };
            match event {
                Some(Ok(_)) => on_event(),
                Some(Err(err)) => tracing::warn!("{}; retrying", explain(&group, &plural, &err, purpose.waiting)),
                None => return,
            }
        }
    });
    reader
}

/// Why watching `plural` of `group` failed, with what to grant when RBAC forbids it and what
/// waits meanwhile.
fn explain(group: &str, plural: &str, err: &watcher::Error, waiting: &str) -> String {
    let forbidden = match err {
        watcher::Error::InitialListFailed(e) | watcher::Error::WatchStartFailed(e) | watcher::Error::WatchFailed(e) => {
            matches!(e, kube::Error::Api(status) if status.code == 403)
        }
        _ => false,
    };
    if forbidden {
        format!(
            "RBAC forbids the server to list or watch {plural}: {err}; {waiting}. Grant its ServiceAccount a \
             ClusterRole with the rule {{apiGroups: [\"{group}\"], resources: [\"{plural}\"], verbs: [\"get\", \
             \"list\", \"watch\"]}} (manifests/base/rbac.yaml has it)"
        )
    } else {
        format!("watching {plural} failed: {err}")
    }
}
