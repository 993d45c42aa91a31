//! What a run found, and the rules that judge each difference:
//!
//! - A 5xx of ours that differs from the reference's answer is never allowed, unless
//!   the reference failed (5xx) too.
//! - A difference is allowed only by entries of [`allowed::ON_PURPOSE`] that compare both
//!   answers. Every header of [`crate::Header`] must be the same on both sides but for those the
//!   entry names; an entry that judges only headers ([`Allowed::headers_only`]) lets the rest
//!   be compared as if its headers were the same, by equality or by another entry.
//! - Each entry fires exactly as often as [`Allowed::expected`] says in a subject's default run
//!   (the hand-written corpus, and the generated requests of [`crate::FIXED_SEED`]), or within
//!   its stated slack where the reference's answers depend on timing, and never in the default
//!   run of a subject it does not name; in a run of another seed or size the corpus count is
//!   still checked so and the generated count is bounded by [`Allowed::per_thousand`]. The same
//!   holds for [`allowed::TO_FIX`].
//! - A difference that follows an earlier one in the same generated case is skipped only when
//!   that earlier one was a defect (unexplained or [`allowed::TO_FIX`]) of a write: the read
//!   after it depends on what the write stored. After an allowed difference of a write, the two
//!   sides' read of the object is compared as any request; when it differs and no entry allows
//!   the read itself, the two reads may differ only in the fields the write's entry names
//!   ([`Allowed::stored`]), and each side's read must show what that side answered to the write.

use crate::allowed::{self, Allowed, Path};
use crate::exchange::{Answer, Request};
use crate::reach::Reach;
use crate::subject::Subject;
use std::collections::BTreeMap;

/// The part of a run a request belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Part {
    Corpus,
    Generated,
}

/// The answers of the generated case being run, or of the corpus's write being run, as far as
/// their rules need them.
#[derive(Default)]
struct Case {
    /// `generated #N`, or the label of a write of the corpus.
    name: String,
    /// Whether the case is a write of the corpus (its object read before and, after an allowed
    /// difference, after it).
    corpus: bool,
    /// Both sides' object before the write: their answers to the generated case's setup create,
    /// or their reads before a write of the corpus.
    before: Option<(Answer, Answer)>,
    /// A write of the case whose difference was a defect.
    defective_write: bool,
    /// The case's write whose difference was allowed, both answers to it, and the fields in
    /// which its entries let the two sides' stored objects differ.
    allowed_write: Option<AllowedWrite>,
}

/// A write of a generated case whose difference was allowed.
struct AllowedWrite {
    request: Request,
    ours: Answer,
    reference: Answer,
    stored: Vec<Path>,
    /// Where ours wrote and the reference refused: what the write must have stored on our side
    /// ([`crate::expected`]), or why that cannot be told.
    expected: Option<Result<Option<serde_json::Value>, String>>,
}

/// What a run found.
pub struct Tally {
    subject: &'static Subject,
    /// Whether the run is the default one (the fixed seed and the default number of generated
    /// requests), whose counts per entry are exact.
    default_run: bool,
    /// Whether the corpus is the subject's own, whose counts per entry the tables give (a
    /// phase with a corpus of its own counts none).
    pub own_corpus: bool,
    pub compared: usize,
    pub same: usize,
    pub generated: usize,
    /// Requests whose difference entries of [`allowed::ON_PURPOSE`] explain (one request may
    /// count under two entries: one of its headers, one of the rest).
    pub on_purpose: usize,
    /// How often each entry of [`allowed::ON_PURPOSE`] fired, on the corpus and on generated requests.
    pub allowed: BTreeMap<&'static str, (usize, usize)>,
    /// How often each entry of [`allowed::TO_FIX`] (or group of its labels) fired, likewise.
    pub to_fix: BTreeMap<&'static str, (usize, usize)>,
    /// Reads after an allowed write that differ only in the fields its entry names, each side's
    /// showing what it answered.
    pub stored_as_answered: usize,
    /// Reads after a write of ours the reference refused, ours showing what the write must
    /// have stored ([`crate::expected`]) and the reference's the object before it.
    pub stored_as_computed: usize,
    /// Differences after a defect of a write of the same generated case, which they follow from.
    pub follow_ups: usize,
    case: Case,
    pub unexplained: Vec<String>,
    /// Both answers to each unexplained difference and each known defect, for the report file.
    pub details: String,
    /// Both answers to each allowed difference, by entry, for the audit file.
    pub allowed_details: String,
    /// The same as JSON lines (`{"entries", "request", "ours", "reference"}`), known defects
    /// included, from which the tables' examples are taken.
    pub allowed_examples: String,
    /// What the generated requests reached.
    pub reach: Reach,
}

/// How the label of the read of a case's object after its write ends.
const AFTER: &str = ": the object after it";

/// Whether `request` is the read of a case's object after its write.
fn is_after(request: &Request) -> bool {
    request.label.ends_with(AFTER)
}

/// Whether `request` may change what is stored.
fn is_write(request: &Request) -> bool {
    request.method != reqwest::Method::GET
}

impl Tally {
    /// An empty tally for a run on `subject`; `default_run` when its generated requests are the
    /// default run's (their counts per entry are then exact).
    pub fn new(subject: &'static Subject, default_run: bool) -> Self {
        Self {
            subject,
            default_run,
            own_corpus: true,
            compared: 0,
            same: 0,
            on_purpose: 0,
            generated: 0,
            allowed: BTreeMap::new(),
            to_fix: BTreeMap::new(),
            stored_as_answered: 0,
            stored_as_computed: 0,
            follow_ups: 0,
            case: Case::default(),
            unexplained: Vec::new(),
            details: String::new(),
            allowed_details: String::new(),
            allowed_examples: String::new(),
            reach: Reach::default(),
        }
    }

    /// Whether the run is the default one (exact counts; every required kind reached).
    pub fn is_default_run(&self) -> bool {
        self.default_run
    }

    pub fn record(
        &mut self,
        part: Part,
        request: &Request,
        tested: Result<Answer, String>,
        reference: Result<Answer, String>,
    ) {
        self.compared += 1;
        // A reference that reset the stream (its handler panicked) is compared as an answer:
        // only an entry of the tables may excuse the difference (never a reset of ours).
        let reference = reference.or_else(|error| Answer::reset(&error).ok_or(error));
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
        if part == Part::Generated {
            self.reach.record(self.subject, request, r);
        }
        if part == Part::Generated && request.label.ends_with(": setup") {
            self.case.before = Some((f.clone(), r.clone()));
        }
        if let Some(verdict) = self.stored_verdict(part, request, f, r) {
            match verdict {
                None => self.stored_as_computed += 1,
                Some(why) => self.unexplained(request, &why, &tested, &reference),
            }
            return;
        }
        let Some(difference) = difference else {
            match self.not_as_answered(part, request, f) {
                Some(why) => self.unexplained(request, &why, &tested, &reference),
                None => self.same += 1,
            }
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
                let counts = self.to_fix.entry(name).or_default();
                match part {
                    Part::Corpus => counts.0 += 1,
                    Part::Generated => counts.1 += 1,
                }
                self.details += &format!(
                    "TO FIX ({name}): {}\n  {difference}\n  ours:      {f:?}\n  reference: {r:?}\n\n",
                    crate::describe(request)
                );
                let example = serde_json::json!({"entries": [name], "request": request, "ours": f, "reference": r});
                self.allowed_examples += &format!("{example}\n");
            }
            None => self.unexplained(request, &difference, &tested, &reference),
        }
    }

    /// Whether entries of the tables, or what each side stored after an allowed write, explain
    /// the difference (counted).
    fn explained(&mut self, part: Part, request: &Request, f: &Answer, r: &Answer, difference: &str) -> bool {
        if let Some(entries) = explaining(self.subject, request, f, r) {
            self.on_purpose += 1;
            for entry in &entries {
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
            }
            let names: Vec<&str> = entries.iter().map(|e| e.name).collect();
            let example = serde_json::json!({"entries": names, "request": request, "ours": f, "reference": r});
            self.allowed_examples += &format!("{example}\n");
            if self.in_case(part, request) && is_write(request) {
                let stored = entries.iter().flat_map(|e| e.stored.iter().copied()).collect();
                let expected = self.expected(request, f, r);
                let (request, ours, reference) = (request.clone(), f.clone(), r.clone());
                self.case.allowed_write = Some(AllowedWrite { request, ours, reference, stored, expected });
            }
            return true;
        }
        let before = self.case.before.as_ref();
        let stored = self.in_case(part, request)
            && self.case.allowed_write.as_ref().is_some_and(|write| {
                let subject = self.subject;
                reads_alike_but(&write.stored, write.one_side_wrote(), f, r)
                    && stored_as_answered(subject, &write.request, &write.ours, before.map(|s| &s.0), f)
                    && stored_as_answered(subject, &write.request, &write.reference, before.map(|s| &s.1), r)
            });
        if stored {
            self.stored_as_answered += 1;
        }
        stored
    }

    /// Why our read of the object after an allowed write of its generated case, the same as
    /// the reference's, still does not show what we answered to the write (for a delete, the
    /// object the setup made, now gone); `None` when it does, or `read` is no such read.
    fn not_as_answered(&self, part: Part, request: &Request, read: &Answer) -> Option<String> {
        let write = self.case.allowed_write.as_ref().filter(|_| self.in_case(part, request) && is_after(request))?;
        let before = self.case.before.as_ref().map(|s| &s.0);
        let shown = stored_as_answered(self.subject, &write.request, &write.ours, before, read);
        (!shown).then(|| {
            format!(
                "our read after an allowed write does not show what we answered to it: {}",
                crate::describe(&write.request)
            )
        })
    }

    /// Whether `request` belongs to the case being run: any generated request (its case is
    /// the one its label names), or the corpus's write being run and the read after it.
    fn in_case(&self, part: Part, request: &Request) -> bool {
        let name = &self.case.name;
        part == Part::Generated
            || (self.case.corpus
                && request.label.strip_prefix(name.as_str()).is_some_and(|rest| rest.is_empty() || rest == AFTER))
    }

    /// What `write` must have stored on our side, where ours wrote (not as a dry run) and the
    /// reference refused; `None` otherwise.
    fn expected(
        &self,
        write: &Request,
        ours: &Answer,
        reference: &Answer,
    ) -> Option<Result<Option<serde_json::Value>, String>> {
        let wrote = (200..300).contains(&ours.code) && !dry_run(write);
        if !wrote || (200..300).contains(&reference.code) {
            return None;
        }
        let before = match self.case.before.as_ref().map(|b| &b.0) {
            None => None,
            Some(read) if read.code == 404 => None,
            Some(read) if read.code == 200 || read.code == 201 => Some(&read.body),
            Some(read) => return Some(Err(format!("the object before it could not be read ({})", read.code))),
        };
        Some(crate::expected::stored(self.subject, write, before, ours))
    }

    /// For the read after a write of ours the reference refused: `Some(None)` when our read
    /// shows what the write must have stored (and our answer to the write was it), the
    /// reference's read the object before it, and the reads' headers are the same;
    /// `Some(Some(why))` when not; `None` for any other request.
    fn stored_verdict(
        &self,
        part: Part,
        request: &Request,
        ours: &Answer,
        reference: &Answer,
    ) -> Option<Option<String>> {
        let write = self.case.allowed_write.as_ref().filter(|_| self.in_case(part, request) && is_after(request))?;
        let expected = write.expected.as_ref()?;
        let described = crate::describe(&write.request);
        let expected = match expected {
            Ok(expected) => expected,
            Err(why) => return Some(Some(format!("what our write stored cannot be told ({why}): {described}"))),
        };
        let answered = match (expected, write.request.method == reqwest::Method::DELETE) {
            (Some(object), false) => crate::exchange::first_difference("answer", &write.ours.body, object),
            _ => None,
        };
        let before = self.case.before.as_ref().map(|b| &b.1);
        let reference_kept = stored_as_answered(self.subject, &write.request, &write.reference, before, reference);
        let why = if let Some(difference) = crate::expected::difference(expected, ours).or(answered) {
            format!(
                "our stored object is not what the write must store, computed from the object before it and the request ({difference}): {described}"
            )
        } else if !reference_kept {
            format!("the reference's read after a write it refused does not show the object before it: {described}")
        } else if let Some(header) = ours.header_difference(reference, &[]) {
            format!("the reads after a write the reference refused differ in a header ({header}): {described}")
        } else {
            return Some(None);
        };
        Some(Some(why))
    }

    /// Starts the corpus's `write`, whose object both sides read (`before`) just before it.
    pub fn corpus_write(&mut self, write: &Request, before: (Result<Answer, String>, Result<Answer, String>)) {
        let before = match before {
            (Ok(ours), Ok(reference)) => Some((ours, reference)),
            _ => None,
        };
        self.case = Case { name: write.label.clone(), corpus: true, before, ..Case::default() };
    }

    /// The read of the object after `write`, of the corpus, when its difference was allowed:
    /// both sides' stored objects are then compared as after a generated case's write.
    pub fn read_after(&self, part: Part, write: &Request) -> Option<Request> {
        let allowed = self.case.allowed_write.as_ref().filter(|w| w.request.label == write.label);
        allowed.filter(|_| part == Part::Corpus && self.case.corpus)?;
        self.read_of(write).map(|read| Request { label: format!("{}{AFTER}", write.label), ..read })
    }

    /// A read of the one object `write` writes (a POST's, by the name its body gives), if any.
    pub fn read_of(&self, write: &Request) -> Option<Request> {
        if !is_write(write) {
            return None;
        }
        let path = write.path.strip_suffix("/status").unwrap_or(&write.path);
        let path = if self.subject.is_object_path(path) {
            path.to_string()
        } else if write.method == reqwest::Method::POST && self.subject.is_object_path(&format!("{path}/name")) {
            let body = crate::expected::body_of(write)?;
            format!("{path}/{}", body["metadata"]["name"].as_str().filter(|n| !n.is_empty())?)
        } else {
            return None;
        };
        Some(Request::new(format!("{}: the object before it", write.label), reqwest::Method::GET, path))
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

    /// The entries that fired other than they must: each with why.
    pub fn entries_out_of_bounds(&self) -> Vec<String> {
        let tables = [(allowed::ON_PURPOSE, &self.allowed), (allowed::TO_FIX, &self.to_fix)];
        let mut out: Vec<String> = tables
            .into_iter()
            .flat_map(|(entries, fired)| {
                entries.iter().map(move |e| (e, fired.get(e.name).copied().unwrap_or_default()))
            })
            .filter_map(|(entry, counts)| self.out_of_bounds(entry, counts))
            .collect();
        let own_corpus = self.own_corpus;
        for name in allowed::no_longer_seen(&self.to_fix).into_iter().filter(|_| own_corpus) {
            out.push(format!("no longer differs (remove it from TO_FIX): {name}"));
        }
        out
    }

    /// Why `entry`, fired `corpus` and `generated` times, fired other than it must, if it did.
    fn out_of_bounds(&self, entry: &Allowed, (corpus, generated): (usize, usize)) -> Option<String> {
        let (low, high) = self.corpus_range(entry);
        if corpus < low || corpus > high {
            return Some(format!("fired {corpus} times on the corpus, {low} to {high} expected: {}", entry.name));
        }
        let (low, high) = self.generated_range(entry);
        (generated < low || generated > high).then(|| {
            format!(
                "fired {generated} times on {} generated requests, {low} to {high} expected{}: {}",
                self.generated,
                if self.default_run { " (the default run)" } else { "" },
                entry.name
            )
        })
    }

    /// How often `entry` may fire on the corpus: its expected count, within its slack.
    fn corpus_range(&self, entry: &Allowed) -> (usize, usize) {
        if !self.own_corpus {
            return (0, usize::MAX);
        }
        let expected = entry.expected_in(self.subject.plural);
        expected.around(expected.corpus)
    }

    /// How often `entry` may fire on this run's generated requests: the expected count of the
    /// default run (within its slack), or at most its statistical bound.
    fn generated_range(&self, entry: &Allowed) -> (usize, usize) {
        let expected = entry.expected_in(self.subject.plural);
        if self.default_run { expected.around(expected.generated) } else { (0, entry.generated_bound(self.generated)) }
    }

    pub fn report(&self) -> String {
        let firings: usize = self.allowed.values().map(|(c, g)| c + g).sum();
        let mut text = format!(
            "{} requests compared ({} generated): {} answered the same, {} differ on purpose (explained {} times: a header and the rest of an answer count under two entries), {} reads after an allowed write differ only in the fields its entry names (each side showing what it answered), {} reads after a write of ours the reference refused show what it must have stored, {} differ by known defects, {} follow from a defect of their generated case's write, {} unexplained\n",
            self.compared,
            self.generated,
            self.same,
            self.on_purpose,
            firings,
            self.stored_as_answered,
            self.stored_as_computed,
            self.to_fix.values().map(|(c, g)| c + g).sum::<usize>(),
            self.follow_ups,
            self.unexplained.len()
        );
        text += if self.default_run {
            "  on purpose   corpus (expected)  generated (expected)\n"
        } else {
            "  on purpose   corpus (expected)  generated (max)\n"
        };
        let rows = allowed::ON_PURPOSE
            .iter()
            .map(|e| (e, self.allowed.get(e.name)))
            .chain(allowed::TO_FIX.iter().map(|e| (e, self.to_fix.get(e.name))));
        for (entry, fired) in rows {
            let (corpus, generated) = fired.copied().unwrap_or_default();
            text += &format!(
                "  {:>11} {:>5} ({:>5}) {:>8} ({:>5})  {}\n{:>44}({})\n",
                "",
                corpus,
                range_text(self.corpus_range(entry), true),
                generated,
                range_text(self.generated_range(entry), self.default_run),
                entry.name,
                "",
                entry.reason
            );
        }
        for (name, (corpus, generated)) in &self.to_fix {
            text += &format!("  to fix     {corpus:>4} {generated:>4}  {name}\n");
        }
        for problem in self.entries_out_of_bounds() {
            text += &format!("ENTRY {problem}\n");
        }
        if self.generated > 0 {
            text += &self.reach.report();
        }
        if self.default_run {
            for missing in self.reach.missing() {
                text += &format!("NOT REACHED {missing}\n");
            }
        }
        for difference in &self.unexplained {
            text += &format!("DIFFERENT {difference}\n");
        }
        text
    }
}

/// A count's bounds as the report prints them: `low-high`, one number when they are equal, or
/// the upper bound alone where there is no lower one (`with_low` false).
fn range_text((low, high): (usize, usize), with_low: bool) -> String {
    if high == usize::MAX {
        return "any".into();
    }
    if low == high || !with_low { high.to_string() } else { format!("{low}-{high}") }
}

impl Allowed {
    /// How often the entry may fire on `generated` requests of a run other than the default:
    /// its rate, with room for chance (three standard deviations of a count of that mean, and
    /// two more).
    pub fn generated_bound(&self, generated: usize) -> usize {
        if self.per_thousand == 0 {
            return 0;
        }
        let mean = self.per_thousand as f64 * generated as f64 / 1000.0;
        (mean + 3.0 * mean.sqrt()).ceil() as usize + 2
    }

    /// Its expected counts in the default run of the subject `plural` (none when it does not
    /// name it).
    pub fn expected_in(&self, plural: &str) -> crate::allowed::Expected {
        let none = crate::allowed::Expected { subject: "", corpus: 0, generated: 0, slack: 0 };
        self.expected.iter().find(|e| e.subject == plural).copied().unwrap_or(none)
    }
}

/// The entries that together explain the difference between `tested` and `reference`: entries
/// judging only headers, each making its headers the same, then one entry judging the rest
/// (none when the headers were all that differed); `None` when they do not explain it.
pub fn explaining(
    subject: &Subject,
    request: &Request,
    tested: &Answer,
    reference: &Answer,
) -> Option<Vec<&'static Allowed>> {
    let mut reference = reference.clone();
    let mut entries: Vec<&'static Allowed> = Vec::new();
    loop {
        if crate::difference(tested, &reference).is_none() {
            return (!entries.is_empty()).then_some(entries);
        }
        let whole = allowed::ON_PURPOSE.iter().find(|e| {
            !e.headers_only
                && tested.header_difference(&reference, e.headers).is_none()
                && (e.applies)(subject, request, tested, &reference)
        });
        if let Some(entry) = whole {
            entries.push(entry);
            return Some(entries);
        }
        let headers = allowed::ON_PURPOSE.iter().find(|e| {
            e.headers_only
                && !entries.iter().any(|fired| std::ptr::eq(*fired, *e))
                && (e.applies)(subject, request, tested, &reference)
        })?;
        for header in headers.headers {
            reference.set_header(*header, tested);
        }
        entries.push(headers);
    }
}

/// Whether two reads are the same but for `fields` of their bodies ([`allowed::WHOLE`]: any
/// two reads, where `one_side_wrote`), and have the same headers.
fn reads_alike_but(fields: &[Path], one_side_wrote: bool, ours: &Answer, reference: &Answer) -> bool {
    if one_side_wrote && fields.iter().any(|f| f.is_empty()) {
        return ours.header_difference(reference, &[]).is_none();
    }
    let without = |answer: &Answer| {
        let mut body = answer.body.clone();
        for field in fields {
            remove_field(&mut body, field);
        }
        Answer { body, ..answer.clone() }
    };
    crate::difference(&without(ours), &without(reference)).is_none()
}

/// Removes the member at `field` of `value`, if there is one.
fn remove_field(value: &mut serde_json::Value, field: &[&str]) {
    let Some((last, parents)) = field.split_last() else { return };
    let parent = parents.iter().try_fold(value, |at, name| at.get_mut(*name));
    if let Some(map) = parent.and_then(serde_json::Value::as_object_mut) {
        map.remove(*last);
    }
}

/// Whether `read` (a GET of the case's object) shows what `side_write` answered to `write`: the
/// object it answered, when it wrote that object (for a delete, the object still terminating,
/// or none, the answer then being the object as it was); the object `before` it (or none, when
/// there was none: no setup, or a read before it that found none), when it refused the write,
/// only tried it (dryRun) or wrote another object.
fn stored_as_answered(
    subject: &Subject,
    write: &Request,
    side_write: &Answer,
    before: Option<&Answer>,
    read: &Answer,
) -> bool {
    let dry_run = dry_run(write);
    let name = read.body["metadata"]["name"].as_str().or_else(|| read.body["details"]["name"].as_str());
    let answered = answered_object(subject, side_write).filter(|o| o["metadata"]["name"].as_str() == name);
    let written = answered.filter(|_| (200..300).contains(&side_write.code) && !dry_run);
    let not_found = read.code == 404;
    let made = before.filter(|s| s.code == 200 || s.code == 201);
    match written {
        Some(object) => {
            let same_object = read.code == 200 && read.body == *object;
            // Deleted at once: the answer is the object as the setup made it, at the deletion's
            // own resourceVersion (as etcd3's store decodes a deleted object).
            let deleted = write.method == reqwest::Method::DELETE
                && not_found
                && made.is_none_or(|setup| deleted_as_made(&setup.body, object));
            same_object || deleted
        }
        None => match made {
            Some(setup) => read.code == 200 && read.body == setup.body,
            None => not_found,
        },
    }
}

impl AllowedWrite {
    /// Whether one side wrote (not as a dry run) and the other refused.
    fn one_side_wrote(&self) -> bool {
        let wrote = |answer: &Answer| (200..300).contains(&answer.code) && !dry_run(&self.request);
        wrote(&self.ours) != wrote(&self.reference)
    }
}

/// Whether `write` is a dry run: its query says so, but for a DELETE with a body, whose
/// `DeleteOptions` alone count (the kube-apiserver reads the query only without a body).
fn dry_run(write: &Request) -> bool {
    match &write.body {
        Some(body) if write.method == reqwest::Method::DELETE && !body.is_empty() => {
            let options: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
            options["dryRun"].as_array().is_some_and(|modes| !modes.is_empty())
        }
        _ => write.query.split('&').any(|p| p.starts_with("dryRun=") && p != "dryRun="),
    }
}

/// Whether `deleted`, a DELETE's answer, is the object `made` but for a new resourceVersion.
fn deleted_as_made(made: &serde_json::Value, deleted: &serde_json::Value) -> bool {
    let version = |object: &serde_json::Value| object["metadata"]["resourceVersion"].clone();
    let mut at_its_version = made.clone();
    at_its_version["metadata"]["resourceVersion"] = version(deleted);
    version(made) != version(deleted) && at_its_version == *deleted
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subject::tests::WIDGETS;
    use reqwest::Method;
    use serde_json::{Value, json};

    fn status(code: u16, reason: &str, message: &str) -> Answer {
        Answer::json(code, json!({"kind": "Status", "code": code, "reason": reason, "message": message}))
    }

    fn widget(label: &str) -> Value {
        json!({"apiVersion": "test.example.com/v1", "kind": "Widget",
               "metadata": {"name": "g-0-1", "uid": "<uid>", "resourceVersion": "<rv>", "labels": {"l": label}}})
    }

    fn names(entries: Option<Vec<&'static Allowed>>) -> Option<Vec<&'static str>> {
        entries.map(|entries| entries.iter().map(|e| e.name).collect())
    }

    #[test]
    fn a_header_the_entry_does_not_name_is_never_excused() {
        let request = Request::new("get", Method::GET, "{gv}/widgets/w").query("resourceVersion=x");
        let ours = status(400, "BadRequest", "invalid resource version");
        let reference = status(400, "BadRequest", "strconv.ParseUint: parsing");
        let wording = names(explaining(&WIDGETS, &request, &ours, &reference));
        assert!(wording.is_some_and(|w| w.len() == 1 && w[0].starts_with("the wording")));
        let uncached = Answer { cache_control: String::new(), ..ours.clone() };
        assert_eq!(names(explaining(&WIDGETS, &request, &uncached, &reference)), None);
        let doubled = Answer { audit_ids: 2, ..ours.clone() };
        assert_eq!(names(explaining(&WIDGETS, &request, &doubled, &reference)), None);
        let gzipped = Answer { content_encoding: "gzip".into(), ..ours.clone() };
        assert_eq!(names(explaining(&WIDGETS, &request, &gzipped, &reference)), None);
        let warned = Answer { warnings: vec!["299 - \"unknown field \\\"spec.x\\\"\"".into()], ..ours };
        assert_eq!(names(explaining(&WIDGETS, &request, &warned, &reference)), None, "no field x in the body");
    }

    #[test]
    fn an_entry_of_headers_makes_them_the_same_and_another_entry_judges_the_rest() {
        let request = Request::new("to v9", Method::PATCH, "{gv}/widgets/w")
            .content_type("application/merge-patch+json")
            .json(&json!({"apiVersion": "test.example.com/v9"}));
        let invalid = |message: &str| {
            let cause = json!({"field": "apiVersion", "reason": "FieldValueInvalid", "message": message});
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Invalid", "code": 422,
                "message": message, "details": {"causes": [cause]}})
        };
        let ours = Answer::json(422, invalid("must be test.example.com/v1"));
        let mut reference = Answer::json(422, invalid("Invalid value: must be test.example.com/v1"));
        reference.warnings.push(r#"299 - "unknown field \"spec\"""#.into());
        let both = names(explaining(&WIDGETS, &request, &ours, &reference)).expect("explained");
        assert_eq!(both.len(), 2, "{both:?}");
        assert!(both[0].starts_with("a merge patch to a version") && both[1].starts_with("the wording"), "{both:?}");
        let same_words = Answer { warnings: reference.warnings.clone(), ..ours.clone() };
        assert_eq!(names(explaining(&WIDGETS, &request, &ours, &same_words)).map(|n| n.len()), Some(1));
        let mut tally = Tally::new(&WIDGETS, false);
        tally.record(Part::Corpus, &request, Ok(ours.clone()), Ok(reference.clone()));
        let firings: usize = tally.allowed.values().map(|(c, g)| c + g).sum();
        assert_eq!((tally.compared, tally.on_purpose, firings), (1, 1, 2), "one request, counted under two entries");
        let nested = Answer { warnings: vec![r#"299 - "unknown field \"spec.size\"""#.into()], ..reference };
        assert_eq!(names(explaining(&WIDGETS, &request, &ours, &nested)), None);
    }

    /// A generated case of WIDGETS: its setup, a DELETE whose answers the DELETE entry allows
    /// (ours `answered`), and the read after it on each side.
    fn delete_case(answered: Value, ours_read: Answer, reference_read: Answer) -> Tally {
        let mut tally = Tally::new(&WIDGETS, false);
        let setup = Request::new("generated #0: setup", Method::POST, "{gv}/widgets");
        let made = Answer::json(201, widget("a"));
        tally.record(Part::Generated, &setup, Ok(made.clone()), Ok(made));
        let delete = Request::new("generated #0: delete g-0-1", Method::DELETE, "{gv}/widgets/g-0-1");
        let details = json!({"name": "g-0-1", "group": "test.example.com", "kind": "widgets", "uid": "<uid>"});
        let success = Answer::json(200, json!({"kind": "Status", "status": "Success", "details": details}));
        tally.record(Part::Generated, &delete, Ok(Answer::json(200, answered)), Ok(success));
        let read = Request::new("generated #0: the object after it", Method::GET, "{gv}/widgets/g-0-1");
        tally.record(Part::Generated, &read, Ok(ours_read), Ok(reference_read));
        tally
    }

    #[test]
    fn after_an_allowed_write_the_reads_are_compared_and_ours_shows_what_we_answered() {
        let gone = || {
            let details = json!({"name": "g-0-1", "group": "test.example.com", "kind": "widgets"});
            Answer::json(404, json!({"kind": "Status", "code": 404, "reason": "NotFound", "details": details}))
        };
        // The deleted object, at the deletion's resourceVersion.
        let deleted = |label: &str| {
            let mut object = widget(label);
            object["metadata"]["resourceVersion"] = json!("<rv g-0-1 #2>");
            object
        };
        let tally = delete_case(deleted("a"), gone(), gone());
        assert!(tally.unexplained.is_empty(), "{:?}", tally.unexplained);
        assert_eq!(tally.allowed.values().map(|(_, g)| g).sum::<usize>(), 1);
        // The reference still has the object, ours does not: the DELETE entry names no field.
        let tally = delete_case(deleted("a"), gone(), Answer::json(200, widget("a")));
        assert_eq!(tally.unexplained.len(), 1, "{:?}", tally.unexplained);
        // Both gone, but our DELETE answered an object the setup did not make, or the object at
        // its last write's resourceVersion instead of the deletion's.
        for answered in [deleted("b"), widget("a")] {
            let tally = delete_case(answered, gone(), gone());
            assert_eq!(tally.unexplained.len(), 1, "{:?}", tally.unexplained);
            assert!(tally.unexplained[0].contains("does not show what we answered"), "{:?}", tally.unexplained);
        }
    }

    /// A corpus apply of a Widget with an undeclared field, which the reference cannot type,
    /// and both sides' reads after it: ours `stored`.
    fn untypable_apply(stored: Value) -> Tally {
        let mut tally = Tally::new(&WIDGETS, false);
        let yaml =
            "apiVersion: test.example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n  horns: 2\n";
        let apply = Request::new("apply: an undeclared field", Method::PATCH, "{gv}/widgets/w")
            .query("fieldManager=alice")
            .content_type("application/apply-patch+yaml")
            .body(yaml);
        let none = || Ok(status(404, "NotFound", "widgets \"w\" not found"));
        let before = tally.read_of(&apply).expect("a read of the applied object");
        assert_eq!((before.method.clone(), before.path.as_str()), (Method::GET, "{gv}/widgets/w"));
        tally.corpus_write(&apply, (none(), none()));
        let entry = json!([{"apiVersion": "test.example.com/v1", "fieldsType": "FieldsV1", "manager": "alice",
            "fieldsV1": {"f:spec": {"f:size": {}}}, "operation": "Apply", "time": "<time>"}]);
        let made = json!({"apiVersion": "test.example.com/v1", "kind": "Widget", "metadata": {"name": "w",
            "uid": "<uid w #1>", "resourceVersion": "<rv w #1>", "creationTimestamp": "<creationTimestamp #1>",
            "generation": 1, "managedFields": entry}, "spec": {"size": 3}});
        let ours =
            Answer { warnings: vec![r#"299 - "unknown field \"spec.horns\"""#.into()], ..Answer::json(201, made) };
        let why = "failed to create typed patch object (/w; test.example.com/v1, Kind=Widget): .spec.horns: field not declared in schema";
        tally.record(Part::Corpus, &apply, Ok(ours), Ok(status(500, "", why)));
        assert_eq!(tally.allowed.len(), 1, "the apply entry: {:?}", tally.unexplained);
        let read = tally.read_after(Part::Corpus, &apply).expect("a read after the allowed write");
        tally.record(Part::Corpus, &read, Ok(Answer::json(200, stored)), none());
        tally
    }

    #[test]
    fn a_write_of_ours_the_reference_refused_must_store_what_the_request_asked() {
        let made = |horns: bool| {
            let owned = if horns { json!({"f:size": {}, "f:horns": {}}) } else { json!({"f:size": {}}) };
            let entry = json!([{"apiVersion": "test.example.com/v1", "fieldsType": "FieldsV1", "manager": "alice",
                "fieldsV1": {"f:spec": owned}, "operation": "Apply", "time": "<time>"}]);
            let spec = if horns { json!({"size": 3, "horns": 2}) } else { json!({"size": 3}) };
            json!({"apiVersion": "test.example.com/v1", "kind": "Widget", "metadata": {"name": "w",
                "uid": "<uid w #1>", "resourceVersion": "<rv w #1>", "creationTimestamp": "<creationTimestamp #1>",
                "generation": 1, "managedFields": entry}, "spec": spec})
        };
        let tally = untypable_apply(made(false));
        assert!(tally.unexplained.is_empty(), "{:?}", tally.unexplained);
        assert_eq!((tally.compared, tally.stored_as_computed), (2, 1));
        // The undeclared field stored and owned, though the answer did not show it.
        let tally = untypable_apply(made(true));
        assert_eq!(tally.unexplained.len(), 1, "{:?}", tally.unexplained);
        assert!(tally.unexplained[0].contains("not what the write must store"), "{:?}", tally.unexplained);
        assert!(tally.unexplained[0].contains("horns"), "{:?}", tally.unexplained);
    }

    #[test]
    fn the_default_run_counts_each_entry_exactly() {
        let entry = allowed::ON_PURPOSE.iter().find(|e| e.name.starts_with("DELETE")).expect("the DELETE entry");
        let expected = entry.expected_in("widgets");
        assert_eq!((expected.corpus, expected.generated), (0, 0), "WIDGETS is named by no entry");
        let mut tally = delete_case(widget("a"), status(404, "NotFound", ""), status(404, "NotFound", ""));
        tally.default_run = true;
        let problems = tally.entries_out_of_bounds();
        assert!(
            problems.iter().any(|p| p.contains("fired 1 times on 3 generated requests, 0 to 0 expected")),
            "{problems:?}"
        );
        tally.default_run = false;
        assert!(
            tally.entries_out_of_bounds().is_empty(),
            "within the DELETE entry's rate: {:?}",
            tally.entries_out_of_bounds()
        );
        // The corpus is counted as exactly in any run.
        for counts in tally.allowed.values_mut() {
            *counts = (counts.1, 0);
        }
        let problems = tally.entries_out_of_bounds();
        assert!(problems.iter().any(|p| p.contains("fired 1 times on the corpus, 0 to 0 expected")), "{problems:?}");
    }

    #[test]
    fn the_report_prints_a_count_with_slack_as_its_range() {
        assert_eq!(range_text((1, 7), true), "1-7");
        assert_eq!(range_text((13, 13), true), "13");
        // Another seed's generated counts have an upper bound only.
        assert_eq!(range_text((0, 25), false), "25");
    }
}
