//! Writers: create, update, merge-patch and delete random llamas, recording every acknowledged write; and the prefill.

use super::*;

pub(crate) struct Writer {
    pub(crate) shared: Arc<Shared>,
    pub(crate) client: reqwest::Client,
    pub(crate) rng: StdRng,
    /// The last resourceVersion this writer saw of each key: its stale preconditions.
    pub(crate) last_seen: HashMap<Key, u64>,
    pub(crate) writes: Vec<Write>,
}

impl Writer {
    pub(crate) fn new(shared: Arc<Shared>, seed: u64) -> Self {
        let client = shared.client(None);
        Self { shared, client, rng: StdRng::seed_from_u64(seed), last_seen: HashMap::new(), writes: Vec::new() }
    }

    pub(crate) fn record(&mut self, op: Op, key: Key, obj: Obj) {
        self.last_seen.insert(key, obj.rv);
        self.writes.push(Write { op, key, obj });
        self.shared.acknowledged.fetch_add(1, Ordering::SeqCst);
    }

    /// A write answered 503 during an etcd outage: it may or may not have committed.
    pub(crate) fn ambiguous(&mut self, op: Op, key: Key, sent: Obj) {
        self.shared.count(match op {
            Op::Create => "create 503 during the etcd outage (outcome unknown)",
            Op::Update => "update 503 during the etcd outage (outcome unknown)",
            Op::Patch => "patch 503 during the etcd outage (outcome unknown)",
            Op::Delete => "delete 503 during the etcd outage (outcome unknown)",
        });
        self.last_seen.remove(&key);
        self.shared.ambiguous.lock().unwrap().push(Write { op, key, obj: sent });
    }

    /// A random new state: a weight never used before, random height, color and herd.
    pub(crate) fn fresh(&mut self) -> Obj {
        Obj {
            rv: 0,
            weight: self.shared.next_weight(),
            height: self.rng.random_range(50..250) as f64,
            color: self.rng.random_range(0..=COLORS.len()) as u8,
            herd: self.rng.random_range(0..HERDS.len()) as u8,
        }
    }

    /// A stale (or current) resourceVersion of `key` for a precondition, one time in five.
    pub(crate) fn maybe_stale(&mut self, key: Key) -> Option<u64> {
        if self.rng.random_bool(0.2) { self.last_seen.get(&key).copied() } else { None }
    }

    /// Checks that the response `body` is `key` with the state `sent` (rv aside).
    pub(crate) fn echoed(what: &str, body: &Value, key: Key, sent: &Obj) -> Result<Obj, String> {
        let (got_key, got) = parse_object(body).map_err(|e| format!("{what}: {e}"))?;
        let same = Obj { rv: got.rv, ..*sent };
        if got_key != key || got != same {
            return Err(format!("{what}: the response is {} {got}, not what was written ({same})", show_key(got_key)));
        }
        Ok(got)
    }

    pub(crate) async fn step(&mut self) -> Result<(), String> {
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

    pub(crate) async fn create(&mut self, key: Key) -> Result<(), String> {
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
        let (code, body) = self.shared.call(&what, self.client.post(self.shared.url(&path)).json(&body)).await?;
        match code {
            201 => {
                let obj = Self::echoed(&what, &body, key, &sent)?;
                self.shared.count("create 201");
                self.record(Op::Create, key, obj);
            }
            409 if is_status(&body, 409, "AlreadyExists") => self.shared.count("create 409 AlreadyExists (expected)"),
            503 if self.shared.in_outage(code, &body) => self.ambiguous(Op::Create, key, sent),
            _ => return Err(unexpected(&what, code, &body)),
        }
        Ok(())
    }

    /// GET, then PUT the object back with a new state and its resourceVersion (or, one time in
    /// five, the writer's possibly stale one).
    pub(crate) async fn update(&mut self, key: Key) -> Result<(), String> {
        let what = format!("update {}", show_key(key));
        let url = self.shared.url(&object_path(key));
        let (code, mut body) = self.shared.call(&format!("{what}: GET"), self.client.get(&url)).await?;
        match code {
            200 => self.shared.count("get 200"),
            404 if is_status(&body, 404, "NotFound") => {
                self.shared.count("get 404 NotFound (expected)");
                return Ok(());
            }
            503 if self.shared.in_outage(code, &body) => {
                self.shared.count("get 503 during the etcd outage");
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
        let (code, body) = self.shared.call(&what, self.client.put(&url).json(&body)).await?;
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
            503 if self.shared.in_outage(code, &body) => self.ambiguous(Op::Update, key, sent),
            _ => return Err(unexpected(&what, code, &body)),
        }
        Ok(())
    }

    /// A merge patch of weight, color and herd (height untouched), with a resourceVersion
    /// precondition when given.
    pub(crate) async fn patch(&mut self, key: Key, precondition: Option<u64>) -> Result<(), String> {
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
        let (code, body) = self.shared.call(&what, request).await?;
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
            503 if self.shared.in_outage(code, &body) => {
                self.ambiguous(Op::Patch, key, Obj { height: f64::NAN, ..sent })
            }
            409 if precondition.is_some() && is_status(&body, 409, "Conflict") => {
                self.shared.count("patch 409 Conflict (expected)")
            }
            _ => return Err(unexpected(&what, code, &body)),
        }
        Ok(())
    }

    /// A delete, with a resourceVersion precondition one time in five.
    pub(crate) async fn delete(&mut self, key: Key) -> Result<(), String> {
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
        let (code, body) = self.shared.call(&what, request).await?;
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
            503 if self.shared.in_outage(code, &body) => {
                let unknown = Obj { rv: 0, weight: f64::NAN, height: f64::NAN, color: 0, herd: 0 };
                self.ambiguous(Op::Delete, key, unknown)
            }
            409 if precondition.is_some() && is_status(&body, 409, "Conflict") => {
                self.shared.count("delete 409 Conflict (expected)")
            }
            _ => return Err(unexpected(&what, code, &body)),
        }
        Ok(())
    }
}

pub(crate) async fn writer(shared: Arc<Shared>, id: usize, seed: u64, stop: watch::Receiver<bool>) -> Vec<Write> {
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
pub(crate) async fn prefill(shared: &Arc<Shared>, seed: u64) -> Vec<Write> {
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
