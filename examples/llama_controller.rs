//! An example controller for Llamas, written with kube-runtime as an operator author would write
//! one against this server: for every llama it writes `status.observedGeneration` and a `Ready`
//! condition through the `status` subresource, with server-side apply (`Patch::Apply`, field
//! manager `llama-controller`), so `kubectl wait --for=condition=Ready llama/<name>` returns.
//!
//! ```sh
//! make run &                                             # the standalone server, ./farm.kubeconfig
//! KUBECONFIG=farm.kubeconfig cargo run --example llama_controller
//! ```

use farm_apiserver::resources::llama::{Llama, LlamaStatus};
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use std::sync::Arc;
use std::time::Duration;

/// The field manager of the controller's status writes.
pub const MANAGER: &str = "llama-controller";

/// The Ready condition for `llama`, keeping the previous transition time while it stays True.
fn ready(llama: &Llama) -> Condition {
    let generation = llama.meta().generation;
    let previous = llama.status.iter().flat_map(|s| &s.conditions).find(|c| c.type_ == "Ready");
    let since = match previous {
        Some(c) if c.status == "True" => c.last_transition_time.clone(),
        _ => Time(k8s_openapi::jiff::Timestamp::now()),
    };
    Condition {
        type_: "Ready".into(),
        status: "True".into(),
        reason: "Observed".into(),
        message: format!("{} kg, {} cm", llama.spec.weight, llama.spec.height),
        last_transition_time: since,
        observed_generation: generation,
    }
}

/// Brings one llama's status up to date with its spec.
async fn reconcile(llama: Arc<Llama>, client: Arc<kube::Client>) -> Result<Action, kube::Error> {
    let generation = llama.meta().generation;
    let current = llama.status.as_ref().and_then(|s| s.observed_generation);
    if current.is_some() && current == generation {
        return Ok(Action::await_change());
    }
    let api: Api<Llama> = Api::namespaced((*client).clone(), &llama.namespace().unwrap_or_default());
    let status = LlamaStatus { observed_generation: generation, conditions: vec![ready(&llama)] };
    let patch = serde_json::json!({"apiVersion": "farm.example.com/v1alpha", "kind": "Llama", "status": status});
    api.patch_status(&llama.name_any(), &PatchParams::apply(MANAGER).force(), &Patch::Apply(patch)).await?;
    Ok(Action::await_change())
}

fn retry(_: Arc<Llama>, error: &kube::Error, _: Arc<kube::Client>) -> Action {
    eprintln!("llama-controller: {error}; retrying in 2s");
    Action::requeue(Duration::from_secs(2))
}

/// Runs the controller over every namespace's llamas until the watch ends.
pub async fn run(client: kube::Client) {
    let llamas: Api<Llama> = Api::all(client.clone());
    Controller::new(llamas, watcher::Config::default())
        .run(reconcile, retry, Arc::new(client))
        .for_each(|result| async move {
            match result {
                Ok((object, _)) => eprintln!("llama-controller: reconciled {object}"),
                Err(error) => eprintln!("llama-controller: {error}"),
            }
        })
        .await;
}

#[cfg(not(test))]
#[tokio::main]
async fn main() -> Result<(), kube::Error> {
    run(kube::Client::try_default().await?).await;
    Ok(())
}
