//! The garden server is section 1 of docs/writing-your-own-apiserver.md, so the guide cannot rot:
//! its code blocks named by a path are this crate's files (but for the library's path), and its
//! console session, replayed with kubectl against the built server, prints what it shows.

use std::io::{BufRead, BufReader};
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

#[test]
fn the_guide_s_files_are_this_crate_s() {
    let files: Vec<(String, String)> = blocks(&guide())
        .into_iter()
        .filter_map(|(info, body)| Some((info.split_once(' ')?.1.to_string(), body)))
        .collect();
    assert_eq!(files.iter().map(|(path, _)| path.as_str()).collect::<Vec<_>>(), ["Cargo.toml", "src/main.rs"]);
    for (path, body) in files {
        let ours = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(&path)).expect("the file");
        // A project beside a clone of the repository names the library there; this crate is in it.
        let ours =
            ours.replace("path = \"../../crates/apiserver-kit\"", "path = \"../farm-apiserver/crates/apiserver-kit\"");
        assert_eq!(ours, body, "{path} differs from its block in the guide");
    }
}

/// The server, standalone on a free port, in a directory of its own (the crate's manifest names
/// no dev-dependency, as the guide's does not), both removed when dropped.
struct Server {
    child: Child,
    dir: PathBuf,
}

impl Server {
    /// Starts the built binary and waits for its "serving" line.
    fn start() -> Self {
        let dir = std::env::temp_dir().join(format!("garden-guide-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let child = Command::new(env!("CARGO_BIN_EXE_garden-apiserver"))
            .args(["--standalone", "--write-kubeconfig", "garden.kubeconfig", "--listen", "127.0.0.1:0"])
            .current_dir(&dir)
            .stderr(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let mut server = Self { child, dir };
        let mut lines = BufReader::new(server.child.stdout.take().expect("its output")).lines();
        assert!(lines.any(|line| line.is_ok_and(|l| l.contains("serving"))), "the server stopped before serving");
        std::thread::spawn(move || lines.for_each(drop));
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The commands of a console block (a `$ ` line and the here-document after it) and the output
/// each shows.
fn session(block: &str) -> Vec<(String, String)> {
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

#[test]
fn the_guide_s_session_prints_what_it_shows() {
    let server = Server::start();
    let (_, block) = blocks(&guide()).into_iter().find(|(info, _)| info == "console").expect("a console block");
    let steps = session(&block);
    assert!(
        steps[0].0.starts_with("cargo run -p garden-apiserver -- --standalone"),
        "the session starts the server: {}",
        steps[0].0
    );
    for (command, shown) in steps.into_iter().skip(1).filter(|(c, _)| !c.starts_with("export ")) {
        let out = Command::new("bash")
            .args(["-c", &format!("exec 2>&1\n{command}")])
            .current_dir(&server.dir)
            .env("KUBECONFIG", server.dir.join("garden.kubeconfig"))
            .output()
            .expect("bash runs");
        let printed = String::from_utf8_lossy(&out.stdout);
        assert_eq!(normalized(&printed), normalized(&shown), "{command}");
    }
}
