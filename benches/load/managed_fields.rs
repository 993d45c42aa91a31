//! What managed fields and server-side apply cost: two servers side by side in one run
//! ([`ab`]), one as it ships and one with `--managed-fields false` (no managedFields recorded,
//! nothing to send), under the same loads. Apply create and apply update run on the tracked
//! server only, beside its create and update.

use super::ab::{self, Load, ROUNDS};
use super::{LLAMAS, Target, fill, llama, start};
use std::path::Path;
use std::time::Duration;

fn apply_body(name: &str, weight: u64) -> String {
    format!(
        r#"{{"apiVersion":"farm.example.com/v1alpha","kind":"Llama","metadata":{{"name":"{name}","labels":{{"herd":"bench"}}}},"spec":{{"weight":{weight},"height":170,"color":"white"}}}}"#
    )
}

fn apply(t: &Target, c: &reqwest::Client, name: &str, weight: u64) -> reqwest::RequestBuilder {
    c.patch(t.url(&format!("{LLAMAS}/applied/llamas/{name}?fieldManager=bench")))
        .header("content-type", "application/apply-patch+yaml")
        .body(apply_body(name, weight))
}

/// Which of the 1,000 llamas request `i` (worker `i / 1,000,000`, its request `i % 1,000,000`)
/// updates: the workers start 31 apart and move in step, so no two of them write one llama at
/// once; a conflict, and the retry it causes, would measure contention rather than cost.
fn updated(i: u64) -> u64 {
    (i % 1_000_000 + 31 * (i / 1_000_000 % 1_000)) % 1_000
}

const LOADS: [Load; 4] = [
    ab::GET_ONE_LLAMA,
    ab::LIST_1000_LLAMAS,
    ab::CREATE_LLAMA,
    Load {
        name: "update, merge patch (32 conns)",
        concurrency: 32,
        request: |t, c, i| {
            c.patch(t.url(&format!("{LLAMAS}/small/llamas/l{:06}", updated(i))))
                .header("content-type", "application/merge-patch+json")
                .body(format!(r#"{{"spec":{{"weight":{}}}}}"#, 1 + i % 997))
        },
    },
];

const APPLIES: [Load; 2] = [
    Load { name: "apply, creating (32 conns)", concurrency: 32, request: |t, c, i| apply(t, c, &format!("a{i}"), 120) },
    Load {
        name: "apply, updating (32 conns)",
        concurrency: 32,
        request: |t, c, i| apply(t, c, &format!("p{:06}", updated(i)), 1 + i % 997),
    },
];

/// Fills both servers alike: 1,000 llamas to read and patch, and 1,000 applied ones to re-apply.
async fn prepare(target: &Target, applies: bool) {
    fill(target, &format!("{LLAMAS}/small/llamas"), 1_000, llama, "l").await;
    if applies {
        let client = target.client(false);
        for i in 0..1_000 {
            let r = apply(target, &client, &format!("p{i:06}"), 120).send().await.expect("apply");
            assert!(r.status().is_success(), "{}", r.text().await.unwrap_or_default());
        }
    }
}

/// Runs the comparison and prints its table.
pub async fn compare(binary: &Path, phase: Duration) {
    let (tracked, _) = start(binary, &[]).await;
    let (untracked, _) = start(binary, &["--managed-fields", "false"]).await;
    prepare(&tracked.target, true).await;
    prepare(&untracked.target, false).await;
    println!(
        "managed fields: as shipped vs --managed-fields false, {ROUNDS} rounds of alternating runs, {} s each",
        phase.as_secs()
    );
    ab::header("tracked", "untracked");
    for l in &LOADS {
        ab::row(&tracked, &untracked, l, phase).await;
    }
    for l in &APPLIES {
        ab::row_a_only(&tracked, l, phase).await;
    }
    println!();
}
