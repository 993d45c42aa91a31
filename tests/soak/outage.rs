//! The soak through an etcd fault: a three-member etcd cluster whose leader is killed with
//! SIGKILL a third of the way into the run and restarted a few seconds later.
//!
//! While etcd elects a new leader, requests get 503 `ServiceUnavailable`: that is an expected
//! outcome (counted) from the kill until the outage is over, which the test sees happen rather
//! than assuming a duration: the killed member is back, every member answers and names the same
//! leader, and the server has acknowledged a write since. Afterwards a 503 is a failure again, and
//! the run fails when the outage is not over before it ends (writes did not resume). How long
//! writes paused is printed, not judged. A write answered 503 may still have committed (etcd applied
//! the transaction, its answer was lost): its outcome is *ambiguous*. Every write sets a weight
//! never used before, so after the run [`resolve_ambiguous`] reads etcd's own history of the
//! prefix and adds each ambiguous write that did commit to the model, at the revision etcd gave
//! it; a revision of etcd's history that is neither acknowledged nor an ambiguous write stays
//! out of the model, and the model check reports it.

use super::*;
use common::etcd::EtcdCluster;
use farm_apiserver::store::etcd::grpc::etcdserverpb::WatchCreateRequest;
use farm_apiserver::store::etcd::grpc::mvccpb::{KeyValue, event::EventType};
use farm_apiserver::store::etcd::{client::EtcdClient, connection};

/// How long the killed member stays down.
pub(crate) const LEADER_DOWN: Duration = Duration::from_secs(4);

/// The etcd cluster under the server and the state of the fault.
pub(crate) struct LeaderKill {
    pub(crate) cluster: EtcdCluster,
    pub(crate) prefix: String,
    /// The killed member and when it was killed.
    killed: Option<(usize, Instant)>,
    restarted: bool,
    /// The acknowledged-write count when etcd was first seen whole again after the restart.
    whole_at: Option<u64>,
    /// Whether the outage is over (a write acknowledged since etcd was whole again).
    over: bool,
    /// The acknowledged-write count at the last tick, when it last grew, and the longest time
    /// without a new acknowledged write since the kill.
    last_count: u64,
    last_growth: Instant,
    pub(crate) longest_pause: Duration,
}

impl LeaderKill {
    pub(crate) fn new(cluster: EtcdCluster, prefix: String) -> Self {
        let now = Instant::now();
        Self {
            cluster,
            prefix,
            killed: None,
            restarted: false,
            whole_at: None,
            over: false,
            last_count: 0,
            last_growth: now,
            longest_pause: Duration::ZERO,
        }
    }

    /// Called every few hundred milliseconds of the run: kills the leader a third of the way
    /// in, restarts it [`LEADER_DOWN`] later, and measures how long writes paused.
    pub(crate) async fn tick(&mut self, shared: &Shared, elapsed: Duration, duration: Duration) {
        let count = shared.acknowledged.load(Ordering::SeqCst);
        if count != self.last_count {
            self.last_count = count;
            self.last_growth = Instant::now();
        }
        match self.killed {
            None if elapsed >= duration / 3 => {
                let leader = self.cluster.leader().await;
                let at = Instant::now();
                shared.set_etcd_outage(true);
                self.cluster.members[leader].kill_hard();
                println!("etcd leader m{leader} killed at {:.1} s", elapsed.as_secs_f64());
                self.killed = Some((leader, at));
                self.last_growth = at;
            }
            Some((member, at)) => {
                if !self.restarted && at.elapsed() >= LEADER_DOWN {
                    self.cluster.members[member].restart();
                    self.restarted = true;
                    println!("etcd member m{member} restarted {:.1} s after the kill", at.elapsed().as_secs_f64());
                }
                if !self.over {
                    self.longest_pause = self.longest_pause.max(self.last_growth.elapsed());
                    self.watch_recovery(shared, count).await;
                }
            }
            None => {}
        }
    }

    /// Ends the outage once etcd is whole again after the restart (every member answers and
    /// names the same leader) and the server has acknowledged a write since.
    async fn watch_recovery(&mut self, shared: &Shared, count: u64) {
        match self.whole_at {
            None if self.restarted && self.cluster.whole().await => self.whole_at = Some(count),
            Some(whole_at) if count > whole_at => {
                self.over = true;
                shared.set_etcd_outage(false);
                println!("etcd outage over: the cluster is whole and a write was acknowledged since");
            }
            _ => {}
        }
    }

    /// Whether the fault happened and the outage was over before the run ended.
    pub(crate) fn check(&self, problems: &mut Vec<String>) {
        match self.killed {
            None => problems.push("the run ended before the etcd leader was killed (SOAK_SECONDS too short)".into()),
            Some(_) if !self.over => problems.push(
                "the etcd outage was not over when the run ended: no write acknowledged once etcd was whole again"
                    .into(),
            ),
            Some(_) => {}
        }
        println!(
            "etcd leader kill: longest time without an acknowledged write {:.1} s",
            self.longest_pause.as_secs_f64()
        );
    }
}

/// Adds to `writes` every ambiguous write that etcd's history shows committed, at its revision
/// (the history from `base_rv` on, read from etcd itself). Returns how many did.
pub(crate) async fn resolve_ambiguous(
    kill: &LeaderKill,
    base_rv: u64,
    writes: &mut Vec<Write>,
    ambiguous: &[Write],
) -> Result<usize, String> {
    let history = etcd_history(&kill.cluster.endpoints(), &kill.prefix, base_rv + 1).await?;
    Ok(adopt_committed(&history, writes, ambiguous))
}

/// Adds to `writes` the ambiguous writes that `history` (etcd's events: key, state, deleted)
/// shows committed: an event at a revision no acknowledged write has is the ambiguous write of
/// the same key and operation (a put with the same weight, never used twice; a deletion), each
/// ambiguous write used at most once. Events that match nothing are left out, for the model
/// check to report. Returns how many were added.
fn adopt_committed(history: &[(Key, Obj, bool)], writes: &mut Vec<Write>, ambiguous: &[Write]) -> usize {
    let acknowledged: std::collections::HashSet<u64> = writes.iter().map(|w| w.obj.rv).collect();
    let mut unused: Vec<Option<&Write>> = ambiguous.iter().map(Some).collect();
    let mut committed = 0;
    for &(key, obj, deleted) in history.iter().filter(|(_, obj, _)| !acknowledged.contains(&obj.rv)) {
        let same_write =
            |a: &&Write| a.key == key && (a.op == Op::Delete) == deleted && (deleted || a.obj.weight == obj.weight);
        if let Some(a) = unused.iter_mut().find(|a| a.is_some_and(|a| same_write(&a))).and_then(Option::take) {
            writes.push(Write { op: a.op, key, obj });
            committed += 1;
        }
    }
    committed
}

/// Every event of the soak's llamas in etcd from revision `from` up to etcd's current revision:
/// `(key, object at the event's revision, deleted)`; a deletion carries the last state.
async fn etcd_history(endpoints: &str, prefix: &str, from: u64) -> Result<Vec<(Key, Obj, bool)>, String> {
    let config = connection::EtcdConfig {
        endpoints: endpoints.split(',').map(str::to_string).collect(),
        prefix: String::new(),
        ca_file: None,
        client_cert: None,
        request_timeout: Duration::from_secs(5),
    };
    let client: EtcdClient = connection::connect(&config).await.map_err(|e| format!("an etcd client: {e}"))?;
    let header = client.get("/").await.map_err(|e| format!("etcd's revision: {e}"))?.header;
    let last = header.map_or(0, |h| h.revision) as u64;
    let marker = format!("{prefix}/llamas/");
    let request = WatchCreateRequest {
        key: marker.clone().into_bytes(),
        range_end: format!("{prefix}/llamas0").into_bytes(),
        start_revision: from as i64,
        prev_kv: true,
        ..Default::default()
    };
    let mut stream = client.watch(request).await.map_err(|e| format!("a watch of etcd's history: {e}"))?;
    let mut out = Vec::new();
    let mut reached = from.saturating_sub(1);
    while reached < last {
        let message = tokio::time::timeout(Duration::from_secs(20), stream.message()).await;
        let Ok(Ok(Some(response))) = message else {
            return Err(format!("etcd's history ended at revision {reached} of {last}: {message:?}"));
        };
        for event in response.events {
            let Some(kv) = event.kv else { continue };
            reached = reached.max(kv.mod_revision as u64);
            if kv.key == marker.as_bytes() {
                continue;
            }
            let deleted = event.r#type == EventType::Delete as i32;
            let state = if deleted { event.prev_kv.as_ref() } else { Some(&kv) };
            let (key, obj) = state
                .ok_or_else(|| "a deletion without its last state".to_string())
                .and_then(|s| parse_stored(s, kv.mod_revision))?;
            out.push((key, obj, deleted));
        }
    }
    Ok(out)
}

/// A llama as etcd holds it (at the storage version, v1, without a resourceVersion), at `revision`,
/// read as the model's v1alpha llama.
fn parse_stored(kv: &KeyValue, revision: i64) -> Result<(Key, Obj), String> {
    let mut value: Value =
        serde_json::from_slice(&kv.value).map_err(|e| format!("a stored llama that is not JSON: {e}"))?;
    value["metadata"]["resourceVersion"] = json!(revision.to_string());
    as_v1alpha(value).and_then(|v| parse_object(&v))
}

/// The soak's writers set no coat pattern, so a stored v1 llama is the model's v1alpha llama with
/// `spec.coat.color` in `spec.color`; anything else in the coat is not the soak's.
fn as_v1alpha(mut value: Value) -> Result<Value, String> {
    if value["apiVersion"] != "farm.example.com/v1" {
        return Err(format!("a stored llama not at the storage version v1: {}", snippet(value.to_string().as_bytes())));
    }
    value["apiVersion"] = json!("farm.example.com/v1alpha");
    let spec = value["spec"].as_object_mut().ok_or("a stored llama without a spec")?;
    if let Some(coat) = spec.remove("coat") {
        match coat.as_object() {
            Some(members) if members.keys().all(|k| k == "color") => {
                if let Some(color) = members.get("color") {
                    spec.insert("color".into(), color.clone());
                }
            }
            _ => return Err(format!("a stored coat the soak never wrote: {coat}")),
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(rv: u64, weight: f64) -> Obj {
        Obj { rv, weight, height: 100.0, color: 0, herd: 0 }
    }

    #[test]
    fn only_ambiguous_writes_found_in_the_history_join_the_model() {
        let mut writes = vec![Write { op: Op::Create, key: 1, obj: obj(5, 1.0) }];
        let ambiguous = [
            Write { op: Op::Patch, key: 1, obj: obj(0, 7.0) },
            Write { op: Op::Delete, key: 1, obj: obj(0, f64::NAN) },
            Write { op: Op::Create, key: 2, obj: obj(0, 8.0) },
            Write { op: Op::Update, key: 3, obj: obj(0, 9.0) },
        ];
        let history = [
            (1, obj(5, 1.0), false),  // acknowledged
            (1, obj(6, 7.0), false),  // the ambiguous patch
            (1, obj(7, 7.0), true),   // the ambiguous delete
            (3, obj(8, 10.0), false), // a weight nobody sent: no write of the soak made it
            (1, obj(9, 7.0), true),   // a second delete: the ambiguous one is used up
        ];
        assert_eq!(adopt_committed(&history, &mut writes, &ambiguous), 2);
        let adopted: Vec<_> = writes[1..].iter().map(|w| (w.op, w.key, w.obj.rv)).collect();
        assert_eq!(adopted, [(Op::Patch, 1, 6), (Op::Delete, 1, 7)]);
        let mut problems = Vec::new();
        check_model(&mut writes, 4, &mut problems);
        assert_eq!(problems.len(), 0, "{problems:?}");
        writes.push(Write { op: Op::Create, key: 2, obj: obj(10, 8.0) });
        check_model(&mut writes, 4, &mut problems);
        assert!(problems[0].contains("rv 8..9 belong to no acknowledged write"), "{problems:?}");
    }

    #[test]
    fn a_stored_v1_llama_reads_as_the_models_v1alpha_llama() {
        let stored = |spec: Value| json!({"apiVersion": "farm.example.com/v1", "kind": "Llama", "spec": spec});
        let read = as_v1alpha(stored(json!({"weight": 1, "coat": {"color": "brown"}}))).unwrap();
        assert_eq!(read["apiVersion"], "farm.example.com/v1alpha");
        assert_eq!(read["spec"], json!({"weight": 1, "color": "brown"}));
        assert_eq!(as_v1alpha(stored(json!({"weight": 1}))).unwrap()["spec"], json!({"weight": 1}));
        assert!(as_v1alpha(stored(json!({"coat": {"pattern": "Solid"}}))).is_err());
        let mut old = stored(json!({"color": "brown"}));
        old["apiVersion"] = json!("farm.example.com/v1alpha");
        assert!(as_v1alpha(old).is_err());
    }
}
