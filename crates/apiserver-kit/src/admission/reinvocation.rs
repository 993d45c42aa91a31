//! Reinvocation of the mutating steps of the admission chain, as k8s.io/apiserver's reinvoker
//! and its plugins' reinvocation contexts do it: the chain's mutating plugins (the
//! MutatingAdmissionPolicies, then the mutating webhooks) run once; when one of them changed the
//! object, they run a second time, and in that round only the policies and webhooks with
//! `reinvocationPolicy: IfNeeded` that were invoked before some later change run again (never
//! one that was not invoked in the first round).

use std::collections::HashSet;
use std::hash::Hash;

/// The chain's state across its two rounds (`ReinvocationContext`).
#[derive(Debug, Default)]
pub struct Round {
    /// Whether this is the second round (`IsReinvoke`).
    pub reinvoking: bool,
    /// Whether a second round is wanted (`ShouldReinvoke`).
    pub wanted: bool,
}

/// One plugin's state across the rounds (`webhookReinvokeContext`, `policyReinvokeContext`),
/// its policies or webhooks named by `Key`.
#[derive(Debug)]
pub struct Reinvocation<Key> {
    /// The object as the plugin last left it (`lastWebhookOutput`), once it ran.
    last_output: Option<Option<serde_json::Value>>,
    /// Reinvocable ones invoked since the last change (`previouslyInvokedReinvocable…`).
    invoked: HashSet<Key>,
    /// Those to invoke again in the second round (`reinvoke…`).
    again: HashSet<Key>,
}

impl<Key> Default for Reinvocation<Key> {
    fn default() -> Self {
        Reinvocation { last_output: None, invoked: HashSet::new(), again: HashSet::new() }
    }
}

impl<Key: Eq + Hash> Reinvocation<Key> {
    /// The plugin starts a round on `object`: in the second round, when other plugins changed
    /// the object since it last ran, everything it invoked runs again.
    pub fn start(&mut self, round: &Round, object: Option<&serde_json::Value>) {
        let changed = self.last_output.as_ref().is_some_and(|last| last.as_ref() != object);
        if round.reinvoking && changed {
            self.require_again();
        }
    }

    /// The plugin ends a round, leaving `object`.
    pub fn finish(&mut self, object: Option<&serde_json::Value>) {
        self.last_output = Some(object.cloned());
    }

    /// Whether `key` is skipped in this round: in the second, all but those to invoke again.
    pub fn skips(&self, round: &Round, key: &Key) -> bool {
        round.reinvoking && !self.again.contains(key)
    }

    /// `key` was invoked: when it `changed` the object, the reinvocable ones invoked before it
    /// are to run again and the chain wants a second round; a `reinvocable` one is remembered.
    pub fn invoked(&mut self, round: &mut Round, key: Key, changed: bool, reinvocable: bool) {
        if changed {
            self.changed(round);
        }
        if reinvocable {
            self.invoked.insert(key);
        }
    }

    /// The object changed (`RequireReinvokingPreviouslyInvokedPlugins` and `SetShouldReinvoke`).
    pub fn changed(&mut self, round: &mut Round) {
        self.require_again();
        round.wanted = true;
    }

    fn require_again(&mut self) {
        self.again.extend(self.invoked.drain());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_reinvocable_ones_invoked_before_a_change_run_again() {
        let mut round = Round::default();
        let mut state = Reinvocation::default();
        let first = json!({"a": 1});
        state.start(&round, Some(&first));
        state.invoked(&mut round, "early", false, true);
        state.invoked(&mut round, "never", false, false);
        state.invoked(&mut round, "changer", true, true);
        state.invoked(&mut round, "late", false, true);
        state.finish(Some(&json!({"a": 2})));
        assert!(round.wanted);
        round.reinvoking = true;
        state.start(&round, Some(&json!({"a": 2})));
        assert!(!state.skips(&round, &"early"));
        for key in ["never", "changer", "late"] {
            assert!(state.skips(&round, &key), "{key}");
        }
    }

    #[test]
    fn a_change_by_another_plugin_reinvokes_everything_invoked() {
        let mut round = Round::default();
        let mut state = Reinvocation::default();
        state.start(&round, None);
        state.invoked(&mut round, "only", false, true);
        state.finish(Some(&json!({"a": 1})));
        assert!(!round.wanted);
        round.reinvoking = true;
        state.start(&round, Some(&json!({"a": 2})));
        assert!(!state.skips(&round, &"only"));
    }
}
