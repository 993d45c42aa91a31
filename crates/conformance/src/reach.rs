//! What a run's generated requests reached: each counted by its verb, subresource, content type
//! (what a write sends; what a read asks for, and gzip) and the reference's answer code; and the
//! kinds of request a real client sends that the default run must reach (a successful PUT with
//! the current resourceVersion, writes and applies of `/status`, a collection deleted by label,
//! watches from a resourceVersion seeing changes and deletions, `resourceVersionMatch` on a
//! watch, Table, metadata-only and YAML answers, gzip, `DeleteOptions` preconditions), and the
//! share of valid JSON patches among the cases' own requests (at least [`JSON_PATCH_SHARE`]).

use crate::exchange::{Answer, Request};
use crate::subject::Subject;
use reqwest::Method;
use std::collections::BTreeMap;

/// The least share of valid JSON patches (answered 200 by the reference) among the cases' own
/// requests.
pub const JSON_PATCH_SHARE: f64 = 0.10;

/// A kind of request the default run must reach, judged on the request and the reference's
/// answer.
struct Required {
    name: &'static str,
    reached: fn(&Subject, &Request, &Answer) -> bool,
}

fn status_path(request: &Request) -> bool {
    request.path.ends_with("/status")
}

fn is_apply(request: &Request) -> bool {
    request.has_header("content-type", "apply-patch")
}

fn query_has(request: &Request, parameter: &str) -> bool {
    request.query.split('&').any(|p| p.starts_with(parameter))
}

/// A watch from a resourceVersion (not 0, not none) answered with an event of `kind`.
fn watched(request: &Request, reference: &Answer, kind: &str) -> bool {
    let from = request.query.split('&').any(|p| p.starts_with("resourceVersion=") && p != "resourceVersion=0");
    request.is_watch()
        && from
        && reference.code == 200
        && reference.body.as_array().is_some_and(|events| events.iter().any(|e| e["type"] == kind))
}

const REQUIRED: &[Required] = &[
    Required {
        name: "a PUT written (the current resourceVersion)",
        reached: |_, r, a| r.method == Method::PUT && !status_path(r) && a.code == 200,
    },
    Required {
        name: "a PUT of /status written",
        reached: |_, r, a| r.method == Method::PUT && status_path(r) && a.code == 200,
    },
    Required {
        name: "an apply of /status written",
        reached: |_, r, a| is_apply(r) && status_path(r) && (a.code == 200 || a.code == 201),
    },
    Required {
        name: "a collection deleted by label",
        reached: |s, r, a| {
            r.method == Method::DELETE
                && s.is_collection_path(&r.path)
                && query_has(r, "labelSelector=")
                && a.code == 200
        },
    },
    Required { name: "a watch from a resourceVersion seeing MODIFIED", reached: |_, r, a| watched(r, a, "MODIFIED") },
    Required { name: "a watch from a resourceVersion seeing DELETED", reached: |_, r, a| watched(r, a, "DELETED") },
    Required {
        name: "a watch with resourceVersionMatch",
        reached: |_, r, _| r.is_watch() && query_has(r, "resourceVersionMatch="),
    },
    Required { name: "a Table answer", reached: |_, r, a| r.has_header("accept", "as=Table") && a.code == 200 },
    Required {
        name: "a metadata-only answer",
        reached: |_, r, a| r.has_header("accept", "as=PartialObjectMetadata") && a.code == 200,
    },
    Required {
        name: "a YAML answer",
        reached: |_, r, a| r.method == Method::GET && r.has_header("accept", "application/yaml") && a.code == 200,
    },
    Required { name: "gzip asked for", reached: |_, r, _| r.has_header("accept-encoding", "gzip") },
    Required {
        name: "a DeleteOptions body with preconditions",
        reached: |_, r, _| r.method == Method::DELETE && r.body_text().contains("preconditions"),
    },
];

/// What the generated requests of a run reached.
#[derive(Default)]
pub struct Reach {
    /// Requests by verb, subresource, content type and the reference's code.
    counts: BTreeMap<(&'static str, &'static str, String, u16), usize>,
    /// How many requests reached each of [`REQUIRED`].
    required: BTreeMap<&'static str, usize>,
    /// The cases' own requests (not their setups, syncs, reads after or watches since).
    own: usize,
    /// Of those, JSON patches the reference answered 200.
    valid_json_patches: usize,
}

/// The labels of the requests a case adds around its own.
const AROUND: &[&str] =
    &[": setup", ": the object after it", ": the watch cache has seen the setup", ": the events since the setup"];

impl Reach {
    /// Counts a generated request and the reference's answer to it.
    pub fn record(&mut self, subject: &Subject, request: &Request, reference: &Answer) {
        let key = (verb(subject, request), subresource(request), content(request), reference.code);
        *self.counts.entry(key).or_default() += 1;
        for required in REQUIRED.iter().filter(|r| (r.reached)(subject, request, reference)) {
            *self.required.entry(required.name).or_default() += 1;
        }
        if !AROUND.iter().any(|around| request.label.ends_with(around)) {
            self.own += 1;
            let json_patch = request.method == Method::PATCH && request.has_header("content-type", "json-patch");
            self.valid_json_patches += usize::from(json_patch && reference.code == 200);
        }
    }

    /// The share of valid JSON patches among the cases' own requests.
    pub fn json_patch_share(&self) -> f64 {
        if self.own == 0 { 0.0 } else { self.valid_json_patches as f64 / self.own as f64 }
    }

    /// What a default run must reach and this one did not.
    pub fn missing(&self) -> Vec<String> {
        let mut missing: Vec<String> =
            REQUIRED.iter().filter(|r| !self.required.contains_key(r.name)).map(|r| r.name.to_string()).collect();
        if self.json_patch_share() < JSON_PATCH_SHARE {
            missing.push(format!(
                "valid JSON patches: {:.1}% of the cases' own requests",
                self.json_patch_share() * 100.0
            ));
        }
        missing
    }

    /// The report: each kind of request and how many reached it, then the required kinds.
    pub fn report(&self) -> String {
        let mut text = String::from(
            "  reached: verb, subresource, content type (a read's Accept), the reference's code: requests\n",
        );
        for ((verb, subresource, content, code), count) in &self.counts {
            text += &format!("    {verb:<22} {subresource:<7} {content:<62} {code}: {count}\n");
        }
        for required in REQUIRED {
            text += &format!("  required: {:<50} {}\n", required.name, self.required.get(required.name).unwrap_or(&0));
        }
        text += &format!(
            "  required: valid JSON patches                                 {} of {} own requests ({:.1}%)\n",
            self.valid_json_patches,
            self.own,
            self.json_patch_share() * 100.0
        );
        text
    }
}

/// The verb of a request, as the kube-apiserver names it (a patch by its type).
fn verb(subject: &Subject, request: &Request) -> &'static str {
    let collection = subject.is_collection_path(&request.path);
    let patch_type = |r: &Request| match () {
        _ if r.has_header("content-type", "apply-patch") => "apply",
        _ if r.has_header("content-type", "json-patch") => "patch (json)",
        _ if r.has_header("content-type", "merge-patch") => "patch (merge)",
        _ if r.has_header("content-type", "strategic-merge-patch") => "patch (strategic)",
        _ => "patch (other type)",
    };
    match request.method {
        Method::GET if request.is_watch() => "watch",
        Method::GET if collection => "list",
        Method::GET => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => patch_type(request),
        Method::DELETE if collection => "deletecollection",
        Method::DELETE => "delete",
        _ => "other",
    }
}

fn subresource(request: &Request) -> &'static str {
    if status_path(request) { "status" } else { "-" }
}

/// What a write sends (its Content-Type) or a read asks for (its Accept, and gzip).
fn content(request: &Request) -> String {
    let header =
        |name: &str| request.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    if request.method == Method::GET {
        let gzip = if request.has_header("accept-encoding", "gzip") { " +gzip" } else { "" };
        format!("{}{gzip}", header("accept").unwrap_or("-"))
    } else {
        header("content-type").unwrap_or("-").to_string()
    }
}
