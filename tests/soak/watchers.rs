//! Watchers: LIST, then watch from its resourceVersion, re-watching whenever the server ends the stream, as an informer does.

use super::*;

#[derive(Clone, Copy, Debug)]
pub(crate) struct WatchSpec {
    pub(crate) name: &'static str,
    pub(crate) scope: Scope,
    pub(crate) bookmarks: bool,
    /// `timeoutSeconds` of each stream, drawn from this range; the server's timeout when `None`.
    pub(crate) timeout_seconds: Option<(u64, u64)>,
    /// Stops reading for [`SLOW_PAUSE_WRITES`] every [`SLOW_EVERY`], with small HTTP/2 windows.
    pub(crate) slow: bool,
}

pub(crate) fn watch_specs() -> Vec<WatchSpec> {
    let all = |herd| Scope { namespace: None, herd };
    let ns = |n, herd| Scope { namespace: Some(n), herd };
    let spec = |name, scope, bookmarks| WatchSpec { name, scope, bookmarks, timeout_seconds: None, slow: false };
    let slow = |name, scope| WatchSpec { timeout_seconds: Some((10, 10)), slow: true, ..spec(name, scope, true) };
    vec![
        spec("all, bookmarks", all(None), true),
        WatchSpec { timeout_seconds: Some((1, 4)), ..spec("all, timeoutSeconds 1-4", all(None), false) },
        spec("all, herd=a", all(Some(0)), false),
        spec("soak-a", ns(0, None), false),
        spec("soak-b, herd=b, bookmarks", ns(1, Some(1)), true),
        // timeoutSeconds=10, longer than the server's 3-6 s, so that a stream ending early is one
        // the server dropped because the watcher fell behind.
        slow("all, bookmarks, slow reader", all(None)),
        slow("soak-c, herd=c, bookmarks, slow reader", ns(2, Some(2))),
    ]
}

/// What the main task can see of a running watcher.
#[derive(Default)]
pub(crate) struct WatchProgress {
    /// The resourceVersion of its first LIST (0 until then).
    pub(crate) start: AtomicU64,
    /// The resourceVersion of its latest event or bookmark: it claims to have seen every event up
    /// to there.
    pub(crate) last_rv: AtomicU64,
    /// It stopped after a failure.
    pub(crate) broken: AtomicBool,
}

#[derive(Default)]
pub(crate) struct WatchLog {
    pub(crate) events: Vec<Ev>,
    /// What happened between events: `(number of events before it, what)`, for diagnosis.
    pub(crate) marks: Vec<(usize, String)>,
    pub(crate) bookmarks: u64,
    pub(crate) streams: u64,
    pub(crate) timeouts: u64,
    pub(crate) dropped: u64,
}

pub(crate) async fn watcher(
    shared: Arc<Shared>,
    spec: WatchSpec,
    delay: Duration,
    seed: u64,
    progress: Arc<WatchProgress>,
    stop: watch::Receiver<bool>,
) -> (WatchLog, Option<ListObs>) {
    let mut log = WatchLog::default();
    // Staggered starts (pacing, not synchronisation): the watchers start at different
    // resourceVersions.
    tokio::time::sleep(delay).await;
    let result = watch_loop(&shared, spec, seed, &progress, &stop, &mut log).await;
    let obs = match result {
        Ok(obs) => obs,
        Err(e) => {
            progress.broken.store(true, Ordering::SeqCst);
            shared.fail(format!("watcher \"{}\": {e}", spec.name));
            None
        }
    };
    (log, obs)
}

/// The watcher: LIST, then watch from the list's resourceVersion, re-watching from the last one
/// seen whenever the server ends the stream, until `stop`. Once stopped it opens no new stream,
/// and reads the one it has to its end: the server, shutting down, ends it after every event
/// committed, so everything the server sent is checked, nothing is cut off by the test.
/// Returns the LIST's observation.
pub(crate) async fn watch_loop(
    shared: &Shared,
    spec: WatchSpec,
    seed: u64,
    progress: &WatchProgress,
    stop: &watch::Receiver<bool>,
    log: &mut WatchLog,
) -> Result<Option<ListObs>, String> {
    let client = shared.client(spec.slow.then_some(SLOW_WINDOW));
    let mut rng = StdRng::seed_from_u64(seed);
    let what = format!("watcher \"{}\": LIST {}", spec.name, spec.scope);
    let (code, body) = shared.call(&what, client.get(shared.url(&spec.scope.path("")))).await?;
    if code != 200 {
        return Err(unexpected(&what, code, &body));
    }
    shared.count("list 200");
    let (start, items) = check_list(&what, &body, spec.scope, None)?;
    let (count, digest) = digest(items.iter().map(|(k, o)| (*k, o)));
    let obs = ListObs { what, scope: spec.scope, rv: start, count, digest };
    progress.start.store(start, Ordering::SeqCst);
    let mut last_rv = start;
    let mut next_pause = Instant::now() + SLOW_EVERY;
    loop {
        if *stop.borrow() {
            return Ok(Some(obs));
        }
        let timeout = spec.timeout_seconds.map(|(min, max)| rng.random_range(min..=max));
        let mut query = format!("watch=true&resourceVersion={last_rv}");
        if spec.bookmarks {
            query.push_str("&allowWatchBookmarks=true");
        }
        if let Some(t) = timeout {
            query.push_str(&format!("&timeoutSeconds={t}"));
        }
        let path = spec.scope.path(&query);
        let opened = Instant::now();
        let mut response = match tokio::time::timeout(STALL, client.get(shared.url(&path)).send()).await {
            Err(_) => return Err(format!("watch {path}: no answer within {STALL:?}")),
            // The server stopped accepting, as the main task told it to, after this watcher
            // last looked at `stop`.
            Ok(Err(_)) if *stop.borrow() => return Ok(Some(obs)),
            Ok(Err(e)) => return Err(format!("watch {path}: transport error: {e:?}")),
            Ok(Ok(r)) => r,
        };
        shared.requests.fetch_add(1, Ordering::SeqCst);
        if response.status() != 200 && *stop.borrow() {
            // Answered while the server shuts down (503, for one): no stream to read.
            let _ = response.bytes().await;
            return Ok(Some(obs));
        }
        if response.status() != 200 {
            let code = response.status().as_u16();
            let body = response.bytes().await.unwrap_or_default();
            if shared.in_outage(code, &serde_json::from_slice(&body).unwrap_or_default()) {
                shared.count("watch 503 during the etcd outage");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            return Err(format!("watch {path}: unexpected HTTP {code}: {}", snippet(&body)));
        }
        shared.count("watch (re)connect");
        log.streams += 1;
        log.marks.push((log.events.len(), format!("watch opened from rv {last_rv}")));
        let mut buffer: Vec<u8> = Vec::new();
        loop {
            let chunk = match tokio::time::timeout(STALL, response.chunk()).await {
                Err(_) => return Err(format!("watch {path}: nothing for {STALL:?} (last rv {last_rv})")),
                Ok(Err(e)) => return Err(format!("watch {path}: transport error mid-stream: {e:?}")),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => chunk,
            };
            buffer.extend_from_slice(&chunk);
            let mut consumed = 0;
            while let Some(end) = buffer[consumed..].iter().position(|b| *b == b'\n') {
                let line = &buffer[consumed..consumed + end];
                consumed += end + 1;
                let frame: Value = serde_json::from_slice(line)
                    .map_err(|e| format!("watch {path}: a frame that is not JSON ({e}): {}", snippet(line)))?;
                frame_event(shared, &client, &spec, &path, &frame, &mut last_rv, log).await?;
                progress.last_rv.store(last_rv, Ordering::SeqCst);
            }
            buffer.drain(..consumed);
            if spec.slow && Instant::now() >= next_pause {
                let until = shared.acknowledged.load(Ordering::SeqCst) + SLOW_PAUSE_WRITES;
                let paused = Instant::now();
                while shared.acknowledged.load(Ordering::SeqCst) < until && paused.elapsed() < SLOW_PAUSE_MAX {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                next_pause = Instant::now() + SLOW_EVERY;
            }
        }
        if !buffer.is_empty() {
            return Err(format!("watch {path}: the stream ended inside a frame: {}", snippet(&buffer)));
        }
        if *stop.borrow() {
            log.marks.push((log.events.len(), "stream ended by the server's shutdown".to_string()));
            return Ok(Some(obs));
        }
        // Diagnosis only, never a check: why the server ended the stream, guessed from how long
        // it lasted.
        // The server ended the stream: at its timeout, or early because the watcher fell behind.
        let expected = Duration::from_secs(timeout.unwrap_or(MIN_REQUEST_TIMEOUT));
        let lasted = opened.elapsed();
        if lasted + Duration::from_millis(250) < expected {
            log.dropped += 1;
            shared.count("watch ended early by the server: fell behind (re-watched)");
            log.marks.push((log.events.len(), format!("stream ended early after {lasted:.1?} (dropped: fell behind)")));
        } else {
            log.timeouts += 1;
            shared.count("watch ended by its timeout (re-watched)");
            log.marks.push((log.events.len(), format!("stream ended after {lasted:.1?} (timeout)")));
        }
    }
}

/// Records one watch frame, checking its order; an `Err` ends the watcher.
pub(crate) async fn frame_event(
    shared: &Shared,
    client: &reqwest::Client,
    spec: &WatchSpec,
    path: &str,
    frame: &Value,
    last_rv: &mut u64,
    log: &mut WatchLog,
) -> Result<(), String> {
    let kind = match frame["type"].as_str() {
        Some("ADDED") => Kind::Added,
        Some("MODIFIED") => Kind::Modified,
        Some("DELETED") => Kind::Deleted,
        Some("BOOKMARK") => {
            let rv: u64 = frame["object"]["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|r| r.parse().ok())
                .ok_or_else(|| format!("watch {path}: a bookmark without a resourceVersion: {frame}"))?;
            if !spec.bookmarks {
                return Err(format!("watch {path}: a bookmark nobody asked for: {frame}"));
            }
            if rv < *last_rv {
                return Err(format!("watch {path}: a bookmark at rv {rv} after rv {last_rv} (went back)"));
            }
            *last_rv = rv;
            log.bookmarks += 1;
            log.marks.push((log.events.len(), format!("BOOKMARK at rv {rv}")));
            shared.count("watch bookmark");
            return Ok(());
        }
        Some("ERROR") => {
            let current = shared.current_rv(client).await.unwrap_or(0);
            let behind = current.saturating_sub(*last_rv);
            return Err(format!(
                "watch {path}: ERROR event {} (the watcher was at rv {last_rv}, the server is at rv {current}: {behind} \
                 writes behind, the history holds {HISTORY}{})",
                snippet(frame.to_string().as_bytes()),
                if behind <= HISTORY { "; a 410 is not legitimate" } else { "; the history was too short" },
            ));
        }
        _ => return Err(format!("watch {path}: an unknown frame: {}", snippet(frame.to_string().as_bytes()))),
    };
    let (key, obj) = parse_object(&frame["object"]).map_err(|e| format!("watch {path}: {e}"))?;
    let event = Ev { kind, key, obj, alt: None };
    if !spec.scope.in_namespace(key) {
        return Err(format!("watch {path}: {event} is outside {}", spec.scope));
    }
    // A DELETED event of an object that stopped matching carries the object as it is now.
    if kind != Kind::Deleted && !spec.scope.selects(key, &obj) {
        return Err(format!("watch {path}: {event} does not match {}", spec.scope));
    }
    if obj.rv <= *last_rv {
        return Err(format!("watch {path}: {event} after rv {last_rv} (resourceVersions must increase)"));
    }
    *last_rv = obj.rv;
    log.events.push(event);
    shared.count("watch event");
    Ok(())
}
