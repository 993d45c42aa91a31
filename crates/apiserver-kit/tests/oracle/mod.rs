//! The Go oracles of the differential tests (tools/cel-oracle, tools/json-patch-oracle,
//! tools/rules-oracle): built once by the workspace's script, each answering one JSON request a
//! line with one JSON answer a line.

use serde_json::Value as Json;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// The path of the oracle `name` (`cel-oracle`, …), built when missing.
pub fn path(name: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/control-plane.sh");
    let out = Command::new("bash").arg(script).arg(name).output().expect("bash runs");
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("a path").trim().to_string()
}

/// The answers of the oracle `name` to `requests`, in order, each line read by `parse`.
pub fn answers(name: &str, requests: &[Json], parse: fn(&str) -> Json) -> Vec<Json> {
    let mut child =
        Command::new(path(name)).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("the oracle starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let lines: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let writer = std::thread::spawn(move || stdin.write_all(lines.as_bytes()));
    let answers: Vec<Json> = BufReader::new(child.stdout.take().expect("stdout"))
        .lines()
        .map(|line| parse(&line.expect("a line")))
        .collect();
    writer.join().expect("writer").expect("written");
    assert!(child.wait().expect("exit").success());
    assert_eq!(answers.len(), requests.len(), "one answer a request");
    answers
}

/// A line of JSON.
#[allow(dead_code)] // not every test binary reads plain lines
pub fn json(line: &str) -> Json {
    serde_json::from_str(line).expect("JSON")
}
