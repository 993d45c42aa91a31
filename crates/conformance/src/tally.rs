//! What a run found, and the rules that judge each difference:
//!
//! - A 5xx of ours that differs from the reference's answer is never allowed, unless
//!   the reference failed (5xx) too.
//! - A difference is allowed only by an entry of [`allowed::ON_PURPOSE`] that compares both
//!   answers; each entry may fire at most [`Allowed::corpus`] times on the hand-written corpus
//!   and [`Allowed::per_thousand`] times per 1,000 generated requests, and the run fails when an
//!   entry never fires in the run of a subject it names in [`Allowed::seen_in`] (it is stale:
//!   its requests now answer alike, or its requests are gone); in another subject's run it is
//!   only bounded.
//! - A difference that follows an earlier one in the same generated case is skipped only when
//!   that earlier one was a defect (unexplained or [`allowed::TO_FIX`]) of a write: the read
//!   after it depends on what the write stored. After an allowed difference of a write, the read
//!   of the object is compared as any request; when it differs, each side must have stored what
//!   it answered (`stored_as_answered`), or an entry must allow it.

use crate::allowed::{self, Allowed};
use crate::exchange::{Answer, Request};
use crate::subject::Subject;
use std::collections::BTreeMap;

/// The part of a run a request belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Part {
    Corpus,
    Generated,
}

/// The answers of the generated case being run, as far as its rules need them.
#[derive(Default)]
struct Case {
    /// `generated #N`.
    name: String,
    /// Both sides' answers to its setup create.
    setup: Option<(Answer, Answer)>,
    /// A write of the case whose difference was a defect.
    defective_write: bool,
    /// The case's write whose difference was allowed, and both answers to it.
    allowed_write: Option<(Request, Answer, Answer)>,
}

/// What a run found.
pub struct Tally {
    subject: &'static Subject,
    pub compared: usize,
    pub same: usize,
    pub generated: usize,
    /// How often each entry of [`allowed::ON_PURPOSE`] fired, on the corpus and on generated requests.
    pub allowed: BTreeMap<&'static str, (usize, usize)>,
    pub to_fix: BTreeMap<&'static str, usize>,
    /// Reads after an allowed write that differ because each side stored what it answered.
    pub stored_as_answered: usize,
    /// Differences after a defect of a write of the same generated case, which they follow from.
    pub follow_ups: usize,
    case: Case,
    pub unexplained: Vec<String>,
    /// Both answers to each unexplained difference and each known defect, for the report file.
    pub details: String,
    /// Both answers to each allowed difference, by entry, for the audit file.
    pub allowed_details: String,
}

fn is_write(request: &Request) -> bool {
    request.method != reqwest::Method::GET
}

impl Tally {
    /// An empty tally for a run on `subject`.
    pub fn new(subject: &'static Subject) -> Self {
        Self {
            subject,
            compared: 0,
            same: 0,
            generated: 0,
            allowed: BTreeMap::new(),
            to_fix: BTreeMap::new(),
            stored_as_answered: 0,
            follow_ups: 0,
            case: Case::default(),
            unexplained: Vec::new(),
            details: String::new(),
            allowed_details: String::new(),
        }
    }

    pub fn record(
        &mut self,
        part: Part,
        request: &Request,
        tested: Result<Answer, String>,
        reference: Result<Answer, String>,
    ) {
        self.compared += 1;
        if part == Part::Generated {
            self.generated += 1;
        }
        let case_name = request.label.split(':').next().unwrap_or_default();
        if part == Part::Generated && case_name != self.case.name {
            self.case = Case { name: case_name.to_string(), ..Case::default() };
        }
        let difference = match (&tested, &reference) {
            (Ok(f), Ok(r)) => crate::difference(f, r),
            (f, r) => (f != r).then(|| format!("no answer: ours {f:?} / reference {r:?}")),
        };
        let (Ok(f), Ok(r)) = (&tested, &reference) else {
            if let Some(difference) = difference {
                self.unexplained(request, &difference, &tested, &reference);
            }
            return;
        };
        if part == Part::Generated && request.label.ends_with(": setup") {
            self.case.setup = Some((f.clone(), r.clone()));
        }
        let Some(difference) = difference else {
            self.same += 1;
            return;
        };
        if part == Part::Generated && self.case.defective_write {
            self.follow_ups += 1;
            return;
        }
        // A failure of ours is never excused where the reference did not fail too.
        if (f.code < 500 || r.code >= 500) && self.explained(part, request, f, r, &difference) {
            return;
        }
        if part == Part::Generated && is_write(request) {
            self.case.defective_write = true;
        }
        match allowed::to_fix(self.subject, request, f, r) {
            Some(name) => {
                *self.to_fix.entry(name).or_default() += 1;
                self.details += &format!(
                    "TO FIX ({name}): {}\n  {difference}\n  ours:      {f:?}\n  reference: {r:?}\n\n",
                    crate::describe(request)
                );
            }
            None => self.unexplained(request, &difference, &tested, &reference),
        }
    }

    /// Whether an entry of the tables, or what each side stored after an allowed write, explains
    /// the difference (counted).
    fn explained(&mut self, part: Part, request: &Request, f: &Answer, r: &Answer, difference: &str) -> bool {
        if let Some(entry) = allowed::ON_PURPOSE.iter().find(|a| (a.applies)(self.subject, request, f, r)) {
            self.allowed_details += &format!(
                "ON PURPOSE ({}): {}\n  {difference}\n  ours:      {f:?}\n  reference: {r:?}\n\n",
                entry.name,
                crate::describe(request)
            );
            let counts = self.allowed.entry(entry.name).or_default();
            match part {
                Part::Corpus => counts.0 += 1,
                Part::Generated => counts.1 += 1,
            }
            if part == Part::Generated && is_write(request) {
                self.case.allowed_write = Some((request.clone(), f.clone(), r.clone()));
            }
            return true;
        }
        let setup = self.case.setup.as_ref();
        let stored = part == Part::Generated
            && self.case.allowed_write.as_ref().is_some_and(|(write, fw, rw)| {
                stored_as_answered(self.subject, write, fw, setup.map(|s| &s.0), f)
                    && stored_as_answered(self.subject, write, rw, setup.map(|s| &s.1), r)
            });
        if stored {
            self.stored_as_answered += 1;
        }
        stored
    }

    fn unexplained(
        &mut self,
        request: &Request,
        difference: &str,
        tested: &Result<Answer, String>,
        reference: &Result<Answer, String>,
    ) {
        let described = crate::describe(request);
        self.unexplained.push(format!("{described}\n    {difference}"));
        self.details +=
            &format!("{described}\n  {difference}\n  ours:      {tested:?}\n  reference: {reference:?}\n\n");
    }

    /// The entries that fired more often than they may, or never: each with why.
    pub fn entries_out_of_bounds(&self) -> Vec<String> {
        let mut out = Vec::new();
        for entry in allowed::ON_PURPOSE {
            let (corpus, generated) = self.allowed.get(entry.name).copied().unwrap_or_default();
            let bound = entry.generated_bound(self.generated);
            if entry.seen_in.contains(&self.subject.plural) && corpus + generated == 0 {
                out.push(format!("stale (never fired; remove it or restore its requests): {}", entry.name));
            }
            if corpus > entry.corpus {
                out.push(format!(
                    "fired {corpus} times on the corpus, at most {} allowed: {}",
                    entry.corpus, entry.name
                ));
            }
            if generated > bound {
                out.push(format!(
                    "fired {generated} times on {} generated requests, at most {bound} allowed ({} per 1,000): {}",
                    self.generated, entry.per_thousand, entry.name
                ));
            }
        }
        for name in allowed::no_longer_seen(&self.to_fix) {
            out.push(format!("no longer differs (remove it from TO_FIX): {name}"));
        }
        out
    }

    pub fn report(&self) -> String {
        let on_purpose: usize = self.allowed.values().map(|(c, g)| c + g).sum();
        let mut text = format!(
            "{} requests compared ({} generated): {} answered the same, {} differ on purpose, {} reads after an allowed write differ as each side stored what it answered, {} differ by known defects, {} follow from a defect of their generated case's write, {} unexplained\n",
            self.compared,
            self.generated,
            self.same,
            on_purpose,
            self.stored_as_answered,
            self.to_fix.values().sum::<usize>(),
            self.follow_ups,
            self.unexplained.len()
        );
        text += "  on purpose   corpus (max)  generated (max)\n";
        for entry in allowed::ON_PURPOSE {
            let (corpus, generated) = self.allowed.get(entry.name).copied().unwrap_or_default();
            text += &format!(
                "  {:>13} {:>5} ({:>3}) {:>9} ({:>4})  {}\n{:>44}({})\n",
                "",
                corpus,
                entry.corpus,
                generated,
                entry.generated_bound(self.generated),
                entry.name,
                "",
                entry.reason
            );
        }
        for (name, count) in &self.to_fix {
            text += &format!("  to fix     {count:>4}  {name}\n");
        }
        for problem in self.entries_out_of_bounds() {
            text += &format!("ENTRY {problem}\n");
        }
        for difference in &self.unexplained {
            text += &format!("DIFFERENT {difference}\n");
        }
        text
    }
}

impl Allowed {
    /// How often the entry may fire on `generated` requests: its rate, with room for chance (three
    /// standard deviations of a count of that mean, and two more).
    pub fn generated_bound(&self, generated: usize) -> usize {
        if self.per_thousand == 0 {
            return 0;
        }
        let mean = self.per_thousand as f64 * generated as f64 / 1000.0;
        (mean + 3.0 * mean.sqrt()).ceil() as usize + 2
    }
}

/// Whether `read` (a GET of the case's object) shows what `side_write` answered to `write`: the
/// object it answered, when it wrote that object (for a delete, the object still terminating, or
/// none); the object the setup made (or none, when there was no setup), when it refused the write,
/// only tried it (dryRun) or wrote another object.
fn stored_as_answered(
    subject: &Subject,
    write: &Request,
    side_write: &Answer,
    setup: Option<&Answer>,
    read: &Answer,
) -> bool {
    let dry_run = write.query.split('&').any(|p| p.starts_with("dryRun=") && p != "dryRun=");
    let name = read.body["metadata"]["name"].as_str().or_else(|| read.body["details"]["name"].as_str());
    let answered = answered_object(subject, side_write).filter(|o| o["metadata"]["name"].as_str() == name);
    let written = answered.filter(|_| (200..300).contains(&side_write.code) && !dry_run);
    let not_found = read.code == 404;
    match written {
        Some(object) => {
            let same_object = read.code == 200 && read.body == *object;
            same_object || (write.method == reqwest::Method::DELETE && not_found)
        }
        None => match setup.filter(|s| s.code == 201) {
            Some(setup) => read.code == 200 && read.body == setup.body,
            None => not_found,
        },
    }
}

/// The object an answer to a write carries: the object, or the one item of a deleted collection.
fn answered_object<'a>(subject: &Subject, answer: &'a Answer) -> Option<&'a serde_json::Value> {
    let body = &answer.body;
    let kind = body["kind"].as_str()?;
    if kind == subject.kind {
        Some(body)
    } else if kind == subject.list_kind() {
        body["items"].as_array().filter(|items| items.len() == 1).and_then(|items| items.first())
    } else {
        None
    }
}
