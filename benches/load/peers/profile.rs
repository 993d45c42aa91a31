//! Where the time goes (`BENCH_PROFILE=1`, issue 60's item 3): after the measured phases, the
//! phases whose goals a run can miss run again under `perf record`, each for the phase's time
//! and with request numbers the measured run did not use:
//!
//! - the CPU each process took (the servers, the kube-apiserver, etcd, and the bench's own
//!   client), from `/proc/<pid>/stat` before and after, printed as a table in % of one core;
//! - the serving process alone with call graphs (DWARF unwinding for farm-apiserver, whose
//!   release build keeps no frame pointers; frame pointers for the Go servers), written to
//!   `target/profiles/<peer>-<phase>.perf.data` and, when inferno's `inferno-collapse-perf` and
//!   `inferno-flamegraph` are on the PATH (`cargo install inferno`), drawn as a flame graph
//!   `target/profiles/<peer>-<phase>.svg`.

use super::super::{load, target_folder};
use super::{PHASES, Peer, Resource};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The (peer, phase) pairs profiled: GET and create on farm-apiserver on etcd and
/// sample-apiserver, directly and through the aggregator, GET and create of the CRD, and the
/// merge patch of farm-apiserver on etcd (where the comparison of reset fields would show).
const PROFILED: [(usize, usize); 11] =
    [(1, 0), (3, 0), (1, 3), (3, 3), (1, 4), (2, 0), (4, 0), (5, 0), (2, 3), (4, 3), (5, 3)];

/// Profiles [`PROFILED`], each for `duration`.
pub(super) async fn run(peers: &[Peer], etcd_pid: Option<u32>, duration: Duration) {
    let folder = target_folder().join("profiles");
    std::fs::create_dir_all(&folder).expect("profiles folder");
    println!();
    println!("profiles (BENCH_PROFILE=1): CPU of each process during the phase, % of one core");
    let processes = processes(peers, etcd_pid);
    for (peer, phase) in PROFILED {
        let (peer, phase) = (&peers[peer], &PHASES[phase]);
        let label = format!("{}-{}", peer.name.replace(' ', "-"), phase.short);
        let process = folder.join(format!("{label}.perf.data"));
        let seconds = duration.as_secs().max(1).to_string();
        let mut recorders = Vec::new();
        // The process the client talks to: the kube-apiserver for a peer reached through it.
        let through_kube_apiserver = peer.target.base == peers[5].target.base;
        let front = if through_kube_apiserver { peers[5].pid } else { peer.pid };
        if let Some(pid) = front {
            let pid = pid.to_string();
            let unwind: &[&str] = if through_kube_apiserver || matches!(peer.resource, Resource::Flunder) {
                &["-F", "999", "-g"]
            } else {
                &["-F", "499", "--call-graph", "dwarf,16384"]
            };
            recorders.push(record(&[unwind, &["-p", &pid]].concat(), &process, &seconds));
        }
        let (p, request) = (peer.clone(), phase.request);
        let before: Vec<f64> = processes.iter().map(|(_, pid)| cpu_seconds(*pid)).collect();
        let started = std::time::Instant::now();
        let stats =
            load(&peer.target, phase.concurrency, duration, move |c, i| request(&p, c, i + 1_000_000_000)).await;
        let elapsed = started.elapsed().as_secs_f64();
        let used: Vec<String> = processes
            .iter()
            .zip(before)
            .map(|((name, pid), before)| format!("{name} {:.0}%", (cpu_seconds(*pid) - before) / elapsed * 100.0))
            .collect();
        println!("| {label} | {:.0} req/s | {} |", stats.rate(), used.join(", "));
        for mut recorder in recorders {
            let _ = recorder.wait();
        }
        if process.exists() {
            flame_graph(&process, &folder.join(format!("{label}.svg")), &format!("{} {}", peer.name, phase.name));
        }
    }
}

/// `perf record` with `args` into `out` for `seconds`.
fn record(args: &[&str], out: &Path, seconds: &str) -> Child {
    Command::new("perf")
        .arg("record")
        .args(args)
        .arg("-o")
        .arg(out)
        .args(["--", "sleep", seconds])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("perf record (is perf installed?)")
}

/// The processes whose CPU is counted: the bench (the client), each server, etcd.
fn processes(peers: &[Peer], etcd_pid: Option<u32>) -> Vec<(&'static str, u32)> {
    let named = [
        ("client", Some(std::process::id())),
        ("farm etcd", peers[1].pid),
        ("farm memory", peers[0].pid),
        ("sample", peers[3].pid),
        ("kube-apiserver", peers[5].pid),
        ("etcd", etcd_pid),
    ];
    named.into_iter().filter_map(|(name, pid)| Some((name, pid?))).collect()
}

/// The CPU time process `pid` has used, user and system (s).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let ticks: f64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<f64>().ok()).sum();
    // SAFETY: sysconf only reads a constant of the system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / per_second.max(1.0)
}

/// `perf script` of `data` folded and drawn into `svg` by inferno, when it is installed.
fn flame_graph(data: &Path, svg: &PathBuf, title: &str) {
    let script = format!(
        "perf script -i '{}' 2>/dev/null | inferno-collapse-perf | inferno-flamegraph --title '{title}' --width 1600 > '{}'",
        data.display(),
        svg.display()
    );
    let drawn = Command::new("bash").args(["-o", "pipefail", "-c", &script]).status().is_ok_and(|s| s.success());
    if !drawn {
        println!("flame graph {} not drawn (inferno installed? `cargo install inferno`)", svg.display());
        let _ = std::fs::remove_file(svg);
    }
}
