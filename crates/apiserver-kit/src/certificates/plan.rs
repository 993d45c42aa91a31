//! When to mint, trust, promote and renew: a pure function of the time, the Secret's
//! [`Material`] and the caBundles the APIServices publish.
//!
//! A CA lives its validity out; in the last third a new CA joins the trusted bundle (the
//! APIServices publish both); from the last sixth, once every APIService publishes it, the new
//! CA signs and the old one stays trusted until it expires. A serving certificate is renewed
//! after two thirds of its validity, when another CA signs now, or when its names change. So a
//! client that trusts the published bundle trusts every certificate any replica serves, before,
//! during and after a rotation.

use super::material::{Authority, Facts, Keyed, Material, Trusted, bundle_holds};
use crate::tls;
use std::time::Duration;

/// What the certificates must be.
#[derive(Clone, Debug)]
pub struct Policy {
    /// The CAs' common name; each CA adds `@<unix seconds>-<random>`.
    pub ca_name: String,
    /// The serving certificate's DNS names and IP addresses; the first is its common name.
    pub names: Vec<String>,
    /// How long a CA is valid.
    pub ca_validity: Duration,
    /// How long a serving certificate is valid (never past its CA).
    pub leaf_validity: Duration,
}

/// What to do now.
#[derive(Debug)]
pub enum Decision {
    /// The Secret is right; look again at `recheck_at` (Unix seconds) at the latest.
    Keep {
        /// When something falls due.
        recheck_at: i64,
    },
    /// Write this material into the Secret.
    Write {
        /// The new contents.
        material: Box<Material>,
        /// What changed, for the log.
        changes: Vec<&'static str>,
    },
}

/// Decides at `now` (Unix seconds) what the Secret should hold, given what it holds
/// (`current`, `None` when absent or unreadable) and the caBundle of each APIService
/// (`published`, `None` for one without).
pub fn decide(
    now: i64,
    current: Option<&Material>,
    published: &[Option<String>],
    policy: &Policy,
) -> tls::Result<Decision> {
    let mut changes = Vec::new();
    let mut authority = refresh(now, current.map(|m| &m.authority), false, &policy.authority(), &mut changes)?;
    let due = authority.signer.facts.at_fraction(5, 6);
    let published_everywhere =
        |next: &Keyed| published.iter().all(|p| p.as_deref().is_some_and(|pem| bundle_holds(pem, &next.facts)));
    if authority.next.as_ref().is_some_and(|next| now >= due && published_everywhere(next)) {
        authority.promote(&mut changes);
    }
    let leaf = match current {
        Some(m) if !leaf_due(now, &m.leaf.facts, &authority.signer, &policy.names) => m.leaf.clone(),
        _ => {
            changes.push("a new serving certificate");
            let common_name = policy.names.first().map_or("localhost", String::as_str);
            let subject = (common_name, policy.names.as_slice());
            issue(now, &authority.signer, subject, tls::Usage::Server, policy.leaf_validity)?
        }
    };
    let material = Material { authority, leaf };
    if changes.is_empty() {
        return Ok(Decision::Keep { recheck_at: recheck_at(now, &material) });
    }
    Ok(Decision::Write { material: Box::new(material), changes })
}

impl Policy {
    fn authority(&self) -> AuthorityPolicy {
        AuthorityPolicy { ca_name: self.ca_name.clone(), ca_validity: self.ca_validity }
    }
}

/// What a CA must be.
#[derive(Clone, Debug)]
pub struct AuthorityPolicy {
    /// The CAs' common name; each CA adds `@<unix seconds>-<random>`.
    pub ca_name: String,
    /// How long a CA is valid.
    pub ca_validity: Duration,
}

impl Authority {
    /// The next CA signs from now on; the one that signed stays trusted until it expires.
    pub fn promote(&mut self, changes: &mut Vec<&'static str>) {
        if let Some(next) = self.next.take() {
            self.signer = next;
            changes.push("the new CA signs from now on");
        }
    }
}

/// The CAs at `now`, from `current` (`None` when absent or unreadable): a new CA when there is
/// none or the signing one expired (the others still valid stay trusted), expired CAs out of
/// the bundle, and a next CA joining it after two thirds of the signer's validity, or at once
/// when `rotate` asks for a rotation. Each change is said in `changes`.
pub fn refresh(
    now: i64,
    current: Option<&Authority>,
    rotate: bool,
    policy: &AuthorityPolicy,
    changes: &mut Vec<&'static str>,
) -> tls::Result<Authority> {
    let mut authority = match current {
        Some(a) if a.signer.facts.not_after > now => a.clone(),
        _ => {
            changes.push(if current.is_some() { "the signing CA expired: a new one" } else { "a new CA" });
            let signer = new_ca(now, policy)?;
            let mut trusted_cas: Vec<Trusted> = current.map(|a| a.trusted.clone()).unwrap_or_default();
            trusted_cas.push(signer.as_trusted());
            Authority { trusted: trusted_cas, signer, next: None }
        }
    };
    let before = authority.trusted.len();
    authority.trusted.retain(|t| t.facts.not_after > now);
    if authority.trusted.len() < before {
        changes.push("expired CAs leave the trusted bundle");
    }
    if !authority.trusted.iter().any(|t| t.facts.der == authority.signer.facts.der) {
        authority.trusted.push(authority.signer.as_trusted());
        changes.push("the signing CA joins the trusted bundle");
    }
    if authority.next.is_none() && (rotate || now >= authority.signer.facts.at_fraction(2, 3)) {
        let next = new_ca(now, policy)?;
        authority.trusted.push(next.as_trusted());
        authority.next = Some(next);
        changes.push("a new CA joins the trusted bundle");
    }
    Ok(authority)
}

/// When a CA of `policy` was made: its start is set back five minutes (a tenth of a short
/// validity), for clocks a little behind.
pub fn made_at(ca: &Keyed, policy: &AuthorityPolicy) -> i64 {
    ca.facts.not_before + backdating(policy.ca_validity)
}

/// Whether a certificate `leaf` for `names` must be issued again: after two thirds of its
/// validity, when another CA signs now, or when its names changed.
pub fn leaf_due(now: i64, leaf: &Facts, signer: &Keyed, names: &[String]) -> bool {
    let mut names = names.to_vec();
    names.sort();
    names.dedup();
    leaf.issuer != signer.facts.subject || leaf.names != names || now >= leaf.at_fraction(2, 3)
}

/// The first moment something falls due.
fn recheck_at(now: i64, material: &Material) -> i64 {
    let signer = &material.authority.signer.facts;
    let ca_step = match material.authority.next {
        None => signer.at_fraction(2, 3),
        Some(_) => signer.at_fraction(5, 6),
    };
    let expiries = material.authority.trusted.iter().map(|t| t.facts.not_after);
    let due = expiries.chain([ca_step, material.leaf.facts.at_fraction(2, 3), signer.not_after]).filter(|&t| t > now);
    due.min().unwrap_or(now + 1)
}

/// How far a new certificate's start is set back, for clocks a little behind this one: five
/// minutes, or a tenth of its validity when that is shorter.
fn backdating(validity: Duration) -> i64 {
    i64::try_from(validity.as_secs() / 10).unwrap_or(i64::MAX).min(300)
}

fn validity(now: i64, length: Duration, cap: Option<i64>) -> tls::Result<(tls::Validity, i64)> {
    let seconds = i64::try_from(length.as_secs()).unwrap_or(i64::MAX / 4).max(1);
    let end = now.saturating_add(seconds).min(cap.unwrap_or(i64::MAX)).min(253_402_300_799);
    let time = |t: i64| {
        time::OffsetDateTime::from_unix_timestamp(t)
            .map_err(|e| tls::Error::Pem(format!("a certificate's validity is out of range: {e}")))
    };
    Ok((tls::Validity::between(time(now - backdating(length))?, time(end)?), end))
}

fn new_ca(now: i64, policy: &AuthorityPolicy) -> tls::Result<Keyed> {
    let (validity, _) = validity(now, policy.ca_validity, None)?;
    let name = format!("{}@{now}-{:08x}", policy.ca_name, rand::random::<u32>());
    let ca = tls::new_ca_valid(&name, validity)?;
    Keyed::new(ca.cert_pem, ca.key_pem).map_err(tls::Error::Pem)
}

/// A certificate of `signer` for `common_name` and `names`, valid `length` at most (never past
/// its signer).
pub fn issue(
    now: i64,
    signer: &Keyed,
    (common_name, names): (&str, &[String]),
    usage: tls::Usage,
    length: Duration,
) -> tls::Result<Keyed> {
    let (validity, _) = validity(now, length, Some(signer.facts.not_after))?;
    let certs = tls::issue_valid(&signer.as_ca(), common_name, names, usage, validity)?;
    Keyed::new(certs.cert_pem, certs.key_pem).map_err(tls::Error::Pem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn policy(ca: u64, leaf: u64) -> Policy {
        Policy {
            ca_name: "farm-ca".into(),
            names: vec!["farm.ns.svc".into(), "farm".into()],
            ca_validity: Duration::from_secs(ca),
            leaf_validity: Duration::from_secs(leaf),
        }
    }

    fn written(decision: Decision) -> (Material, Vec<&'static str>) {
        match decision {
            Decision::Write { material, changes } => (*material, changes),
            Decision::Keep { .. } => panic!("expected a write"),
        }
    }

    /// Whether `leaf` chains to a CA among `trusted` (by issuer name) and is valid at `now`.
    fn trusted_at(now: i64, leaf: &Facts, trusted: &[Facts]) -> bool {
        leaf.not_before <= now
            && now < leaf.not_after
            && trusted.iter().any(|ca| ca.subject == leaf.issuer && ca.not_before <= now && now < ca.not_after)
    }

    const T0: i64 = 1_800_000_000;

    #[test]
    fn a_missing_secret_gets_a_ca_and_a_serving_certificate_it_signs() {
        let (m, changes) = written(decide(T0, None, &[], &policy(600, 60)).unwrap());
        assert_eq!(changes, ["a new CA", "a new serving certificate"]);
        assert_eq!(m.authority.trusted.len(), 1);
        assert_eq!(m.leaf.facts.issuer, m.authority.signer.facts.subject);
        assert_eq!(m.leaf.facts.names, ["farm", "farm.ns.svc"]);
        assert_eq!(m.authority.signer.facts.not_after, T0 + 600);
        assert_eq!(m.leaf.facts.not_after, T0 + 60);
        assert_eq!(m.leaf.facts.not_before, T0 - 6, "set back a tenth of a short validity");
        match decide(T0 + 1, Some(&m), &[], &policy(600, 60)).unwrap() {
            Decision::Keep { recheck_at } => assert_eq!(recheck_at, m.leaf.facts.at_fraction(2, 3)),
            Decision::Write { changes, .. } => panic!("nothing was due: {changes:?}"),
        }
    }

    #[test]
    fn a_rotation_waits_for_every_apiservice_to_publish_the_new_ca() {
        let p = policy(600, 60);
        let (m, _) = written(decide(T0, None, &[], &p).unwrap());
        let at_two_thirds = m.authority.signer.facts.at_fraction(2, 3);
        let (m, changes) = written(decide(at_two_thirds, Some(&m), &[], &p).unwrap());
        assert!(changes.contains(&"a new CA joins the trusted bundle"), "{changes:?}");
        let next = m.authority.next.clone().unwrap();
        let late = m.authority.signer.facts.at_fraction(5, 6);
        let old = Some(m.authority.trusted[0].cert_pem.clone());
        let (stale, _) = written(decide(late, Some(&m), &[Some(m.bundle()), old], &p).unwrap());
        assert_eq!(stale.authority.next.as_ref(), Some(&next), "one APIService still has the old bundle");
        let (promoted, changes) = written(decide(late, Some(&m), &[Some(m.bundle()), Some(m.bundle())], &p).unwrap());
        assert!(changes.contains(&"the new CA signs from now on"), "{changes:?}");
        assert_eq!(promoted.authority.signer, next);
        assert_eq!(promoted.leaf.facts.issuer, next.facts.subject);
        assert_eq!(promoted.authority.trusted.len(), 2, "the old CA stays trusted until it expires");
    }

    #[test]
    fn a_name_given_twice_does_not_make_the_plan_write_again() {
        let mut p = policy(600, 60);
        p.names.push("farm".into());
        let (m, _) = written(decide(T0, None, &[], &p).unwrap());
        assert!(matches!(decide(T0 + 1, Some(&m), &[], &p).unwrap(), Decision::Keep { .. }));
    }

    #[test]
    fn an_unreadable_secret_or_an_expired_ca_starts_again() {
        let p = policy(600, 60);
        let (m, _) = written(decide(T0, None, &[], &p).unwrap());
        let (again, changes) = written(decide(T0 + 601, Some(&m), &[], &p).unwrap());
        assert_eq!(changes[0], "the signing CA expired: a new one");
        assert_eq!(again.authority.trusted.len(), 1);
        assert_ne!(again.authority.signer, m.authority.signer);
    }

    /// A simulated run: the longest the APIServices lag behind the Secret (seconds), then
    /// each step's advance of the clock (a replica reconciles every few seconds) and whether the
    /// APIServices catch up with the Secret's bundle then (about one step in ten).
    fn runs() -> impl Strategy<Value = (i64, Vec<(u8, bool)>)> {
        (5i64..200, proptest::collection::vec((0u8..8, proptest::bool::weighted(0.1)), 1..400))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        /// Whatever the timing of reconciles and of publishing, the serving certificate the
        /// Secret holds is never expired and is trusted by the bundle the APIServices publish
        /// at that moment, through rotations of the leaf and of the CA; the only exception is a
        /// CA that ran out because publishing lagged over a sixth of its validity (here 50 s of
        /// 300), until publishing catches up.
        #[test]
        fn clients_of_the_published_bundle_always_trust_the_served_certificate((lag, steps) in runs()) {
            let p = policy(300, 60);
            let mut now = T0;
            let (mut m, _) = written(decide(now, None, &[], &p).unwrap());
            let (mut published, mut caught_up, mut outage) = (m.bundle(), now, false);
            for (advance, catch_up) in steps {
                now += i64::from(advance);
                if catch_up || now - caught_up >= lag {
                    (published, caught_up, outage) = (m.bundle(), now, false);
                }
                if let Decision::Write { material, changes } = decide(now, Some(&m), &[Some(published.clone())], &p).unwrap() {
                    outage |= changes.iter().any(|c| c.contains("expired: a new one"));
                    m = *material;
                }
                prop_assert!(!outage || lag > 50, "the CA ran out although publishing lagged at most {lag} s");
                let served = &m.leaf.facts;
                prop_assert!(served.not_after > now, "the Secret holds an expired serving certificate");
                prop_assert!(
                    outage || trusted_at(now, served, &Facts::of_pem(&published).unwrap()),
                    "the published bundle does not trust the serving certificate at {}", now - T0
                );
            }
        }
    }
}
