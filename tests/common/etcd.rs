//! A real etcd on loopback for the tests (the one `scripts/control-plane.sh etcd` builds, or
//! `ETCD`), and the storage
//! backends the black-box suites run against.
//!
//! etcd runs under a small shell that kills it when its standard input closes, so an etcd
//! shared by a whole test binary goes away with that binary however it ends.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Where a test server keeps Llamas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The default in-memory store.
    Memory,
    /// etcd: a test binary's shared etcd, under a prefix of the server's own.
    Etcd,
}

/// An etcd process on two free loopback ports.
pub struct Etcd {
    /// `http://127.0.0.1:PORT`
    pub endpoint: String,
    peer: String,
    /// The member's name.
    name: String,
    /// `--initial-cluster` (`name=peer,…`); a cluster of this member alone when `None`.
    cluster: Option<String>,
    data: PathBuf,
    /// Closing it stops etcd.
    stdin: Option<ChildStdin>,
    child: Option<Child>,
    /// Extra etcd flags (TLS).
    flags: Vec<String>,
    /// Removes the data when an owned instance is dropped.
    _dir: Option<tempfile::TempDir>,
}

/// Files of an etcd served over mutual TLS: its CA, and a client certificate it accepts.
pub struct EtcdTls {
    /// The CA that signed etcd's serving certificate and the client certificate.
    pub ca: PathBuf,
    /// A client certificate (CN farm-apiserver).
    pub client_cert: PathBuf,
    /// Its key.
    pub client_key: PathBuf,
    /// etcd's serving certificate and key, which etcd reads at each handshake.
    serving: (PathBuf, PathBuf),
    /// A second CA that etcd trusts from its start, as after a CA rotation's first step.
    next: rcgen::Issuer<'static, rcgen::KeyPair>,
    next_pem: String,
}

impl EtcdTls {
    /// The rest of a CA rotation: the client's bundle gains the second CA, then the client
    /// certificate and etcd's serving certificate are issued by it (files replaced in place, as
    /// a mounted Secret's are).
    pub fn rotate_to_next_ca(&self) {
        let bundle = std::fs::read_to_string(&self.ca).expect("CA bundle") + &self.next_pem;
        std::fs::write(&self.ca, bundle).expect("write CA bundle");
        let (cert, key) = leaf(&self.next, Vec::new(), "farm-apiserver", rcgen::ExtendedKeyUsagePurpose::ClientAuth);
        std::fs::write(&self.client_cert, cert).expect("write");
        std::fs::write(&self.client_key, key).expect("write");
        let (cert, key) =
            leaf(&self.next, vec!["127.0.0.1".into()], "etcd", rcgen::ExtendedKeyUsagePurpose::ServerAuth);
        std::fs::write(&self.serving.0, cert).expect("write");
        std::fs::write(&self.serving.1, key).expect("write");
    }
}

fn write_pem(dir: &std::path::Path, name: &str, pem: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, pem).expect("write PEM");
    path
}

/// A new CA: its PEM and an issuer of certificates.
fn new_ca(name: &str) -> (String, rcgen::Issuer<'static, rcgen::KeyPair>) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).expect("CA");
    (cert.pem(), Issuer::new(params, key))
}

/// A certificate of `issuer` for `names` and its key, PEM.
fn leaf(
    issuer: &rcgen::Issuer<'static, rcgen::KeyPair>,
    names: Vec<String>,
    cn: &str,
    usage: rcgen::ExtendedKeyUsagePurpose,
) -> (String, String) {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(names).expect("params");
    params.distinguished_name.push(rcgen::DnType::CommonName, cn);
    params.extended_key_usages = vec![usage];
    (params.signed_by(&key, issuer).expect("certificate").pem(), key.serialize_pem())
}

/// A CA, a serving certificate for 127.0.0.1 and a client certificate, written into `dir`;
/// returns the client's files and etcd's TLS flags (etcd trusts a second CA too).
fn tls_files(dir: &std::path::Path) -> (EtcdTls, Vec<String>) {
    use rcgen::ExtendedKeyUsagePurpose::{ClientAuth, ServerAuth};
    let (ca_pem, issuer) = new_ca("etcd-test-ca");
    let (next_pem, next) = new_ca("etcd-test-ca-next");
    let (server_cert, server_key) = leaf(&issuer, vec!["127.0.0.1".into()], "etcd", ServerAuth);
    let (client_cert, client_key) = leaf(&issuer, Vec::new(), "farm-apiserver", ClientAuth);
    let ca = write_pem(dir, "ca.crt", &ca_pem);
    let trusted = write_pem(dir, "trusted.crt", &format!("{ca_pem}{next_pem}"));
    let serving = (write_pem(dir, "server.crt", &server_cert), write_pem(dir, "server.key", &server_key));
    let flags = vec![
        "--cert-file".into(),
        serving.0.display().to_string(),
        "--key-file".into(),
        serving.1.display().to_string(),
        "--trusted-ca-file".into(),
        trusted.display().to_string(),
        "--client-cert-auth".into(),
    ];
    let files = EtcdTls {
        ca,
        client_cert: write_pem(dir, "client.crt", &client_cert),
        client_key: write_pem(dir, "client.key", &client_key),
        serving,
        next,
        next_pem,
    };
    (files, flags)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

/// Why etcd does not serve: it exited, or is still not serving at the deadline (with its log).
#[derive(Debug)]
enum Unserved {
    Exited(String),
    Late(String),
}

impl std::fmt::Display for Unserved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited(log) => write!(f, "etcd exited; the end of its log:\n{log}"),
            Self::Late(log) => {
                write!(f, "etcd did not serve in {:?}; the end of its log:\n{log}", super::EVENT_DEADLINE)
            }
        }
    }
}

/// The body of a plain HTTP GET of `path` at `address`, if it answers within two seconds.
fn http_get(address: &str, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let socket: std::net::SocketAddr = address.parse().ok()?;
    let mut stream = std::net::TcpStream::connect_timeout(&socket, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.split_once("\r\n\r\n").map(|(_, body)| body.to_string())
}

/// The etcd binary: `ETCD`, else the one `scripts/control-plane.sh etcd` prints (it builds
/// it from the Go module proxy when its cache lacks it; `make test` has done so first).
pub fn etcd_path() -> String {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::var("ETCD").unwrap_or_else(|_| {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/control-plane.sh");
            let out = Command::new("bash").arg(script).arg("etcd").output().expect("run scripts/control-plane.sh etcd");
            assert!(out.status.success(), "scripts/control-plane.sh etcd: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        })
    })
    .clone()
}

impl Etcd {
    /// Starts a private etcd, stopped and removed when dropped.
    pub fn start() -> Self {
        let mut etcd = Self::unstarted();
        etcd.run_on_free_ports();
        etcd
    }

    /// Starts a private etcd with extra flags (e.g. `--quota-backend-bytes`).
    pub fn start_with(flags: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let flags = flags.iter().map(|f| f.to_string()).collect();
        let mut etcd = Self::new("http", dir.path().join("data"), flags, Some(dir));
        etcd.run_on_free_ports();
        etcd
    }

    /// A private etcd's ports and data directory, not started yet ([`Etcd::restart`] starts it).
    /// (An etcd stopped during its first start may never elect itself leader again.)
    pub fn unstarted() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        Self::new("http", dir.path().join("data"), Vec::new(), Some(dir))
    }

    /// An etcd on two free ports, serving clients over `scheme`, keeping its data in `data`
    /// (removed with `dir` when given, by the wrapper otherwise).
    fn new(scheme: &str, data: PathBuf, flags: Vec<String>, dir: Option<tempfile::TempDir>) -> Self {
        Self {
            endpoint: format!("{scheme}://127.0.0.1:{}", free_port()),
            peer: format!("http://127.0.0.1:{}", free_port()),
            name: "test".into(),
            cluster: None,
            data,
            stdin: None,
            child: None,
            flags,
            _dir: dir,
        }
    }

    /// Starts a private etcd that serves HTTPS and requires a client certificate of its CA.
    pub fn start_tls() -> (Self, EtcdTls) {
        let dir = tempfile::tempdir().expect("temp dir");
        let (files, flags) = tls_files(dir.path());
        let mut etcd = Self::new("https", dir.path().join("data"), flags, Some(dir));
        etcd.run_on_free_ports();
        (etcd, files)
    }

    /// The etcd shared by every test of this binary that does not need its own.
    pub fn shared() -> &'static Etcd {
        static SHARED: OnceLock<Etcd> = OnceLock::new();
        SHARED.get_or_init(|| {
            let data = std::env::temp_dir().join(format!("farm-test-etcd-{}", std::process::id()));
            let mut etcd = Self::new("http", data, Vec::new(), None);
            etcd.run_on_free_ports();
            etcd
        })
    }

    /// Starts etcd on its ports and waits until it serves; panics with its log if it cannot.
    fn run(&mut self) {
        self.spawn();
        if let Err(failure) = self.wait_until_serving() {
            panic!("{failure}");
        }
    }

    /// Starts a new etcd, choosing other ports when another process took one of its own
    /// between [`free_port`] and etcd's bind (etcd then exits at once).
    fn run_on_free_ports(&mut self) {
        for _ in 0..3 {
            self.spawn();
            match self.wait_until_serving() {
                Ok(()) => return,
                Err(Unserved::Exited(log)) if log.contains("address already in use") => {
                    self.stop();
                    let scheme = self.endpoint.split("://").next().unwrap_or("http").to_string();
                    self.endpoint = format!("{scheme}://127.0.0.1:{}", free_port());
                    self.peer = format!("http://127.0.0.1:{}", free_port());
                }
                Err(failure) => panic!("{failure}"),
            }
        }
        panic!("etcd found no free ports in three tries");
    }

    /// Starts the etcd process, without waiting for it.
    fn spawn(&mut self) {
        // Data the wrapper removes: the shared etcd's (no directory of its own holds it).
        let remove = if self._dir.is_some() || self.cluster.is_some() { "0" } else { "1" };
        let cluster = self.cluster.clone().unwrap_or_else(|| format!("{}={}", self.name, self.peer));
        let script = r#"etcd="$1"; data="$2"; client="$3"; peer="$4"; remove="$5"; name="$6"; cluster="$7"; shift 7
"$etcd" "$@" --name "$name" --data-dir "$data" --listen-client-urls "$client" --advertise-client-urls "$client" \
  --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" --initial-cluster "$cluster" \
  --unsafe-no-fsync --log-level error >>"$data.log" 2>&1 &
pid=$!
echo "$pid" >"$data.pid"
cat >/dev/null
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
[ "$remove" = 1 ] && rm -rf "$data" "$data.log" "$data.pid"
exit 0"#;
        // The last run's process id is stale: the wrapper writes the new one.
        let _ = std::fs::remove_file(self.pid_file());
        let mut child = Command::new("sh")
            .args(["-c", script, "etcd-wrapper", &etcd_path()])
            .arg(&self.data)
            .args([&self.endpoint, &self.peer, remove, &self.name, &cluster])
            .args(&self.flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start etcd (install it with scripts/control-plane.sh binaries, or set ETCD)");
        self.stdin = child.stdin.take();
        self.child = Some(child);
    }

    /// Waits until etcd serves clients: over HTTP, until its `/health` says it has a leader (a
    /// listening port alone is no proof: it may be another process's, or etcd's before it
    /// serves); over HTTPS (which wants a client certificate), until its port takes connections.
    fn wait_until_serving(&self) -> Result<(), Unserved> {
        let address = self.endpoint.split("://").nth(1).expect("an endpoint URL").to_string();
        let deadline = Instant::now() + super::EVENT_DEADLINE;
        loop {
            if self.exited() {
                return Err(Unserved::Exited(self.log()));
            }
            let serving = if self.endpoint.starts_with("https://") {
                std::net::TcpStream::connect(&address).is_ok()
            } else {
                http_get(&address, "/health").is_some_and(|body| body.contains(r#""health":"true""#))
            };
            if serving {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Unserved::Late(self.log()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The file the wrapper writes etcd's process id into.
    fn pid_file(&self) -> PathBuf {
        PathBuf::from(format!("{}.pid", self.data.display()))
    }

    /// Whether the etcd process has ended (a zombie until its wrapper reaps it).
    fn exited(&self) -> bool {
        let Ok(pid) = std::fs::read_to_string(self.pid_file()) else { return false };
        match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
            Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
            Err(_) => true,
        }
    }

    /// The end of etcd's log.
    fn log(&self) -> String {
        let log = std::fs::read_to_string(format!("{}.log", self.data.display())).unwrap_or_default();
        let start = log.len().saturating_sub(4000);
        log.get(start..).unwrap_or(&log).to_string()
    }

    /// Stops etcd (SIGTERM), keeping its data.
    pub fn stop(&mut self) {
        drop(self.stdin.take());
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
    }

    /// Kills etcd with SIGKILL (no chance to step down or flush), keeping its data.
    pub fn kill_hard(&mut self) {
        self.signal("-9");
        self.stop();
    }

    /// Freezes etcd (SIGSTOP; thawed with `false`, SIGCONT): it holds its connections and
    /// answers nothing, so a request waiting on it waits until a timeout ends it.
    pub fn freeze(&self, frozen: bool) {
        self.signal(if frozen { "-STOP" } else { "-CONT" });
    }

    /// Sends `signal` (kill's argument) to etcd's process, named by its pid file.
    fn signal(&self, signal: &str) {
        let pid = std::fs::read_to_string(self.pid_file()).expect("etcd's pid file");
        let status = Command::new("kill").args([signal, pid.trim()]).status().expect("kill");
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// Starts etcd (again) on the same ports and data.
    pub fn restart(&mut self) {
        self.stop();
        self.run();
    }

    /// Compacts etcd's history up to its current revision: every older revision gets 410.
    pub async fn compact_all(&self) {
        use farm_apiserver::store::etcd::{client::EtcdClient, connection};
        let config = connection::EtcdConfig {
            endpoints: vec![self.endpoint.clone()],
            prefix: String::new(),
            ca_file: None,
            client_cert: None,
            request_timeout: Duration::from_secs(5),
        };
        let client: EtcdClient = connection::connect(&config).await.expect("an etcd client");
        let revision = client.get("/").await.expect("read").header.expect("header").revision;
        client.compact(revision).await.expect("compact");
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Members of one etcd cluster on loopback, each started, stopped or killed on its own.
pub struct EtcdCluster {
    /// The members.
    pub members: Vec<Etcd>,
    _dir: tempfile::TempDir,
}

impl EtcdCluster {
    /// Starts a cluster of `size` members.
    pub fn start(size: usize) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut members: Vec<Etcd> = (0..size)
            .map(|i| {
                let mut member = Etcd::new("http", dir.path().join(format!("m{i}")), Vec::new(), None);
                member.name = format!("m{i}");
                member
            })
            .collect();
        let cluster = members.iter().map(|m| format!("{}={}", m.name, m.peer)).collect::<Vec<_>>().join(",");
        // A member serves clients only once the cluster has a quorum: start them all, then wait.
        for member in &mut members {
            member.cluster = Some(cluster.clone());
            member.spawn();
        }
        for member in &members {
            if let Err(failure) = member.wait_until_serving() {
                panic!("member {}: {failure}", member.name);
            }
        }
        Self { members, _dir: dir }
    }

    /// Compacts the cluster's history up to its current revision, then waits until member
    /// `until_applied` has applied everything the leader has (the compaction included).
    pub async fn compact(&self, until_applied: usize) {
        use farm_apiserver::store::etcd::grpc::etcdserverpb::{StatusRequest, maintenance_client::MaintenanceClient};
        let leader = self.leader().await;
        let status = |i: usize| {
            let endpoint = self.members[i].endpoint.clone();
            async move {
                let channel = tonic::transport::Endpoint::from_shared(endpoint).unwrap().connect().await.unwrap();
                MaintenanceClient::new(channel).status(StatusRequest {}).await.unwrap().into_inner()
            }
        };
        self.members[leader].compact_all().await;
        let target = status(leader).await.raft_applied_index;
        let deadline = Instant::now() + super::EVENT_DEADLINE;
        while status(until_applied).await.raft_applied_index < target {
            assert!(Instant::now() < deadline, "member {until_applied} never caught up with the leader");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Every member's client URL, comma-separated (for `--etcd-endpoints`).
    pub fn endpoints(&self) -> String {
        self.members.iter().map(|m| m.endpoint.as_str()).collect::<Vec<_>>().join(",")
    }

    /// Whether every member runs, answers and names the same leader.
    pub async fn whole(&self) -> bool {
        use farm_apiserver::store::etcd::grpc::etcdserverpb::{StatusRequest, maintenance_client::MaintenanceClient};
        let mut leaders = Vec::new();
        for member in &self.members {
            let Ok(endpoint) = tonic::transport::Endpoint::from_shared(member.endpoint.clone()) else { return false };
            let Ok(channel) = endpoint.connect().await else { return false };
            let Ok(status) = MaintenanceClient::new(channel).status(StatusRequest {}).await else { return false };
            leaders.push(status.into_inner().leader);
        }
        leaders.iter().all(|l| *l != 0 && *l == leaders[0])
    }

    /// The index of the member that is leader, once the running members agree on one.
    pub async fn leader(&self) -> usize {
        use farm_apiserver::store::etcd::grpc::etcdserverpb::{StatusRequest, maintenance_client::MaintenanceClient};
        let deadline = Instant::now() + super::EVENT_DEADLINE;
        loop {
            for (i, member) in self.members.iter().enumerate().filter(|(_, m)| m.child.is_some()) {
                let Ok(endpoint) = tonic::transport::Endpoint::from_shared(member.endpoint.clone()) else { continue };
                let Ok(channel) = endpoint.connect().await else { continue };
                let mut client = MaintenanceClient::new(channel);
                let Ok(status) = client.status(StatusRequest {}).await.map(|r| r.into_inner()) else { continue };
                if status.header.is_some_and(|h| h.member_id == status.leader) {
                    return i;
                }
            }
            assert!(Instant::now() < deadline, "no etcd leader within 20 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// A key prefix no other server of this test binary uses.
pub fn unique_prefix() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!("/farm-test/{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst))
}

/// The `serve` flags of a server storing in `etcd` under `prefix`, then `extra`.
pub fn storage_flags(etcd: &Etcd, prefix: &str, extra: &[&str]) -> Vec<String> {
    storage_flags_at(&etcd.endpoint, prefix, extra)
}

/// The `serve` flags of a server storing in the etcd at `endpoints` (comma-separated) under
/// `prefix`, then `extra`.
pub fn storage_flags_at(endpoints: &str, prefix: &str, extra: &[&str]) -> Vec<String> {
    let mut flags = vec!["--storage", "etcd", "--etcd-endpoints", endpoints, "--etcd-prefix", prefix];
    flags.extend(["--etcd-request-timeout-seconds", "2"]);
    // Compaction is global to an etcd: only tests that ask for it compact.
    if !extra.contains(&"--etcd-compaction-interval-seconds") {
        flags.extend(["--etcd-compaction-interval-seconds", "0"]);
    }
    flags.extend(extra);
    flags.iter().map(|f| f.to_string()).collect()
}
