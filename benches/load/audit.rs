//! What the audit log costs: two servers side by side in one run ([`ab`]), one with auditing at
//! `Metadata` for every request (events written to a file) and one without, under GET and create.

use super::ab::{self, Load, ROUNDS};
use super::{LLAMAS, fill, llama, start};
use std::path::Path;
use std::time::Duration;

const LOADS: [Load; 2] = [ab::GET_ONE_LLAMA, ab::CREATE_LLAMA];

/// Runs the comparison and prints its table.
pub async fn compare(binary: &Path, phase: Duration) {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n").expect("policy");
    let (policy, log) = (policy.display().to_string(), dir.path().join("audit.log").display().to_string());
    let (audited, _) = start(binary, &["--audit-policy-file", &policy, "--audit-log-path", &log]).await;
    let (plain, _) = start(binary, &[]).await;
    for farm in [&audited, &plain] {
        fill(&farm.target, &format!("{LLAMAS}/small/llamas"), 1_000, llama, "l").await;
    }
    println!(
        "audit log: every request at Metadata to a file vs no audit, {ROUNDS} rounds of alternating runs, {} s each",
        phase.as_secs()
    );
    ab::header("audited", "plain");
    for l in &LOADS {
        ab::row(&audited, &plain, l, phase).await;
    }
    let events = std::fs::read_to_string(&log).map(|t| t.lines().count()).unwrap_or_default();
    println!("({events} audit events written)");
    println!();
}
