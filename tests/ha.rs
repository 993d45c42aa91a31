//! Several replicas over one real etcd: what one writes, the others serve (get, list, watch);
//! concurrent writers through different replicas never lose an update; a replica killed with
//! SIGKILL loses no acknowledged write; an etcd outage makes replicas unready and answer 503
//! with Retry-After, and they recover by themselves when etcd returns.

mod common;

use common::etcd::{Etcd, unique_prefix};
use common::{Server, WatchStream, assert_status, event_summary, get_json, llama, llama_path, llamas, rv};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

async fn replicas(etcd: &Etcd, n: usize) -> Vec<Server> {
    let prefix = unique_prefix();
    let mut servers = Vec::new();
    for _ in 0..n {
        servers.push(Server::start_on_etcd(etcd, &prefix, &[]).await);
    }
    servers
}

fn weights(list: &Value) -> BTreeMap<String, f64> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["metadata"]["name"].as_str().unwrap().to_string(), i["spec"]["weight"].as_f64().unwrap()))
        .collect()
}

/// Polls `/readyz?verbose` until it answers `code`; its body. Panics after `within`.
async fn readyz_becomes(s: &Server, code: u16, within: Duration) -> String {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let r = s.anonymous().get(s.url("/readyz?verbose")).send().await.unwrap();
        if r.status() == code {
            return r.text().await.unwrap();
        }
        assert!(tokio::time::Instant::now() < deadline, "/readyz did not answer {code} within {within:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_write_through_one_replica_is_served_by_the_others() {
    let etcd = Etcd::start();
    let servers = replicas(&etcd, 2).await;
    let (a, b) = (&servers[0], &servers[1]);
    let mut watch_b = WatchStream::open(b, &format!("{}?watch=true", llamas("default"))).await;

    let created = a.client.post(a.url(&llamas("default"))).json(&llama("dolly", 50.0, 1.2)).send().await.unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let (code, through_b) = get_json(b, &llama_path("default", "dolly")).await;
    assert_eq!(code, 200, "{through_b}");
    assert_eq!(through_b["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(rv(&through_b), rv(&created));
    let (_, list_b) = get_json(b, &llamas("default")).await;
    assert_eq!(weights(&list_b), BTreeMap::from([("dolly".to_string(), 50.0)]));
    let list_revision: u64 = list_b["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    assert!(list_revision >= rv(&created), "B's list is at or after A's write");

    let event = watch_b.next().await.unwrap();
    assert_eq!(event_summary(&event), ("ADDED".into(), "dolly".into()));
    assert_eq!(rv(&event["object"]), rv(&created));

    // B changes it; A sees the change, and a stale update through A is a conflict.
    let patched = b
        .client
        .patch(b.url(&llama_path("default", "dolly")))
        .header("content-type", "application/merge-patch+json")
        .body(r#"{"spec":{"weight":60}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(patched.status(), 200);
    let patched: Value = patched.json().await.unwrap();
    let (_, through_a) = get_json(a, &llama_path("default", "dolly")).await;
    assert_eq!(through_a["spec"]["weight"], 60.0);
    assert_eq!(rv(&through_a), rv(&patched));
    let stale = a.client.put(a.url(&llama_path("default", "dolly"))).json(&created).send().await.unwrap();
    assert_eq!(stale.status(), 409);
    assert_status(&stale.json().await.unwrap(), 409, "Conflict");
    let duplicate = b.client.post(b.url(&llamas("default"))).json(&llama("dolly", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(duplicate.status(), 409);
    assert_status(&duplicate.json().await.unwrap(), 409, "AlreadyExists");

    // A watch through A resumed from the creation's revision replays B's change, then A deletes.
    let mut watch_a =
        WatchStream::open(a, &format!("{}?watch=true&resourceVersion={}", llamas("default"), rv(&created))).await;
    let event = watch_a.next().await.unwrap();
    assert_eq!(event_summary(&event), ("MODIFIED".into(), "dolly".into()));
    assert_eq!(event["object"]["spec"]["weight"], 60.0);
    let deleted = a.client.delete(a.url(&llama_path("default", "dolly"))).send().await.unwrap();
    assert_eq!(deleted.status(), 200);
    assert_eq!(event_summary(&watch_b.next().await.unwrap()), ("MODIFIED".into(), "dolly".into()));
    let gone = watch_b.next().await.unwrap();
    assert_eq!(event_summary(&gone), ("DELETED".into(), "dolly".into()));
    assert_eq!(event_summary(&watch_a.next().await.unwrap()), ("DELETED".into(), "dolly".into()));
    assert_eq!(get_json(b, &llama_path("default", "dolly")).await.0, 404);
}

/// Merge-patches `weight` into the llama `counter` through `s`.
async fn set_weight(s: &Server, weight: usize) {
    let r = s
        .client
        .patch(s.url(&llama_path("default", "counter")))
        .header("content-type", "application/merge-patch+json")
        .body(format!(r#"{{"spec":{{"weight":{weight}}}}}"#))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
}

/// Writes llamas with a 200 KiB annotation to `collection` until `stop`.
async fn write_large_llamas(client: reqwest::Client, collection: String, writer: usize, stop: Arc<AtomicBool>) {
    let mut body = llama(&format!("large-{writer}"), 1.0, 1.0);
    body["metadata"]["annotations"] = json!({"filler": "x".repeat(200 * 1024)});
    let r = client.post(&collection).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 201);
    body = r.json().await.unwrap();
    let item = format!("{collection}/large-{writer}");
    for round in 1.. {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        body["spec"]["weight"] = json!(1 + round % 100);
        let r = client.put(&item).json(&body).send().await.unwrap();
        let code = r.status();
        body = r.json().await.unwrap();
        assert_eq!(code, 200, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_reads_through_another_replica_see_every_acknowledged_write() {
    // B serves reads from its watch cache, which follows etcd a little behind A's writes: a
    // read that did not wait for the cache to catch up would see an older weight.
    let etcd = Etcd::start();
    let servers = replicas(&etcd, 2).await;
    let (a, b) = (&servers[0], &servers[1]);
    // Watchers before any write: a consistent watch is served by the cache from the start.
    let mut watchers = Vec::new();
    for _ in 0..20 {
        watchers.push(WatchStream::open(b, &format!("{}?watch=true", llamas("other"))).await);
    }
    let r = a.client.post(a.url(&llamas("default"))).json(&llama("counter", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(r.status(), 201);
    // Large writes through A keep B's watch cache busy, so it runs behind.
    let stop = Arc::new(AtomicBool::new(false));
    let noise: Vec<_> = (0..4)
        .map(|i| tokio::spawn(write_large_llamas(a.client.clone(), a.url(&llamas("noise")), i, stop.clone())))
        .collect();
    let (one, all) = (llama_path("default", "counter"), llamas("default"));
    for weight in 2..=300 {
        set_weight(a, weight).await;
        let (get, list) = tokio::join!(get_json(b, &one), get_json(b, &all));
        assert_eq!(get.1["spec"]["weight"], weight as f64, "a GET through B after write {weight}");
        assert_eq!(weights(&list.1)["counter"], weight as f64, "a LIST through B after write {weight}");
        let list_revision: u64 = list.1["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
        assert!(list_revision >= rv(&get.1), "the list is at or after the object's revision");
    }
    stop.store(true, Ordering::Relaxed);
    for writer in noise {
        writer.await.unwrap();
    }
    // Twenty watchers through B (and the writes through A) hold one etcd watch per replica.
    for s in [a, b] {
        assert_eq!(s.scrape().await["farm_apiserver_storage_watches{resource=\"llamas\"}"], 1.0);
    }
    drop(watchers);
}

/// GET, add one, PUT with the resourceVersion read; retry on 409. Returns the increments made.
async fn increment(s: &Server, times: usize) -> usize {
    let mut done = 0;
    while done < times {
        let (_, mut current) = get_json(s, &llama_path("default", "counter")).await;
        let weight = current["spec"]["weight"].as_f64().unwrap();
        current["spec"]["weight"] = json!(weight + 1.0);
        let r = s.client.put(s.url(&llama_path("default", "counter"))).json(&current).send().await.unwrap();
        match r.status().as_u16() {
            200 => done += 1,
            409 => {}
            other => panic!("unexpected {other}: {}", r.text().await.unwrap()),
        }
    }
    done
}

#[tokio::test]
async fn concurrent_updates_through_different_replicas_never_lose_one() {
    let etcd = Etcd::start();
    let servers = Arc::new(replicas(&etcd, 2).await);
    let s = &servers[0];
    let r = s.client.post(s.url(&llamas("default"))).json(&llama("counter", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let mut tasks = Vec::new();
    for writer in 0..6 {
        let servers = servers.clone();
        tasks.push(tokio::spawn(async move { increment(&servers[writer % 2], 25).await }));
    }
    let mut acknowledged = 0;
    for task in tasks {
        acknowledged += task.await.unwrap();
    }
    for s in servers.iter() {
        let (_, counter) = get_json(s, &llama_path("default", "counter")).await;
        assert_eq!(counter["spec"]["weight"], 1.0 + acknowledged as f64, "every acknowledged increment is there");
        assert_eq!(counter["metadata"]["generation"], 1 + acknowledged as i64);
    }
}

#[tokio::test]
async fn a_replica_killed_during_writes_loses_no_acknowledged_write() {
    let etcd = Etcd::start();
    let prefix = unique_prefix();
    let mut a = Server::start_on_etcd(&etcd, &prefix, &[]).await;
    let client = a.client.clone();
    let base = a.url("");
    // Each writer creates its own llamas and then raises their weights; it records what the
    // server acknowledged, until the server is gone.
    let mut writers = Vec::new();
    let answered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for writer in 0..4 {
        let (client, base, answered) = (client.clone(), base.clone(), answered.clone());
        writers.push(tokio::spawn(async move {
            let mut acknowledged: BTreeMap<String, f64> = BTreeMap::new();
            for i in 0.. {
                let name = format!("w{writer}-{}", i % 20);
                let (request, weight) = match acknowledged.get(&name) {
                    None => (client.post(format!("{base}{}", llamas("default"))).json(&llama(&name, 1.0, 1.0)), 1.0),
                    Some(w) => (
                        client
                            .patch(format!("{base}{}", llama_path("default", &name)))
                            .header("content-type", "application/merge-patch+json")
                            .body(json!({"spec": {"weight": w + 1.0}}).to_string()),
                        w + 1.0,
                    ),
                };
                match request.send().await {
                    Ok(r) if r.status().is_success() => {
                        // Acknowledged only once the whole response arrived.
                        if r.bytes().await.is_ok() {
                            acknowledged.insert(name, weight);
                            answered.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                    Ok(r) => panic!("unexpected {}: {}", r.status(), r.text().await.unwrap_or_default()),
                    Err(_) => break,
                }
            }
            acknowledged
        }));
    }
    // Killed once every writer has created its llamas and raised some weights.
    common::wait_until("the writers to be acknowledged", async || answered.load(Ordering::SeqCst) >= 4 * 20 + 40).await;
    a.kill();
    let mut acknowledged = BTreeMap::new();
    for writer in writers {
        acknowledged.extend(writer.await.unwrap());
    }
    assert!(acknowledged.len() >= 20, "the load ran: {} llamas acknowledged", acknowledged.len());

    let restarted = Server::start_on_etcd(&etcd, &prefix, &[]).await;
    let (code, list) = get_json(&restarted, &llamas("default")).await;
    assert_eq!(code, 200);
    let stored = weights(&list);
    for (name, weight) in &acknowledged {
        let kept = stored.get(name).unwrap_or_else(|| panic!("{name} was acknowledged but is gone"));
        // A write in flight at the kill may have landed after the last acknowledged one.
        assert!(kept >= weight, "{name}: acknowledged weight {weight}, stored {kept}");
        assert!(*kept <= weight + 1.0, "{name}: stored {kept} was never sent");
    }
    println!("{} llamas, {} acknowledged weights, all present", stored.len(), acknowledged.len());
}

#[tokio::test]
async fn an_etcd_outage_makes_replicas_unready_and_they_recover_by_themselves() {
    let mut etcd = Etcd::start();
    let s = Server::start_on_etcd(&etcd, &unique_prefix(), &[]).await;
    let r = s.client.post(s.url(&llamas("default"))).json(&llama("before", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let mut watch = WatchStream::open(&s, &format!("{}?watch=true", llamas("default"))).await;
    assert_eq!(event_summary(&watch.next().await.unwrap()), ("ADDED".into(), "before".into()));

    etcd.stop();
    // Readiness fails within a probe or two; the watch stays open on the watch cache.
    let body = readyz_becomes(&s, 500, Duration::from_secs(10)).await;
    assert!(body.contains("[-]etcd failed"), "{body}");
    for request in [
        s.client.get(s.url(&llamas("default"))),
        s.client.get(s.url(&llama_path("default", "before"))),
        s.client.post(s.url(&llamas("default"))).json(&llama("during", 1.0, 1.0)),
        s.client.get(s.url(&format!("{}?watch=true", llamas("default")))),
    ] {
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()["retry-after"], "1");
        assert_status(&r.json().await.unwrap(), 503, "ServiceUnavailable");
    }

    etcd.restart();
    let ready = readyz_becomes(&s, 200, Duration::from_secs(30)).await;
    assert!(ready.contains("[+]etcd ok") && ready.contains("[+]watch-cache-llamas ok"), "{ready}");
    let r = s.client.post(s.url(&llamas("default"))).json(&llama("after", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let (_, list) = get_json(&s, &llamas("default")).await;
    assert_eq!(weights(&list).keys().collect::<Vec<_>>(), ["after", "before"], "nothing lost, nothing half-written");
    // The watch cache re-watched etcd from where it was: the watch opened before the outage goes on.
    let event = watch.next_within(Duration::from_secs(10)).await.expect("the watch outlives the outage");
    assert_eq!(event_summary(&event), ("ADDED".into(), "after".into()));
}

#[tokio::test]
async fn replicas_compact_the_history_so_old_revisions_expire() {
    let etcd = Etcd::start();
    let prefix = unique_prefix();
    // A watch cache window of two events: older exact reads go to etcd's history.
    let flags = ["--etcd-compaction-interval-seconds", "1", "--watch-history-size", "2"];
    let a = Server::start_on_etcd(&etcd, &prefix, &flags).await;
    let _b = Server::start_on_etcd(&etcd, &prefix, &flags).await;
    let r = a.client.post(a.url(&llamas("default"))).json(&llama("old", 1.0, 1.0)).send().await.unwrap();
    let old = rv(&r.json().await.unwrap());
    let exact = format!("{}?resourceVersion={old}&resourceVersionMatch=Exact", llamas("default"));
    assert_eq!(get_json(&a, &exact).await.0, 200, "readable before a compaction");
    for name in ["n1", "n2", "n3"] {
        let r = a.client.post(a.url(&llamas("default"))).json(&llama(name, 1.0, 1.0)).send().await.unwrap();
        assert_eq!(r.status(), 201);
    }
    assert_eq!(get_json(&a, &exact).await.0, 200, "beyond the cache's window, read from etcd's history");
    // A compaction targets the revision seen one interval earlier: within a few intervals the
    // creation's revision is gone.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let (code, body) = get_json(&a, &exact).await;
        if code == 410 {
            assert_status(&body, 410, "Expired");
            break;
        }
        assert_eq!(code, 200);
        assert!(tokio::time::Instant::now() < deadline, "the history was never compacted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut watch = WatchStream::open(&a, &format!("{}?watch=true&resourceVersion={old}", llamas("default"))).await;
    let event = watch.next().await.unwrap();
    assert_eq!(event["type"], "ERROR");
    assert_status(&event["object"], 410, "Expired");
    assert_eq!(get_json(&a, &llama_path("default", "old")).await.0, 200, "compaction keeps current objects");
}

#[tokio::test]
async fn etcd_over_mutual_tls_with_a_client_certificate() {
    let (etcd, tls) = Etcd::start_tls();
    let files = [&tls.ca, &tls.client_cert, &tls.client_key].map(|p| p.display().to_string());
    let flags = ["--etcd-cafile", &files[0], "--etcd-certfile", &files[1], "--etcd-keyfile", &files[2]];
    let s = Server::start_on_etcd(&etcd, &unique_prefix(), &flags).await;
    let r = s.client.post(s.url(&llamas("default"))).json(&llama("dolly", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(get_json(&s, &llama_path("default", "dolly")).await.0, 200);

    // Without the client certificate etcd refuses the connection: never ready, requests 503.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let filter = "warn,apiserver_kit::store::etcd::connection=debug";
    let anonymous = Server::start_unready_logging(
        &[
            "--storage",
            "etcd",
            "--etcd-endpoints",
            &etcd.endpoint,
            "--etcd-cafile",
            &files[0],
            "--etcd-request-timeout-seconds",
            "1",
            "--etcd-compaction-interval-seconds",
            "0",
            "--log-format",
            "json",
        ],
        filter,
        &log,
    )
    .await;
    // Its first probe of etcd has failed (before it, readiness fails too: "not probed yet").
    common::wait_for_log(&log, r#""result":"Err("#, 0).await;
    let ready = anonymous.anonymous().get(anonymous.url("/readyz?verbose")).send().await.unwrap();
    assert_eq!(ready.status(), 500);
    assert!(ready.text().await.unwrap().contains("[-]etcd failed"));
    let r = anonymous.client.get(anonymous.url(&llamas("default"))).send().await.unwrap();
    assert_eq!(r.status(), 503);
    assert_status(&r.json().await.unwrap(), 503, "ServiceUnavailable");
}

/// A CA rotation as `etcd-secrets` runs it in a cluster (docs/installing.md): etcd already
/// trusts the new CA; the server's mounted files change in place (bundle, client certificate)
/// and etcd's serving certificate is reissued by the new CA. The server rereads its files, so
/// once etcd restarts (every connection remade) it trusts etcd's new certificate and presents
/// its new one. Without the reload it could not reconnect (unknown issuer).
#[tokio::test]
async fn the_server_rereads_its_etcd_tls_files_when_a_new_ca_and_certificates_arrive() {
    let (mut etcd, tls) = Etcd::start_tls();
    let files = [&tls.ca, &tls.client_cert, &tls.client_key].map(|p| p.display().to_string());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let mut flags = common::etcd::storage_flags(&etcd, &unique_prefix(), &[]);
    flags.extend(
        ["--etcd-cafile", &files[0], "--etcd-certfile", &files[1], "--etcd-keyfile", &files[2]].map(String::from),
    );
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let s = Server::start_logging(&flags, "info", &log).await;
    let r = s.client.post(s.url(&llamas("default"))).json(&llama("before", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(r.status(), 201);

    tls.rotate_to_next_ca();
    common::wait_for_log(&log, "reloaded the etcd TLS files", 0).await;
    etcd.stop();
    common::wait_for_log(&log, "etcd is unreachable", 0).await;
    etcd.restart();
    let ready = readyz_becomes(&s, 200, Duration::from_secs(30)).await;
    assert!(ready.contains("[+]etcd ok"), "{ready}");
    let r = s.client.post(s.url(&llamas("default"))).json(&llama("after", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(r.status(), 201, "{}", std::fs::read_to_string(&log).unwrap());
    let (_, list) = get_json(&s, &llamas("default")).await;
    assert_eq!(weights(&list).keys().collect::<Vec<_>>(), ["after", "before"]);
}

#[tokio::test]
async fn a_replica_started_before_etcd_becomes_ready_when_etcd_comes() {
    let mut etcd = Etcd::unstarted();
    let flags = common::etcd::storage_flags(&etcd, &unique_prefix(), &[]);
    let s = Server::start_unready(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let unready = s.anonymous().get(s.url("/readyz?verbose")).send().await.unwrap();
    assert_eq!(unready.status(), 500);
    let unready = unready.text().await.unwrap();
    // The watch cache has not listed the Llamas either: a replica takes traffic with its cache filled.
    assert!(unready.contains("[-]etcd failed") && unready.contains("[-]watch-cache-llamas failed"), "{unready}");
    let r = s.client.post(s.url(&llamas("default"))).json(&llama("early", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(r.status(), 503);
    etcd.restart();
    let ready = readyz_becomes(&s, 200, Duration::from_secs(30)).await;
    assert!(ready.contains("[+]etcd ok") && ready.contains("[+]watch-cache-llamas ok"), "{ready}");
    let r = s.client.post(s.url(&llamas("default"))).json(&llama("later", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let (_, list) = get_json(&s, &llamas("default")).await;
    assert_eq!(weights(&list).keys().collect::<Vec<_>>(), ["later"], "the refused write left nothing behind");
}

/// Pages through `path` (query included) with `limit`: the names in order, and each page's
/// remainingItemCount.
async fn page_through(s: &Server, path: &str, limit: usize) -> (Vec<String>, Vec<Option<u64>>) {
    let (mut names, mut remaining) = (Vec::new(), Vec::new());
    let mut token: Option<String> = None;
    loop {
        let url = match &token {
            Some(t) => format!("{path}&limit={limit}&continue={t}"),
            None => format!("{path}&limit={limit}"),
        };
        let (code, page) = get_json(s, &url).await;
        assert_eq!(code, 200, "{page}");
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= limit);
        names.extend(items.iter().map(|i| {
            format!("{}/{}", i["metadata"]["namespace"].as_str().unwrap(), i["metadata"]["name"].as_str().unwrap())
        }));
        remaining.push(page["metadata"]["remainingItemCount"].as_u64());
        match page["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => token = Some(t.to_string()),
            _ => return (names, remaining),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn paging_agrees_between_memory_and_etcd_across_etcd_read_chunks() {
    let etcd = Etcd::start();
    let prefix = unique_prefix();
    let servers = Arc::new([Server::start().await, Server::start_on_etcd(&etcd, &prefix, &[]).await]);
    // 1,500 llamas in namespaces whose byte order differs from a (namespace, name) tuple order;
    // a third carry herd=one, so a selected page reads past etcd's 1,000-key chunks.
    let mut tasks = Vec::new();
    for task in 0..12 {
        let servers = servers.clone();
        tasks.push(tokio::spawn(async move {
            for i in (task..1500).step_by(12) {
                let ns = ["a", "a-b", "ab"][i % 3];
                let mut body = llama(&format!("l{i:04}"), 1.0, 1.0);
                let herd = ["one", "two", "three"][(i / 3) % 3];
                body["metadata"]["labels"] = json!({ "herd": herd });
                for s in servers.iter() {
                    let r = s.client.post(s.url(&llamas(ns))).json(&body).send().await.unwrap();
                    assert_eq!(r.status(), 201);
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let all = "/apis/farm.example.com/v1alpha/llamas";
    for (path, limit) in [
        (format!("{all}?x=1"), 400),
        (format!("{all}?labelSelector=herd%3Done"), 150),
        (format!("{}?labelSelector=herd%21%3Dtwo", llamas("a-b")), 77),
        (format!("{}?fieldSelector=metadata.name%3Dl0001", llamas("a-b")), 1),
    ] {
        let (memory, memory_remaining) = page_through(&servers[0], &path, limit).await;
        let (etcd, etcd_remaining) = page_through(&servers[1], &path, limit).await;
        assert_eq!(memory, etcd, "{path}: same objects in the same order");
        assert_eq!(memory_remaining, etcd_remaining, "{path}: same remainingItemCount");
        let (_, whole) = get_json(&servers[1], &path).await;
        assert_eq!(whole["items"].as_array().unwrap().len(), etcd.len(), "{path}: pages add up to the list");
    }
    let (names, remaining) = page_through(&servers[1], &format!("{all}?x=1"), 400).await;
    assert_eq!(names.len(), 1500);
    assert!(names[0].starts_with("a-b/") && names[1499].starts_with("ab/"), "etcd's key order: a-b, a, ab");
    assert_eq!(remaining, [Some(1100), Some(700), Some(300), None]);
    // A server started now fills its watch cache with one list of the whole range, read from
    // etcd in chunks (the first of 1,000, the next asked for while the first is decoded).
    let late = Server::start_on_etcd(&etcd, &prefix, &[]).await;
    let listed = "farm_apiserver_watch_history_events{resource=\"llamas\"}";
    common::wait_until("the late server's watch cache to list", async || late.scrape().await.contains_key(listed))
        .await;
    let (late_names, _) = page_through(&late, &format!("{all}?x=1"), 1000).await;
    assert_eq!(late_names, names, "the cache listed every llama once, in key order");
}

#[tokio::test]
async fn a_list_or_a_page_larger_than_one_etcd_answer_may_be_is_read_in_smaller_chunks() {
    let etcd = Etcd::start();
    let prefix = unique_prefix();
    let writer = Server::start_on_etcd(&etcd, &prefix, &[]).await;
    // 60 llamas of 1.3 MB (etcd takes writes of up to 1.5 MiB): 78 MB, more than the 64 MiB
    // an answer from etcd may be, so the first chunk of 1,000 is asked for again in halves.
    let color = "brown and white ".repeat(1_300_000 / 16);
    let mut last = 0;
    for i in 0..60 {
        let mut body = llama(&format!("big-{i:02}"), 1.0, 1.0);
        body["spec"]["color"] = json!(color);
        let r = writer.client.post(writer.url(&llamas("big"))).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 201);
        last = rv(&r.json().await.unwrap());
    }
    // A later write, so that the reader's cache starts after `last` and a page read exactly at
    // `last` goes to etcd, in chunks of at most 101 objects, halved until one fits.
    let r = writer.client.post(writer.url(&llamas("small"))).json(&llama("later", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let reader = Server::start_on_etcd(&etcd, &prefix, &[]).await;
    let listed = "farm_apiserver_watch_history_events{resource=\"llamas\"}";
    common::wait_until("the watch cache to list", async || reader.scrape().await.contains_key(listed)).await;
    let (code, list) = get_json(&reader, &llamas("big")).await;
    assert_eq!(code, 200);
    let items = list["items"].as_array().unwrap();
    let names: Vec<&str> = items.iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, (0..60).map(|i| format!("big-{i:02}")).collect::<Vec<_>>());
    assert!(items.iter().all(|i| i["spec"]["color"] == color.as_str()));
    let exact = format!("{}?limit=100&resourceVersion={last}&resourceVersionMatch=Exact", llamas("big"));
    let (code, page) = get_json(&reader, &exact).await;
    assert_eq!(code, 200, "{page}");
    assert_eq!(page["items"].as_array().unwrap().len(), 60);
    assert_eq!(page["metadata"]["resourceVersion"], last.to_string());
}
