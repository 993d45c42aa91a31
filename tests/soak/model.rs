//! The name pool, the constants of the run and what the model keeps of the objects.

use super::*;

/// Namespaces of the name pool (sorted, so key order is the server's list order).
pub(crate) const NAMESPACES: [&str; 3] = ["soak-a", "soak-b", "soak-c"];
/// Names per namespace: `llama-000` … `llama-039`.
pub(crate) const NAMES: usize = 40;
pub(crate) const POOL: usize = NAMESPACES.len() * NAMES;
/// Values of the `herd` label every write sets; selectors are `herd=<one of them>`.
pub(crate) const HERDS: [&str; 3] = ["a", "b", "c"];
/// Values of `spec.color`; index 0 of a model object means no color.
pub(crate) const COLORS: [&str; 3] = ["white", "brown", "black"];
pub(crate) const WRITERS: usize = 4;
pub(crate) const LISTERS: usize = 2;
pub(crate) const PAGERS: usize = 2;
/// Tasks (and connections) writing the prefill.
pub(crate) const PREFILL_TASKS: usize = 8;

/// `--watch-history-size`: the events a re-watch or a paging can reach back to. A re-watch lags
/// the head by at most what the watcher did not read: its buffer and what the transport holds for
/// a fast watcher, [`SLOW_PAUSE_WRITES`] plus that for a slow one; a paging lasts milliseconds. So
/// 10,000 (the default) leaves a wide margin: a 410 on a re-watch is a failure, and one on a
/// continue token is counted and reported (and is a failure when fewer than this many writes
/// happened since the paging's resourceVersion).
pub(crate) const HISTORY: u64 = 10_000;
/// `--watch-buffer-size`: small enough for the slow watchers to overflow it, so the server drops
/// them and they re-watch.
pub(crate) const WATCH_BUFFER: u64 = 100;
/// `--min-request-timeout-seconds`: watches without `timeoutSeconds` end after 3–6 s, so every
/// watcher re-watches many times per run.
pub(crate) const MIN_REQUEST_TIMEOUT: u64 = 3;
/// `--watch-bookmark-interval-seconds`.
pub(crate) const BOOKMARK_INTERVAL: u64 = 1;
/// The slow watcher stops reading until this many more writes are acknowledged (at most
/// [`SLOW_PAUSE_MAX`]), which is more than its buffer and transport hold (so the server drops it)
/// and far less than the history (so its re-watch is not 410), however fast the machine is.
pub(crate) const SLOW_PAUSE_WRITES: u64 = 2_500;
pub(crate) const SLOW_PAUSE_MAX: Duration = Duration::from_secs(3);
/// It pauses every this long.
pub(crate) const SLOW_EVERY: Duration = Duration::from_secs(3);
/// The slow watcher's HTTP/2 windows, so the transport buffers little and the server's buffer fills.
pub(crate) const SLOW_WINDOW: u32 = 65_535;
/// Any request, or a watch stream's next chunk, taking longer than this is a failure.
pub(crate) const STALL: Duration = Duration::from_secs(30);
/// How long the watchers get, after the last write, to deliver every event.
pub(crate) const DRAIN: Duration = Duration::from_secs(60);
/// RSS bound after the warm-up (the first third of the run): the warm-up maximum plus the larger
/// of this fraction of it and [`RSS_SLACK_BYTES`]. What the server holds is bounded: at most 120
/// llamas, a history of 10,000 events (filled by the prefill before the run: ~1.3 KiB each, plus
/// a ~0.4 KiB frame once a watcher has sent it), watcher buffers of 100 shared events, a few
/// connections and in-flight responses of at most 120 items. Measured in release mode: 12-13 MB
/// empty, 28 MB after the prefill, then 37-41 MB within the first ~10 s (frames, connections,
/// allocator arenas) and flat from there to the end of a 120 s run (±1 MB).
///
/// What this bound can see: growth beyond 20 MB after the warm-up, i.e. gross leaks (a response,
/// a watcher, a connection or an event kept for good). It cannot see a small leak per write: a
/// debug run (20 s by default, 90 s in CI) makes a few hundred to a few thousand writes after its
/// warm-up, so only a leak of kilobytes per write or more shows (each run prints its own figure:
/// 18-63 KB in four 20 s runs of the three soaks side by side on two cores). A leak
/// of 200 bytes per write is the leak check's to find (`BENCH_ONLY=leak make bench`,
/// benches/load/leak.rs), which runs this kind of load long enough against the release binary
/// and fits RSS against writes.
pub(crate) const RSS_SLACK_FRACTION: f64 = 0.25;
pub(crate) const RSS_SLACK_BYTES: u64 = 20 * 1024 * 1024;
/// Failure messages kept (all are counted).
pub(crate) const MAX_KEPT_FAILURES: usize = 40;

// ---------------------------------------------------------------------------------------------
// The name pool and the model's objects

/// A key of the pool: `namespace index * NAMES + name index`, ordered as the server lists.
pub(crate) type Key = u16;

pub(crate) fn name_of(i: usize) -> String {
    format!("llama-{i:03}")
}

pub(crate) fn key_of(namespace: &str, name: &str) -> Option<Key> {
    let n = NAMESPACES.iter().position(|ns| *ns == namespace)?;
    let i: usize = name.strip_prefix("llama-")?.parse().ok()?;
    (i < NAMES && name == name_of(i)).then_some((n * NAMES + i) as Key)
}

pub(crate) fn ns_of(key: Key) -> usize {
    key as usize / NAMES
}

pub(crate) fn show_key(key: Key) -> String {
    format!("{}/{}", NAMESPACES[ns_of(key)], name_of(key as usize % NAMES))
}

pub(crate) fn object_path(key: Key) -> String {
    llama_path(NAMESPACES[ns_of(key)], &name_of(key as usize % NAMES))
}

/// What the model keeps of a llama: its resourceVersion, spec and `herd` label.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Obj {
    pub(crate) rv: u64,
    pub(crate) weight: f64,
    pub(crate) height: f64,
    /// 0: no color; `i + 1`: `COLORS[i]`.
    pub(crate) color: u8,
    /// Index in `HERDS`.
    pub(crate) herd: u8,
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

pub(crate) fn snippet(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    if text.chars().count() > 400 {
        format!("{}…", text.chars().take(400).collect::<String>())
    } else {
        text.into_owned()
    }
}

/// Parses a Llama as served: its key in the pool and what the model keeps of it.
pub(crate) fn parse_object(v: &Value) -> Result<(Key, Obj), String> {
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
pub(crate) enum Op {
    Create,
    Update,
    Patch,
    Delete,
}

/// An acknowledged write: the object of its response (for a delete, the deleted object as
/// served, stamped with the deletion's resourceVersion).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Write {
    pub(crate) op: Op,
    pub(crate) key: Key,
    pub(crate) obj: Obj,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Added,
    Modified,
    Deleted,
}

/// A watch event as the model and the watchers record it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ev {
    pub(crate) kind: Kind,
    pub(crate) key: Key,
    pub(crate) obj: Obj,
    /// In the model, for a `DELETED` because the object stopped matching the selector: the other
    /// object such an event may carry. This server sends the new object (`obj`); the
    /// kube-apiserver's watch cache sends the previous one stamped with the event's
    /// resourceVersion (this).
    pub(crate) alt: Option<Obj>,
}

impl Ev {
    /// Whether the received event `got` is this expected one.
    pub(crate) fn matches(&self, got: &Ev) -> bool {
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
pub(crate) struct Scope {
    pub(crate) namespace: Option<usize>,
    pub(crate) herd: Option<u8>,
}

impl Scope {
    pub(crate) fn random(rng: &mut StdRng, selector_odds: f64) -> Self {
        Self {
            namespace: rng.random_bool(0.5).then(|| rng.random_range(0..NAMESPACES.len())),
            herd: rng.random_bool(selector_odds).then(|| rng.random_range(0..HERDS.len()) as u8),
        }
    }

    pub(crate) fn in_namespace(&self, key: Key) -> bool {
        self.namespace.is_none_or(|n| n == ns_of(key))
    }

    pub(crate) fn selects(&self, key: Key, obj: &Obj) -> bool {
        self.in_namespace(key) && self.herd.is_none_or(|h| h == obj.herd)
    }

    /// The collection path with `query` (without the leading `?`) and the selector.
    pub(crate) fn path(&self, query: &str) -> String {
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
pub(crate) fn digest<'a>(items: impl Iterator<Item = (Key, &'a Obj)>) -> (usize, u64) {
    let mut h = DefaultHasher::new();
    let mut n = 0;
    for (key, o) in items {
        (key, o.rv, o.weight.to_bits(), o.height.to_bits(), o.color, o.herd).hash(&mut h);
        n += 1;
    }
    (n, h.finish())
}

/// A LIST or a complete paging, checked against the model at its resourceVersion at the end.
pub(crate) struct ListObs {
    pub(crate) what: String,
    pub(crate) scope: Scope,
    pub(crate) rv: u64,
    pub(crate) count: usize,
    pub(crate) digest: u64,
}

/// Applies one acknowledged write to a state.
pub(crate) fn apply(state: &mut BTreeMap<Key, Obj>, w: &Write) {
    if w.op == Op::Delete {
        state.remove(&w.key);
    } else {
        state.insert(w.key, w.obj);
    }
}
