//! Black-box tests of list and watch semantics over HTTPS: selectors, paging, resourceVersion,
//! watch streams (initial events, resume, 410, bookmarks, streaming lists, timeouts, selector
//! transitions, representations), slow watchers and deletecollection with selectors.
//! Each test runs twice: Llamas in memory, and in a real etcd.

mod common;

use common::{
    Backend, Server, WatchStream, assert_status, backends, event_summary, get_json, llama, llama_path, llamas, rv,
};
use rstest_reuse::apply;
use serde_json::{Value, json};
use std::time::Duration;

const ALL: &str = "/apis/farm.example.com/v1alpha/llamas";

async fn create(s: &Server, ns: &str, name: &str, labels: Value) -> Value {
    let mut body = llama(name, 1.0, 1.0);
    body["metadata"]["labels"] = labels;
    let r = s.client.post(s.url(&llamas(ns))).json(&body).send().await.unwrap();
    assert_eq!(r.status(), 201);
    r.json().await.unwrap()
}

async fn merge(s: &Server, ns: &str, name: &str, patch: Value) -> Value {
    let r = s
        .client
        .patch(s.url(&llama_path(ns, name)))
        .header("content-type", "application/merge-patch+json")
        .body(patch.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

async fn delete(s: &Server, ns: &str, name: &str) -> Value {
    let r = s.client.delete(s.url(&llama_path(ns, name))).send().await.unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

fn names(list: &Value) -> Vec<String> {
    list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

#[apply(backends)]
async fn label_selectors_support_the_whole_grammar(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    create(&s, "default", "a", json!({"herd": "a", "tier": "top"})).await;
    create(&s, "default", "b", json!({"herd": "b"})).await;
    create(&s, "default", "c", json!({"herd": "c", "shorn": "yes"})).await;
    create(&s, "default", "d", json!({})).await;
    let select = |sel: &str| format!("{}?labelSelector={}", llamas("default"), urlencode(sel));
    let cases = [
        ("herd=a", vec!["a"]),
        ("herd==b", vec!["b"]),
        ("herd!=a", vec!["b", "c", "d"]),
        ("herd in (a,c)", vec!["a", "c"]),
        ("herd notin (a,c)", vec!["b", "d"]),
        ("shorn", vec!["c"]),
        ("!herd", vec!["d"]),
        ("herd,!tier", vec!["b", "c"]),
        ("", vec!["a", "b", "c", "d"]),
    ];
    for (selector, want) in cases {
        let (code, list) = get_json(&s, &select(selector)).await;
        assert_eq!(code, 200);
        assert_eq!(names(&list), want, "{selector}");
    }
    let (code, body) = get_json(&s, &select("herd in a")).await;
    assert_eq!(code, 400);
    assert_status(&body, 400, "BadRequest");
    assert!(body["message"].as_str().unwrap().contains("unable to parse requirement"));
}

fn urlencode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[apply(backends)]
async fn field_selectors_support_metadata_and_declared_fields(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    create(&s, "a", "x", json!({})).await;
    create(&s, "b", "x", json!({})).await;
    create(&s, "b", "y", json!({})).await;
    merge(&s, "b", "y", json!({"spec": {"color": "brown"}})).await;
    let (_, list) = get_json(&s, &format!("{ALL}?fieldSelector=metadata.name%3Dx")).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    let (_, list) = get_json(&s, &format!("{ALL}?fieldSelector=metadata.namespace%3Db,metadata.name!%3Dx")).await;
    assert_eq!(names(&list), ["y"]);
    let (_, list) = get_json(&s, &format!("{ALL}?fieldSelector=spec.color%3Dbrown")).await;
    assert_eq!(names(&list), ["y"]);
    let (code, body) = get_json(&s, &format!("{ALL}?fieldSelector=spec.weight%3D1")).await;
    assert_eq!(code, 400);
    assert_eq!(body["message"], "field label not supported: spec.weight");
}

#[apply(backends)]
async fn paging_returns_every_object_once_with_remaining_counts(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    for i in 0..5 {
        create(&s, "default", &format!("l{i}"), json!({})).await;
    }
    let mut seen = Vec::new();
    let mut path = format!("{}?limit=2", llamas("default"));
    let mut remaining = Vec::new();
    let mut revisions = Vec::new();
    loop {
        let (code, page) = get_json(&s, &path).await;
        assert_eq!(code, 200, "{page}");
        seen.extend(names(&page));
        remaining.push(page["metadata"]["remainingItemCount"].as_i64());
        revisions.push(page["metadata"]["resourceVersion"].clone());
        // A write between pages does not show up in the paged list.
        create(&s, "default", &format!("new{}", seen.len()), json!({})).await;
        match page["metadata"]["continue"].as_str() {
            Some(token) => path = format!("{}?limit=2&continue={token}", llamas("default")),
            None => break,
        }
    }
    assert_eq!(seen, ["l0", "l1", "l2", "l3", "l4"]);
    assert_eq!(remaining, [Some(3), Some(1), None]);
    assert!(
        revisions.windows(2).all(|w| w[0] == w[1]),
        "every page is read at the first page's revision: {revisions:?}"
    );

    let (code, body) = get_json(&s, &format!("{}?limit=2&continue=garbage!", llamas("default"))).await;
    assert_eq!(code, 400);
    assert_status(&body, 400, "BadRequest");
    let (_, first) = get_json(&s, &format!("{}?limit=2", llamas("default"))).await;
    let token = first["metadata"]["continue"].as_str().unwrap();
    let (code, _) = get_json(&s, &format!("{}?limit=2&continue={token}", llamas("other"))).await;
    assert_eq!(code, 400, "a token of another namespace is refused");
}

/// The objects the server read and tested for its lists so far (its own count of a list's cost).
async fn evaluated(s: &Server) -> f64 {
    let metrics = s.scrape().await;
    metrics.get("apiserver_cache_list_evaluated_objects_total{resource=\"llamas\"}").copied().unwrap_or_default()
}

#[apply(backends)]
async fn a_page_reads_its_own_objects_whatever_the_collection_holds(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let created: Vec<String> = (0..400).map(|i| format!("l{i:03}")).collect();
    for chunk in created.chunks(50) {
        futures::future::join_all(chunk.iter().map(|name| create(&s, "big", name, json!({})))).await;
    }
    for i in 0..3 {
        create(&s, "small", &format!("s{i}"), json!({})).await;
    }
    // How many objects a read tested, and its answer. The etcd mode's watch cache may leave a
    // read to etcd (then it tests none); what it tests from memory is the page alone.
    async fn cost(s: &Server, path: &str) -> (f64, Value) {
        let before = evaluated(s).await;
        let (code, page) = get_json(s, path).await;
        assert_eq!(code, 200, "{page}");
        (evaluated(s).await - before, page)
    }
    let most = |count: f64, pages: f64| {
        (if backend == Backend::Memory { pages..=pages } else { 0.0..=pages }).contains(&count)
    };

    let (count, first) = cost(&s, &format!("{}?limit=10", llamas("big"))).await;
    assert!(most(count, 11.0), "a first page of 10 tests 11 objects (the 11th says more follow), not {count}");
    assert_eq!(first["metadata"]["remainingItemCount"], 390);
    // A write after the first page: later pages are read at its revision, and counted at it.
    create(&s, "big", "l100a", json!({})).await;
    delete(&s, "big", "l399").await;
    let token = first["metadata"]["continue"].as_str().unwrap();
    let (count, second) = cost(&s, &format!("{}?limit=10&continue={token}", llamas("big"))).await;
    assert!(most(count, 11.0), "a continued page tests its own objects, not {count}");
    assert_eq!(names(&second), created[10..20]);
    assert_eq!(second["metadata"]["remainingItemCount"], 380, "counted at the first page's revision");
    let (count, small) = cost(&s, &format!("{}?limit=10", llamas("small"))).await;
    assert!(most(count, 3.0), "a namespace's list tests the namespace's objects, not {count}");
    assert_eq!(names(&small), ["s0", "s1", "s2"]);
    let (count, latest) = cost(&s, &format!("{ALL}?limit=10")).await;
    assert!(most(count, 11.0), "{count}");
    assert_eq!(latest["metadata"]["remainingItemCount"], 393, "400 + 1 - 1 in big, 3 in small, less the page");
}

#[apply(backends)]
async fn an_expired_continue_token_is_410_with_an_inconsistent_continuation(#[case] backend: Backend) {
    let s = Server::start_isolated(backend, &["--watch-history-size", "3"]).await;
    for i in 0..4 {
        create(&s, "default", &format!("l{i}"), json!({})).await;
    }
    let (_, first) = get_json(&s, &format!("{}?limit=2", llamas("default"))).await;
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    for i in 0..5 {
        merge(&s, "default", "l0", json!({"spec": {"weight": i + 2}})).await;
    }
    s.expire_history().await;
    let (code, body) = get_json(&s, &format!("{}?limit=2&continue={token}", llamas("default"))).await;
    assert_eq!(code, 410);
    assert_status(&body, 410, "Expired");
    let inconsistent = body["metadata"]["continue"].as_str().expect("an inconsistent continue token");
    let (code, rest) = get_json(&s, &format!("{}?limit=2&continue={inconsistent}", llamas("default"))).await;
    assert_eq!(code, 200);
    assert_eq!(names(&rest), ["l2", "l3"]);
}

#[apply(backends)]
async fn list_resource_version_semantics(#[case] backend: Backend) {
    let s = Server::start_isolated(backend, &["--watch-history-size", "4"]).await;
    let a = create(&s, "default", "a", json!({})).await;
    let b = merge(&s, "default", "a", json!({"spec": {"weight": 2}})).await;
    create(&s, "default", "b", json!({})).await;

    let (_, exact) =
        get_json(&s, &format!("{}?resourceVersion={}&resourceVersionMatch=Exact", llamas("default"), rv(&a))).await;
    assert_eq!(names(&exact), ["a"]);
    assert_eq!(exact["items"][0]["spec"]["weight"], 1.0);
    assert_eq!(exact["metadata"]["resourceVersion"], rv(&a).to_string());
    let (_, newer) =
        get_json(&s, &format!("{}?resourceVersion={}&resourceVersionMatch=NotOlderThan", llamas("default"), rv(&b)))
            .await;
    assert_eq!(names(&newer), ["a", "b"]);
    let (_, any) = get_json(&s, &format!("{}?resourceVersion=0", llamas("default"))).await;
    assert_eq!(names(&any), ["a", "b"]);

    for i in 0..6 {
        merge(&s, "default", "b", json!({"spec": {"weight": i + 3}})).await;
    }
    s.expire_history().await;
    let (code, body) =
        get_json(&s, &format!("{}?resourceVersion={}&resourceVersionMatch=Exact", llamas("default"), rv(&a))).await;
    assert_eq!(code, 410);
    assert_status(&body, 410, "Expired");

    let (code, body) =
        get_json(&s, &format!("{}?resourceVersion=999999&resourceVersionMatch=NotOlderThan", llamas("default"))).await;
    assert_eq!(code, 504);
    assert_status(&body, 504, "Timeout");
    assert_eq!(body["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");

    let (code, body) = get_json(&s, &format!("{}?resourceVersionMatch=Exact", llamas("default"))).await;
    assert_eq!(code, 422);
    assert_status(&body, 422, "Invalid");
}

#[apply(backends)]
async fn watch_without_resource_version_starts_with_the_current_objects(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    create(&s, "default", "a", json!({})).await;
    create(&s, "other", "b", json!({})).await;
    let mut w = WatchStream::open(&s, &format!("{}?watch=true", llamas("default"))).await;
    assert_eq!(event_summary(&w.next().await.unwrap()), ("ADDED".into(), "a".into()));
    create(&s, "default", "c", json!({})).await;
    create(&s, "other", "d", json!({})).await;
    merge(&s, "default", "a", json!({"spec": {"weight": 3}})).await;
    delete(&s, "default", "c").await;
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(event_summary(&w.next().await.unwrap()));
    }
    assert_eq!(got, [("ADDED".into(), "c".into()), ("MODIFIED".into(), "a".into()), ("DELETED".into(), "c".into())]);
    // Events arrive in resourceVersion order: a later write in `default` is the next event, so
    // none of `other` came in between.
    create(&s, "default", "fence", json!({})).await;
    assert_eq!(
        event_summary(&w.next().await.unwrap()),
        ("ADDED".into(), "fence".into()),
        "no events of other namespaces"
    );

    let mut all = WatchStream::open(&s, &format!("{ALL}?watch=1")).await;
    let mut initial = Vec::new();
    for _ in 0..4 {
        initial.push(event_summary(&all.next().await.unwrap()));
    }
    initial.sort();
    let added = |name: &str| ("ADDED".to_string(), name.to_string());
    assert_eq!(initial, [added("a"), added("b"), added("d"), added("fence")]);
}

#[apply(backends)]
async fn watch_from_a_resource_version_replays_every_later_event_in_order(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let a = create(&s, "default", "a", json!({})).await;
    let b = create(&s, "default", "b", json!({})).await;
    merge(&s, "default", "a", json!({"spec": {"weight": 2}})).await;
    delete(&s, "default", "b").await;
    let mut w = WatchStream::open(&s, &format!("{}?watch=true&resourceVersion={}", llamas("default"), rv(&a))).await;
    let mut events = Vec::new();
    for _ in 0..3 {
        let e = w.next().await.unwrap();
        events.push((event_summary(&e), rv(&e["object"])));
    }
    assert_eq!(events[0].0, ("ADDED".into(), "b".into()));
    assert_eq!(events[0].1, rv(&b));
    assert_eq!(events[1].0, ("MODIFIED".into(), "a".into()));
    assert_eq!(events[2].0, ("DELETED".into(), "b".into()));
    assert!(events.windows(2).all(|p| p[0].1 < p[1].1), "{events:?}");
    // Nothing else was replayed: the next event is a later write.
    create(&s, "default", "fence", json!({})).await;
    assert_eq!(event_summary(&w.next().await.unwrap()), ("ADDED".into(), "fence".into()));
}

#[apply(backends)]
async fn watch_from_a_compacted_resource_version_gets_an_expired_error_event(#[case] backend: Backend) {
    let s = Server::start_isolated(backend, &["--watch-history-size", "2"]).await;
    let a = create(&s, "default", "a", json!({})).await;
    for i in 0..4 {
        merge(&s, "default", "a", json!({"spec": {"weight": i + 2}})).await;
    }
    s.expire_history().await;
    let mut w = WatchStream::open(&s, &format!("{}?watch=true&resourceVersion={}", llamas("default"), rv(&a))).await;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "ERROR");
    assert_status(&e["object"], 410, "Expired");
    assert!(w.next().await.is_none(), "the stream ends after the error");
}

#[apply(backends)]
async fn bookmarks_report_progress_and_streaming_lists_end_with_an_annotated_bookmark(#[case] backend: Backend) {
    let s = Server::start_on_with(backend, &["--watch-bookmark-interval-seconds", "1"]).await;
    create(&s, "default", "a", json!({})).await;
    let b = create(&s, "default", "b", json!({})).await;
    let path = format!(
        "{}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        llamas("default")
    );
    let mut w = WatchStream::open(&s, &path).await;
    assert_eq!(event_summary(&w.next().await.unwrap()), ("ADDED".into(), "a".into()));
    assert_eq!(event_summary(&w.next().await.unwrap()), ("ADDED".into(), "b".into()));
    let end = w.next().await.unwrap();
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    assert_eq!(end["object"]["kind"], "Llama");
    assert!(rv(&end["object"]) >= rv(&b));

    let c = create(&s, "default", "c", json!({})).await;
    assert_eq!(event_summary(&w.next().await.unwrap()), ("ADDED".into(), "c".into()));
    let periodic = w.next_within(Duration::from_secs(3)).await.unwrap();
    assert_eq!(periodic["type"], "BOOKMARK");
    assert!(rv(&periodic["object"]) >= rv(&c));
    assert!(
        periodic["object"]["metadata"].get("annotations").is_none_or(|a| a.as_object().is_none_or(|m| m.is_empty()))
    );

    // Without bookmarks (allowed since Kubernetes 1.3x), a watch list ends its initial events
    // with no bookmark: the next event after them is the next change.
    let path = format!("{}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", llamas("default"));
    let mut quiet = WatchStream::open(&s, &path).await;
    for name in ["a", "b", "c"] {
        assert_eq!(event_summary(&quiet.next().await.unwrap()), ("ADDED".into(), name.into()));
    }
    create(&s, "default", "d", json!({})).await;
    assert_eq!(event_summary(&quiet.next().await.unwrap()), ("ADDED".into(), "d".into()));
}

/// kube-apiserver 1.37's WatchListCompression (beta, on by default): a watch list's stream
/// (initial events and bookmarks) is gzipped, in members a client reads as they come, for a
/// client that accepts gzip; another watch is not.
#[tokio::test]
async fn a_watch_list_is_gzipped_for_a_client_that_accepts_gzip() {
    let s = Server::start().await;
    create(&s, "default", "a", json!({})).await;
    let watch = async |query: &str| {
        let url = format!("{}{}?watch=true&timeoutSeconds=1&{query}", s.base, llamas("default"));
        let response = s.client.get(url).header("accept-encoding", "gzip").send().await.unwrap();
        let encoding = response.headers().get("content-encoding").map(|v| v.to_str().unwrap().to_string());
        (encoding, response.bytes().await.unwrap().to_vec())
    };
    let (encoding, body) =
        watch("sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true").await;
    assert_eq!(encoding.as_deref(), Some("gzip"));
    let mut plain = String::new();
    std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(&body[..]), &mut plain).unwrap();
    let events: Vec<Value> = serde_json::Deserializer::from_str(&plain).into_iter().map(Result::unwrap).collect();
    assert_eq!(event_summary(&events[0]), ("ADDED".into(), "a".into()));
    assert_eq!(events[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    // Without bookmarks it is not a watch list (`isListWatchRequest`), though it sends the
    // initial events.
    let (encoding, body) = watch("sendInitialEvents=true&resourceVersionMatch=NotOlderThan").await;
    assert_eq!(encoding, None, "only a watch list is compressed");
    assert!(String::from_utf8(body).unwrap().contains("\"ADDED\""));
}

#[apply(backends)]
async fn timeout_seconds_ends_the_watch_cleanly(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let started = std::time::Instant::now();
    let mut w = WatchStream::open(&s, &format!("{}?watch=true&timeoutSeconds=1", llamas("default"))).await;
    assert!(w.next_within(common::EVENT_DEADLINE).await.is_none());
    // A lower bound on the timeout the watch asked for: a loaded machine makes it longer, never
    // shorter, and a watch ended at once (not by its timeout) fails it.
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
}

#[apply(backends)]
async fn selectors_turn_changes_into_added_and_deleted_events(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    create(&s, "default", "a", json!({"herd": "x"})).await;
    create(&s, "default", "b", json!({})).await;
    let mut w = WatchStream::open(&s, &format!("{}?watch=true&labelSelector=herd%3Dx", llamas("default"))).await;
    assert_eq!(event_summary(&w.next().await.unwrap()), ("ADDED".into(), "a".into()));
    merge(&s, "default", "b", json!({"metadata": {"labels": {"herd": "x"}}})).await;
    assert_eq!(event_summary(&w.next().await.unwrap()), ("ADDED".into(), "b".into()));
    merge(&s, "default", "a", json!({"metadata": {"labels": {"herd": "y"}}})).await;
    assert_eq!(event_summary(&w.next().await.unwrap()), ("DELETED".into(), "a".into()));
    merge(&s, "default", "a", json!({"spec": {"weight": 9}})).await;
    merge(&s, "default", "b", json!({"spec": {"weight": 9}})).await;
    assert_eq!(event_summary(&w.next().await.unwrap()), ("MODIFIED".into(), "b".into()));

    // kubectl get llama NAME -w
    let mut one =
        WatchStream::open(&s, &format!("{}?watch=true&fieldSelector=metadata.name%3Db", llamas("default"))).await;
    assert_eq!(event_summary(&one.next().await.unwrap()), ("ADDED".into(), "b".into()));
    merge(&s, "default", "a", json!({"spec": {"weight": 10}})).await;
    delete(&s, "default", "b").await;
    assert_eq!(event_summary(&one.next().await.unwrap()), ("DELETED".into(), "b".into()));
}

#[apply(backends)]
async fn table_and_metadata_watches_carry_their_representation(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    create(&s, "default", "a", json!({})).await;
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let mut t = WatchStream::open_accepting(&s, &format!("{}?watch=true", llamas("default")), table).await;
    let first = t.next().await.unwrap();
    assert_eq!(first["object"]["kind"], "Table");
    assert_eq!(first["object"]["columnDefinitions"][1]["name"], "Weight");
    assert_eq!(first["object"]["rows"][0]["cells"][0], "a");
    merge(&s, "default", "a", json!({"spec": {"weight": 4}})).await;
    let second = t.next().await.unwrap();
    assert_eq!(second["type"], "MODIFIED");
    assert_eq!(second["object"]["rows"][0]["cells"][1], 4.0);

    let meta = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";
    let mut m = WatchStream::open_accepting(&s, &format!("{}?watch=true", llamas("default")), meta).await;
    let e = m.next().await.unwrap();
    assert_eq!(e["object"]["kind"], "PartialObjectMetadata");
    assert!(e["object"].get("spec").is_none());
}

#[apply(backends)]
async fn a_watcher_that_stops_reading_is_dropped_without_slowing_writers_or_others(#[case] backend: Backend) {
    let s = Server::start_on_with(backend, &["--watch-buffer-size", "8"]).await;
    let mut stalled = WatchStream::open(&s, &format!("{}?watch=true", llamas("default"))).await;
    let mut reader = WatchStream::open(&s, &format!("{}?watch=true", llamas("default"))).await;
    let big = "x".repeat(20_000);
    let total = 300;
    let reading = tokio::spawn(async move {
        let mut n = 0;
        while n < total {
            match reader.next_within(Duration::from_secs(10)).await {
                Some(e) if e["type"] == "ADDED" => n += 1,
                Some(_) => {}
                None => break,
            }
        }
        n
    });
    for i in 0..total {
        let mut body = llama(&format!("l{i}"), 1.0, 1.0);
        body["metadata"]["annotations"] = json!({"padding": big});
        let r = s.client.post(s.url(&llamas("default"))).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 201);
    }
    assert_eq!(reading.await.unwrap(), total, "the reading watcher saw every event");
    // Counted when it is cut off, while its client still reads nothing.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while s.scrape().await.get("apiserver_terminated_watchers_total{resource=\"llamas\"}") != Some(&1.0) {
        assert!(tokio::time::Instant::now() < deadline, "the stalled watcher was not counted as dropped");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (mut delivered, mut last_rv) = (0, String::new());
    while let Some(e) = stalled.next_within(Duration::from_secs(10)).await {
        assert_eq!(e["type"], "ADDED");
        assert_eq!(e["object"]["metadata"]["name"], format!("l{delivered}"), "in order, none skipped");
        last_rv = e["object"]["metadata"]["resourceVersion"].as_str().unwrap().to_string();
        delivered += 1;
    }
    assert!(delivered < total, "the stalled watcher was cut off (got {delivered} of {total})");
    // As a client does: it watches again from the last event it received and gets the rest.
    let mut again = WatchStream::open(&s, &format!("{}?watch=true&resourceVersion={last_rv}", llamas("default"))).await;
    for i in delivered..total {
        let e = again.next_within(Duration::from_secs(10)).await.expect("the rest, from the history");
        assert_eq!(e["object"]["metadata"]["name"], format!("l{i}"));
    }
    drop(again);
    // Both watches end (the reader was dropped); only the stalled one was dropped by the server.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let metrics = loop {
        let metrics = s.scrape().await;
        if metrics["apiserver_longrunning_requests{resource=\"llamas\"}"] == 0.0 {
            break metrics;
        }
        assert!(tokio::time::Instant::now() < deadline, "a watch stayed open");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(metrics["apiserver_terminated_watchers_total{resource=\"llamas\"}"], 1.0, "one watcher dropped");
}

#[apply(backends)]
async fn deletecollection_honours_label_and_field_selectors(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    create(&s, "default", "a", json!({"herd": "x"})).await;
    create(&s, "default", "b", json!({"herd": "x"})).await;
    create(&s, "default", "c", json!({"herd": "y"})).await;
    let r = s
        .client
        .delete(s.url(&format!("{}?labelSelector=herd%3Dx&fieldSelector=metadata.name!%3Db", llamas("default"))))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let deleted: Value = r.json().await.unwrap();
    assert_eq!(names(&deleted), ["a"]);
    let (_, left) = get_json(&s, &llamas("default")).await;
    assert_eq!(names(&left), ["b", "c"]);
    let r = s.client.delete(s.url(&format!("{}?labelSelector=herd%20in", llamas("default")))).send().await.unwrap();
    assert_eq!(r.status(), 400);
}

/// `body`, gunzipped.
fn gunzip(body: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(body).read_to_end(&mut out).expect("a gzip body");
    out
}

#[tokio::test]
async fn answers_over_128_kib_are_gzipped_for_a_client_that_accepts_it_and_nothing_else_is() {
    let s = Server::start().await;
    for i in 0..300 {
        create(&s, "big", &format!("llama-{i:03}"), json!({"herd": "a"})).await;
    }
    let list = s.url(&llamas("big"));
    let plain = s.client.get(&list).send().await.unwrap();
    assert_eq!(plain.headers().get("content-encoding"), None);
    let plain = plain.bytes().await.unwrap();
    assert!(plain.len() > 128 * 1024, "the list is {} bytes", plain.len());
    let resource_version = serde_json::from_slice::<Value>(&plain).unwrap()["metadata"]["resourceVersion"].clone();
    let at_that_version =
        format!("{list}?resourceVersion={}&resourceVersionMatch=Exact", resource_version.as_str().unwrap());
    let plain = s.client.get(&at_that_version).send().await.unwrap().bytes().await.unwrap();
    for accept in ["gzip", "deflate, gzip", "br,gzip"] {
        let r = s.client.get(&at_that_version).header("accept-encoding", accept).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-encoding"], "gzip", "{accept}");
        assert_eq!(r.headers()["vary"], "Accept-Encoding");
        let body = r.bytes().await.unwrap();
        assert!(body.len() * 5 < plain.len(), "{} bytes compressed from {}", body.len(), plain.len());
        assert_eq!(gunzip(&body), plain, "the same answer, compressed");
    }
    // The kube-apiserver reads only the bare token; small answers and streams go as they are.
    let r = s.client.get(&list).header("accept-encoding", "gzip;q=1").send().await.unwrap();
    assert_eq!(r.headers().get("content-encoding"), None);
    let r =
        s.client.get(s.url(&llama_path("big", "llama-000"))).header("accept-encoding", "gzip").send().await.unwrap();
    assert_eq!((r.status().as_u16(), r.headers().get("content-encoding")), (200, None));
    let r = s
        .client
        .get(format!("{list}?watch=true&timeoutSeconds=1"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!((r.status().as_u16(), r.headers().get("content-encoding")), (200, None));
    assert_eq!(
        r.bytes().await.unwrap().iter().filter(|b| **b == b'\n').count(),
        300,
        "every ADDED event, uncompressed"
    );
    // A YAML answer is compressed as the client reads it.
    let r = s
        .client
        .get(&list)
        .header("accept", "application/yaml")
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(
        (r.headers()["content-type"].to_str().unwrap(), r.headers()["content-encoding"].to_str().unwrap()),
        ("application/yaml", "gzip")
    );
    let yaml = String::from_utf8(gunzip(&r.bytes().await.unwrap())).unwrap();
    assert!(
        yaml.starts_with("apiVersion: farm.example.com/v1alpha\n") && yaml.contains("name: llama-299"),
        "{}",
        &yaml[..200]
    );
}
