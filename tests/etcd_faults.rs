//! Faults of etcd under load: a three-member etcd cluster on loopback, two replicas writing and
//! watching through it, and the etcd leader killed with SIGKILL in the middle.

mod common;

use common::etcd::{EtcdCluster, unique_prefix};
use common::{Server, get_json, llama, llamas};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Acknowledged writes of every writer so far: the events the test waits for.
#[derive(Default)]
struct Progress {
    acknowledged: AtomicUsize,
}

/// What one writer did: the names acknowledged (201), with when, and the failures.
#[derive(Default)]
struct Written {
    acknowledged: Vec<(String, Instant)>,
    failures: usize,
}

/// Creates `w<writer>-<i>` llamas through `collection` until `stop`, one at a time.
async fn write(
    client: reqwest::Client,
    collection: String,
    writer: usize,
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
) -> Written {
    let mut written = Written::default();
    for i in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let name = format!("w{writer}-{i}");
        let sent = client.post(&collection).json(&llama(&name, 1.0, 1.0)).timeout(Duration::from_secs(5)).send().await;
        match sent.map(|r| r.status().as_u16()) {
            Ok(201) => {
                written.acknowledged.push((name, Instant::now()));
                progress.acknowledged.fetch_add(1, Ordering::SeqCst);
            }
            // 503 while etcd elects a leader, a timeout, or 409 for a retry of a create that
            // committed but was not acknowledged: none of these is an acknowledgement.
            _ => {
                written.failures += 1;
                // Pacing of a client that retries, not synchronisation.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    written
}

/// One thing a watcher observed, in order.
#[derive(Clone, Debug, PartialEq)]
enum Observed {
    /// A watch event other than a bookmark: its type, the object's name and resourceVersion.
    Event(String, String, u64),
    /// A bookmark: the watcher has seen everything up to this resourceVersion.
    Bookmark(u64),
    /// A re-list after a 410: the list's resourceVersion and the objects it held (name to
    /// resourceVersion); the watcher goes on from there.
    Relist(u64, BTreeMap<String, u64>),
}

/// What one watcher saw, in order, and how many times it had to re-watch.
#[derive(Default)]
struct Seen {
    log: Vec<Observed>,
    rewatches: usize,
}

impl Seen {
    /// The resourceVersion the watcher has seen everything up to: where it watches from next.
    fn position(&self, from: u64) -> u64 {
        self.log
            .iter()
            .map(|o| match o {
                Observed::Event(_, _, rv) | Observed::Bookmark(rv) | Observed::Relist(rv, _) => *rv,
            })
            .fold(from, u64::max)
    }

    fn relists(&self) -> usize {
        self.log.iter().filter(|o| matches!(o, Observed::Relist(..))).count()
    }
}

/// Whether every committed write (`committed`: name to the resourceVersion of its creation; only
/// creations happen, one per name, none before `from`) reached a watcher that started at `from`
/// exactly once, by resourceVersion: each write is either one event at its resourceVersion, or,
/// when it falls between the watcher's position before a re-list and the re-list's
/// resourceVersion, in that re-list's state; every event is a committed write, in increasing
/// order; every re-list holds exactly the writes committed up to its resourceVersion; and the
/// watcher's position reached the last write. The problems found, if any.
fn exactly_once(log: &[Observed], from: u64, committed: &BTreeMap<String, u64>) -> Vec<String> {
    let mut problems = Vec::new();
    let by_rv: BTreeMap<u64, &String> = committed.iter().map(|(name, rv)| (*rv, name)).collect();
    // Every resourceVersion the watcher accounts for, and how: an event, or a re-list's snapshot.
    let mut delivered: BTreeMap<u64, usize> = BTreeMap::new();
    let mut position = from;
    for observed in log {
        match observed {
            Observed::Event(kind, name, rv) => {
                if *rv <= position {
                    problems.push(format!("{kind} {name} at rv {rv} after rv {position}: repeated or out of order"));
                }
                if kind != "ADDED" || by_rv.get(rv) != Some(&name) {
                    problems.push(format!("{kind} {name} at rv {rv} is no committed creation"));
                }
                *delivered.entry(*rv).or_default() += 1;
                position = position.max(*rv);
            }
            Observed::Bookmark(rv) if *rv < position => {
                problems.push(format!("a bookmark at rv {rv} after rv {position}"))
            }
            Observed::Bookmark(rv) => position = *rv,
            Observed::Relist(rv, items) => {
                let expected: BTreeMap<String, u64> =
                    committed.iter().filter(|(_, c)| **c <= *rv).map(|(n, c)| (n.clone(), *c)).collect();
                if *items != expected {
                    problems.push(format!("the re-list at rv {rv} is not the committed state at rv {rv}"));
                }
                if *rv < position {
                    problems.push(format!("a re-list at rv {rv} after rv {position}"));
                } else {
                    // The writes after the position, up to the re-list's resourceVersion, reach the
                    // watcher in the re-list's state.
                    for (c, _) in by_rv.range(position + 1..).take_while(|(c, _)| **c <= *rv) {
                        *delivered.entry(*c).or_default() += 1;
                    }
                    position = *rv;
                }
            }
        }
    }
    for (rv, name) in by_rv.range(from + 1..) {
        match delivered.get(rv).copied().unwrap_or(0) {
            1 => {}
            0 => problems.push(format!("the creation of {name} at rv {rv} was lost")),
            n => problems.push(format!("the creation of {name} at rv {rv} was delivered {n} times")),
        }
    }
    problems
}

/// The writes the watcher must reach, once the writes are over: name to resourceVersion.
type Until = tokio::sync::OnceCell<BTreeMap<String, u64>>;

/// Whether the writes are over and the watcher's position has reached the last of them.
fn done(seen: &Seen, from: u64, until: &Until) -> bool {
    until.get().is_some_and(|committed| committed.values().all(|rv| *rv <= seen.position(from)))
}

/// Watches `collection` from `from`, re-watching from its position when the stream ends and
/// re-listing on 410, until its position reaches the last of the writes in `until` (set when the
/// writes are over).
async fn watch(client: reqwest::Client, collection: String, from: u64, until: Arc<Until>) -> Seen {
    let mut seen = Seen::default();
    let deadline = Instant::now() + common::EVENT_DEADLINE * 2;
    loop {
        assert!(Instant::now() < deadline, "the watcher never reached the last write");
        let url = format!("{collection}?watch=true&allowWatchBookmarks=true&resourceVersion={}", seen.position(from));
        let response = match client.get(&url).send().await {
            Ok(response) if response.status() == 200 => response,
            // While etcd elects a leader; a client retries, paced.
            _ => {
                seen.rewatches += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if read_stream(response, &client, &collection, &mut seen, (from, &until), deadline).await {
            return seen;
        }
        seen.rewatches += 1;
    }
}

/// Reads one watch stream into `seen` until it ends (false) or the watcher is [`done`] (true);
/// a 410 re-lists and ends the stream. Panics after `deadline`.
async fn read_stream(
    mut response: reqwest::Response,
    client: &reqwest::Client,
    collection: &str,
    seen: &mut Seen,
    (from, until): (u64, &Until),
    deadline: Instant,
) -> bool {
    let mut buffer = Vec::new();
    loop {
        if done(seen, from, until) {
            return true;
        }
        assert!(Instant::now() < deadline, "the watcher never reached the last write");
        // Wakes up now and then to see whether the writes are over and everything arrived.
        let chunk = match tokio::time::timeout(Duration::from_millis(500), response.chunk()).await {
            Ok(Ok(Some(chunk))) => chunk,
            Ok(_) => return false,
            Err(_) => continue,
        };
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            let event: Value = serde_json::from_slice(&line).expect("a JSON watch frame");
            let kind = event["type"].as_str().unwrap_or_default().to_string();
            if kind == "ERROR" {
                assert_eq!(event["object"]["code"], 410, "{event}");
                seen.log.push(relist(client, collection, deadline).await);
                return false;
            }
            let rv = common::rv(&event["object"]);
            seen.log.push(match kind.as_str() {
                "BOOKMARK" => Observed::Bookmark(rv),
                _ => Observed::Event(kind, event["object"]["metadata"]["name"].as_str().unwrap().to_string(), rv),
            });
        }
    }
}

/// Lists `collection` as a watcher re-lists, retrying (paced) while etcd has no leader.
async fn relist(client: &reqwest::Client, collection: &str, deadline: Instant) -> Observed {
    let list: Value = loop {
        if let Ok(response) = client.get(collection).send().await
            && response.status() == 200
        {
            break response.json().await.unwrap();
        }
        assert!(Instant::now() < deadline, "a re-list never succeeded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let items = list["items"].as_array().unwrap().iter();
    let items = items.map(|i| (i["metadata"]["name"].as_str().unwrap().to_string(), common::rv(i))).collect();
    Observed::Relist(list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap(), items)
}

/// The bookkeeping proves what it claims: on a made-up history, it finds a write lost behind
/// a re-list, a write delivered twice, and accepts a history where a re-list covers a gap.
#[test]
fn the_exactly_once_bookkeeping_finds_lost_and_repeated_writes_across_relists() {
    let committed: BTreeMap<String, u64> =
        [("a", 11), ("b", 12), ("c", 13), ("d", 14)].map(|(n, rv)| (n.into(), rv)).into();
    let event = |name: &str, rv| Observed::Event("ADDED".into(), name.into(), rv);
    let list =
        |rv, names: &[(&str, u64)]| Observed::Relist(rv, names.iter().map(|(n, r)| (n.to_string(), *r)).collect());
    let whole = [("a", 11), ("b", 12), ("c", 13)];
    // a by event; b and c only in the re-list's state; d by event after it.
    let good = [event("a", 11), list(13, &whole), event("d", 14)];
    assert_eq!(exactly_once(&good, 10, &committed), Vec::<String>::new());
    // The same, but the re-list's state lacks c, which no event delivered either.
    let lost = [event("a", 11), list(13, &whole[..2]), event("d", 14)];
    assert!(exactly_once(&lost, 10, &committed).iter().any(|p| p.contains("rv 13 is not the committed state")));
    // A bookmark past c, then a re-list: c is in no event and in no re-list's window.
    let skipped = [event("a", 11), event("b", 12), Observed::Bookmark(13), list(13, &whole), event("d", 14)];
    assert!(exactly_once(&skipped, 10, &committed).iter().any(|p| p.contains("c at rv 13 was lost")));
    // b as an event again after the re-list that covered it.
    let repeated = [event("a", 11), list(13, &whole), event("b", 12), event("d", 14)];
    assert!(exactly_once(&repeated, 10, &committed).iter().any(|p| p.contains("b at rv 12 was delivered 2 times")));
    // The watcher stopped before d.
    let short = [event("a", 11), list(13, &whole)];
    assert!(exactly_once(&short, 10, &committed).iter().any(|p| p.contains("d at rv 14 was lost")));
}

/// Waits for the stopped `writers`: the names they saw acknowledged, their failures, and the
/// longest time after `killed_at` without an acknowledgement.
async fn writers_done(
    writers: Vec<tokio::task::JoinHandle<Written>>,
    killed_at: Instant,
) -> (BTreeSet<String>, usize, Duration) {
    let mut acknowledged = BTreeSet::new();
    let mut times = vec![killed_at];
    let mut failures = 0;
    for writer in writers {
        let written = writer.await.unwrap();
        failures += written.failures;
        times.extend(written.acknowledged.iter().map(|(_, at)| *at).filter(|at| *at > killed_at));
        acknowledged.extend(written.acknowledged.into_iter().map(|(name, _)| name));
    }
    times.sort();
    let paused = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or_default();
    (acknowledged, failures, paused)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_etcd_leader_under_load_loses_no_write_and_no_event() {
    // Acknowledged writes before the kill, and after it while the old leader is still dead.
    const BEFORE: usize = 200;
    const AFTER: usize = 500;
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
    let (stop, progress) = (Arc::new(AtomicBool::new(false)), Arc::new(Progress::default()));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let s = &replicas[w % 2];
            tokio::spawn(write(s.client.clone(), s.url(&llamas("default")), w, stop.clone(), progress.clone()))
        })
        .collect();

    let acknowledged_now = || progress.acknowledged.load(Ordering::SeqCst);
    common::wait_until("writes before the kill", async || acknowledged_now() >= BEFORE).await;
    let leader = cluster.leader().await;
    let killed_at = Instant::now();
    cluster.members[leader].kill_hard();
    let at_kill = acknowledged_now();
    // Writes resume through the two members left, while the old leader is still dead.
    common::wait_until("writes to resume after the kill", async || acknowledged_now() >= at_kill + AFTER).await;
    stop.store(true, Ordering::Relaxed);
    let (acknowledged, failures, paused) = writers_done(writers, killed_at).await;
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
    // Every stored llama is a committed write (acknowledged or not), each created once.
    let _ = until.set(stored.clone());
    for (watcher, s) in watchers.into_iter().zip(["A", "B"]) {
        let seen = watcher.await.unwrap();
        let problems = exactly_once(&seen.log, from, &stored);
        assert!(problems.is_empty(), "watcher on {s}: {problems:#?}");
        println!(
            "watcher on {s}: {} observations, {} re-watches, {} re-lists",
            seen.log.len(),
            seen.rewatches,
            seen.relists()
        );
    }
    // How long writes paused is reported, not judged: that they resumed is the behaviour.
    println!(
        "leader m{leader} killed: {} writes acknowledged ({} stored), {failures} refused or timed out, writes paused for at most {:.1} s",
        acknowledged.len(),
        stored.len(),
        paused.as_secs_f64()
    );
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
    let code = r.status();
    assert_eq!(code, 201, "create through A: {}", r.text().await.unwrap_or_default());
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
        let code = r.status();
        assert_eq!(code, 200, "write {weight} through A: {}", r.text().await.unwrap_or_default());
        let (get, list) = tokio::join!(get_json(&b, &one), get_json(&b, &all));
        assert_eq!(get.1["spec"]["weight"], weight as f64, "a GET through B after write {weight}: {} {}", get.0, get.1);
        let first = &list.1["items"][0]["spec"]["weight"];
        assert_eq!(*first, weight as f64, "a LIST through B after write {weight}: {} {}", list.0, list.1);
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
