//! The one-node cluster of `scripts/node.sh` as the node tests use it: started (or found
//! running), its images loaded, kubectl and watches inside its network namespace, and Rust
//! clients there too ([`Node::in_netns`]).

use super::{EVENT_DEADLINE, LineStream};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The repository.
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The node that runs the control plane, with four local volumes (`scripts/node.sh`).
pub const FIRST_NODE: &str = "farm-node";
/// The worker, with one local volume: exactly one etcd member lands on it.
pub const SECOND_NODE: &str = "farm-node-2";

/// The one-node cluster of `scripts/node.sh`; removed when dropped if this test started it.
pub struct Node {
    /// `NODE_DIR`: its kubeconfig, env file, PKI and logs.
    pub dir: PathBuf,
    started_here: bool,
}

impl Node {
    pub fn up() -> Self {
        // The server's image is built with the `image-test` profile unless the caller chose one.
        let profile = std::env::var("FARM_IMAGE_PROFILE").unwrap_or_else(|_| "image-test".into());
        let script = |verb: &str| {
            let mut command = Command::new("bash");
            command.arg(format!("{ROOT}/scripts/node.sh")).arg(verb).env("FARM_IMAGE_PROFILE", &profile).status()
        };
        let running = script("status").is_ok_and(|s| s.success());
        if !running {
            assert!(script("up").expect("run scripts/node.sh up").success(), "the node did not start");
        }
        let dir = std::env::var("NODE_DIR").unwrap_or_else(|_| format!("{ROOT}/target/node"));
        let node = Self { dir: PathBuf::from(dir), started_here: !running };
        assert!(script("image").expect("run scripts/node.sh image").success(), "the images were not built");
        node
    }

    /// `scripts/node.sh ARGS…` (aggregator-routing, ctr, power-off, recycle…), which must succeed.
    pub fn script(&self, args: &[&str]) {
        let out = Command::new("bash").arg(format!("{ROOT}/scripts/node.sh")).args(args).output();
        let out = out.expect("run scripts/node.sh");
        assert!(out.status.success(), "scripts/node.sh {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// `CMD…` inside the node's network namespace.
    pub fn exec(&self, args: &[&str], stdin: Option<&str>) -> Output {
        exec_in_node(args, stdin)
    }

    /// A value of the node's `env` file (`KUBECONFIG`, `WORKLOAD_IMAGE`, `NODE_IP`, …).
    pub fn env(&self, key: &str) -> String {
        let env = std::fs::read_to_string(self.dir.join("env")).expect("the node's env file");
        let prefix = format!("{key}=");
        env.lines().find_map(|l| l.strip_prefix(&prefix)).unwrap_or_else(|| panic!("no {key} in {env}")).to_string()
    }

    /// kubectl with the node's admin kubeconfig: (succeeded, stdout, stderr).
    pub fn kubectl(&self, args: &[&str]) -> (bool, String, String) {
        self.kubectl_with_stdin(args, None)
    }

    pub fn kubectl_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        kubectl_in_node(&self.dir.join("kubeconfig"), args, stdin)
    }

    /// kubectl that must succeed; its standard output.
    pub fn must(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.kubectl(args);
        assert!(ok, "kubectl {args:?} failed: {err}{out}");
        out
    }

    pub fn apply(&self, yaml: &str) {
        let (ok, out, err) = self.kubectl_with_stdin(&["apply", "-f", "-"], Some(yaml));
        assert!(ok, "kubectl apply failed: {err}{out}");
    }

    /// An object as JSON (`kubectl get -o json`).
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["get", "-o", "json"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.must(&all)).expect("kubectl's JSON")
    }

    /// A watch of the kube-apiserver's `path` (through the aggregator for our group), one JSON
    /// event per line, read with the admin's certificate as any client would.
    pub fn watch(&self, path: &str) -> LineStream {
        let pki = self.dir.join("pki");
        let file = |name: &str| pki.join(name).display().to_string();
        let mut command = Command::new("bash");
        command.arg(format!("{ROOT}/scripts/node.sh")).args(["exec", "curl", "-sfN", "--cacert"]);
        command.args([file("ca.crt"), "--cert".into(), file("admin.crt"), "--key".into(), file("admin.key")]);
        command.arg(format!("https://{}:6443{path}", self.env("NODE_IP")));
        LineStream::spawn(command)
    }
}

impl Node {
    /// Runs `work` on a thread of its own inside the node's network namespace, on a tokio
    /// runtime of that thread: every socket it opens (and its threads', which inherit the
    /// namespace) is there, where the node's addresses are.
    pub fn in_netns<F, Fut, T>(&self, work: F) -> std::thread::JoinHandle<T>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = T>,
        T: Send + 'static,
    {
        use std::os::fd::AsRawFd;
        let netns = std::fs::File::open(self.env("NODE_NETNS")).expect("the node's network namespace");
        std::thread::spawn(move || {
            // SAFETY: setns(2) on a descriptor this thread owns; it changes this thread only.
            let changed = unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(changed, 0, "setns: {}", std::io::Error::last_os_error());
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            runtime.block_on(work())
        })
    }

    /// A kube-rs client of the node's kube-apiserver with the admin's kubeconfig, without
    /// kube-rs's default retries of 429, 503 and 504 (so a test sees every failed request); use
    /// it inside [`Node::in_netns`].
    pub async fn kube_client(kubeconfig: PathBuf) -> kube::Client {
        let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).expect("the node's kubeconfig");
        let options = kube::config::KubeConfigOptions::default();
        let mut config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.expect("a client configuration");
        config.default_retry = false;
        kube::Client::try_from(config).expect("a kube client")
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if self.started_here {
            let _ = Command::new("bash").arg(format!("{ROOT}/scripts/node.sh")).arg("down").status();
        }
    }
}

/// `CMD…` inside the node's network namespace (`scripts/node.sh exec`), with `stdin`; for
/// threads that cannot borrow the [`Node`].
pub fn exec_in_node(args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut child = Command::new("bash")
        .arg(format!("{ROOT}/scripts/node.sh"))
        .arg("exec")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run scripts/node.sh exec");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.unwrap_or_default().as_bytes()).expect("write stdin");
    drop(input);
    child.wait_with_output().expect("wait for scripts/node.sh exec")
}

/// kubectl in the node's network namespace with `kubeconfig`: (succeeded, stdout, stderr).
pub fn kubectl_in_node(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut all = vec!["kubectl", "--kubeconfig", kubeconfig.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = exec_in_node(&all, stdin);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// Polls `check` until it gives a value; panics, naming `what`, after [`EVENT_DEADLINE`].
pub fn eventually<T>(what: &str, check: impl FnMut() -> Option<T>) -> T {
    eventually_within(what, EVENT_DEADLINE, check)
}

/// [`eventually`] with a deadline of its own.
pub fn eventually_within<T>(what: &str, within: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out after {within:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A child process killed when dropped (also when the test fails).
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    /// SIGTERM first, so that a script stops what it started (scripts/dev.sh its binary, and
    /// restores the install); SIGKILL after ten seconds.
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline && matches!(self.0.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
