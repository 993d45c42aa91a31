//! What compressed answers cost and save: on one server, LISTs of 1,000 and 10,000 llamas asked
//! for plain and with `Accept-Encoding: gzip` ([`ab::row_of_loads`], alternating runs), and the
//! bytes each answer takes. Issue 36 asks for the CPU per compressed LIST and the bytes saved.

use super::ab::{self, Load, ROUNDS};
use super::{LLAMAS, fill, llama, start};
use std::path::Path;
use std::time::Duration;

const SMALL: &str = "/small/llamas";
const LARGE: &str = "/large/llamas";

fn list(t: &super::Target, c: &reqwest::Client, path: &str, gzip: bool) -> reqwest::RequestBuilder {
    let request = c.get(t.url(&format!("{LLAMAS}{path}")));
    if gzip { request.header("accept-encoding", "gzip") } else { request }
}

const LOADS: [(&str, Load, Load); 2] = [
    (
        "LIST 1,000 llamas (8 conns)",
        Load { name: "plain", concurrency: 8, request: |t, c, _| list(t, c, SMALL, false) },
        Load { name: "gzip", concurrency: 8, request: |t, c, _| list(t, c, SMALL, true) },
    ),
    (
        "LIST 10,000 llamas (4 conns)",
        Load { name: "plain", concurrency: 4, request: |t, c, _| list(t, c, LARGE, false) },
        Load { name: "gzip", concurrency: 4, request: |t, c, _| list(t, c, LARGE, true) },
    ),
];

/// Runs the comparison and prints its table, then each answer's size.
pub async fn compare(binary: &Path, phase: Duration) {
    let (farm, _) = start(binary, &[]).await;
    fill(&farm.target, &format!("{LLAMAS}{SMALL}"), 1_000, llama, "l").await;
    fill(&farm.target, &format!("{LLAMAS}{LARGE}"), 10_000, llama, "l").await;
    println!(
        "compression: LISTs plain vs gzipped (level 1, as the kube-apiserver), one server, {ROUNDS} rounds of alternating runs, {} s each",
        phase.as_secs()
    );
    ab::header("plain", "gzip");
    for (name, plain, gzip) in &LOADS {
        ab::row_of_loads(&farm, name, plain, gzip, phase).await;
    }
    let client = farm.target.client(false);
    for path in [SMALL, LARGE] {
        let mut sizes = Vec::new();
        for gzip in [false, true] {
            let answer = list(&farm.target, &client, path, gzip).send().await.expect("list");
            let encoding = answer.headers().get("content-encoding").map(|v| v.to_str().unwrap_or("?").to_string());
            sizes.push((answer.bytes().await.expect("list body").len(), encoding));
        }
        println!(
            "{path}: {} bytes plain, {} bytes with Accept-Encoding gzip (Content-Encoding {:?}), {:.1}x smaller",
            sizes[0].0,
            sizes[1].0,
            sizes[1].1.as_deref().unwrap_or("none"),
            sizes[0].0 as f64 / sizes[1].0.max(1) as f64
        );
    }
}
