//! The type checker's copy of the signatures of Kubernetes' CEL functions (src/cel/overloads.rs)
//! against k8s.io/apiserver's own: `tools/cel-oracle -declarations` writes every overload its
//! environment declares, and ours must be those, in the same order (the order in which cel-go's
//! checker tries them), less the functions left out below.

mod cel;
mod oracle;

use std::process::Command;

/// The functions the checker does not declare, and why.
const LEFT_OUT: &[(&str, &str)] = &[
    ("format", "the strings extension's format is not implemented"),
    ("_in_", "a legacy name of `in` that no expression can write"),
    ("in", "a legacy name of `in` that no expression can write"),
    ("__not_strictly_false__", "a legacy name of `@not_strictly_false`"),
    ("_?._", "`a.?b`: the checker types it itself, as cel-go's does"),
];

#[test]
fn the_checker_declares_the_functions_of_kubernetes_environment() {
    let out = Command::new(cel::oracle()).arg("-declarations").output().expect("the oracle runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("text");
    let left_out = |line: &&str| LEFT_OUT.iter().any(|(name, _)| line.split(' ').next() == Some(name));
    let theirs: Vec<&str> = text.lines().filter(|line| !left_out(line)).collect();
    let ours = apiserver_kit::cel::signatures();
    let missing: Vec<&&str> = theirs.iter().filter(|line| !ours.contains(line)).collect();
    let extra: Vec<&&str> = ours.iter().filter(|line| !theirs.contains(line)).collect();
    assert!(missing.is_empty() && extra.is_empty(), "missing here: {missing:#?}\nnot there: {extra:#?}");
    assert_eq!(ours, theirs.as_slice(), "the same signatures, in another order");
}
