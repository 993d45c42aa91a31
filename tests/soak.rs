//! Soak test: the real server binary under sustained, concurrent load for `SOAK_SECONDS` (default
//! 20, so a plain `cargo test` stays short; `make soak` runs it in release mode).
//!
//! Writers (each on its own connection) create, update (PUT with a resourceVersion), merge-patch
//! and delete random llamas from a bounded pool of names in three namespaces; every acknowledged
//! write is recorded with the resourceVersion of its response, and the only failures allowed are
//! the expected races (409 `AlreadyExists`, 409 `Conflict` on a stale resourceVersion, 404
//! `NotFound` on a name deleted meanwhile). Listers run full LISTs, pagers page with `limit` and
//! `continue`, and watchers (cluster-wide and per namespace, with and without bookmarks, with and
//! without a label selector, one of them reading slowly) watch from a LIST's resourceVersion and
//! re-watch from their last resourceVersion whenever the server ends their stream (timeout or a
//! full buffer), as an informer does.
//!
//! The model is the acknowledged writes in resourceVersion order. The test proves that:
//! 1. the store equals the model at the end (a final LIST per namespace and cluster-wide: names,
//!    resourceVersions, spec and labels), every revision belongs to an acknowledged write, and
//!    every write's response is consistent with the state it changed;
//! 2. every LIST and every paging (all pages at one resourceVersion, no object twice) returned
//!    exactly the model's state at its resourceVersion;
//! 3. every watcher's concatenated stream, across re-watches, equals the model's events for its
//!    namespace and selector after its start, with no gap, no duplicate, in order, selector
//!    transitions included (starts matching: `ADDED`, stops matching: `DELETED`), and bookmarks
//!    never go back;
//! 4. the server's RSS stays flat after a warm-up (see [`RSS_SLACK_FRACTION`]);
//! 5. nothing but the expected errors happened (every operation and error class is counted and
//!    printed).
//!
//! It runs twice: Llamas in memory, and in a real etcd of its own (the RSS is the server's; with
//! etcd, revisions start at etcd's own, and a bookmark carries the last event's revision).
//!
//! `SOAK_SEED` fixes the random choices (the interleaving still varies); the seed is printed.

mod common;

use common::{Backend, Server, llama_path, llamas};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Namespaces of the name pool (sorted, so key order is the server's list order).
const NAMESPACES: [&str; 3] = ["soak-a", "soak-b", "soak-c"];
/// Names per namespace: `llama-000` … `llama-039`.
const NAMES: usize = 40;
const POOL: usize = NAMESPACES.len() * NAMES;
/// Values of the `herd` label every write sets; selectors are `herd=<one of them>`.
const HERDS: [&str; 3] = ["a", "b", "c"];
/// Values of `spec.color`; index 0 of a model object means no color.
const COLORS: [&str; 3] = ["white", "brown", "black"];
const WRITERS: usize = 4;
const LISTERS: usize = 2;
const PAGERS: usize = 2;
/// Tasks (and connections) writing the prefill.
const PREFILL_TASKS: usize = 8;

/// `--watch-history-size`: the events a re-watch or a paging can reach back to. A re-watch lags
/// the head by at most what the watcher did not read: its buffer and what the transport holds for
/// a fast watcher, [`SLOW_PAUSE_WRITES`] plus that for a slow one; a paging lasts milliseconds. So
/// 10,000 (the default) leaves a wide margin: a 410 on a re-watch is a failure, and one on a
/// continue token is counted and reported (and is a failure when fewer than this many writes
/// happened since the paging's resourceVersion).
const HISTORY: u64 = 10_000;
/// `--watch-buffer-size`: small enough for the slow watchers to overflow it, so the server drops
/// them and they re-watch.
const WATCH_BUFFER: u64 = 100;
/// `--min-request-timeout-seconds`: watches without `timeoutSeconds` end after 3–6 s, so every
/// watcher re-watches many times per run.
const MIN_REQUEST_TIMEOUT: u64 = 3;
/// `--watch-bookmark-interval-seconds`.
const BOOKMARK_INTERVAL: u64 = 1;
/// The slow watcher stops reading until this many more writes are acknowledged (at most
/// [`SLOW_PAUSE_MAX`]), which is more than its buffer and transport hold (so the server drops it)
/// and far less than the history (so its re-watch is not 410), however fast the machine is.
const SLOW_PAUSE_WRITES: u64 = 2_500;
const SLOW_PAUSE_MAX: Duration = Duration::from_secs(3);
/// It pauses every this long.
const SLOW_EVERY: Duration = Duration::from_secs(3);
/// The slow watcher's HTTP/2 windows, so the transport buffers little and the server's buffer fills.
const SLOW_WINDOW: u32 = 65_535;
/// Any request, or a watch stream's next chunk, taking longer than this is a failure.
const STALL: Duration = Duration::from_secs(30);
/// How long the watchers get, after the last write, to deliver every event.
const DRAIN: Duration = Duration::from_secs(60);
/// RSS bound after the warm-up (the first third of the run): the warm-up maximum plus the larger
/// of this fraction of it and [`RSS_SLACK_BYTES`]. What the server holds is bounded: at most 120
/// llamas, a history of 10,000 events (filled by the prefill before the run: ~1.3 KiB each, plus
/// a ~0.4 KiB frame once a watcher has sent it), watcher buffers of 100 shared events, a few
/// connections and in-flight responses of at most 120 items. Measured in release mode: 12-13 MB
/// empty, 28 MB after the prefill, then 37-41 MB within the first ~10 s (frames, connections,
/// allocator arenas) and flat from there to the end of a 120 s run (±1 MB). 20 MB is five times
/// the growth still possible after a 20 s run's warm-up, and a leak of 200 bytes per write (one
/// small string) passes it after ~100,000 writes, about a minute of this load in release mode.
const RSS_SLACK_FRACTION: f64 = 0.25;
const RSS_SLACK_BYTES: u64 = 20 * 1024 * 1024;
/// Failure messages kept (all are counted).
const MAX_KEPT_FAILURES: usize = 40;

// ---------------------------------------------------------------------------------------------
// The name pool and the model's objects

/// A key of the pool: `namespace index * NAMES + name index`, ordered as the server lists.
type Key = u16;

fn name_of(i: usize) -> String {
    format!("llama-{i:03}")
}

fn key_of(namespace: &str, name: &str) -> Option<Key> {
    let n = NAMESPACES.iter().position(|ns| *ns == namespace)?;
    let i: usize = name.strip_prefix("llama-")?.parse().ok()?;
    (i < NAMES && name == name_of(i)).then_some((n * NAMES + i) as Key)
}

fn ns_of(key: Key) -> usize {
    key as usize / NAMES
}

fn show_key(key: Key) -> String {
    format!("{}/{}", NAMESPACES[ns_of(key)], name_of(key as usize % NAMES))
}

fn object_path(key: Key) -> String {
    llama_path(NAMESPACES[ns_of(key)], &name_of(key as usize % NAMES))
}

/// What the model keeps of a llama: its resourceVersion, spec and `herd` label.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Obj {
    rv: u64,
    weight: f64,
    height: f64,
    /// 0: no color; `i + 1`: `COLORS[i]`.
    color: u8,
    /// Index in `HERDS`.
    herd: u8,
}

impl std::fmt::Display for Obj {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let color = if self.color == 0 { "-" } else { COLORS[self.color as usize - 1] };
        write!(
            f,
            "rv={} weight={} height={} color={color} herd={}",
            self.rv, self.weight, self.height, HERDS[self.herd as usize]
        )
    }
}

fn snippet(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    if text.chars().count() > 400 {
        format!("{}…", text.chars().take(400).collect::<String>())
    } else {
        text.into_owned()
    }
}

/// Parses a Llama as served: its key in the pool and what the model keeps of it.
fn parse_object(v: &Value) -> Result<(Key, Obj), String> {
    let why = |what: &str| format!("{what} in {}", snippet(v.to_string().as_bytes()));
    if v["apiVersion"] != "farm.example.com/v1alpha" || v["kind"] != "Llama" {
        return Err(why("not a farm.example.com/v1alpha Llama"));
    }
    let meta = &v["metadata"];
    let (Some(namespace), Some(name)) = (meta["namespace"].as_str(), meta["name"].as_str()) else {
        return Err(why("no metadata.namespace or metadata.name"));
    };
    let key = key_of(namespace, name).ok_or_else(|| why("a name outside the soak's pool"))?;
    let rv = meta["resourceVersion"]
        .as_str()
        .and_then(|r| r.parse::<u64>().ok())
        .ok_or_else(|| why("no numeric metadata.resourceVersion"))?;
    let spec = &v["spec"];
    let (Some(weight), Some(height)) = (spec["weight"].as_f64(), spec["height"].as_f64()) else {
        return Err(why("no numeric spec.weight and spec.height"));
    };
    let color = match spec.get("color") {
        None | Some(Value::Null) => 0,
        Some(c) => COLORS.iter().position(|x| c == x).ok_or_else(|| why("an unknown spec.color"))? as u8 + 1,
    };
    let herd = meta["labels"]["herd"]
        .as_str()
        .and_then(|h| HERDS.iter().position(|x| *x == h))
        .ok_or_else(|| why("no known metadata.labels.herd"))? as u8;
    Ok((key, Obj { rv, weight, height, color, herd }))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Create,
    Update,
    Patch,
    Delete,
}

/// An acknowledged write: the object of its response (for a delete, the deleted object as
/// served, stamped with the deletion's resourceVersion).
#[derive(Clone, Copy, Debug)]
struct Write {
    op: Op,
    key: Key,
    obj: Obj,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Added,
    Modified,
    Deleted,
}

/// A watch event as the model and the watchers record it.
#[derive(Clone, Copy, Debug)]
struct Ev {
    kind: Kind,
    key: Key,
    obj: Obj,
    /// In the model, for a `DELETED` because the object stopped matching the selector: the other
    /// object such an event may carry. This server sends the new object (`obj`); the
    /// kube-apiserver's watch cache sends the previous one stamped with the event's
    /// resourceVersion (this).
    alt: Option<Obj>,
}

impl Ev {
    /// Whether the received event `got` is this expected one.
    fn matches(&self, got: &Ev) -> bool {
        self.kind == got.kind && self.key == got.key && (self.obj == got.obj || self.alt == Some(got.obj))
    }
}

impl std::fmt::Display for Ev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {} {}", self.kind, show_key(self.key), self.obj)?;
        if let Some(alt) = self.alt {
            write!(f, " (or {alt})")?;
        }
        Ok(())
    }
}

/// Which objects a list or watch sees: a namespace (or all) and a `herd` selector (or none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Scope {
    namespace: Option<usize>,
    herd: Option<u8>,
}

impl Scope {
    fn random(rng: &mut StdRng, selector_odds: f64) -> Self {
        Self {
            namespace: rng.random_bool(0.5).then(|| rng.random_range(0..NAMESPACES.len())),
            herd: rng.random_bool(selector_odds).then(|| rng.random_range(0..HERDS.len()) as u8),
        }
    }

    fn in_namespace(&self, key: Key) -> bool {
        self.namespace.is_none_or(|n| n == ns_of(key))
    }

    fn selects(&self, key: Key, obj: &Obj) -> bool {
        self.in_namespace(key) && self.herd.is_none_or(|h| h == obj.herd)
    }

    /// The collection path with `query` (without the leading `?`) and the selector.
    fn path(&self, query: &str) -> String {
        let base = match self.namespace {
            Some(n) => llamas(NAMESPACES[n]),
            None => "/apis/farm.example.com/v1alpha/llamas".to_string(),
        };
        let mut params: Vec<String> = Vec::new();
        if !query.is_empty() {
            params.push(query.to_string());
        }
        if let Some(h) = self.herd {
            params.push(format!("labelSelector=herd%3D{}", HERDS[h as usize]));
        }
        if params.is_empty() { base } else { format!("{base}?{}", params.join("&")) }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.namespace {
            Some(n) => write!(f, "namespace {}", NAMESPACES[n])?,
            None => write!(f, "all namespaces")?,
        }
        if let Some(h) = self.herd {
            write!(f, ", herd={}", HERDS[h as usize])?;
        }
        Ok(())
    }
}

/// Count and hash of a list's items, in order.
fn digest<'a>(items: impl Iterator<Item = (Key, &'a Obj)>) -> (usize, u64) {
    let mut h = DefaultHasher::new();
    let mut n = 0;
    for (key, o) in items {
        (key, o.rv, o.weight.to_bits(), o.height.to_bits(), o.color, o.herd).hash(&mut h);
        n += 1;
    }
    (n, h.finish())
}

/// A LIST or a complete paging, checked against the model at its resourceVersion at the end.
struct ListObs {
    what: String,
    scope: Scope,
    rv: u64,
    count: usize,
    digest: u64,
}

/// Applies one acknowledged write to a state.
fn apply(state: &mut BTreeMap<Key, Obj>, w: &Write) {
    if w.op == Op::Delete {
        state.remove(&w.key);
    } else {
        state.insert(w.key, w.obj);
    }
}

// ---------------------------------------------------------------------------------------------
// Shared bookkeeping and HTTP

struct Shared {
    server: Arc<Server>,
    counts: Mutex<BTreeMap<&'static str, u64>>,
    failures: Mutex<Vec<String>>,
    failure_total: AtomicU64,
    /// Every write sets a weight never used before, so every acknowledged update and patch is a
    /// real change (a no-op update keeps its resourceVersion and is no event).
    weights: AtomicU64,
    /// Acknowledged writes so far (the slow watchers' clock).
    acknowledged: AtomicU64,
}

impl Shared {
    fn count(&self, what: &'static str) {
        self.count_n(what, 1);
    }

    fn count_n(&self, what: &'static str, n: u64) {
        *self.counts.lock().unwrap().entry(what).or_default() += n;
    }

    fn fail(&self, message: String) {
        if self.failure_total.fetch_add(1, Ordering::SeqCst) < 5 {
            eprintln!("soak failure: {message}");
        }
        let mut kept = self.failures.lock().unwrap();
        if kept.len() < MAX_KEPT_FAILURES {
            kept.push(message);
        }
    }

    fn failed(&self) -> bool {
        self.failure_total.load(Ordering::SeqCst) > 0
    }

    fn next_weight(&self) -> f64 {
        (self.weights.fetch_add(1, Ordering::SeqCst) + 1) as f64
    }

    /// A client of its own (its own connection), trusting the server's CA and sending its token;
    /// `window` limits the HTTP/2 flow-control windows.
    fn client(&self, window: Option<u32>) -> reqwest::Client {
        let mut headers = reqwest::header::HeaderMap::new();
        headers
            .insert(reqwest::header::AUTHORIZATION, format!("Bearer {}", self.server.token).parse().expect("header"));
        let mut builder = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&self.server.ca_pem).expect("CA PEM"))
            .default_headers(headers);
        if let Some(window) = window {
            builder = builder.http2_initial_stream_window_size(window).http2_initial_connection_window_size(window);
        }
        builder.build().expect("client")
    }

    fn url(&self, path: &str) -> String {
        self.server.url(path)
    }

    /// The latest resourceVersion, from a one-item LIST.
    async fn current_rv(&self, client: &reqwest::Client) -> Option<u64> {
        let path = "/apis/farm.example.com/v1alpha/llamas?limit=1";
        let (_, body) = call("LIST", client.get(self.url(path))).await.ok()?;
        body["metadata"]["resourceVersion"].as_str()?.parse().ok()
    }
}

/// Sends a request and parses its JSON answer: `(status, body)`; a transport error, a body that
/// is not JSON or no answer within [`STALL`] is an `Err` describing it.
async fn call(what: &str, request: reqwest::RequestBuilder) -> Result<(u16, Value), String> {
    let response = request.timeout(STALL).send().await.map_err(|e| format!("{what}: transport error: {e:?}"))?;
    let code = response.status().as_u16();
    let bytes = response.bytes().await.map_err(|e| format!("{what}: HTTP {code}, reading the body: {e:?}"))?;
    let body = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{what}: HTTP {code} with a body that is not JSON ({e}): {}", snippet(&bytes)))?;
    Ok((code, body))
}

/// Whether `body` is a failure `Status` with `code` and `reason`.
fn is_status(body: &Value, code: u16, reason: &str) -> bool {
    body["kind"] == "Status" && body["status"] == "Failure" && body["code"] == code && body["reason"] == reason
}

fn unexpected(what: &str, code: u16, body: &Value) -> String {
    format!("{what}: unexpected HTTP {code}: {}", snippet(body.to_string().as_bytes()))
}

// ---------------------------------------------------------------------------------------------
// Writers

struct Writer {
    shared: Arc<Shared>,
    client: reqwest::Client,
    rng: StdRng,
    /// The last resourceVersion this writer saw of each key: its stale preconditions.
    last_seen: HashMap<Key, u64>,
    writes: Vec<Write>,
}

impl Writer {
    fn new(shared: Arc<Shared>, seed: u64) -> Self {
        let client = shared.client(None);
        Self { shared, client, rng: StdRng::seed_from_u64(seed), last_seen: HashMap::new(), writes: Vec::new() }
    }

    fn record(&mut self, op: Op, key: Key, obj: Obj) {
        self.last_seen.insert(key, obj.rv);
        self.writes.push(Write { op, key, obj });
        self.shared.acknowledged.fetch_add(1, Ordering::SeqCst);
    }

    /// A random new state: a weight never used before, random height, color and herd.
    fn fresh(&mut self) -> Obj {
        Obj {
            rv: 0,
            weight: self.shared.next_weight(),
            height: self.rng.random_range(50..250) as f64,
            color: self.rng.random_range(0..=COLORS.len()) as u8,
            herd: self.rng.random_range(0..HERDS.len()) as u8,
        }
    }

    /// A stale (or current) resourceVersion of `key` for a precondition, one time in five.
    fn maybe_stale(&mut self, key: Key) -> Option<u64> {
        if self.rng.random_bool(0.2) { self.last_seen.get(&key).copied() } else { None }
    }

    /// Checks that the response `body` is `key` with the state `sent` (rv aside).
    fn echoed(what: &str, body: &Value, key: Key, sent: &Obj) -> Result<Obj, String> {
        let (got_key, got) = parse_object(body).map_err(|e| format!("{what}: {e}"))?;
        let same = Obj { rv: got.rv, ..*sent };
        if got_key != key || got != same {
            return Err(format!("{what}: the response is {} {got}, not what was written ({same})", show_key(got_key)));
        }
        Ok(got)
    }

    async fn step(&mut self) -> Result<(), String> {
        let key = self.rng.random_range(0..POOL) as Key;
        match self.rng.random_range(0..10) {
            0..=2 => self.create(key).await,
            3..=4 => self.update(key).await,
            5..=7 => {
                let precondition = self.maybe_stale(key);
                self.patch(key, precondition).await
            }
            _ => self.delete(key).await,
        }
    }

    async fn create(&mut self, key: Key) -> Result<(), String> {
        let what = format!("create {}", show_key(key));
        let sent = self.fresh();
        let mut body = json!({
            "apiVersion": "farm.example.com/v1alpha",
            "kind": "Llama",
            "metadata": {"name": name_of(key as usize % NAMES), "labels": {"herd": HERDS[sent.herd as usize]}},
            "spec": {"weight": sent.weight, "height": sent.height},
        });
        if sent.color > 0 {
            body["spec"]["color"] = json!(COLORS[sent.color as usize - 1]);
        }
        let path = llamas(NAMESPACES[ns_of(key)]);
        let (code, body) = call(&what, self.client.post(self.shared.url(&path)).json(&body)).await?;
        match code {
            201 => {
                let obj = Self::echoed(&what, &body, key, &sent)?;
                self.shared.count("create 201");
                self.record(Op::Create, key, obj);
            }
            409 if is_status(&body, 409, "AlreadyExists") => self.shared.count("create 409 AlreadyExists (expected)"),
            _ => return Err(unexpected(&what, code, &body)),
        }
        Ok(())
    }

    /// GET, then PUT the object back with a new state and its resourceVersion (or, one time in
    /// five, the writer's possibly stale one).
    async fn update(&mut self, key: Key) -> Result<(), String> {
        let what = format!("update {}", show_key(key));
        let url = self.shared.url(&object_path(key));
        let (code, mut body) = call(&format!("{what}: GET"), self.client.get(&url)).await?;
        match code {
            200 => self.shared.count("get 200"),
            404 if is_status(&body, 404, "NotFound") => {
                self.shared.count("get 404 NotFound (expected)");
                return Ok(());
            }
            _ => return Err(unexpected(&format!("{what}: GET"), code, &body)),
        }
        let (_, current) = parse_object(&body).map_err(|e| format!("{what}: GET: {e}"))?;
        let rv = self.maybe_stale(key).unwrap_or(current.rv);
        let sent = self.fresh();
        body["metadata"]["resourceVersion"] = json!(rv.to_string());
        body["metadata"]["labels"]["herd"] = json!(HERDS[sent.herd as usize]);
        body["spec"] = json!({"weight": sent.weight, "height": sent.height});
        if sent.color > 0 {
            body["spec"]["color"] = json!(COLORS[sent.color as usize - 1]);
        }
        let (code, body) = call(&what, self.client.put(&url).json(&body)).await?;
        match code {
            200 => {
                let obj = Self::echoed(&what, &body, key, &sent)?;
                if obj.rv <= rv {
                    return Err(format!("{what}: the update from rv {rv} was acknowledged at rv {}", obj.rv));
                }
                self.shared.count("update 200");
                self.record(Op::Update, key, obj);
            }
            409 if is_status(&body, 409, "Conflict") => self.shared.count("update 409 Conflict (expected)"),
            404 if is_status(&body, 404, "NotFound") => self.shared.count("update 404 NotFound (expected)"),
            _ => return Err(unexpected(&what, code, &body)),
        }
        Ok(())
    }

    /// A merge patch of weight, color and herd (height untouched), with a resourceVersion
    /// precondition when given.
    async fn patch(&mut self, key: Key, precondition: Option<u64>) -> Result<(), String> {
        let what = format!("patch {}", show_key(key));
        let sent = self.fresh();
        let color = if sent.color > 0 { json!(COLORS[sent.color as usize - 1]) } else { Value::Null };
        let mut patch = json!({
            "metadata": {"labels": {"herd": HERDS[sent.herd as usize]}},
            "spec": {"weight": sent.weight, "color": color},
        });
        if let Some(rv) = precondition {
            patch["metadata"]["resourceVersion"] = json!(rv.to_string());
        }
        let request = self
            .client
            .patch(self.shared.url(&object_path(key)))
            .header("content-type", "application/merge-patch+json")
            .body(patch.to_string());
        let (code, body) = call(&what, request).await?;
        match code {
            200 => {
                let (got_key, obj) = parse_object(&body).map_err(|e| format!("{what}: {e}"))?;
                let expected = Obj { rv: obj.rv, height: obj.height, ..sent };
                if got_key != key || obj != expected {
                    return Err(format!(
                        "{what}: the response is {} {obj}, not the patch ({expected})",
                        show_key(got_key)
                    ));
                }
                self.shared.count("patch 200");
                self.record(Op::Patch, key, obj);
            }
            404 if is_status(&body, 404, "NotFound") => self.shared.count("patch 404 NotFound (expected)"),
            409 if precondition.is_some() && is_status(&body, 409, "Conflict") => {
                self.shared.count("patch 409 Conflict (expected)")
            }
            _ => return Err(unexpected(&what, code, &body)),
        }
        Ok(())
    }

    /// A delete, with a resourceVersion precondition one time in five.
    async fn delete(&mut self, key: Key) -> Result<(), String> {
        let what = format!("delete {}", show_key(key));
        let precondition = self.maybe_stale(key);
        let mut request = self.client.delete(self.shared.url(&object_path(key)));
        if let Some(rv) = precondition {
            request = request.json(&json!({
                "apiVersion": "v1",
                "kind": "DeleteOptions",
                "preconditions": {"resourceVersion": rv.to_string()},
            }));
        }
        let (code, body) = call(&what, request).await?;
        match code {
            200 => {
                let (got_key, obj) = parse_object(&body).map_err(|e| format!("{what}: {e}"))?;
                if got_key != key {
                    return Err(format!("{what}: the response is {}", show_key(got_key)));
                }
                self.shared.count("delete 200");
                self.record(Op::Delete, key, obj);
                self.last_seen.remove(&key);
            }
            404 if is_status(&body, 404, "NotFound") => self.shared.count("delete 404 NotFound (expected)"),
            409 if precondition.is_some() && is_status(&body, 409, "Conflict") => {
                self.shared.count("delete 409 Conflict (expected)")
            }
            _ => return Err(unexpected(&what, code, &body)),
        }
        Ok(())
    }
}

async fn writer(shared: Arc<Shared>, id: usize, seed: u64, stop: watch::Receiver<bool>) -> Vec<Write> {
    let mut w = Writer::new(shared.clone(), seed);
    while !*stop.borrow() {
        if let Err(e) = w.step().await {
            shared.fail(format!("writer {id}: {e}"));
        }
    }
    w.writes
}

/// Creates every name of the pool, then patches them until the event history is full, so the
/// run starts (and the RSS warm-up is measured) in the steady state.
async fn prefill(shared: &Arc<Shared>, seed: u64) -> Vec<Write> {
    let tasks: Vec<_> = (0..PREFILL_TASKS)
        .map(|t| {
            let shared = shared.clone();
            tokio::spawn(async move {
                let mut w = Writer::new(shared.clone(), seed.wrapping_add(1000 + t as u64));
                for key in (t..POOL).step_by(PREFILL_TASKS) {
                    if let Err(e) = w.create(key as Key).await {
                        shared.fail(format!("prefill: {e}"));
                    }
                }
                for i in (t..HISTORY as usize).step_by(PREFILL_TASKS) {
                    if let Err(e) = w.patch((i % POOL) as Key, None).await {
                        shared.fail(format!("prefill: {e}"));
                    }
                }
                w.writes
            })
        })
        .collect();
    let mut writes = Vec::new();
    for t in tasks {
        writes.extend(t.await.expect("prefill task"));
    }
    writes
}

// ---------------------------------------------------------------------------------------------
// Listers and pagers

/// Checks a LIST (or page) body: a `LlamaList` whose items parse, are in `scope`, are sorted by
/// namespace/name after `after`, and are not newer than `list_rv`. Returns the list's
/// resourceVersion and its items.
fn check_list(what: &str, body: &Value, scope: Scope, after: Option<Key>) -> Result<(u64, Vec<(Key, Obj)>), String> {
    if body["kind"] != "LlamaList" || body["apiVersion"] != "farm.example.com/v1alpha" {
        return Err(format!("{what}: not a LlamaList: {}", snippet(body.to_string().as_bytes())));
    }
    let rv: u64 = body["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .ok_or_else(|| format!("{what}: no numeric metadata.resourceVersion"))?;
    let items = body["items"].as_array().ok_or_else(|| format!("{what}: no items"))?;
    let mut out = Vec::with_capacity(items.len());
    let mut previous = after;
    for item in items {
        let (key, obj) = parse_object(item).map_err(|e| format!("{what}: {e}"))?;
        if previous.is_some_and(|p| p >= key) {
            return Err(format!(
                "{what}: {} comes after {} (not sorted by namespace/name, or twice)",
                show_key(key),
                show_key(previous.unwrap_or_default())
            ));
        }
        if !scope.selects(key, &obj) {
            return Err(format!("{what}: {} {obj} is outside {scope}", show_key(key)));
        }
        if obj.rv > rv {
            return Err(format!("{what}: {} has rv {} newer than the list's {rv}", show_key(key), obj.rv));
        }
        previous = Some(key);
        out.push((key, obj));
    }
    Ok((rv, out))
}

/// A full LIST of `scope`, checked by [`check_list`].
async fn list_scope(
    shared: &Shared,
    client: &reqwest::Client,
    what: &str,
    scope: Scope,
) -> Result<(u64, Vec<(Key, Obj)>), String> {
    let (code, body) = call(what, client.get(shared.url(&scope.path("")))).await?;
    if code != 200 {
        return Err(unexpected(what, code, &body));
    }
    check_list(what, &body, scope, None)
}

async fn lister(shared: Arc<Shared>, id: usize, seed: u64, stop: watch::Receiver<bool>) -> Vec<ListObs> {
    let client = shared.client(None);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = Vec::new();
    while !*stop.borrow() {
        // Lister 0 lists everything; the others random namespaces and selectors.
        let scope = if id == 0 { Scope { namespace: None, herd: None } } else { Scope::random(&mut rng, 0.3) };
        let what = format!("lister {id}: LIST {scope}");
        let result = list_scope(&shared, &client, &what, scope).await;
        match result {
            Ok((rv, items)) => {
                shared.count("list 200");
                let (count, digest) = digest(items.iter().map(|(k, o)| (*k, o)));
                seen.push(ListObs { what, scope, rv, count, digest });
            }
            Err(e) => shared.fail(e),
        }
    }
    seen
}

/// One paging: pages of `limit` until no continue token. `Ok(None)` when the token expired.
async fn paging(
    shared: &Shared,
    client: &reqwest::Client,
    what: &str,
    scope: Scope,
    limit: usize,
) -> Result<Option<ListObs>, String> {
    let mut items: Vec<(Key, Obj)> = Vec::new();
    let mut rv = None;
    let mut token: Option<String> = None;
    let mut total = None;
    for page in 1.. {
        let query = match &token {
            Some(t) => format!("limit={limit}&continue={t}"),
            None => format!("limit={limit}"),
        };
        let what = format!("{what}, page {page}");
        let (code, body) = call(&what, client.get(shared.url(&scope.path(&query)))).await?;
        shared.count("list page");
        if code == 410 && token.is_some() && is_status(&body, 410, "Expired") {
            // Legitimate only when more than HISTORY writes happened since the paging's rv.
            let paging_rv = rv.unwrap_or_default();
            let current = shared.current_rv(client).await.unwrap_or(u64::MAX);
            if current.saturating_sub(paging_rv) <= HISTORY {
                return Err(format!(
                    "{what}: 410 Expired for a continue token at rv {paging_rv}, but only {} writes happened since \
                     (now rv {current}) and the history holds {HISTORY}",
                    current.saturating_sub(paging_rv)
                ));
            }
            shared.count("paging 410 Expired: the history was too short (allowed, reported)");
            return Ok(None);
        }
        if code != 200 {
            return Err(unexpected(&what, code, &body));
        }
        let (page_rv, page_items) = check_list(&what, &body, scope, items.last().map(|(k, _)| *k))?;
        if *rv.get_or_insert(page_rv) != page_rv {
            return Err(format!("{what}: page at rv {page_rv}, the paging's first page was at rv {rv:?}"));
        }
        if limit < page_items.len() {
            return Err(format!("{what}: {} items for limit={limit}", page_items.len()));
        }
        items.extend(page_items);
        token = body["metadata"]["continue"].as_str().filter(|t| !t.is_empty()).map(str::to_string);
        if token.is_some() && scope.herd.is_none() {
            let remaining = body["metadata"]["remainingItemCount"]
                .as_u64()
                .ok_or_else(|| format!("{what}: a continue token without remainingItemCount"))?;
            let now = items.len() as u64 + remaining;
            if *total.get_or_insert(now) != now {
                return Err(format!(
                    "{what}: items so far + remainingItemCount is {now}, earlier pages said {total:?}"
                ));
            }
        }
        if token.is_none() {
            break;
        }
    }
    if let Some(total) = total
        && total != items.len() as u64
    {
        return Err(format!("{what}: {} items in all, remainingItemCount promised {total}", items.len()));
    }
    let (count, digest) = digest(items.iter().map(|(k, o)| (*k, o)));
    Ok(Some(ListObs { what: what.to_string(), scope, rv: rv.unwrap_or_default(), count, digest }))
}

async fn pager(shared: Arc<Shared>, id: usize, seed: u64, stop: watch::Receiver<bool>) -> Vec<ListObs> {
    let client = shared.client(None);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut seen = Vec::new();
    while !*stop.borrow() {
        let scope = Scope::random(&mut rng, 0.25);
        let limit = rng.random_range(1..=30);
        let what = format!("pager {id}: paging {scope} with limit={limit}");
        match paging(&shared, &client, &what, scope, limit).await {
            Ok(Some(obs)) => {
                shared.count("paging complete");
                seen.push(obs);
            }
            Ok(None) => {}
            Err(e) => shared.fail(e),
        }
    }
    seen
}

// ---------------------------------------------------------------------------------------------
// Watchers

#[derive(Clone, Copy, Debug)]
struct WatchSpec {
    name: &'static str,
    scope: Scope,
    bookmarks: bool,
    /// `timeoutSeconds` of each stream, drawn from this range; the server's timeout when `None`.
    timeout_seconds: Option<(u64, u64)>,
    /// Stops reading for [`SLOW_PAUSE_WRITES`] every [`SLOW_EVERY`], with small HTTP/2 windows.
    slow: bool,
}

fn watch_specs() -> Vec<WatchSpec> {
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
struct WatchProgress {
    /// The resourceVersion of its first LIST (0 until then).
    start: AtomicU64,
    /// The resourceVersion of its latest event or bookmark: it claims to have seen every event up
    /// to there.
    last_rv: AtomicU64,
    /// It stopped after a failure.
    broken: AtomicBool,
}

#[derive(Default)]
struct WatchLog {
    events: Vec<Ev>,
    /// What happened between events: `(number of events before it, what)`, for diagnosis.
    marks: Vec<(usize, String)>,
    bookmarks: u64,
    streams: u64,
    timeouts: u64,
    dropped: u64,
}

async fn watcher(
    shared: Arc<Shared>,
    spec: WatchSpec,
    delay: Duration,
    seed: u64,
    progress: Arc<WatchProgress>,
    mut stop: watch::Receiver<bool>,
) -> (WatchLog, Option<ListObs>) {
    let mut log = WatchLog::default();
    tokio::time::sleep(delay).await;
    let result = watch_loop(&shared, spec, seed, &progress, &mut stop, &mut log).await;
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
/// seen whenever the server ends the stream, until `stop`. Returns the LIST's observation.
async fn watch_loop(
    shared: &Shared,
    spec: WatchSpec,
    seed: u64,
    progress: &WatchProgress,
    stop: &mut watch::Receiver<bool>,
    log: &mut WatchLog,
) -> Result<Option<ListObs>, String> {
    let client = shared.client(spec.slow.then_some(SLOW_WINDOW));
    let mut rng = StdRng::seed_from_u64(seed);
    let what = format!("watcher \"{}\": LIST {}", spec.name, spec.scope);
    let (code, body) = call(&what, client.get(shared.url(&spec.scope.path("")))).await?;
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
            Ok(Err(e)) => return Err(format!("watch {path}: transport error: {e:?}")),
            Ok(Ok(r)) => r,
        };
        if response.status() != 200 {
            let code = response.status().as_u16();
            let body = response.bytes().await.unwrap_or_default();
            return Err(format!("watch {path}: unexpected HTTP {code}: {}", snippet(&body)));
        }
        shared.count("watch (re)connect");
        log.streams += 1;
        log.marks.push((log.events.len(), format!("watch opened from rv {last_rv}")));
        let mut buffer: Vec<u8> = Vec::new();
        loop {
            let chunk = tokio::select! {
                _ = stop.changed() => return Ok(Some(obs)),
                chunk = tokio::time::timeout(STALL, response.chunk()) => chunk,
            };
            let chunk = match chunk {
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
async fn frame_event(
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

/// The events a watcher of `scope` must see after `start`, from the model's writes.
fn expected_events(writes: &[Write], scope: Scope, start: u64) -> Vec<Ev> {
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
fn stream_difference(want: &[Ev], got: &[Ev], marks: &[(usize, String)]) -> Option<String> {
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

// ---------------------------------------------------------------------------------------------
// RSS

fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

async fn sample_rss(pid: u32, stop: watch::Receiver<bool>) -> Vec<(Duration, u64)> {
    let started = Instant::now();
    let mut samples = Vec::new();
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    while !*stop.borrow() {
        ticker.tick().await;
        if let Some(rss) = rss_bytes(pid) {
            samples.push((started.elapsed(), rss));
        }
    }
    samples
}

// ---------------------------------------------------------------------------------------------
// The test

#[rstest::rstest]
#[case::memory(Backend::Memory)]
#[case::etcd(Backend::Etcd)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn under_sustained_load_lists_pages_watches_and_the_final_state_match_the_acknowledged_writes_and_memory_stays_flat(
    #[case] backend: Backend,
) {
    let seconds: u64 = match std::env::var("SOAK_SECONDS") {
        Ok(s) => s.parse().expect("SOAK_SECONDS is a whole number of seconds"),
        Err(_) => 20,
    };
    let seed: u64 = std::env::var("SOAK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    println!(
        "soak: {seconds} s (SOAK_SECONDS, default 20), SOAK_SEED={seed}; {WRITERS} writers, {LISTERS} listers, \
         {PAGERS} pagers, {} watchers; {POOL} names in {} namespaces; history {HISTORY}, watch buffer {WATCH_BUFFER}",
        watch_specs().len(),
        NAMESPACES.len()
    );
    let flags = [
        format!("--watch-history-size={HISTORY}"),
        format!("--watch-buffer-size={WATCH_BUFFER}"),
        format!("--watch-bookmark-interval-seconds={BOOKMARK_INTERVAL}"),
        format!("--min-request-timeout-seconds={MIN_REQUEST_TIMEOUT}"),
    ];
    println!("storage: {backend:?}");
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = Arc::new(Server::start_isolated(backend, &flags).await);
    let pid = server.pid();
    let rss_empty = rss_bytes(pid).expect("the server's VmRSS");
    let shared = Arc::new(Shared {
        server: server.clone(),
        counts: Mutex::default(),
        failures: Mutex::default(),
        failure_total: AtomicU64::new(0),
        weights: AtomicU64::new(0),
        acknowledged: AtomicU64::new(0),
    });

    // The store's revision before the first write: 0 in memory, etcd's own (1 when new) in etcd.
    let base_rv = shared.current_rv(&server.client).await.expect("the revision of the empty store");
    let prefill_started = Instant::now();
    let mut writes = prefill(&shared, seed).await;
    let prefill_writes = writes.len();
    let rss_prefilled = rss_bytes(pid).expect("the server's VmRSS");
    println!(
        "prefill: {prefill_writes} writes in {:.1} s; server RSS {} empty, {} with a full history",
        prefill_started.elapsed().as_secs_f64(),
        mb(rss_empty),
        mb(rss_prefilled)
    );
    let counts_before = shared.counts.lock().unwrap().clone();

    let (stop_load_tx, stop_load) = watch::channel(false);
    let (stop_watch_tx, stop_watch) = watch::channel(false);
    let rss = tokio::spawn(sample_rss(pid, stop_load.clone()));
    let specs = watch_specs();
    let watchers: Vec<_> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let progress = Arc::new(WatchProgress::default());
            // Staggered starts, so the watchers start at different resourceVersions.
            let delay = Duration::from_millis(150 * i as u64);
            let task = tokio::spawn(watcher(
                shared.clone(),
                *spec,
                delay,
                seed.wrapping_add(300 + i as u64),
                progress.clone(),
                stop_watch.clone(),
            ));
            (*spec, progress, task)
        })
        .collect();
    let started = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|i| tokio::spawn(writer(shared.clone(), i, seed.wrapping_add(i as u64), stop_load.clone())))
        .collect();
    let listers: Vec<_> = (0..LISTERS)
        .map(|i| tokio::spawn(lister(shared.clone(), i, seed.wrapping_add(100 + i as u64), stop_load.clone())))
        .collect();
    let pagers: Vec<_> = (0..PAGERS)
        .map(|i| tokio::spawn(pager(shared.clone(), i, seed.wrapping_add(200 + i as u64), stop_load.clone())))
        .collect();

    let duration = Duration::from_secs(seconds);
    while started.elapsed() < duration && !shared.failed() {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop_load_tx.send(true).expect("stop");
    for w in writers {
        writes.extend(w.await.expect("writer task"));
    }
    let elapsed = started.elapsed();
    let mut observations = Vec::new();
    for t in listers.into_iter().chain(pagers) {
        observations.extend(t.await.expect("lister or pager task"));
    }
    let samples = rss.await.expect("RSS sampler");
    let mut problems: Vec<String> = Vec::new();

    // (1) The model: the acknowledged writes in resourceVersion order, each consistent with the
    // state it changed.
    writes.sort_by_key(|w| w.obj.rv);
    let mut state: BTreeMap<Key, Obj> = BTreeMap::new();
    let mut expected_rv = base_rv + 1;
    for w in &writes {
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
    let last_rv = writes.last().map_or(0, |w| w.obj.rv);

    // (1) The final state: LISTs per namespace and cluster-wide equal the model.
    let client = shared.client(None);
    let mut final_scopes = vec![Scope { namespace: None, herd: None }];
    final_scopes.extend((0..NAMESPACES.len()).map(|n| Scope { namespace: Some(n), herd: None }));
    for scope in final_scopes {
        let what = format!("final LIST {scope}");
        let result = list_scope(&shared, &client, &what, scope).await;
        let (rv, items) = match result {
            Ok(list) => list,
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

    // (3) Every watcher delivers exactly the model's events after its start.
    let expectations: Vec<Vec<Ev>> = watchers
        .iter()
        .map(|(spec, progress, _)| expected_events(&writes, spec.scope, progress.start.load(Ordering::SeqCst)))
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
    // A little longer, so that an event beyond the model would show.
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop_watch_tx.send(true).expect("stop");
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

    // (2) Every LIST and paging returned the model's state at its resourceVersion.
    observations.sort_by_key(|o| o.rv);
    let mut state: BTreeMap<Key, Obj> = BTreeMap::new();
    let mut next = 0;
    let mut wrong_lists = 0;
    for o in &observations {
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

    // (4) RSS: flat after the warm-up.
    let warm_up = elapsed / 3;
    let warm_max = samples.iter().filter(|(t, _)| *t <= warm_up).map(|(_, r)| *r).max().unwrap_or(rss_prefilled);
    let after: Vec<u64> = samples.iter().filter(|(t, _)| *t > warm_up).map(|(_, r)| *r).collect();
    let all: Vec<u64> = samples.iter().map(|(_, r)| *r).collect();
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

    // (5) Counts, then the verdict.
    let counts = shared.counts.lock().unwrap().clone();
    let soak_count =
        |what: &str| counts.get(what).copied().unwrap_or(0) - counts_before.get(what).copied().unwrap_or(0);
    println!("operations and outcomes during the soak (prefill excluded):");
    for what in counts.keys() {
        println!("  {:>9}  {what}", soak_count(what));
    }
    let failure_total = shared.failure_total.load(Ordering::SeqCst);
    println!("  {failure_total:>9}  unexpected errors");
    for line in &watch_lines {
        println!("{line}");
    }
    let requests: u64 = [
        "create 201",
        "create 409 AlreadyExists (expected)",
        "get 200",
        "get 404 NotFound (expected)",
        "update 200",
        "update 409 Conflict (expected)",
        "update 404 NotFound (expected)",
        "patch 200",
        "patch 404 NotFound (expected)",
        "patch 409 Conflict (expected)",
        "delete 200",
        "delete 404 NotFound (expected)",
        "delete 409 Conflict (expected)",
        "list 200",
        "list page",
    ]
    .iter()
    .map(|w| soak_count(w))
    .sum();
    let acknowledged = writes.len() - prefill_writes;
    let secs = elapsed.as_secs_f64();
    println!(
        "LISTs and pagings checked against the model: {}; server RSS during the soak: min {}, max {}, last {} \
         (warm-up max {}, bound {})",
        observations.len(),
        mb(rss_min),
        mb(rss_max),
        mb(rss_last),
        mb(warm_max),
        mb(bound)
    );
    println!(
        "SOAK SUMMARY: {secs:.0} s, {WRITERS} writers/{LISTERS} listers/{PAGERS} pagers/{} watchers: {:.0} requests/s \
         ({:.0} acknowledged writes/s), {events_delivered} watch events delivered, {failure_total} unexpected errors, \
         server RSS {}–{} (last {})",
        specs.len(),
        requests as f64 / secs,
        acknowledged as f64 / secs,
        mb(rss_min),
        mb(rss_max),
        mb(rss_last)
    );

    let failures = shared.failures.lock().unwrap().clone();
    if failure_total > 0 || !problems.is_empty() {
        let mut report = String::new();
        if failure_total > 0 {
            report.push_str(&format!("{failure_total} unexpected errors during the run (first {}):\n", failures.len()));
            for f in &failures {
                report.push_str(&format!("  - {f}\n"));
            }
        }
        if !problems.is_empty() {
            report.push_str(&format!("{} check(s) failed:\n", problems.len()));
            for p in &problems {
                report.push_str(&format!("  - {p}\n"));
            }
        }
        panic!("the soak failed (SOAK_SEED={seed}):\n{report}");
    }
}
