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
//!   `target/profiles/<peer>-<phase>.svg` (`BENCH_ONLY=flame-graphs` draws them again from the
//!   recordings). The Go servers are built stripped (`-ldflags "-s -w"`): perf cannot name their
//!   functions, so their frames are named from the symbol table Go keeps for its own runtime,
//!   with `go tool addr2line`.

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

/// Draws every recording of `target/profiles/` again (`BENCH_ONLY=flame-graphs`).
pub fn redraw() {
    let folder = target_folder().join("profiles");
    let Ok(entries) = std::fs::read_dir(&folder) else { return println!("no {}", folder.display()) };
    for path in entries.flatten().map(|e| e.path()) {
        let Some(label) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".perf.data")) else {
            continue;
        };
        let svg = folder.join(format!("{label}.svg"));
        flame_graph(&path, &svg, label);
        println!("{}", svg.display());
    }
}

/// `perf script` of `data`, Go's stripped frames named, folded and drawn into `svg` by inferno,
/// when it is installed.
fn flame_graph(data: &Path, svg: &PathBuf, title: &str) {
    let script = Command::new("perf").args(["script", "-i"]).arg(data).stderr(Stdio::null()).output();
    let text = script.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let named = svg.with_extension("script");
    if std::fs::write(&named, name_go_frames(&text)).is_err() {
        return println!("flame graph {} not drawn: cannot write {}", svg.display(), named.display());
    }
    let pipeline = format!(
        "inferno-collapse-perf < '{}' | inferno-flamegraph --title '{title}' --width 1600 --minwidth 0.2 > '{}'",
        named.display(),
        svg.display()
    );
    let drawn = Command::new("bash").args(["-o", "pipefail", "-c", &pipeline]).status().is_ok_and(|s| s.success());
    let _ = std::fs::remove_file(&named);
    if !drawn {
        println!("flame graph {} not drawn (inferno installed? `cargo install inferno`)", svg.display());
        let _ = std::fs::remove_file(svg);
    }
}

/// `perf script`'s text with the frames it could not name in a Go binary (`<address> [unknown]
/// (<binary>)`, the address relative to the binary's first mapping) named by `go tool
/// addr2line`.
fn name_go_frames(text: &str) -> String {
    let unknown = |line: &str| -> Option<(u64, String)> {
        let (address, rest) = line.trim_start().split_once(' ')?;
        let binary = rest.strip_prefix("[unknown] (")?.strip_suffix(')')?;
        Some((u64::from_str_radix(address, 16).ok()?, binary.to_string()))
    };
    let mut by_binary: std::collections::BTreeMap<String, std::collections::BTreeSet<u64>> = Default::default();
    for (address, binary) in text.lines().filter_map(unknown) {
        by_binary.entry(binary).or_default().insert(address);
    }
    let mut names = std::collections::HashMap::new();
    for (binary, addresses) in by_binary {
        let Some(base) = first_mapping(&binary) else { continue };
        let addresses: Vec<u64> = addresses.into_iter().collect();
        for (address, function) in addresses.iter().zip(addr2line(&binary, &addresses, base)) {
            names.insert((*address, binary.clone()), function);
        }
    }
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        match unknown(line).and_then(|key| names.get(&key)) {
            Some(function) => out.push_str(&line.replacen("[unknown]", function, 1)),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// The virtual address of `binary`'s first loaded segment less its file offset (what perf's
/// relative addresses are counted from), from `readelf -lW`; `None` when it is not a Go binary.
fn first_mapping(binary: &str) -> Option<u64> {
    let go = Command::new("go").args(["version", binary]).output().ok()?;
    if !go.status.success() {
        return None;
    }
    let headers = Command::new("readelf").args(["-lW", binary]).output().ok()?;
    let text = String::from_utf8_lossy(&headers.stdout).into_owned();
    let load = text.lines().find(|l| l.trim_start().starts_with("LOAD"))?;
    let fields: Vec<&str> = load.split_whitespace().collect();
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    Some(hex(fields.get(2)?)? - hex(fields.get(1)?)?)
}

/// The function at each of `addresses` (relative to `base`) of `binary`, by `go tool addr2line`
/// (two lines an address: the function, then its file and line); `[unknown]` where it cannot say.
fn addr2line(binary: &str, addresses: &[u64], base: u64) -> Vec<String> {
    use std::io::Write;
    let child = Command::new("go")
        .args(["tool", "addr2line", binary])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return vec!["[unknown]".into(); addresses.len()] };
    if let Some(mut stdin) = child.stdin.take() {
        let input: String = addresses.iter().map(|a| format!("0x{:x}\n", a + base)).collect();
        let _ = stdin.write_all(input.as_bytes());
    }
    let output = child.wait_with_output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let mut functions: Vec<String> = output.lines().step_by(2).map(|f| f.replace(' ', "_")).collect();
    functions.resize(addresses.len(), "[unknown]".into());
    functions
}
