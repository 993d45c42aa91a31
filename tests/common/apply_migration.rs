//! Moving from client-side to server-side `kubectl apply`, as every team does: scripted kubectl
//! sequences on llamas of a `group` (farm-apiserver's `farm.example.com`, or `ref.example.com`
//! for a Llama CustomResourceDefinition on the kube-apiserver). Each sequence asserts what the
//! kube-apiserver does (the same assertions hold for the CRD, which is how they were checked) and
//! returns its transcript: each command's outcome, then the llama's spec, client-side apply's
//! record and managers, written in farm-apiserver's group, so that the transcripts of two
//! servers can be compared whole.

use super::clients::Cluster;
use serde_json::Value;

/// The group the transcripts are written in.
const FARM: &str = "farm.example.com";

/// kubectl on the llamas of one group, recording a transcript.
pub struct Session<'c, C: Cluster> {
    cluster: &'c C,
    group: &'c str,
    transcript: Vec<String>,
}

/// What one command did.
pub struct Outcome {
    pub ok: bool,
    /// stdout and stderr, in farm-apiserver's group, without kubectl's own timing warnings.
    pub output: String,
}

impl<'c, C: Cluster> Session<'c, C> {
    pub fn new(cluster: &'c C, group: &'c str) -> Self {
        Session { cluster, group, transcript: Vec::new() }
    }

    /// `llamas.<group>`, the resource as kubectl names it.
    /// The llamas at v1alpha, the version of the manifests: the sequences are those of users who
    /// keep their v1alpha files (kubectl would edit, patch and read at the preferred v1 otherwise).
    fn resource(&self) -> String {
        format!("llamas.v1alpha.{}", self.group)
    }

    /// A manifest of llama `name` with `weight`, height 170.5 and `color` when given.
    pub fn manifest(&self, name: &str, weight: u32, color: Option<&str>) -> String {
        let color = color.map(|c| format!("  color: {c}\n")).unwrap_or_default();
        format!(
            "apiVersion: {}/v1alpha\nkind: Llama\nmetadata:\n  name: {name}\nspec:\n  weight: {weight}\n  height: 170.5\n{color}",
            self.group
        )
    }

    /// Runs kubectl with `args` (`{r}` stands for the resource) and `stdin`, with `env`.
    pub fn kubectl(&mut self, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Outcome {
        let resource = self.resource();
        let args: Vec<String> = args.iter().map(|a| a.replace("{r}", &resource)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, out, err) = self.cluster.kubectl_env(&args, stdin, env);
        let diff = args.first() == Some(&"diff");
        let output: Vec<String> = format!("{out}{err}")
            .replace(self.group, FARM)
            .lines()
            // kubectl's diff warns, with its time and pid, when the object changes under it.
            .filter(|l| !l.contains("diffing without lock"))
            // A diff's headers name temporary files; its changed lines are what it says.
            .filter(|l| {
                !diff
                    || ((l.starts_with('-') || l.starts_with('+')) && !l.starts_with("---") && !l.starts_with("+++"))
                    || l.starts_with("Error")
            })
            .map(str::to_string)
            .collect();
        let shown: Vec<String> = args.iter().map(|a| a.replace(self.group, FARM)).collect();
        self.transcript.push(format!("$ kubectl {}\n{}\nsucceeded: {ok}", shown.join(" "), output.join("\n")));
        // The transcript keeps v1alpha's deprecation warning; what the sequences assert does not.
        let output = output
            .into_iter()
            .filter(|l| !(l.starts_with("Warning: ") && l.ends_with(" is deprecated; use farm.example.com/v1 Llama")));
        Outcome { ok, output: output.collect::<Vec<_>>().join("\n") }
    }

    /// `kubectl apply [--server-side] -f -` of `manifest`, plus `extra` flags.
    pub fn apply(&mut self, server_side: bool, manifest: &str, extra: &[&str]) -> Outcome {
        let mut args = vec!["apply", "-f", "-"];
        if server_side {
            args.push("--server-side");
        }
        args.extend_from_slice(extra);
        self.kubectl(&args, Some(manifest), &[])
    }

    /// The llama as stored: its spec, client-side apply's record (parsed) and its managers
    /// (`manager/operation` to fields, sorted by manager), in farm-apiserver's group; recorded
    /// in the transcript.
    pub fn state(&mut self, name: &str) -> Value {
        let resource = self.resource();
        let json = self.cluster.must(&["get", &resource, name, "-o", "json", "--show-managed-fields"], None);
        let object: Value = serde_json::from_str(&json.replace(self.group, FARM)).expect("a llama");
        let record = object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .map(|text| serde_json::from_str::<Value>(text).expect("a JSON record"));
        let mut managers: Vec<(String, Value)> = object["metadata"]["managedFields"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                (
                    format!("{}/{}", e["manager"].as_str().unwrap(), e["operation"].as_str().unwrap()),
                    e["fieldsV1"].clone(),
                )
            })
            .collect();
        managers.sort_by(|a, b| a.0.cmp(&b.0));
        let state = serde_json::json!({"spec": object["spec"], "record": record, "managers": managers});
        self.transcript.push(format!("{name}: {state}"));
        state
    }

    pub fn transcript(self) -> Vec<String> {
        self.transcript
    }
}

/// The managers of a [`Session::state`], `manager/operation` each.
fn managers(state: &Value) -> Vec<String> {
    state["managers"].as_array().unwrap().iter().map(|m| m[0].as_str().unwrap().to_string()).collect()
}

/// The conflict kubectl reports over `field` with `manager`, an Update at v1alpha.
fn conflict(manager: &str, field: &str) -> String {
    format!("Apply failed with 1 conflict: conflict with \"{manager}\" using {FARM}/v1alpha: {field}")
}

/// Client-side apply, then server-side apply of a changed weight: no conflict, the weight moves,
/// and kubectl's two managers own the llama (the issue's sequence).
pub fn server_side_after_client_side(s: &mut Session<impl Cluster>) {
    assert!(s.apply(false, &s.manifest("move-up", 5, None), &[]).ok);
    let out = s.apply(true, &s.manifest("move-up", 6, None), &[]);
    assert!(out.ok, "{}", out.output);
    assert_eq!(out.output, format!("llama.{FARM}/move-up serverside-applied"));
    let state = s.state("move-up");
    assert_eq!(state["spec"]["weight"], 6);
    assert_eq!(managers(&state), ["kubectl-last-applied/Apply", "kubectl/Apply"]);
    assert_eq!(state["record"]["spec"]["weight"], 6, "the record follows the server-side apply");
}

/// Client-side, server-side, client-side again: the record kept current by the server-side
/// apply lets the last client-side apply remove the colour its file no longer has.
pub fn client_side_after_server_side(s: &mut Session<impl Cluster>) {
    assert!(s.apply(false, &s.manifest("move-back", 5, Some("brown")), &[]).ok);
    assert!(s.apply(true, &s.manifest("move-back", 6, Some("brown")), &[]).ok);
    s.state("move-back");
    let viewed = s.kubectl(&["apply", "view-last-applied", "{r}", "move-back", "-o", "json"], None, &[]);
    let record: Value = serde_json::from_str(&viewed.output).expect("the last-applied configuration");
    assert_eq!(record["spec"]["weight"], 6, "kubectl reads back what was applied server-side");
    let out = s.apply(false, &s.manifest("move-back", 7, None), &[]);
    assert_eq!(out.output, format!("llama.{FARM}/move-back configured"));
    let state = s.state("move-back");
    assert_eq!(state["spec"], serde_json::json!({"weight": 7, "height": 170.5}), "the colour is removed");
}

/// A weight someone changed with `kubectl edit` after the client-side apply still conflicts,
/// for `diff --server-side` and `apply --server-side`; applying the value they set does not.
pub fn an_edited_field_still_conflicts(s: &mut Session<impl Cluster>) {
    assert!(s.apply(false, &s.manifest("move-edited", 5, None), &[]).ok);
    let editor = [("KUBE_EDITOR", "sed -i -e 's/weight: 5$/weight: 9/'")];
    assert!(s.kubectl(&["edit", "{r}", "move-edited"], None, &editor).ok);
    let diff = s.kubectl(&["diff", "--server-side", "-f", "-"], Some(&s.manifest("move-edited", 6, None)), &[]);
    assert!(!diff.ok && diff.output.contains(&conflict("kubectl-edit", ".spec.weight")), "{}", diff.output);
    let out = s.apply(true, &s.manifest("move-edited", 6, None), &[]);
    assert!(!out.ok && out.output.contains(&conflict("kubectl-edit", ".spec.weight")), "{}", out.output);
    assert_eq!(s.state("move-edited")["spec"]["weight"], 9, "a refused apply changes nothing");
    assert!(s.apply(true, &s.manifest("move-edited", 9, None), &[]).ok, "agreeing with the edit is no conflict");
    let state = s.state("move-edited");
    assert!(managers(&state).contains(&"kubectl-edit/Update".to_string()), "{state}");
}

/// A colour a controller set with a patch (an Update, as its managers record it), which
/// client-side apply never recorded, conflicts; an apply that leaves it alone moves the rest and
/// leaves the colour to the controller. (`kubectl replace` would not do: it rewrites the record.)
pub fn a_controllers_field_still_conflicts(s: &mut Session<impl Cluster>) {
    assert!(s.apply(false, &s.manifest("move-controlled", 5, None), &[]).ok);
    let patch = r#"{"spec":{"color":"white"}}"#;
    let args = ["patch", "{r}", "move-controlled", "--type=merge", "--field-manager=llama-controller", "-p", patch];
    let patched = s.kubectl(&args, None, &[]);
    assert!(patched.ok, "{}", patched.output);
    let out = s.apply(true, &s.manifest("move-controlled", 5, Some("black")), &[]);
    assert!(!out.ok && out.output.contains(&conflict("llama-controller", ".spec.color")), "{}", out.output);
    assert!(s.apply(true, &s.manifest("move-controlled", 6, None), &[]).ok);
    let state = s.state("move-controlled");
    assert_eq!(state["spec"], serde_json::json!({"weight": 6, "height": 170.5, "color": "white"}));
    assert!(managers(&state).contains(&"llama-controller/Update".to_string()), "{state}");
}

/// `diff --server-side` after a client-side apply shows the change, not a conflict; a tool
/// applying under its own name (here `flux`) opts out of the takeover and meets the conflict.
pub fn diff_and_other_appliers(s: &mut Session<impl Cluster>) {
    assert!(s.apply(false, &s.manifest("move-diff", 5, None), &[]).ok);
    let diff = s.kubectl(&["diff", "--server-side", "-f", "-"], Some(&s.manifest("move-diff", 6, None)), &[]);
    assert!(
        !diff.ok && diff.output.contains("-  weight: 5") && diff.output.contains("+  weight: 6"),
        "{}",
        diff.output
    );
    assert_eq!(s.state("move-diff")["spec"]["weight"], 5, "a diff changes nothing");
    let out = s.apply(true, &s.manifest("move-diff", 6, None), &["--field-manager=flux"]);
    let expected = conflict("kubectl-client-side-apply", ".spec.weight");
    assert!(!out.ok && out.output.contains(&expected), "{}", out.output);
}

/// Every sequence, in order; the whole transcript.
pub fn all(cluster: &impl Cluster, group: &str) -> Vec<String> {
    let mut session = Session::new(cluster, group);
    server_side_after_client_side(&mut session);
    client_side_after_server_side(&mut session);
    an_edited_field_still_conflicts(&mut session);
    a_controllers_field_still_conflicts(&mut session);
    diff_and_other_appliers(&mut session);
    session.transcript()
}

/// Asserts two transcripts are the same, showing the first step that differs.
pub fn assert_same(ours: &[String], reference: &[String], what: &str) {
    for (i, (a, b)) in ours.iter().zip(reference).enumerate() {
        assert_eq!(a, b, "{what}: step {i} differs from the CRD's");
    }
    assert_eq!(ours.len(), reference.len(), "{what}: transcripts of different lengths");
}
