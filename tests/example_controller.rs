//! The example controller (`examples/llama_controller.rs`, kube-runtime) against the standalone
//! server: it writes each llama's status through server-side apply on `/status`, and
//! `kubectl wait --for=condition=Ready` returns; a spec change moves `observedGeneration`.

mod common;

#[path = "../examples/llama_controller.rs"]
mod controller;

use common::{Server, llama, llamas};

// kubectl blocks its thread: the controller runs on the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_controller_makes_kubectl_wait_for_ready_return() {
    let s = Server::start().await;
    let created = s.client.post(s.url(&llamas("default"))).json(&llama("dolly", 100.0, 170.0)).send().await.unwrap();
    assert_eq!(created.status(), 201);
    let running = tokio::spawn(controller::run(s.kube_client().await));

    let (ok, out, err) = s.kubectl(&["wait", "--for=condition=Ready", "llama/dolly", "--timeout=30s"]);
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "llama.farm.example.com/dolly condition met");
    let (ok, _, err) = s.kubectl(&["patch", "llama", "dolly", "--type=merge", "-p", r#"{"spec":{"weight":110}}"#]);
    assert!(ok, "{err}");
    let (ok, out, err) =
        s.kubectl(&["wait", "--for=jsonpath={.status.observedGeneration}=2", "llama/dolly", "--timeout=30s"]);
    assert!(ok, "{out}{err}");
    let (_, message, _) = s.kubectl(&["get", "llama", "dolly", "-o", "jsonpath={.status.conditions[0].message}"]);
    assert_eq!(message, "110 kg, 170 cm");
    let (_, managers, _) = s.kubectl(&[
        "get",
        "llama",
        "dolly",
        "--show-managed-fields",
        "-o",
        "jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation}/{.subresource} {end}",
    ]);
    assert!(managers.contains(&format!("{}/Apply/status", controller::MANAGER)), "{managers}");
    running.abort();
}
