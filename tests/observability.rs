//! Metrics and logs from the outside: `/metrics` scraped before and after a known sequence of
//! requests moves by exactly what was sent; watch gauges and counters follow open watches and
//! their events; the request log has one line per refused request with its fields, never a
//! bearer token (the server's or a wrong one), and a client that resets its stream is not an
//! error.

mod common;

use common::{Server, WatchStream, llama, llama_path, llamas};
use std::collections::BTreeMap;

type Samples = BTreeMap<String, f64>;

/// How much `series` moved from `before` to `after` (absent counts as 0).
fn moved(before: &Samples, after: &Samples, series: &str) -> f64 {
    after.get(series).copied().unwrap_or(0.0) - before.get(series).copied().unwrap_or(0.0)
}

fn labels(verb: &str, resource: &str, code: u16) -> String {
    format!("verb=\"{verb}\",resource=\"{resource}\",code=\"{code}\"")
}

#[tokio::test]
async fn request_counters_and_histograms_move_by_exactly_what_was_sent() {
    let s = Server::start().await;
    let before = s.scrape().await;
    for name in ["a", "b", "c"] {
        let r = s.client.post(s.url(&llamas("default"))).json(&llama(name, 1.0, 1.0)).send().await.unwrap();
        assert_eq!(r.status(), 201);
    }
    for _ in 0..4 {
        assert_eq!(s.client.get(s.url(&llama_path("default", "a"))).send().await.unwrap().status(), 200);
    }
    for _ in 0..2 {
        assert_eq!(s.client.get(s.url(&llama_path("default", "nope"))).send().await.unwrap().status(), 404);
        assert_eq!(s.client.get(s.url(&llamas("default"))).send().await.unwrap().status(), 200);
    }
    let duplicate = s.client.post(s.url(&llamas("default"))).json(&llama("a", 1.0, 1.0)).send().await.unwrap();
    assert_eq!(duplicate.status(), 409);
    assert_eq!(s.anonymous().get(s.url(&llamas("default"))).send().await.unwrap().status(), 401);
    let after = s.scrape().await;

    let sent = [
        (labels("POST", "llamas", 201), 3.0),
        (labels("GET", "llamas", 200), 4.0),
        (labels("GET", "llamas", 404), 2.0),
        (labels("LIST", "llamas", 200), 2.0),
        (labels("POST", "llamas", 409), 1.0),
        (labels("LIST", "llamas", 401), 1.0),
        // The first scrape is counted once it has answered, so the second one shows it.
        (labels("GET", "", 200), 1.0),
    ];
    for (series, n) in &sent {
        assert_eq!(moved(&before, &after, &format!("apiserver_request_total{{{series}}}")), *n, "{series}");
        let count = format!("apiserver_request_duration_seconds_count{{{series}}}");
        assert_eq!(moved(&before, &after, &count), *n, "{count}");
        let mut previous = 0.0;
        for le in ["0.005", "0.025", "0.1", "1.0", "10.0", "30.0", "+Inf"] {
            let bucket = format!("apiserver_request_duration_seconds_bucket{{le=\"{le}\",{series}}}");
            let m = moved(&before, &after, &bucket);
            assert!(m >= previous && m <= *n, "{bucket} moved by {m}: cumulative buckets, at most {n}");
            previous = m;
        }
        assert_eq!(previous, *n, "every request is in the +Inf bucket");
    }
    let requests: f64 = after
        .iter()
        .filter(|(k, _)| k.starts_with("apiserver_request_total{"))
        .map(|(k, v)| v - before.get(k).copied().unwrap_or(0.0))
        .sum();
    assert_eq!(requests, sent.iter().map(|(_, n)| n).sum::<f64>(), "nothing else was counted");
    // Every request but the anonymous one authenticated, the second scrape included.
    assert_eq!(moved(&before, &after, "authentication_attempts_total{result=\"success\"}"), 13.0);
    assert_eq!(moved(&before, &after, "authentication_attempts_total{result=\"failure\"}"), 1.0);
    assert_eq!(after["apiserver_storage_objects{resource=\"llamas\"}"], 3.0);
    assert_eq!(after["farm_apiserver_watch_history_events{resource=\"llamas\"}"], 3.0);
    assert_eq!(after["apiserver_current_inflight_requests"], 1.0, "the scrape itself");
    assert!(after["process_resident_memory_bytes"] > 1e6);
    assert!(after["process_open_fds"] >= 3.0 && after["process_max_fds"] >= after["process_open_fds"]);
    assert!(after["process_cpu_seconds_total"] > 0.0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    assert!((now - after["process_start_time_seconds"]).abs() < 120.0);
    assert!(after["farm_apiserver_serving_certificate_expiration_timestamp_seconds"] > now);
    assert!(!after.keys().any(|k| k.starts_with("farm_apiserver_pod_cache")), "no Pod cache without a cluster");
}

#[tokio::test]
async fn watch_metrics_follow_open_watches_and_their_events() {
    let s = Server::start().await;
    for name in ["a", "b", "c"] {
        let r = s.client.post(s.url(&llamas("default"))).json(&llama(name, 1.0, 1.0)).send().await.unwrap();
        assert_eq!(r.status(), 201);
    }
    let before = s.scrape().await;
    let path = format!("{}?watch=true", llamas("default"));
    let (mut one, mut two) = (WatchStream::open(&s, &path).await, WatchStream::open(&s, &path).await);
    for name in ["d", "e"] {
        let r = s.client.post(s.url(&llamas("default"))).json(&llama(name, 1.0, 1.0)).send().await.unwrap();
        assert_eq!(r.status(), 201);
    }
    for watch in [&mut one, &mut two] {
        for _ in 0..5 {
            assert_eq!(watch.next().await.unwrap()["type"], "ADDED");
        }
    }
    let open = s.scrape().await;
    assert_eq!(open["apiserver_longrunning_requests{resource=\"llamas\"}"], 2.0);
    let events = "apiserver_watch_events_total{resource=\"llamas\"}";
    assert_eq!(moved(&before, &open, events), 10.0, "3 initial and 2 new events, to each of 2 watchers");
    assert_eq!(moved(&before, &open, &format!("apiserver_request_total{{{}}}", labels("WATCH", "llamas", 200))), 2.0);
    drop(one);
    common::wait_until("the closed watch to be no longer counted", async || {
        s.scrape().await["apiserver_longrunning_requests{resource=\"llamas\"}"] == 1.0
    })
    .await;
    drop(two);
}

#[tokio::test]
async fn the_request_log_names_every_refusal_and_never_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    // Everything, dependencies (hyper, h2, rustls) included, at the most verbose level.
    let s = Server::start_logging(&["--log-format", "json"], "trace", &log).await;
    let wrong = "not-the-token-4Zq8sEcret";
    let with_wrong = Server::client_with(&s.ca_pem, Some(wrong));
    for client in [&s.client, &with_wrong] {
        let _ = client.get(s.url(&llamas("default"))).send().await.unwrap();
        let _ = client.post(s.url(&llamas("default"))).json(&llama("dolly", 1.0, 1.0)).send().await.unwrap();
        let _ = client.get(s.url(&llama_path("default", "nope"))).send().await.unwrap();
    }
    // A client that goes away in the middle of a watch (an HTTP/2 stream reset).
    let mut watch = WatchStream::open(&s, &format!("{}?watch=true", llamas("default"))).await;
    assert_eq!(watch.next().await.unwrap()["type"], "ADDED");
    drop(watch);
    // The server's own account of the reset is the event: anything it logs about it comes with
    // or before this line.
    common::wait_for_log(&log, "watch ends: the client went away", 0).await;
    let _ = s.client.get(s.url("/readyz")).send().await.unwrap();

    let lines = common::complete_lines(&log);
    assert!(lines.len() > 100, "trace logging was on ({} lines)", lines.len());
    for line in &lines {
        assert!(!line.contains(&s.token), "the server's token was logged: {line}");
        assert!(!line.contains(wrong), "a client's wrong token was logged: {line}");
    }
    let entries: Vec<serde_json::Value> = lines.iter().map(|l| serde_json::from_str(l).expect("JSON lines")).collect();
    let level = |e: &serde_json::Value| e["level"].as_str().unwrap_or_default().to_string();
    let problems: Vec<&serde_json::Value> =
        entries.iter().filter(|e| level(e) == "WARN" || level(e) == "ERROR").collect();
    assert!(problems.is_empty(), "nothing here is a warning or an error: {problems:?}");
    let requests: Vec<&serde_json::Value> =
        entries.iter().filter(|e| e["target"] == "apiserver_kit::observe").map(|e| &e["fields"]).collect();
    let find = |status: u64, user: &str, path: &str| {
        requests
            .iter()
            .find(|f| f["status"] == status && f["user"] == user && f["path"] == path)
            .unwrap_or_else(|| panic!("no log line for {status} {user} {path} in {requests:?}"))
    };
    let not_found = find(404, "standalone-token", &llama_path("default", "nope"));
    assert_eq!(not_found["verb"], "GET");
    assert_eq!(not_found["reason"], "NotFound");
    assert!(not_found["duration_ms"].as_f64().is_some());
    assert_eq!(not_found["message"], "request refused");
    assert_eq!(not_found["error"], "llamas.farm.example.com \"nope\" not found");
    let refused = find(401, "-", &llamas("default"));
    assert_eq!(refused["reason"], "Unauthorized");
    assert_eq!(refused["verb"], "LIST");
    let created = find(201, "standalone-token", &llamas("default"));
    assert_eq!(created["verb"], "POST");
    assert_eq!(created["message"], "request");
    let info = entries
        .iter()
        .filter(|e| e["target"] == "apiserver_kit::observe" && e["fields"]["status"].as_u64().is_some_and(|c| c >= 400))
        .all(|e| level(e) == "INFO");
    assert!(info, "4xx lines are at info");
}

#[tokio::test]
async fn metrics_are_open_to_callers_without_credentials_only_when_asked() {
    for (flags, expected) in [(&["--anonymous-metrics"][..], 200), (&[][..], 401)] {
        let s = Server::start_with(flags).await;
        let anonymous = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&s.ca_pem).unwrap())
            .build()
            .unwrap();
        let answer = anonymous.get(format!("{}/metrics", s.base)).send().await.unwrap();
        assert_eq!(answer.status(), expected, "{flags:?}");
        if expected == 200 {
            let text = answer.text().await.unwrap();
            assert!(text.contains("apiserver_request_total{"), "{text}");
        }
        // Nothing else opens: the API still wants the token.
        let refused = anonymous.get(format!("{}/apis/farm.example.com/v1/llamas", s.base)).send().await.unwrap();
        assert_eq!(refused.status(), 401);
    }
}
