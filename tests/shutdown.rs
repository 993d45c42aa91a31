//! Graceful shutdown under load: SIGTERM while writers, listers and watchers (over HTTP/1.1 and
//! HTTP/2) are busy. The process must exit 0 once its work is done, not when a grace period runs
//! out; every response whose head a client received must arrive whole (no reset mid-response);
//! every watch must end with a clean end of stream; and every write a client saw acknowledged
//! must be in every watcher's stream, in resourceVersion order — the server ends watches only
//! after the last write.
//!
//! No test here measures how fast anything is: the grace period is far longer than the test
//! waits for the exit, so exiting at all shows the server did not need it, and the load is
//! running (acknowledged writes and completed lists counted) before SIGTERM is sent.

mod common;

use common::{Server, llama, llamas, rv};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Far longer than the test waits for the exit ([`common::EVENT_DEADLINE`]): a server that
/// waited for the grace period to end, instead of for its last request, fails the test.
const GRACE_SECONDS: u64 = 600;
/// Acknowledged writes before SIGTERM: the slow watcher is then hundreds of events behind.
const WRITES_BEFORE_SIGTERM: usize = 300;
const BIG: usize = 1_500;

/// A client with its own connection: HTTP/1.1 keep-alive, or HTTP/2 when the server offers it.
fn client(server: &Server, http1: bool) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {}", server.token).parse().expect("header"));
    let builder = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&server.ca_pem).expect("CA"))
        .default_headers(headers);
    let builder = if http1 { builder.http1_only() } else { builder };
    builder.build().expect("client")
}

/// What one client saw.
#[derive(Default, Debug)]
struct Outcome {
    /// Writes answered 201 with a whole body: (name, resourceVersion).
    acknowledged: Vec<(String, u64)>,
    /// Complete responses of any kind.
    completed: usize,
    /// Requests that failed before a response head arrived (refused or closed connections).
    not_answered: usize,
    /// Responses whose head arrived but whose body did not, or came back unparsable: never allowed.
    broken: Vec<String>,
}

/// Sends `request`: `None` when no response head arrived (a refused or closed connection), else
/// the status and the body as JSON, or why the body did not arrive whole.
async fn exchange(request: reqwest::RequestBuilder) -> Option<(u16, Result<Value, String>)> {
    let response = request.send().await.ok()?;
    let status = response.status().as_u16();
    let body = match response.bytes().await {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| format!("unparsable body: {e}")),
        Err(e) => Err(format!("body cut off: {e:?}")),
    };
    Some((status, body))
}

async fn write_until_refused(client: reqwest::Client, url: String, prefix: String, out: Arc<Mutex<Outcome>>) {
    for i in 0.. {
        let name = format!("{prefix}-{i}");
        let Some(answer) = exchange(client.post(&url).json(&llama(&name, 1.0, 1.0))).await else {
            out.lock().unwrap().not_answered += 1;
            return;
        };
        let mut o = out.lock().unwrap();
        match answer {
            (201, Ok(object)) => {
                o.acknowledged.push((name, rv(&object)));
                o.completed += 1;
            }
            (code, body) => o.broken.push(format!("create {name}: {code} {body:?}")),
        }
    }
}

async fn list_until_refused(client: reqwest::Client, url: String, out: Arc<Mutex<Outcome>>) {
    loop {
        let Some(answer) = exchange(client.get(&url)).await else {
            out.lock().unwrap().not_answered += 1;
            return;
        };
        let mut o = out.lock().unwrap();
        match answer {
            (200, Ok(list)) if list["items"].as_array().map(Vec::len) == Some(BIG) => o.completed += 1,
            (code, body) => {
                o.broken.push(format!("list: {code} {:?} items", body.map(|l| l["items"].as_array().map(Vec::len))))
            }
        }
    }
}

/// A watch's events as (type, name, resourceVersion), and how its stream ended.
#[derive(Debug)]
struct Watched {
    events: Vec<(String, String, u64)>,
    ended: Result<(), String>,
}

/// Reads a watch; a `slow` reader pauses after every chunk, so it is behind when SIGTERM comes.
async fn watch(client: reqwest::Client, url: String, opened: Arc<tokio::sync::Barrier>, slow: bool) -> Watched {
    let mut response = client.get(&url).send().await.expect("watch request");
    assert_eq!(response.status(), 200);
    opened.wait().await;
    let (mut events, mut buffer) = (Vec::new(), Vec::<u8>::new());
    let ended = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                buffer.extend_from_slice(&chunk);
                if slow {
                    // The behaviour under test, not synchronisation: a reader that lags behind.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            Ok(None) if buffer.is_empty() => break Ok(()),
            Ok(None) => break Err(format!("stream ended inside a frame: {:?}", String::from_utf8_lossy(&buffer))),
            Err(e) => break Err(format!("stream broken: {e:?}")),
        }
        while let Some(pos) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=pos).collect();
            let event: Value = serde_json::from_slice(&line).expect("a JSON watch frame");
            let kind = event["type"].as_str().unwrap_or_default().to_string();
            let name = event["object"]["metadata"]["name"].as_str().unwrap_or_default().to_string();
            events.push((kind, name, rv(&event["object"])));
        }
    };
    Watched { events, ended }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_under_load_finishes_responses_ends_watches_cleanly_and_exits_zero() {
    // A buffer large enough that the slow watcher is never dropped for falling behind.
    let mut server =
        Server::start_with(&["--shutdown-grace-seconds", &GRACE_SECONDS.to_string(), "--watch-buffer-size", "100000"])
            .await;
    let setup = client(&server, false);
    for i in 0..BIG {
        let r = setup.post(server.url(&llamas("big"))).json(&llama(&format!("big-{i:04}"), 1.0, 1.0)).send().await;
        assert_eq!(r.expect("create").status(), 201);
    }
    let listed: Value = setup.get(server.url(&llamas("w"))).send().await.unwrap().json().await.unwrap();
    let start = listed["metadata"]["resourceVersion"].as_str().expect("list resourceVersion").to_string();

    // Watchers of the writers' namespace and of all namespaces, over both protocols.
    let paths = [
        format!("{}?watch=true&resourceVersion={start}", llamas("w")),
        format!("/apis/farm.example.com/v1alpha/llamas?watch=true&resourceVersion={start}&allowWatchBookmarks=true"),
    ];
    let opened = Arc::new(tokio::sync::Barrier::new(6));
    let mut watchers = Vec::new();
    for http1 in [true, false] {
        for path in &paths {
            watchers.push(tokio::spawn(watch(client(&server, http1), server.url(path), opened.clone(), false)));
        }
    }
    // Behind by hundreds of events at SIGTERM: shutdown must still deliver them before the end.
    watchers.push(tokio::spawn(watch(client(&server, false), server.url(&paths[0]), opened.clone(), true)));
    opened.wait().await;

    let writes = Arc::new(Mutex::new(Outcome::default()));
    let lists = Arc::new(Mutex::new(Outcome::default()));
    let mut load = Vec::new();
    for w in 0..6 {
        let c = client(&server, w % 2 == 0);
        load.push(tokio::spawn(write_until_refused(c, server.url(&llamas("w")), format!("w{w}"), writes.clone())));
    }
    for l in 0..2 {
        let c = client(&server, l == 0);
        load.push(tokio::spawn(list_until_refused(c, server.url(&llamas("big")), lists.clone())));
    }
    common::wait_until("writes to be acknowledged and lists to complete", async || {
        writes.lock().unwrap().acknowledged.len() >= WRITES_BEFORE_SIGTERM && lists.lock().unwrap().completed > 0
    })
    .await;
    let acknowledged_before = writes.lock().unwrap().acknowledged.len();

    let sent = Instant::now();
    server.terminate();
    let status = server.exit_status(common::EVENT_DEADLINE).await.expect("the server exited before its grace period");
    let took = sent.elapsed();
    for task in load {
        tokio::time::timeout(common::EVENT_DEADLINE, task).await.expect("clients stop").expect("client task");
    }
    let watched: Vec<Watched> = futures_join(watchers).await;

    let writes = writes.lock().unwrap();
    let lists = lists.lock().unwrap();
    println!(
        "exit {status} after {took:?}; slow watcher saw {} events; writes acknowledged {} ({acknowledged_before} before SIGTERM), lists completed {}, \
         requests refused after the listener closed {}",
        watched.last().map_or(0, |w| w.events.len()),
        writes.acknowledged.len(),
        lists.completed,
        writes.not_answered + lists.not_answered
    );
    assert!(status.success(), "exit status {status}");
    assert!(writes.broken.is_empty(), "responses broken mid-way: {:?}", writes.broken);
    assert!(lists.broken.is_empty(), "responses broken mid-way: {:?}", lists.broken);

    let mut acknowledged = writes.acknowledged.clone();
    acknowledged.sort_by_key(|(_, rv)| *rv);
    for (i, w) in watched.iter().enumerate() {
        assert_eq!(w.ended, Ok(()), "watcher {i} ended cleanly");
        let seen: Vec<(String, u64)> = w
            .events
            .iter()
            .filter(|(kind, _, _)| kind != "BOOKMARK")
            .map(|(kind, name, rv)| {
                assert_eq!(kind, "ADDED", "watcher {i}: only creations happened");
                (name.clone(), *rv)
            })
            .collect();
        assert!(seen.windows(2).all(|p| p[0].1 < p[1].1), "watcher {i}: events in resourceVersion order");
        // Writes can be committed but not acknowledged (the client's connection closed first),
        // so the stream may hold more than the acknowledged writes, never fewer.
        let missing: Vec<&(String, u64)> = acknowledged.iter().filter(|a| !seen.contains(a)).collect();
        assert!(missing.is_empty(), "watcher {i} missed acknowledged writes: {missing:?}");
    }
}

async fn futures_join(tasks: Vec<tokio::task::JoinHandle<Watched>>) -> Vec<Watched> {
    let mut out = Vec::new();
    for t in tasks {
        out.push(tokio::time::timeout(common::EVENT_DEADLINE, t).await.expect("watch ends").expect("watch task"));
    }
    out
}

#[tokio::test]
async fn during_the_shutdown_delay_readiness_fails_but_requests_are_still_served() {
    // The delay is the behaviour under test, so it is long: every step below happens well
    // within it on a loaded machine.
    const DELAY: Duration = Duration::from_secs(5);
    let delay = DELAY.as_secs().to_string();
    let mut server = Server::start_with(&["--shutdown-delay-seconds", &delay, "--shutdown-grace-seconds", "5"]).await;
    let sent = Instant::now();
    server.terminate();
    let mut readyz = (reqwest::StatusCode::OK, String::new());
    common::wait_until("readiness to fail after SIGTERM", async || {
        let r = server.client.get(server.url("/readyz?verbose")).send().await.expect("readyz during the delay");
        readyz = (r.status(), r.text().await.unwrap_or_default());
        readyz.0 != 200
    })
    .await;
    assert_eq!(readyz.0, 500);
    assert!(readyz.1.contains("[-]shutdown failed"), "{}", readyz.1);
    let listed = server.client.get(server.url(&llamas("default"))).send().await.expect("list during the delay");
    assert_eq!(listed.status(), 200);
    let status = server.exit_status(common::EVENT_DEADLINE).await.expect("the server exited");
    assert!(status.success(), "{status}");
    // A lower bound only: a slow machine makes this longer, never shorter.
    assert!(sent.elapsed() >= DELAY, "left before the delay was over: {:?}", sent.elapsed());
}

/// A server whose stderr is a pipe its reader closed still stops on SIGTERM: its log lines fail
/// to be written and are dropped (tracing-subscriber's own report of a failed write panicked
/// the task logging, the shutdown's among them, and the server then ran on).
#[tokio::test]
async fn a_server_whose_log_reader_went_away_still_stops_on_sigterm() {
    use std::io::{BufRead, BufReader};
    let (mut server, log) = Server::start_with_log_pipe(&[]).await;
    let mut log = BufReader::new(log);
    let mut line = String::new();
    while !line.contains("serving") {
        line.clear();
        assert!(log.read_line(&mut line).expect("a log line") > 0, "the server stopped before it served");
    }
    drop(log);
    server.terminate();
    let exited = server.exit_status(common::EVENT_DEADLINE).await;
    let exited =
        exited.unwrap_or_else(|| panic!("SIGTERM did not stop the server within {:?}", common::EVENT_DEADLINE));
    assert!(exited.success(), "{exited}");
}
