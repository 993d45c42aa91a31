//! The garden server is sections 1 to 3 of docs/writing-your-own-apiserver.md, so the guide
//! cannot rot: its code blocks named by a path are this crate's files (but for the library's
//! path; `src/main.rs` is section 1's with section 2's diff applied), and each of its `console
//! garden` sessions, replayed in a directory of its own against the built server (and an etcd
//! where the session starts one), prints what it shows.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The guide's text.
fn guide() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/writing-your-own-apiserver.md");
    std::fs::read_to_string(path).expect("the guide")
}

/// The fenced code blocks of `markdown`, each with its info string (`rust src/main.rs`).
fn blocks(markdown: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in markdown.lines() {
        match (line.strip_prefix("```"), &mut open) {
            (Some(_), Some(_)) => blocks.extend(open.take()),
            (Some(info), None) => open = Some((info.trim().to_string(), String::new())),
            (None, Some((_, body))) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    blocks
}

/// `text` with the unified diff `diff` applied: each hunk's old lines (context and `-`) are
/// found in order and replaced by its new ones (context and `+`).
fn patched(text: &str, diff: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut from = 0;
    for hunk in diff.split("\n@@").map(|h| h.split_once('\n').map_or("", |(_, body)| body)) {
        let (mut old, mut new) = (Vec::new(), Vec::new());
        for line in hunk.lines() {
            let (mark, rest) = line.split_at(line.len().min(1));
            match mark {
                "-" => old.push(rest.to_string()),
                "+" => new.push(rest.to_string()),
                _ => {
                    old.push(rest.to_string());
                    new.push(rest.to_string());
                }
            }
        }
        let at = (from..=lines.len().saturating_sub(old.len()))
            .find(|&i| lines[i..i + old.len()] == old[..])
            .unwrap_or_else(|| panic!("a hunk of the diff does not apply:\n{hunk}"));
        lines.splice(at..at + old.len(), new.iter().cloned());
        from = at + new.len();
    }
    lines.join("\n") + "\n"
}

#[test]
fn the_guide_s_files_are_this_crate_s() {
    let blocks = blocks(&guide());
    let file = |info: &str| {
        let found = blocks.iter().filter(|(i, _)| i == info).map(|(_, body)| body.clone());
        let found: Vec<String> = found.collect();
        assert_eq!(found.len(), 1, "one block {info:?}");
        found.into_iter().next().unwrap_or_default()
    };
    let ours = |path: &str| std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect(path);
    // A project beside a clone of the repository names the library there; this crate is in it.
    let manifest = ours("Cargo.toml")
        .replace("path = \"../../crates/apiserver-kit\"", "path = \"../farm-apiserver/crates/apiserver-kit\"");
    assert_eq!(manifest, file("toml Cargo.toml"), "Cargo.toml differs from its block in the guide");
    let day_two = patched(&file("rust src/main.rs"), &file("diff src/main.rs"));
    assert_eq!(ours("src/main.rs"), day_two, "src/main.rs is not section 1's with section 2's diff");
    assert_eq!(ours("src/sprinkler.rs"), file("rust src/sprinkler.rs"), "src/sprinkler.rs differs from the guide's");
    let named: Vec<&str> = blocks.iter().filter_map(|(info, _)| info.split_once(' ').map(|(_, path)| path)).collect();
    assert_eq!(named, ["Cargo.toml", "src/main.rs", "garden", "src/sprinkler.rs", "src/main.rs", "garden", "garden"]);
}

#[test]
fn the_patch_of_a_file_replaces_each_hunk_s_lines() {
    let diff = "@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -4 +4,2 @@\n d\n+e\n";
    assert_eq!(patched("a\nb\nc\nd\n", diff), "a\nB\nc\nd\ne\n");
}

/// A process of a session (a server, etcd), stopped when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A session's directory, its processes and the environment its commands get.
struct Session {
    dir: PathBuf,
    processes: Vec<Process>,
    env: BTreeMap<String, String>,
    etcd: Option<String>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.processes.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A free port on loopback.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

/// The etcd binary: `ETCD`, else the one `scripts/control-plane.sh etcd` prints.
fn etcd_binary() -> String {
    std::env::var("ETCD").unwrap_or_else(|_| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/control-plane.sh");
        let out = Command::new("bash").arg(script).arg("etcd").output().expect("scripts/control-plane.sh etcd");
        assert!(out.status.success(), "scripts/control-plane.sh etcd: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    })
}

impl Session {
    fn new(n: usize) -> Self {
        let dir = std::env::temp_dir().join(format!("garden-guide-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        Self { dir, processes: Vec::new(), env: BTreeMap::new(), etcd: None }
    }

    /// Starts the built server with the session's flags, on a free port, on the session's
    /// etcd; returns once it logged that it serves.
    fn start_server(&mut self, flags: &str) {
        let mut args: Vec<String> = Vec::new();
        let mut words = flags.split_whitespace();
        while let Some(word) = words.next() {
            match word {
                "--listen" => drop(words.next()),
                "&" => {}
                other => args.push(other.to_string()),
            }
        }
        args.extend(["--listen".into(), "127.0.0.1:0".into()]);
        if let Some(endpoint) = self.etcd.as_ref().filter(|_| args.iter().any(|a| a == "etcd")) {
            args.extend(["--etcd-endpoints".into(), endpoint.clone()]);
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_garden-apiserver"))
            .args(&args)
            .current_dir(&self.dir)
            .stderr(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let mut lines = BufReader::new(child.stdout.take().expect("its output")).lines();
        self.processes.push(Process(child));
        assert!(lines.any(|line| line.is_ok_and(|l| l.contains("serving"))), "the server stopped before serving");
        std::thread::spawn(move || lines.for_each(drop));
    }

    /// Starts etcd on free ports with its data in the session's directory; returns once it
    /// logged that it serves clients.
    fn start_etcd(&mut self) {
        let (client, peer) = (format!("http://127.0.0.1:{}", free_port()), format!("http://127.0.0.1:{}", free_port()));
        let mut child = Command::new(etcd_binary())
            .args(["--data-dir", "garden.etcd", "--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client, "--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer, "--initial-cluster", &format!("default={peer}")])
            .current_dir(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("etcd starts");
        let mut lines = BufReader::new(child.stderr.take().expect("its log")).lines();
        self.processes.push(Process(child));
        let serving = lines.any(|line| line.is_ok_and(|l| l.contains("serving client traffic")));
        assert!(serving, "etcd stopped before serving clients");
        std::thread::spawn(move || lines.for_each(drop));
        self.etcd = Some(client);
    }

    /// Runs `command` with bash in the session's directory; what it printed, errors included.
    fn run(&self, command: &str) -> String {
        let out = Command::new("bash")
            .args(["-c", &format!("exec 2>&1\n{command}")])
            .current_dir(&self.dir)
            .env_remove("KUBECONFIG")
            .envs(&self.env)
            .output()
            .expect("bash runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// The commands of a console block (a `$ ` line and the here-document after it) and the output
/// each shows.
fn steps(block: &str) -> Vec<(String, String)> {
    let mut steps: Vec<(String, String)> = Vec::new();
    let mut heredoc: Option<&str> = None;
    for line in block.lines() {
        if let Some(end) = heredoc {
            let (command, _) = steps.last_mut().expect("a command");
            command.push('\n');
            command.push_str(line);
            heredoc = (line != end).then_some(end);
        } else if let Some(command) = line.strip_prefix("$ ") {
            heredoc = command.split_once("<<'").and_then(|(_, end)| end.strip_suffix('\''));
            steps.push((command.to_string(), String::new()));
        } else if let Some((_, output)) = steps.last_mut() {
            output.push_str(line.trim_end());
            output.push('\n');
        }
    }
    steps
}

/// `text` with each line's trailing spaces and a last column that is an age (`0s`, `12s`) as `AGE`.
fn normalized(text: &str) -> String {
    let line = |l: &str| {
        let l = l.trim_end();
        match l.rsplit_once(' ') {
            Some((head, age)) if age.ends_with('s') && age[..age.len() - 1].parse::<u32>().is_ok() => {
                format!("{} AGE", head.trim_end())
            }
            _ => l.to_string(),
        }
    };
    text.lines().map(line).collect::<Vec<_>>().join("\n")
}

/// Replays a session: its servers and etcd started here, its `export`s kept for the commands
/// after them, every other command's output compared with what the guide shows.
fn replay(n: usize, block: &str) {
    let mut session = Session::new(n);
    for (command, shown) in steps(block) {
        if let Some(flags) = command.strip_prefix("cargo run -p garden-apiserver -- ") {
            session.start_server(flags);
        } else if command.starts_with("etcd ") {
            session.start_etcd();
        } else if let Some((name, value)) = command.strip_prefix("export ").and_then(|e| e.split_once('=')) {
            let value = value.replace("$PWD", &session.dir.to_string_lossy());
            session.env.insert(name.to_string(), value);
        } else {
            assert_eq!(normalized(&session.run(&command)), normalized(&shown), "session {n}: {command}");
        }
    }
}

#[test]
fn the_guide_s_sessions_print_what_they_show() {
    let sessions: Vec<String> =
        blocks(&guide()).into_iter().filter(|(info, _)| info == "console garden").map(|(_, body)| body).collect();
    assert_eq!(sessions.len(), 3, "the sessions of sections 1, 2 and 3");
    for (n, block) in sessions.iter().enumerate() {
        replay(n + 1, block);
    }
}
