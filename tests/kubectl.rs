//! kubectl against the standalone server, through the kubeconfig it writes: the walk-through a
//! user does on day one.

mod common;

use common::{Backend, Server, backends};
use rstest_reuse::apply;

const DOLLY: &str = "apiVersion: farm.example.com/v1alpha
kind: Llama
metadata:
  name: dolly
  labels:
    herd: a
spec:
  weight: 120
  height: 170.5
  color: white
";

fn ok(result: (bool, String, String)) -> String {
    let (success, stdout, stderr) = result;
    assert!(success, "kubectl failed\nstdout: {stdout}\nstderr: {stderr}");
    stdout
}

#[apply(backends)]
async fn api_resources_lists_llamas_with_the_short_name(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let out = ok(s.kubectl(&["api-resources", "--api-group=farm.example.com"]));
    let line = out.lines().find(|l| l.starts_with("llamas")).unwrap_or_else(|| panic!("{out}"));
    let columns: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(columns, ["llamas", "lm", "farm.example.com/v1", "true", "Llama"], "the preferred version");
}

#[apply(backends)]
async fn apply_creates_then_configures_and_get_shows_weight_and_height(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let out = ok(s.kubectl_with_stdin(&["apply", "-f", "-"], Some(DOLLY)));
    assert_eq!(out.trim(), "llama.farm.example.com/dolly created");
    let out = ok(s.kubectl_with_stdin(&["apply", "-f", "-"], Some(&DOLLY.replace("weight: 120", "weight: 125"))));
    assert_eq!(out.trim(), "llama.farm.example.com/dolly configured");
    let out = ok(s.kubectl_with_stdin(&["apply", "-f", "-"], Some(&DOLLY.replace("weight: 120", "weight: 125"))));
    assert_eq!(out.trim(), "llama.farm.example.com/dolly unchanged");

    let out = ok(s.kubectl(&["get", "llamas"]));
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["NAME", "WEIGHT", "HEIGHT", "READY", "AGE"]);
    assert_eq!(&lines[1][..3], ["dolly", "125", "170.5"]);
    let wide = ok(s.kubectl(&["get", "lm", "-A", "-o", "wide"]));
    assert!(
        wide.lines().next().unwrap().split_whitespace().eq([
            "NAMESPACE",
            "NAME",
            "WEIGHT",
            "HEIGHT",
            "READY",
            "AGE",
            "COLOR",
            "PATTERN"
        ]),
        "{wide}"
    );
}

#[apply(backends)]
async fn get_output_round_trips_through_replace(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    ok(s.kubectl_with_stdin(&["create", "-f", "-"], Some(DOLLY)));
    let yaml = ok(s.kubectl(&["get", "llama", "dolly", "-o", "yaml"]));
    assert!(
        yaml.contains("kind: Llama") && yaml.contains("weight: 120") && yaml.contains("resourceVersion:"),
        "{yaml}"
    );
    let out = ok(s.kubectl_with_stdin(&["replace", "-f", "-"], Some(&yaml.replace("color: white", "color: brown"))));
    assert_eq!(out.trim(), "llama.farm.example.com/dolly replaced");
    let json: serde_json::Value =
        serde_json::from_str(&ok(s.kubectl(&["get", "llama", "dolly", "-o", "json"]))).unwrap();
    assert_eq!(json["apiVersion"], "farm.example.com/v1", "kubectl reads the preferred version");
    assert_eq!(json["spec"]["coat"]["color"], "brown");
    assert_eq!(json["spec"]["weight"], 120);
    // Replacing the stale document again is a conflict, as on the kube-apiserver.
    let (success, _, stderr) = s.kubectl_with_stdin(&["replace", "-f", "-"], Some(&yaml));
    assert!(!success);
    assert!(stderr.contains("the object has been modified"), "{stderr}");
}

#[apply(backends)]
async fn explain_prints_the_field_description(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let out = ok(s.kubectl(&["explain", "llama.spec.weight"]));
    assert!(out.contains("FIELD: weight <number>"), "{out}");
    assert!(out.contains("Weight of the llama in kilograms"), "{out}");
    let out = ok(s.kubectl(&["explain", "llamas"]));
    assert!(out.contains("Llama is a llama that lives on the farm"), "{out}");
    assert!(out.contains("spec") && out.contains("-required-"), "{out}");
    let out = ok(s.kubectl(&["explain", "llama.metadata.labels"]));
    assert!(out.contains("labels <map[string]string>"), "{out}");
    // v1, the preferred version, has the coat; v1alpha, asked for by name, the colour.
    let out = ok(s.kubectl(&["explain", "llama.spec.coat"]));
    assert!(out.contains("VERSION:    v1\n") && out.contains("FIELD: coat <Object>"), "{out}");
    assert!(out.contains("enum: Solid, Spotted, Patched"), "{out}");
    let out = ok(s.kubectl(&["explain", "llama.spec.color", "--api-version=farm.example.com/v1alpha"]));
    assert!(out.contains("VERSION:    v1alpha\n") && out.contains("FIELD: color <string>"), "{out}");
}

#[apply(backends)]
async fn creating_an_invalid_llama_prints_the_field_paths(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    let bad = DOLLY.replace("weight: 120", "weight: -3").replace("  height: 170.5\n", "");
    let (success, _, stderr) = s.kubectl_with_stdin(&["create", "-f", "-"], Some(&bad));
    assert!(!success);
    assert!(stderr.contains("The Llama \"dolly\" is invalid"), "{stderr}");
    assert!(stderr.contains("spec.height: Required value"), "{stderr}");
    assert!(stderr.contains("spec.weight: Invalid value: -3"), "{stderr}");
    let unknown = DOLLY.replace("color: white", "horns: 2");
    let (success, _, stderr) = s.kubectl_with_stdin(&["create", "-f", "-"], Some(&unknown));
    assert!(!success);
    assert!(stderr.contains("unknown field \"spec.horns\""), "{stderr}");
}

#[apply(backends)]
async fn delete_removes_the_llama(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    ok(s.kubectl_with_stdin(&["create", "-f", "-"], Some(DOLLY)));
    let out = ok(s.kubectl(&["delete", "llama", "dolly"]));
    assert_eq!(out.trim(), "llama.farm.example.com \"dolly\" deleted");
    let (success, _, stderr) = s.kubectl(&["get", "llama", "dolly"]);
    assert!(!success);
    assert!(stderr.contains("llamas.farm.example.com \"dolly\" not found"), "{stderr}");
    assert!(ok(s.kubectl(&["get", "llamas"])).is_empty());
}

#[apply(backends)]
async fn patch_with_merge_and_json_types(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    ok(s.kubectl_with_stdin(&["create", "-f", "-"], Some(DOLLY)));
    ok(s.kubectl(&["patch", "llama", "dolly", "--type=merge", "-p", r#"{"spec":{"coat":{"color":"brown"}}}"#]));
    ok(s.kubectl(&[
        "patch",
        "llama",
        "dolly",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/weight","value":130}]"#,
    ]));
    let spec = ok(s.kubectl(&["get", "llama", "dolly", "-o", "jsonpath={.spec.coat.color} {.spec.weight}"]));
    assert_eq!(spec, "brown 130");
    let (success, _, stderr) = s.kubectl(&["patch", "llama", "dolly", "-p", r#"{"spec":{"color":"grey"}}"#]);
    assert!(!success, "strategic merge patch is refused as for custom resources");
    assert!(stderr.contains("application/strategic-merge-patch+json is not supported"), "{stderr}");
}

fn llama_yaml(name: &str, herd: &str, weight: u32) -> String {
    format!(
        "apiVersion: farm.example.com/v1alpha\nkind: Llama\nmetadata:\n  name: {name}\n  labels:\n    herd: {herd}\nspec:\n  weight: {weight}\n  height: 100\n"
    )
}

#[apply(backends)]
async fn get_watch_prints_a_row_on_create_and_on_change(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    ok(s.kubectl_with_stdin(&["create", "-f", "-"], Some(&llama_yaml("dolly", "a", 120))));
    let mut command = std::process::Command::new(common::kubectl_path());
    command.args(["get", "llamas", "-w"]).env("KUBECONFIG", &s.kubeconfig);
    let watch = common::LineStream::spawn(command);
    let next = || watch.next_line(std::time::Duration::from_secs(10));
    assert!(next().split_whitespace().eq(["NAME", "WEIGHT", "HEIGHT", "READY", "AGE"]));
    assert!(next().starts_with("dolly "));
    ok(s.kubectl_with_stdin(&["create", "-f", "-"], Some(&llama_yaml("cria", "b", 30))));
    let created: Vec<String> = next().split_whitespace().map(String::from).collect();
    assert_eq!(&created[..3], ["cria", "30", "100"]);
    ok(s.kubectl(&["patch", "llama", "dolly", "--type=merge", "-p", r#"{"spec":{"weight":130}}"#]));
    let changed: Vec<String> = next().split_whitespace().map(String::from).collect();
    assert_eq!(&changed[..3], ["dolly", "130", "100"]);
}

#[apply(backends)]
async fn label_selectors_filter_and_chunked_lists_return_everything(#[case] backend: Backend) {
    let s = Server::start_on(backend).await;
    for (i, herd) in ["a", "b", "a", "b", "a"].iter().enumerate() {
        ok(s.kubectl_with_stdin(&["create", "-f", "-"], Some(&llama_yaml(&format!("l{i}"), herd, 10 + i as u32))));
    }
    let names = |out: String| -> Vec<String> {
        out.lines().skip(1).filter_map(|l| l.split_whitespace().next().map(String::from)).collect()
    };
    assert_eq!(names(ok(s.kubectl(&["get", "llamas", "-l", "herd=a"]))), ["l0", "l2", "l4"]);
    assert_eq!(names(ok(s.kubectl(&["get", "llamas", "-l", "herd!=a"]))), ["l1", "l3"]);
    assert_eq!(
        names(ok(s.kubectl(&["get", "llamas", "-l", "herd in (b)", "--field-selector", "metadata.name!=l1"]))),
        ["l3"]
    );
    let (success, stdout, stderr) = s.kubectl(&["get", "llamas", "--chunk-size=2", "-v=6"]);
    assert!(success, "{stderr}");
    assert_eq!(names(stdout), ["l0", "l1", "l2", "l3", "l4"]);
    let pages = stderr.lines().filter(|l| l.contains("GET") && l.contains("limit=2")).count();
    assert_eq!(pages, 3, "five llamas in pages of two: {stderr}");
}
