//! etcd storage against memory storage, side by side in one run ([`ab`]): two servers on the
//! same machine at the same time, one with `--storage memory` and one with `--storage etcd` on
//! the control plane's etcd, both with that control plane up, under the same loads in
//! alternating runs. Reads run both consistent (no resourceVersion: in etcd mode each waits for
//! a read of the write marker) and at `resourceVersion=0` (the watch cache as it is). Besides
//! each server's CPU per request, the etcd column's requests are charged with the CPU etcd spent
//! meanwhile, which the watch cache's reads and the writes cost etcd (read from `/proc` for
//! etcd's pid).

use super::ab::{self, Load, ROUNDS};
use super::{ControlPlane, LLAMAS, fill, llama, start};
use std::path::Path;
use std::time::Duration;

const LOADS: [Load; 6] = [
    ab::GET_ONE_LLAMA,
    Load {
        name: "GET one llama (128 conns)",
        concurrency: 128,
        request: |t, c, _| c.get(t.url(&format!("{LLAMAS}/small/llamas/l000500"))),
    },
    // At resourceVersion=0 any state will do: the cache answers at once, without a marker read.
    Load {
        name: "GET, resourceVersion=0 (32 conns)",
        concurrency: 32,
        request: |t, c, _| c.get(t.url(&format!("{LLAMAS}/small/llamas/l000500?resourceVersion=0"))),
    },
    ab::LIST_1000_LLAMAS,
    Load {
        name: "LIST 1,000, resourceVersion=0 (8)",
        concurrency: 8,
        request: |t, c, _| c.get(t.url(&format!("{LLAMAS}/small/llamas?resourceVersion=0"))),
    },
    ab::CREATE_LLAMA,
];

/// Sequential reads of the write marker in [`read_cost`].
const READS: u32 = 2_000;

/// Runs the comparison on `cp` and prints its table.
pub async fn compare(binary: &Path, cp: &ControlPlane, phase: Duration) {
    let flags = ["--storage", "etcd", "--etcd-endpoints", &cp.etcd, "--etcd-prefix", "/farm-bench-ab"];
    let (etcd, _) = start(binary, &flags).await;
    let (memory, _) = start(binary, &[]).await;
    for farm in [&etcd, &memory] {
        fill(&farm.target, &format!("{LLAMAS}/small/llamas"), 1_000, llama, "l").await;
    }
    println!(
        "etcd storage vs memory storage, control plane up for both, {ROUNDS} rounds of alternating runs, {} s each",
        phase.as_secs()
    );
    ab::header("etcd", "memory");
    let mut etcd_cpu = Vec::new();
    for l in &LOADS {
        let etcd_us = ab::row_with_companion(&etcd, &memory, cp.etcd_pid(), l, phase).await;
        etcd_cpu.push(format!("{} {etcd_us:.1} µs", l.name));
    }
    println!("etcd's own CPU per request of the etcd column: {}", etcd_cpu.join(", "));
    read_cost(cp).await;
    println!();
}

/// What one read of the write marker costs, alone: the linearizable etcd read every consistent
/// read from the watch cache waits for (shared by the reads that arrive while one is under
/// way). Made from this process, on a multi-threaded runtime as the server's.
async fn read_cost(cp: &ControlPlane) {
    use farm_apiserver::store::etcd::{EtcdStore, connection};
    let config = connection::EtcdConfig {
        endpoints: vec![cp.etcd.clone()],
        prefix: "/farm-bench-ab".into(),
        ca_file: None,
        client_cert: None,
        request_timeout: Duration::from_secs(5),
    };
    let client = connection::connect(&config).await.expect("etcd client");
    let store = EtcdStore::<farm_apiserver::resources::llama::Llama>::new(client, &config.prefix);
    store.latest_write().await.expect("a first read");
    let etcd_cpu = || cp.etcd_pid().map_or(0.0, ab::cpu_seconds_of);
    let (started, etcd_before, own_before) =
        (std::time::Instant::now(), etcd_cpu(), ab::cpu_seconds_of(std::process::id()));
    for _ in 0..READS {
        store.latest_write().await.expect("a read of the write marker");
    }
    let per_read = |seconds: f64| seconds * 1e6 / f64::from(READS);
    println!(
        "one read of the write marker ({READS} in a row): {:.0} µs, etcd's CPU {:.0} µs, the client's CPU {:.0} µs",
        per_read(started.elapsed().as_secs_f64()),
        per_read(etcd_cpu() - etcd_before),
        per_read(ab::cpu_seconds_of(std::process::id()) - own_before)
    );
}
