//! The properties the soak proves, each checked against the model of the acknowledged
//! writes once the load has stopped (see the test's documentation).

use super::*;

/// A watcher task: its spec, what the main task can see of it, and its handle.
pub(crate) type WatcherTask = (WatchSpec, Arc<WatchProgress>, tokio::task::JoinHandle<(WatchLog, Option<ListObs>)>);

/// The events a watcher of `scope` must see after `start`, from the model's writes.
pub(crate) fn expected_events(writes: &[Write], scope: Scope, start: u64) -> Vec<Ev> {
    let mut state: BTreeMap<Key, Obj> = BTreeMap::new();
    let mut out = Vec::new();
    for w in writes {
        let before = state.get(&w.key).copied();
        let mut alt = None;
        let kind = match w.op {
            Op::Create => scope.selects(w.key, &w.obj).then_some(Kind::Added),
            Op::Delete => scope.selects(w.key, &w.obj).then_some(Kind::Deleted),
            Op::Update | Op::Patch => {
                let was = before.is_some_and(|b| scope.selects(w.key, &b));
                match (was, scope.selects(w.key, &w.obj)) {
                    (true, true) => Some(Kind::Modified),
                    (false, true) => Some(Kind::Added),
                    (true, false) => {
                        alt = before.map(|b| Obj { rv: w.obj.rv, ..b });
                        Some(Kind::Deleted)
                    }
                    (false, false) => None,
                }
            }
        };
        apply(&mut state, w);
        if let Some(kind) = kind
            && w.obj.rv > start
        {
            out.push(Ev { kind, key: w.key, obj: w.obj, alt });
        }
    }
    out
}

/// Where `got` departs from `want`, with context; `None` when equal.
pub(crate) fn stream_difference(want: &[Ev], got: &[Ev], marks: &[(usize, String)]) -> Option<String> {
    let first = want.iter().zip(got).position(|(w, g)| !w.matches(g)).unwrap_or(want.len().min(got.len()));
    if first == want.len() && first == got.len() {
        return None;
    }
    let from = first.saturating_sub(2);
    let show = |events: &[Ev], marks: &[(usize, String)]| {
        let mut out = String::new();
        for (i, e) in events.iter().enumerate().take(first + 3).skip(from) {
            for (_, mark) in marks.iter().filter(|(at, _)| *at == i) {
                out.push_str(&format!("\n        ({mark})"));
            }
            out.push_str(&format!("\n      #{i}: {e}"));
        }
        out
    };
    let diagnosis = match (want.get(first), got.get(first)) {
        (Some(w), Some(g)) if g.obj.rv > w.obj.rv => {
            let missing = want[first..].iter().take_while(|e| e.obj.rv < g.obj.rv).count();
            format!("a gap: {missing} event(s) missing from rv {}", w.obj.rv)
        }
        (Some(w), Some(g)) if g.obj.rv < w.obj.rv => format!("an event that is not in the model (rv {})", g.obj.rv),
        (Some(_), Some(_)) => "an event with the right resourceVersion but the wrong content".to_string(),
        (Some(w), None) => {
            format!("the stream stops early: {} event(s) missing from rv {}", want.len() - first, w.obj.rv)
        }
        (None, Some(g)) => format!("{} event(s) beyond the model, from rv {}", got.len() - first, g.obj.rv),
        (None, None) => unreachable!(),
    };
    Some(format!(
        "{diagnosis}; first difference at event #{first} of {} expected / {} received;\n    expected:{}\n    received:{}",
        want.len(),
        got.len(),
        show(want, &[]),
        show(got, marks)
    ))
}

/// (1) The model: the acknowledged writes in resourceVersion order (sorted here), each consistent
/// with the state it changed, with no revision unaccounted for. Returns the final state.
pub(crate) fn check_model(writes: &mut [Write], base_rv: u64, problems: &mut Vec<String>) -> BTreeMap<Key, Obj> {
    writes.sort_by_key(|w| w.obj.rv);
    let mut state: BTreeMap<Key, Obj> = BTreeMap::new();
    let mut expected_rv = base_rv + 1;
    for w in writes.iter() {
        if w.obj.rv != expected_rv {
            problems.push(if w.obj.rv < expected_rv {
                format!("two acknowledged writes at rv {} ({:?} {})", w.obj.rv, w.op, show_key(w.key))
            } else {
                format!(
                    "rv {expected_rv}..{} belong to no acknowledged write (a write committed although it failed?); \
                     next: {:?} {} {}",
                    w.obj.rv - 1,
                    w.op,
                    show_key(w.key),
                    w.obj
                )
            });
        }
        expected_rv = w.obj.rv + 1;
        let current = state.get(&w.key).copied();
        let consistent = match (w.op, current) {
            (Op::Create, None) => Ok(()),
            (Op::Create, Some(c)) => Err(format!("it already existed ({c})")),
            (_, None) => Err("it did not exist".to_string()),
            (Op::Update, Some(_)) => Ok(()),
            (Op::Patch, Some(c)) if c.height == w.obj.height => Ok(()),
            (Op::Patch, Some(c)) => Err(format!("the merge patch changed the height: it was {c}")),
            (Op::Delete, Some(c)) if Obj { rv: w.obj.rv, ..c } == w.obj => Ok(()),
            (Op::Delete, Some(c)) => Err(format!("the deleted object is not the last state ({c})")),
        };
        if let Err(why) = consistent {
            problems.push(format!("acknowledged {:?} of {} at {}: {why}", w.op, show_key(w.key), w.obj));
        }
        apply(&mut state, w);
    }
    state
}

/// (1) The final state: LISTs per namespace and cluster-wide equal the model.
pub(crate) async fn check_final_lists(
    shared: &Shared,
    state: &BTreeMap<Key, Obj>,
    last_rv: u64,
    problems: &mut Vec<String>,
) {
    let client = shared.client(None);
    let mut final_scopes = vec![Scope { namespace: None, herd: None }];
    final_scopes.extend((0..NAMESPACES.len()).map(|n| Scope { namespace: Some(n), herd: None }));
    for scope in final_scopes {
        let what = format!("final LIST {scope}");
        let result = list_scope(shared, &client, &what, scope).await;
        let (rv, items) = match result {
            Ok(Some(list)) => list,
            Ok(None) => {
                problems.push(format!("{what}: 503 after the etcd outage"));
                continue;
            }
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        if rv != last_rv {
            problems.push(format!("{what}: at rv {rv}, the last acknowledged write is at rv {last_rv}"));
        }
        let want: Vec<(Key, Obj)> =
            state.iter().filter(|(k, o)| scope.selects(**k, o)).map(|(k, o)| (*k, *o)).collect();
        if items != want {
            let got: BTreeMap<Key, Obj> = items.into_iter().collect();
            let want: BTreeMap<Key, Obj> = want.into_iter().collect();
            let mut diffs = Vec::new();
            for key in got.keys().chain(want.keys()).collect::<std::collections::BTreeSet<_>>() {
                match (want.get(key), got.get(key)) {
                    (Some(w), Some(g)) if w != g => diffs.push(format!("{}: model {w}, store {g}", show_key(*key))),
                    (Some(w), None) => diffs.push(format!("{}: missing from the store (model {w})", show_key(*key))),
                    (None, Some(g)) => diffs.push(format!("{}: in the store but not the model ({g})", show_key(*key))),
                    _ => {}
                }
            }
            problems.push(format!("{what} differs from the model of the acknowledged writes: {}", diffs.join("; ")));
        }
    }
}

/// (3) Every watcher delivers exactly the model's events after its start, within [`DRAIN`] of
/// the last write; then the server is stopped gracefully (SIGTERM), which ends every watch after
/// the events committed, and each watcher reads its stream to that end: nothing the server sent
/// escapes the comparison. Returns the events delivered and a line per watcher, and adds the
/// watchers' own LISTs to `observations`.
pub(crate) async fn check_watchers(
    server: &Server,
    watchers: Vec<WatcherTask>,
    stop_watch_tx: watch::Sender<bool>,
    writes: &[Write],
    observations: &mut Vec<ListObs>,
    problems: &mut Vec<String>,
) -> (usize, Vec<String>) {
    let expectations: Vec<Vec<Ev>> = watchers
        .iter()
        .map(|(spec, progress, _)| expected_events(writes, spec.scope, progress.start.load(Ordering::SeqCst)))
        .collect();
    let drain_started = Instant::now();
    loop {
        let pending: Vec<&str> = watchers
            .iter()
            .zip(&expectations)
            .filter(|((_, progress, _), want)| {
                !progress.broken.load(Ordering::SeqCst)
                    && progress.start.load(Ordering::SeqCst) > 0
                    && want.last().is_some_and(|e| progress.last_rv.load(Ordering::SeqCst) < e.obj.rv)
            })
            .map(|((spec, _, _), _)| spec.name)
            .collect();
        if pending.is_empty() {
            break;
        }
        if drain_started.elapsed() > DRAIN {
            problems
                .push(format!("watchers {pending:?} did not deliver every event within {DRAIN:?} of the last write"));
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The watchers open no new stream from now on, and read the ones they have until the
    // server's shutdown ends them.
    stop_watch_tx.send(true).expect("stop");
    server.terminate();
    let mut events_delivered = 0;
    let mut watch_lines = Vec::new();
    for (((spec, progress, task), want), i) in watchers.into_iter().zip(&expectations).zip(0..) {
        let (log, obs) = task.await.expect("watcher task");
        events_delivered += log.events.len();
        observations.extend(obs);
        let start = progress.start.load(Ordering::SeqCst);
        watch_lines.push(format!(
            "  watcher {i} \"{}\": from rv {start}, {} events, {} bookmarks, {} streams ({} ended by timeout, {} dropped for \
             falling behind)",
            spec.name,
            log.events.len(),
            log.bookmarks,
            log.streams,
            log.timeouts,
            log.dropped
        ));
        if progress.broken.load(Ordering::SeqCst) {
            continue; // its failure is already recorded
        }
        if start == 0 {
            problems.push(format!("watcher \"{}\" never started", spec.name));
            continue;
        }
        if let Some(difference) = stream_difference(want, &log.events, &log.marks) {
            problems.push(format!("watcher \"{}\" (from rv {start}): {difference}", spec.name));
        }
    }

    (events_delivered, watch_lines)
}

/// (2) Every LIST and paging returned the model's state at its resourceVersion.
pub(crate) fn check_lists(observations: &mut [ListObs], writes: &[Write], problems: &mut Vec<String>) {
    observations.sort_by_key(|o| o.rv);
    let mut state: BTreeMap<Key, Obj> = BTreeMap::new();
    let mut next = 0;
    let mut wrong_lists = 0;
    for o in observations.iter() {
        while next < writes.len() && writes[next].obj.rv <= o.rv {
            apply(&mut state, &writes[next]);
            next += 1;
        }
        let want = digest(state.iter().filter(|(k, v)| o.scope.selects(**k, v)).map(|(k, v)| (*k, v)));
        if want != (o.count, o.digest) {
            wrong_lists += 1;
            if wrong_lists <= 5 {
                let model: Vec<String> = state
                    .iter()
                    .filter(|(k, v)| o.scope.selects(**k, v))
                    .take(10)
                    .map(|(k, v)| format!("{} {v}", show_key(*k)))
                    .collect();
                problems.push(format!(
                    "{} at rv {}: {} items that differ from the model's state at that rv ({} items: {}{})",
                    o.what,
                    o.rv,
                    o.count,
                    want.0,
                    model.join(", "),
                    if want.0 > 10 { ", …" } else { "" }
                ));
            }
        }
    }
    if wrong_lists > 5 {
        problems.push(format!("{wrong_lists} LISTs or pagings in all differ from the model"));
    }
}

/// What the RSS samples came to.
pub(crate) struct RssSummary {
    pub(crate) min: u64,
    pub(crate) max: u64,
    pub(crate) last: u64,
    pub(crate) warm_max: u64,
    pub(crate) bound: u64,
}

/// (4) RSS: flat after the warm-up (the first third of the run), within a slack that sees gross
/// growth only; the smallest leak per write the bound could have seen in this run is printed.
pub(crate) fn check_rss(
    samples: &[RssSample],
    elapsed: Duration,
    rss_prefilled: u64,
    problems: &mut Vec<String>,
) -> RssSummary {
    let warm_up = elapsed / 3;
    let warm_max = samples.iter().filter(|(t, _, _)| *t <= warm_up).map(|(_, r, _)| *r).max().unwrap_or(rss_prefilled);
    let after: Vec<u64> = samples.iter().filter(|(t, _, _)| *t > warm_up).map(|(_, r, _)| *r).collect();
    let all: Vec<u64> = samples.iter().map(|(_, r, _)| *r).collect();
    let writes_at_warm_up =
        samples.iter().filter(|(t, _, _)| *t <= warm_up).map(|(_, _, w)| *w).max().unwrap_or_default();
    let writes_after = samples.last().map_or(0, |(_, _, w)| *w).saturating_sub(writes_at_warm_up);
    let (rss_min, rss_max, rss_last) = (
        all.iter().copied().min().unwrap_or(0),
        all.iter().copied().max().unwrap_or(0),
        all.last().copied().unwrap_or(0),
    );
    let bound = warm_max + ((warm_max as f64 * RSS_SLACK_FRACTION) as u64).max(RSS_SLACK_BYTES);
    let after_max = after.iter().copied().max().unwrap_or(0);
    if after_max > bound {
        problems.push(format!(
            "server RSS grew after the warm-up: {} > {} (warm-up maximum {} + max(25%, 20 MB)); samples: {}",
            mb(after_max),
            mb(bound),
            mb(warm_max),
            all.iter().map(|r| format!("{:.1}", *r as f64 / 1e6)).collect::<Vec<_>>().join(" ")
        ));
    }

    let visible = (bound - warm_max) as f64 / writes_after.max(1) as f64;
    println!(
        "RSS bound: {} over the warm-up maximum, across {writes_after} writes after the warm-up: it can see a leak \
         of {visible:.0} bytes per write or more (smaller ones are the leak check's, BENCH_ONLY=leak make bench)",
        mb(bound - warm_max)
    );
    RssSummary { min: rss_min, max: rss_max, last: rss_last, warm_max, bound }
}

/// One audit event, as much of it as the count needs.
#[derive(serde::Deserialize)]
struct AuditEvent {
    #[serde(rename = "auditID")]
    audit_id: String,
    stage: String,
    #[serde(rename = "requestURI")]
    request_uri: String,
}

/// (6) The audit log, read from its files (`audit.log` and its backups in `dir`) once the
/// server has stopped and so written every event it queued: exactly one `ResponseComplete`
/// event per request to the API that the soak's clients saw answered (`answered`), each with
/// its own audit ID. The server's own count of dropped events (`metrics`) is printed beside it.
pub(crate) fn check_audit(
    dir: &std::path::Path,
    answered: u64,
    metrics: &BTreeMap<String, f64>,
    problems: &mut Vec<String>,
) {
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .expect("the audit directory")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    let mut ids = std::collections::HashSet::new();
    let (mut completed, mut unreadable) = (0u64, 0u64);
    for file in &files {
        let text = std::fs::read_to_string(file).expect("an audit log file");
        for line in text.lines() {
            let Ok(event) = serde_json::from_str::<AuditEvent>(line) else {
                unreadable += 1;
                continue;
            };
            if event.stage == "ResponseComplete" && event.request_uri.starts_with("/apis/farm.example.com/") {
                completed += 1;
                ids.insert(event.audit_id);
            }
        }
    }
    let dropped = match metrics.get("apiserver_audit_error_total{plugin=\"buffered\"}") {
        Some(n) => format!("{n:.0}"),
        None => "none".to_string(),
    };
    println!(
        "audit log: {completed} ResponseComplete events of API requests in {} file(s), {answered} requests answered; \
         events the server counted as dropped: {dropped}",
        files.len()
    );
    if completed != answered || ids.len() as u64 != completed || unreadable > 0 {
        problems.push(format!(
            "the audit log holds {completed} ResponseComplete events of API requests ({} audit IDs, {unreadable} \
             unreadable lines) for {answered} requests answered",
            ids.len()
        ));
    }
}
