//! A client this project did not write: kube-rs's `watcher` and `reflector`, configured from the
//! standalone server's kubeconfig, follow creates, updates and deletes and stay in sync across a
//! forced 410 (a stalled watch overflows its buffer, the history is too short to resume from, the
//! watcher re-lists). Both initial-list strategies are exercised: list-then-watch and streaming lists,
//! each with Llamas in memory and in etcd (where a compaction makes the history too short).

mod common;

use common::{Backend, Server};
use farm_apiserver::resources::llama::{Llama, LlamaSpec};
use futures::{Stream, StreamExt};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{reflector, watcher};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn llama(name: &str, padding: usize) -> Llama {
    let mut l = Llama::new(name, LlamaSpec { weight: 10.0, height: 20.0, color: None });
    if padding > 0 {
        l.metadata.annotations = Some(BTreeMap::from([("padding".to_string(), "x".repeat(padding))]));
    }
    l
}

fn state(objects: impl IntoIterator<Item = std::sync::Arc<Llama>>) -> BTreeMap<String, String> {
    objects
        .into_iter()
        .map(|o| (o.metadata.name.clone().unwrap(), o.metadata.resource_version.clone().unwrap()))
        .collect()
}

/// Polls the watcher stream until the reflector's store equals the server's list.
async fn pump_until_synced<S>(stream: &mut S, reader: &reflector::Store<Llama>, api: &Api<Llama>, inits: &mut usize)
where
    S: Stream<Item = Result<watcher::Event<Llama>, watcher::Error>> + Unpin,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    let want = state(api.list(&Default::default()).await.unwrap().items.into_iter().map(std::sync::Arc::new));
    loop {
        if state(reader.state()) == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the reflector never caught up:\n got {:?}\nwant {want:?}",
            state(reader.state())
        );
        if let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(500), stream.next()).await
            && let Ok(watcher::Event::Init) = event
        {
            *inits += 1;
        }
    }
}

async fn follows_changes_and_survives_a_forced_410(backend: Backend, streaming: bool) {
    let s = Server::start_isolated(backend, &["--watch-history-size", "5", "--watch-buffer-size", "4"]).await;
    let api: Api<Llama> = Api::namespaced(s.kube_client().await, "default");
    let (reader, writer) = reflector::store::<Llama>();
    let config = if streaming { watcher::Config::default().streaming_lists() } else { watcher::Config::default() };
    let mut stream = reflector::reflector(writer, watcher(api.clone(), config)).boxed();
    let mut inits = 0;

    for name in ["a", "b", "c"] {
        api.create(&PostParams::default(), &llama(name, 0)).await.unwrap();
    }
    pump_until_synced(&mut stream, &reader, &api, &mut inits).await;
    assert_eq!(reader.state().len(), 3);
    assert_eq!(inits, 1);

    let patch = serde_json::json!({"spec": {"weight": 99.0}});
    api.patch("a", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    pump_until_synced(&mut stream, &reader, &api, &mut inits).await;
    let a = reader.state().into_iter().find(|o| o.metadata.name.as_deref() == Some("a")).unwrap();
    assert_eq!(a.spec.weight, 99.0);
    assert_eq!(inits, 1, "no re-list yet");

    // Stall: write a burst without reading the watch. The server drops the stalled watcher and
    // the history (5 events) is too short to resume from, so the re-watch gets 410 and re-lists.
    for i in 0..80 {
        api.create(&PostParams::default(), &llama(&format!("burst-{i}"), 200_000)).await.unwrap();
    }
    s.expire_history().await;
    pump_until_synced(&mut stream, &reader, &api, &mut inits).await;
    assert_eq!(reader.state().len(), 82);
    assert!(inits >= 2, "the watcher re-listed after the 410 (inits: {inits})");

    api.delete("c", &DeleteParams::default()).await.unwrap();
    pump_until_synced(&mut stream, &reader, &api, &mut inits).await;
    assert_eq!(reader.state().len(), 81);
}

#[rstest::rstest]
#[case::memory(Backend::Memory)]
#[case::etcd(Backend::Etcd)]
#[tokio::test]
async fn kube_rs_watcher_with_list_then_watch_stays_in_sync(#[case] backend: Backend) {
    follows_changes_and_survives_a_forced_410(backend, false).await;
}

#[rstest::rstest]
#[case::memory(Backend::Memory)]
#[case::etcd(Backend::Etcd)]
#[tokio::test]
async fn kube_rs_watcher_with_streaming_lists_stays_in_sync(#[case] backend: Backend) {
    follows_changes_and_survives_a_forced_410(backend, true).await;
}
