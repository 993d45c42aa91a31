//! What serving a second version costs: on one server, the same reads at the version llamas are
//! stored at and at the version they are converted to ([`ab::row_of_loads`], alternating runs).
//! Each answer at the converted version parses, converts and encodes the stored objects again;
//! issue 35 asks that a read at the other version keep at least 0.8x the stored version's rate.
//! Today the stored version is v1alpha and v1 is converted; the roles swap when storage moves
//! to v1, and the rows with them.

use super::ab::{self, Load, ROUNDS};
use super::{Target, fill, llama, start};
use std::path::Path;
use std::time::Duration;

const STORED: &str = "/apis/farm.example.com/v1alpha/namespaces/small/llamas";
const CONVERTED: &str = "/apis/farm.example.com/v1/namespaces/small/llamas";

fn get(t: &Target, c: &reqwest::Client, base: &str) -> reqwest::RequestBuilder {
    c.get(t.url(&format!("{base}/l000500")))
}

const LOADS: [(&str, Load, Load); 2] = [
    (
        "GET one llama (32 conns)",
        Load { name: "stored", concurrency: 32, request: |t, c, _| get(t, c, STORED) },
        Load { name: "converted", concurrency: 32, request: |t, c, _| get(t, c, CONVERTED) },
    ),
    (
        "LIST 1,000 llamas (8 conns)",
        Load { name: "stored", concurrency: 8, request: |t, c, _| c.get(t.url(STORED)) },
        Load { name: "converted", concurrency: 8, request: |t, c, _| c.get(t.url(CONVERTED)) },
    ),
];

/// Runs the comparison and prints its table.
pub async fn compare(binary: &Path, phase: Duration) {
    let (farm, _) = start(binary, &[]).await;
    fill(&farm.target, STORED, 1_000, llama, "l").await;
    println!(
        "versions: reads at the stored version (v1alpha) vs the converted one (v1), one server, {ROUNDS} rounds of alternating runs, {} s each",
        phase.as_secs()
    );
    ab::header("stored", "converted");
    for (name, stored, converted) in &LOADS {
        ab::row_of_loads(&farm, name, stored, converted, phase).await;
    }
    println!();
}
