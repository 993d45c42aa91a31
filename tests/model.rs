//! Model-based test of list/watch under concurrency: writer tasks create, patch and delete random
//! llamas while watchers start at random resourceVersions and pagers page through the
//! collection. Every acknowledged write is recorded with its resourceVersion; the model is their
//! sequence in resourceVersion order. Each watcher must see exactly the model's events after its
//! start, in order, with no gap and no duplicate; every paging must return each stable object
//! exactly once. The seed is printed, and `MODEL_SEED` replays a run.

mod common;

use common::{Backend, Server, WatchStream, llama, llama_path, llamas, rv};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const NS: &str = "model";
const WRITERS: usize = 4;
const OPS_PER_WRITER: usize = 120;
const CHURN_NAMES: usize = 12;
const STABLE: usize = 25;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Write {
    rv: u64,
    kind: &'static str,
    name: String,
}

async fn writer(s: Arc<Server>, seed: u64, log: Arc<Mutex<Vec<Write>>>, counter: Arc<std::sync::atomic::AtomicU64>) {
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..OPS_PER_WRITER {
        let name = format!("churn-{}", rng.random_range(0..CHURN_NAMES));
        let (kind, response) = match rng.random_range(0..3) {
            0 => ("ADDED", s.client.post(s.url(&llamas(NS))).json(&llama(&name, 1.0, 1.0)).send().await.unwrap()),
            1 => {
                // A unique weight, so every acknowledged patch is a real change and an event.
                let weight = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 2;
                let patch = json!({"spec": {"weight": weight}}).to_string();
                let r = s
                    .client
                    .patch(s.url(&llama_path(NS, &name)))
                    .header("content-type", "application/merge-patch+json")
                    .body(patch)
                    .send()
                    .await
                    .unwrap();
                ("MODIFIED", r)
            }
            _ => ("DELETED", s.client.delete(s.url(&llama_path(NS, &name))).send().await.unwrap()),
        };
        let code = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        match code {
            200 | 201 => log.lock().unwrap().push(Write { rv: rv(&body), kind, name }),
            404 | 409 => {}
            other => panic!("unexpected {other}: {body}"),
        }
    }
}

/// Reads a watch until it has seen an event at `last` (or later); returns `(rv, type, name)`s.
async fn collect(mut w: WatchStream, last: u64) -> Vec<Write> {
    let mut out = Vec::new();
    while out.last().is_none_or(|e: &Write| e.rv < last) {
        let e = w.next_within(Duration::from_secs(10)).await.expect("the watch ended early");
        let kind = match e["type"].as_str().unwrap() {
            "ADDED" => "ADDED",
            "MODIFIED" => "MODIFIED",
            "DELETED" => "DELETED",
            "BOOKMARK" => continue,
            other => panic!("unexpected event {other}: {e}"),
        };
        out.push(Write { rv: rv(&e["object"]), kind, name: e["object"]["metadata"]["name"].as_str().unwrap().into() });
    }
    out
}

/// The model's state (name → rv) after applying every write up to `rv`.
fn state_at(model: &[Write], rv: u64) -> BTreeMap<String, u64> {
    let mut state = BTreeMap::new();
    for w in model.iter().filter(|w| w.rv <= rv) {
        if w.kind == "DELETED" {
            state.remove(&w.name);
        } else {
            state.insert(w.name.clone(), w.rv);
        }
    }
    state
}

#[rstest::rstest]
#[case::memory(Backend::Memory)]
#[case::etcd(Backend::Etcd)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn watchers_see_exactly_the_acknowledged_writes_and_pages_never_lose_stable_objects(#[case] backend: Backend) {
    let seed: u64 = std::env::var("MODEL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    println!("MODEL_SEED={seed}");
    let s = Arc::new(Server::start_on(backend).await);
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut stable = BTreeSet::new();
    for i in 0..STABLE {
        let name = format!("stable-{i:02}");
        let r = s.client.post(s.url(&llamas(NS))).json(&llama(&name, 1.0, 1.0)).send().await.unwrap();
        let body: Value = r.json().await.unwrap();
        log.lock().unwrap().push(Write { rv: rv(&body), kind: "ADDED", name: name.clone() });
        stable.insert(name);
    }
    let counter = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|i| tokio::spawn(writer(s.clone(), seed.wrapping_add(i as u64), log.clone(), counter.clone())))
        .collect();

    // Watchers start at random acknowledged resourceVersions while the writers run; streaming
    // lists (sendInitialEvents) start at whatever the state is.
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let mut resumed = Vec::new();
    let mut streaming = Vec::new();
    let mut pagings = Vec::new();
    for round in 0..8 {
        // Pacing, not synchronisation: the writers run on meanwhile, so each watcher starts at a
        // different point of the history.
        tokio::time::sleep(Duration::from_millis(rng.random_range(5..40))).await;
        let known: Vec<u64> = log.lock().unwrap().iter().map(|w| w.rv).collect();
        let start = known[rng.random_range(0..known.len())];
        resumed
            .push((start, WatchStream::open(&s, &format!("{}?watch=true&resourceVersion={start}", llamas(NS))).await));
        if round % 2 == 0 {
            let path = format!(
                "{}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
                llamas(NS)
            );
            streaming.push(WatchStream::open(&s, &path).await);
        }
        // Page through the collection during the writes.
        let mut seen = Vec::new();
        let mut path = format!("{}?limit=7", llamas(NS));
        loop {
            let page: Value = s.client.get(s.url(&path)).send().await.unwrap().json().await.unwrap();
            seen.extend(
                page["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()),
            );
            match page["metadata"]["continue"].as_str() {
                Some(token) => path = format!("{}?limit=7&continue={token}", llamas(NS)),
                None => break,
            }
        }
        pagings.push(seen);
    }
    for w in writers {
        w.await.unwrap();
    }
    let mut model = log.lock().unwrap().clone();
    model.sort();
    let last = model.last().unwrap().rv;
    assert!(model.windows(2).all(|w| w[0].rv < w[1].rv), "each acknowledged write has its own resourceVersion");

    for (start, w) in resumed {
        let got = collect(w, last).await;
        let want: Vec<Write> = model.iter().filter(|w| w.rv > start).cloned().collect();
        assert_eq!(got, want, "watcher from {start} (MODEL_SEED={seed})");
    }
    for mut w in streaming {
        let mut initial = BTreeMap::new();
        let start = loop {
            let e = w.next().await.expect("initial events");
            if e["type"] == "BOOKMARK" {
                assert_eq!(e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
                break rv(&e["object"]);
            }
            assert_eq!(e["type"], "ADDED");
            initial.insert(e["object"]["metadata"]["name"].as_str().unwrap().to_string(), rv(&e["object"]));
        };
        assert_eq!(
            initial,
            state_at(&model, start),
            "initial events are the state at the bookmark (MODEL_SEED={seed})"
        );
        if start < last {
            let got = collect(w, last).await;
            let want: Vec<Write> = model.iter().filter(|w| w.rv > start).cloned().collect();
            assert_eq!(got, want, "streaming watcher from {start} (MODEL_SEED={seed})");
        }
    }
    for seen in pagings {
        let unique: BTreeSet<&String> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "no object twice in one paging: {seen:?}");
        for name in &stable {
            assert_eq!(seen.iter().filter(|n| *n == name).count(), 1, "{name} exactly once (MODEL_SEED={seed})");
        }
    }
}
