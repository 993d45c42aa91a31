//! Faults of etcd under load: a three-member etcd cluster on loopback, two replicas writing and
//! watching through it, and the etcd leader killed with SIGKILL in the middle.

mod common;

use common::etcd::{EtcdCluster, unique_prefix};
use common::{Server, get_json, llama, llamas};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What one writer did: the names acknowledged (201), with when, and the failures.
#[derive(Default)]
struct Written {
    acknowledged: Vec<(String, Instant)>,
    failures: usize,
}

/// Creates `w<writer>-<i>` llamas through `collection` until `stop`, one at a time.
async fn write(client: reqwest::Client, collection: String, writer: usize, stop: Arc<AtomicBool>) -> Written {
    let mut written = Written::default();
    for i in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let name = format!("w{writer}-{i}");
        let sent = client.post(&collection).json(&llama(&name, 1.0, 1.0)).timeout(Duration::from_secs(5)).send().await;
        match sent.map(|r| r.status().as_u16()) {
            Ok(201) => written.acknowledged.push((name, Instant::now())),
            // 503 while etcd elects a leader, a timeout, or 409 for a retry of a create that
            // committed but was not acknowledged: none of these is an acknowledgement.
            _ => {
                written.failures += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    written
}

/// What one watcher saw: `(type, name, resourceVersion)` of every event, in order, and how many
/// times it had to re-watch or re-list.
#[derive(Default)]
struct Seen {
    events: Vec<(String, String, u64)>,
    rewatches: usize,
    relists: usize,
}

/// Watches `collection` from `from`, re-watching from the last revision seen when the stream
/// ends and re-listing on 410 (recording the re-listed objects as `ADDED`), until it has seen
/// the creation of every name in `until` (set when the writes are over).
async fn watch(
    client: reqwest::Client,
    collection: String,
    from: u64,
    until: Arc<tokio::sync::OnceCell<BTreeSet<String>>>,
) -> Seen {
    let mut seen = Seen::default();
    let mut revision = from;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let url = format!("{collection}?watch=true&allowWatchBookmarks=true&resourceVersion={revision}");
        let Ok(mut response) = client.get(&url).send().await else {
            seen.rewatches += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let mut buffer = Vec::new();
        loop {
            let chunk = match tokio::time::timeout(Duration::from_millis(500), response.chunk()).await {
                Ok(Ok(Some(chunk))) => chunk,
                Ok(_) => break,
                Err(_) if done(&seen, &until) => return seen,
                Err(_) => {
                    assert!(Instant::now() < deadline, "the watcher never saw every creation");
                    continue;
                }
            };
            buffer.extend_from_slice(&chunk);
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let event: Value = serde_json::from_slice(&line).expect("a JSON watch frame");
                let kind = event["type"].as_str().unwrap_or_default().to_string();
                if kind == "ERROR" {
                    assert_eq!(event["object"]["code"], 410, "{event}");
                    revision = relist(&client, &collection, &mut seen).await;
                    break;
                }
                let rv: u64 = event["object"]["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
                revision = revision.max(rv);
                if kind != "BOOKMARK" {
                    seen.events.push((kind, event["object"]["metadata"]["name"].as_str().unwrap().to_string(), rv));
                }
            }
            if done(&seen, &until) {
                return seen;
            }
        }
        if done(&seen, &until) {
            return seen;
        }
        assert!(Instant::now() < deadline, "the watcher never saw every creation");
        seen.rewatches += 1;
    }
}

fn done(seen: &Seen, until: &tokio::sync::OnceCell<BTreeSet<String>>) -> bool {
    until.get().is_some_and(|names| {
        let added: BTreeSet<&String> = seen.events.iter().filter(|(k, _, _)| k == "ADDED").map(|(_, n, _)| n).collect();
        names.iter().all(|n| added.contains(n))
    })
}

/// Lists `collection`, records its objects as `ADDED` (a watcher's relist), and returns its revision.
async fn relist(client: &reqwest::Client, collection: &str, seen: &mut Seen) -> u64 {
    seen.relists += 1;
    let list: Value = client.get(collection).send().await.unwrap().json().await.unwrap();
    for item in list["items"].as_array().unwrap() {
        let rv = item["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
        seen.events.push(("ADDED".into(), item["metadata"]["name"].as_str().unwrap().to_string(), rv));
    }
    list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_etcd_leader_under_load_loses_no_write_and_no_event() {
    let mut cluster = EtcdCluster::start(3);
    let prefix = unique_prefix();
    let replicas = [
        Server::start_on_endpoints(&cluster.endpoints(), &prefix, &[]).await,
        Server::start_on_endpoints(&cluster.endpoints(), &prefix, &[]).await,
    ];
    let (_, list) = get_json(&replicas[0], &llamas("default")).await;
    let from: u64 = list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    let until = Arc::new(tokio::sync::OnceCell::new());
    let watchers: Vec<_> = replicas
        .iter()
        .map(|s| tokio::spawn(watch(s.client.clone(), s.url(&llamas("default")), from, until.clone())))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let s = &replicas[w % 2];
            tokio::spawn(write(s.client.clone(), s.url(&llamas("default")), w, stop.clone()))
        })
        .collect();

    tokio::time::sleep(Duration::from_secs(2)).await;
    let leader = cluster.leader().await;
    let killed_at = Instant::now();
    cluster.members[leader].kill_hard();
    tokio::time::sleep(Duration::from_secs(8)).await;
    stop.store(true, Ordering::Relaxed);
    let mut acknowledged = BTreeSet::new();
    let mut times = vec![killed_at];
    let mut failures = 0;
    for writer in writers {
        let written = writer.await.unwrap();
        failures += written.failures;
        times.extend(written.acknowledged.iter().map(|(_, at)| *at).filter(|at| *at > killed_at));
        acknowledged.extend(written.acknowledged.into_iter().map(|(name, _)| name));
    }
    // The longest time after the kill without any acknowledged write.
    times.sort();
    assert!(times.len() > 1, "no write was acknowledged after the leader was killed");
    let paused = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or_default();
    cluster.members[leader].restart();

    let (_, list) = get_json(&replicas[1], &llamas("default")).await;
    let stored: BTreeMap<String, u64> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["metadata"]["name"].as_str().unwrap().to_string(), common::rv(i)))
        .collect();
    let lost: Vec<&String> = acknowledged.iter().filter(|n| !stored.contains_key(*n)).collect();
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
    let _ = until.set(stored.keys().cloned().collect());
    for (watcher, s) in watchers.into_iter().zip(["A", "B"]) {
        let seen = watcher.await.unwrap();
        let revisions: Vec<u64> = seen.events.iter().map(|(_, _, rv)| *rv).collect();
        if seen.relists == 0 {
            assert!(revisions.windows(2).all(|w| w[0] < w[1]), "watcher on {s}: events out of order or repeated");
        }
        let mut added = BTreeMap::new();
        for (_, name, rv) in seen.events.iter().filter(|(k, _, _)| k == "ADDED") {
            *added.entry(name.clone()).or_insert(0) += usize::from(stored.get(name) == Some(rv));
        }
        // After a re-list, objects listed again are seen twice; none may be missing.
        let wrong: Vec<_> = stored
            .keys()
            .filter(|n| match added.get(*n) {
                Some(1) => false,
                Some(_) => seen.relists == 0,
                None => true,
            })
            .collect();
        assert!(wrong.is_empty(), "watcher on {s}: creations not seen exactly once: {wrong:?}");
        println!(
            "watcher on {s}: {} events, {} re-watches, {} re-lists",
            seen.events.len(),
            seen.rewatches,
            seen.relists
        );
    }
    println!(
        "leader m{leader} killed: {} writes acknowledged ({} stored), {failures} refused or timed out, writes paused for at most {:.1} s",
        acknowledged.len(),
        stored.len(),
        paused.as_secs_f64()
    );
    assert!(paused < Duration::from_secs(10), "no write acknowledged for {paused:?}");
}

/// A TCP proxy on a loopback port that can be cut (every connection closed, new ones refused)
/// and restored: a replica behind it loses etcd while the rest of the cluster goes on.
struct Proxy {
    /// `http://127.0.0.1:PORT`
    endpoint: String,
    open: Arc<AtomicBool>,
    cuts: tokio::sync::watch::Sender<u64>,
}

impl Proxy {
    async fn to(target: &str) -> Self {
        let target = target.trim_start_matches("http://").to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let open = Arc::new(AtomicBool::new(true));
        let (cuts, _) = tokio::sync::watch::channel(0);
        let (accepting, cut) = (open.clone(), cuts.subscribe());
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if !accepting.load(Ordering::SeqCst) {
                    continue;
                }
                let (target, mut cut) = (target.clone(), cut.clone());
                // Only a cut after this connection was accepted ends it.
                cut.borrow_and_update();
                tokio::spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(&target).await else { return };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        Self { endpoint, open, cuts }
    }

    fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        self.cuts.send_modify(|n| *n += 1);
    }

    fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_cache_behind_a_compaction_relists_and_its_lagging_watchers_get_410() {
    let cluster = EtcdCluster::start(3);
    let proxy = Proxy::to(&cluster.members[2].endpoint).await;
    let prefix = unique_prefix();
    let a = Server::start_on_endpoints(&cluster.endpoints(), &prefix, &[]).await;
    let b = Server::start_on_endpoints(&proxy.endpoint, &prefix, &[]).await;
    let r = a.client.post(a.url(&llamas("default"))).json(&llama("first", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let first = common::rv(&r.json().await.unwrap());
    let (code, _) = get_json(&b, &common::llama_path("default", "first")).await;
    assert_eq!(code, 200, "B has caught up");
    let from_first = format!("{}?watch=true&resourceVersion={first}", llamas("default"));
    let mut watch = common::WatchStream::open(&b, &from_first).await;

    // B loses etcd; twenty writes and a compaction happen without it.
    proxy.cut();
    for i in 0..20 {
        let r = a.client.post(a.url(&llamas("default"))).json(&llama(&format!("l{i}"), 1.0, 1.0)).send().await.unwrap();
        assert_eq!(r.status(), 201);
    }
    let (code, _) = get_json(&b, &llamas("default")).await;
    assert_eq!(code, 503, "a consistent read through B is refused while B cannot reach etcd, never stale");
    cluster.compact(2).await;
    proxy.restore();

    // B's cache cannot resume its watch: it lists again and ends its watchers, who come back
    // with their last resourceVersion, now before the cache's window: 410, then a clean relist.
    assert!(watch.next_within(Duration::from_secs(20)).await.is_none(), "B's watchers are ended");
    // A re-watch that lands on the old window just before the relist replaces it is ended
    // without events too; a client then watches again, as this one does.
    let mut event = None;
    for _ in 0..10 {
        let mut again = common::WatchStream::open(&b, &from_first).await;
        event = again.next_within(Duration::from_secs(5)).await;
        if event.is_some() {
            break;
        }
    }
    let event = event.expect("an ERROR event");
    assert_eq!(event["type"], "ERROR", "{event}");
    common::assert_status(&event["object"], 410, "Expired");
    for query in ["", "?resourceVersion=0"] {
        let (code, list) = get_json(&b, &format!("{}{query}", llamas("default"))).await;
        assert_eq!(code, 200);
        assert_eq!(list["items"].as_array().unwrap().len(), 21, "B's list{query} has every llama");
    }
}

#[tokio::test]
async fn a_full_etcd_quota_refuses_writes_with_507_and_keeps_reads_and_deletes() {
    let etcd = common::etcd::Etcd::start_with(&["--quota-backend-bytes", "2097152"]);
    let s = Server::start_on_etcd(&etcd, &unique_prefix(), &[]).await;
    let mut body = llama("x", 1.0, 1.0);
    body["metadata"]["annotations"] = serde_json::json!({"filler": "x".repeat(100 * 1024)});
    let mut stored = Vec::new();
    let refusal = loop {
        let name = format!("l{}", stored.len());
        body["metadata"]["name"] = name.clone().into();
        let r = s.client.post(s.url(&llamas("default"))).json(&body).send().await.unwrap();
        match r.status().as_u16() {
            201 => stored.push(name),
            _ => break r,
        }
        assert!(stored.len() < 200, "2 MiB of quota held 200 llamas of 100 KiB");
    };
    assert_eq!(refusal.status(), 507);
    let status: Value = refusal.json().await.unwrap();
    common::assert_status(&status, 507, "InsufficientStorage");
    assert_eq!(status["message"], "etcdserver: mvcc: database space exceeded");

    // Reads go on, with everything stored before.
    let (code, list) = get_json(&s, &llamas("default")).await;
    assert_eq!(code, 200);
    let names: Vec<&str> =
        list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), stored.len(), "nothing stored was harmed");
    let (code, first) = get_json(&s, &common::llama_path("default", &stored[0])).await;
    assert_eq!((code, first["metadata"]["annotations"]["filler"].as_str().map(str::len)), (200, Some(100 * 1024)));
    // An update is a write too; a delete still frees what it can, and consistent reads see it.
    let r = s
        .client
        .patch(s.url(&common::llama_path("default", &stored[0])))
        .header("content-type", "application/merge-patch+json")
        .body(r#"{"spec":{"weight":2}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 507);
    let r = s.client.delete(s.url(&common::llama_path("default", &stored[0]))).send().await.unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    assert_eq!(get_json(&s, &common::llama_path("default", &stored[0])).await.0, 404);
    let (_, list) = get_json(&s, &llamas("default")).await;
    assert_eq!(list["items"].as_array().unwrap().len(), stored.len() - 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_on_an_etcd_follower_reads_every_write_acknowledged_through_the_leader() {
    // A follower applies a committed write only when the leader next tells it the commit index,
    // so B's watch cache (fed by the follower) runs behind A's acknowledgements: every read
    // through B that did not wait for the write marker would be stale.
    let cluster = EtcdCluster::start(3);
    let leader = cluster.leader().await;
    let prefix = unique_prefix();
    let a = Server::start_on_endpoints(&cluster.members[leader].endpoint, &prefix, &[]).await;
    let b = Server::start_on_endpoints(&cluster.members[(leader + 1) % 3].endpoint, &prefix, &[]).await;
    let r = a.client.post(a.url(&llamas("default"))).json(&llama("counter", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let (one, all) = (common::llama_path("default", "counter"), llamas("default"));
    for weight in 2..=100 {
        let r = a
            .client
            .patch(a.url(&one))
            .header("content-type", "application/merge-patch+json")
            .body(format!(r#"{{"spec":{{"weight":{weight}}}}}"#))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let (get, list) = tokio::join!(get_json(&b, &one), get_json(&b, &all));
        assert_eq!(get.1["spec"]["weight"], weight as f64, "a GET through B after write {weight}");
        assert_eq!(list.1["items"][0]["spec"]["weight"], weight as f64, "a LIST through B after write {weight}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_etcd_member_dead_every_request_succeeds_through_the_others() {
    // A dead member's endpoint refuses connections: a request that never reached etcd is sent to
    // another member, and the dead one is left out until it answers again, so clients see no 503.
    let mut cluster = EtcdCluster::start(3);
    let prefix = unique_prefix();
    let s = Server::start_on_endpoints(&cluster.endpoints(), &prefix, &[]).await;
    let leader = cluster.leader().await;
    cluster.members[(leader + 1) % 3].kill_hard();
    let mut failures = Vec::new();
    for i in 0..150 {
        let r = s.client.post(s.url(&llamas("default"))).json(&llama(&format!("l{i}"), 1.0, 1.0)).send().await.unwrap();
        if r.status() != 201 {
            failures.push(format!("create {i}: {}", r.status()));
        }
        let (code, _) = get_json(&s, &common::llama_path("default", &format!("l{i}"))).await;
        if code != 200 {
            failures.push(format!("get {i}: {code}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of 300 requests failed with one of three members dead: {failures:?}",
        failures.len()
    );
}
