//! The rule for Inputs that each resolve alone but not all together. No
//! requester can steer it: nothing a writer picks (the Input's name, when
//! it was written, how often) decides who waits.
//!
//! 1. What is installed and still asked for keeps running: installed
//!    Inputs join first (in seniority order, [`super::input_resolve::Seniority`];
//!    they resolved together before, so they rarely conflict).
//! 2. A new Input that cannot join what is installed waits, told it
//!    conflicts with installed requests ([`Standing::Installed`]).
//! 3. Between new Inputs of which neither is installed, neither is chosen
//!    silently: both wait ([`Standing::Waiting`]), each told that a
//!    conflicting request exists, until a person chooses one
//!    (`status.decision`, written with `kubectl instance decide`, which the
//!    webhooks let only a user with `approve` on the Input write, in her
//!    own name). The chosen Input joins; the one it was chosen over waits
//!    ([`Standing::NotChosen`]). A decision covers the Input's generation
//!    and exactly the Inputs it names: a request changed since, or one
//!    that came later, is not covered.
//! 4. New Inputs that conflict three or more ways (any two resolve, all
//!    of them do not) all wait, as in 3.
//!
//! Dependencies count as the request of the Input that brings them in:
//! "resolves" always means the requests with everything they need.
//!
//! Pure: the resolver is a parameter, so the rule is tested with a real
//! universe and no cluster.

use std::collections::{BTreeMap, BTreeSet};

use pakket_engine::resolve::Request;
use pakket_resolve_api::InputReason;

use crate::inputs::input_resolve::{Answer, Asked, unsatisfiable};
use crate::protocol::resolve::{Outcome, Selection};

/// Where a conflicting Input stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Standing {
    /// It conflicts with what installed Inputs asked for; they keep running.
    Installed,
    /// It conflicts with other new Inputs; all of them wait for a person.
    Waiting,
    /// A person chose another Input over it.
    NotChosen,
}

impl Standing {
    /// The value in `status.conflict.standing`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Installed => "Installed",
            Self::Waiting => "Waiting",
            Self::NotChosen => "NotChosen",
        }
    }
}

impl Standing {
    /// The reason of the Input's `ResolutionFailed` condition.
    pub fn reason(self) -> InputReason {
        match self {
            Self::Installed => InputReason::ConflictsWithInstalled,
            Self::Waiting => InputReason::ConflictWaitsForDecision,
            Self::NotChosen => InputReason::AnotherRequestChosen,
        }
    }
}

/// The reason and message of the `ResolutionFailed` condition of Input
/// `name`: that conflicting requests exist and what settles it, never who
/// made them or what they ask for (`kubectl instance why` shows the ones
/// its reader may read).
pub fn in_words(conflict: &Conflict, name: &str) -> (InputReason, String) {
    let (others, is) = match conflict.with.len() {
        0 => ("what is installed".to_owned(), "is"),
        1 => ("1 other request".to_owned(), "is"),
        n => (format!("{n} other requests"), "are"),
    };
    let see = format!("`kubectl instance why input/{name}` shows the requests you may read");
    let words = match conflict.standing {
        Standing::Installed => format!(
            "it resolves alone but conflicts with {others} installed for another Input; what is \
             installed and still asked for keeps running, so this Input waits until that request \
             changes or goes ({see})"
        ),
        Standing::Waiting => format!(
            "it resolves alone but conflicts with {others} that {is} not installed either; none \
             is chosen on its own: all wait until an admin chooses one with `kubectl instance \
             decide input/NAME` ({see})"
        ),
        Standing::NotChosen => format!(
            "it resolves alone but conflicts with {others}, and a person chose the other over it; \
             it waits until that request changes or goes, or an admin chooses again ({see})"
        ),
    };
    (conflict.standing.reason(), words)
}

/// Whether the bundles an Input's status lists (`instances`) stay in the
/// set though it is not resolved now (`answer`, none when it got none):
/// what it installed keeps
/// running while its request fails. An Input waiting on a conflict keeps
/// only what its children run (`active`: child name to the Bundle it
/// runs), e.g. after its spec changed to something that conflicts: what
/// merely sat in a set waiting for approval is not kept, or keeping it
/// would choose it.
pub fn keeps(
    answer: Option<&Answer>,
    instances: &[crate::inputs::input::ResolvedInstance],
    active: &BTreeMap<String, String>,
) -> bool {
    match answer {
        Some(Answer::Resolved(_) | Answer::OwnedByAnother { .. }) => false,
        Some(Answer::Conflict(_)) => instances.iter().any(|i| active.contains_key(&i.name)),
        _ => !instances.is_empty(),
    }
}

/// For a resolved Input a person chose: who, and over how many others
/// (empty when none covers its generation).
pub fn chosen_note(input: &crate::Input) -> String {
    let Some(decision) = pakket_resolve_api::input::ConflictDecision::current(input) else {
        return String::new();
    };
    if decision.over.is_empty() {
        return String::new();
    }
    format!(
        "; chosen by {} over {} conflicting request(s)",
        decision.chosen_by,
        decision.over.len()
    )
}

/// A conflicting Input's answer: with whom (Input names, for the
/// controller to turn into UIDs), and where it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The other Inputs; empty when only what is installed as a whole
    /// conflicts with it.
    pub with: Vec<String>,
    /// Where it stands.
    pub standing: Standing,
}

/// The outcome of [`settle`].
pub struct Settled<'a> {
    /// The Inputs that joined, in the order they joined.
    pub accepted: Vec<(&'a Asked, &'a Request)>,
    /// The set they resolve to.
    pub set: Vec<Selection>,
    /// Every other Input's answer.
    pub refused: BTreeMap<String, Answer>,
}

/// Settles `live` (sorted by seniority, each resolving alone) by the rule
/// above; `resolve` resolves requests together.
pub fn settle<'a>(
    live: Vec<(&'a Asked, &'a Request)>,
    resolve: impl Fn(&[Request]) -> Outcome,
) -> Settled<'a> {
    let resolves = |members: &[&(&Asked, &Request)]| -> Result<Vec<Selection>, Answer> {
        let requests: Vec<Request> = members.iter().map(|(_, r)| (*r).clone()).collect();
        match resolve(&requests) {
            Outcome::Resolved(resolved) => Ok(resolved.resolved),
            Outcome::NoSolution(failed) => Err(unsatisfiable(&failed)),
            Outcome::BadInput(message) => Err(Answer::Invalid(message)),
        }
    };
    let (installed, new): (Vec<_>, Vec<_>) = live
        .into_iter()
        .partition(|(asked, _)| !asked.seniority.not_installed);
    let mut refused = BTreeMap::new();
    // 1. What is installed, one by one.
    let mut base: Vec<(&Asked, &Request)> = Vec::new();
    let mut set = Vec::new();
    for member in installed {
        let with: Vec<_> = base.iter().chain([&member]).collect();
        match resolves(&with) {
            Ok(resolved) => {
                set = resolved;
                base.push(member);
            }
            Err(answer) => {
                refused.insert(member.0.name.clone(), answer);
            }
        }
    }
    // 2. New Inputs that cannot join what is installed.
    let mut candidates = Vec::new();
    for member in new {
        let with: Vec<_> = base.iter().chain([&member]).collect();
        if resolves(&with).is_ok() {
            candidates.push(member);
            continue;
        }
        let against: Vec<String> = base
            .iter()
            .filter(|other| resolves(&[*other, &member]).is_err())
            .map(|(asked, _)| asked.name.clone())
            .collect();
        refused.insert(
            member.0.name.clone(),
            conflict(against, Standing::Installed),
        );
    }
    // 3. New Inputs among themselves.
    let all: Vec<_> = base.iter().chain(&candidates).collect();
    if let Ok(resolved) = resolves(&all) {
        base.extend(candidates);
        return Settled {
            accepted: base,
            set: resolved,
            refused,
        };
    }
    let clashes = clashes(&base, &candidates, &resolves);
    let joining = judge(&candidates, &clashes, &mut refused);
    // 4. What is left must resolve together, or all of it waits.
    let all: Vec<_> = base.iter().chain(&joining).collect();
    match resolves(&all) {
        Ok(resolved) => {
            set = resolved;
            base.extend(joining);
        }
        Err(_) => {
            for (asked, _) in &joining {
                let with = joining
                    .iter()
                    .filter(|(other, _)| other.name != asked.name)
                    .map(|(other, _)| other.name.clone())
                    .collect();
                refused.insert(asked.name.clone(), conflict(with, Standing::Waiting));
            }
        }
    }
    Settled {
        accepted: base,
        set,
        refused,
    }
}

/// The pairs of candidates (by index) that do not resolve together with
/// `base`.
fn clashes(
    base: &[(&Asked, &Request)],
    candidates: &[(&Asked, &Request)],
    resolves: &impl Fn(&[&(&Asked, &Request)]) -> Result<Vec<Selection>, Answer>,
) -> BTreeSet<(usize, usize)> {
    let mut clashes = BTreeSet::new();
    for (i, a) in candidates.iter().enumerate() {
        for (j, b) in candidates.iter().enumerate().skip(i + 1) {
            let with: Vec<_> = base.iter().chain([a, b]).collect();
            if resolves(&with).is_err() {
                clashes.insert((i, j));
            }
        }
    }
    clashes
}

/// Who of the clashing candidates joins: one a person chose over every
/// Input it clashes with; the ones chosen against are told so, and the
/// rest wait. Candidates that clash with nobody (or only with Inputs
/// chosen against) join.
fn judge<'a>(
    candidates: &[(&'a Asked, &'a Request)],
    clashes: &BTreeSet<(usize, usize)>,
    refused: &mut BTreeMap<String, Answer>,
) -> Vec<(&'a Asked, &'a Request)> {
    let chose = |winner: usize, loser: usize| {
        candidates[winner]
            .0
            .chosen_over
            .contains(&candidates[loser].0.uid)
            && !candidates[loser]
                .0
                .chosen_over
                .contains(&candidates[winner].0.uid)
    };
    let clashing_with = |i: usize| {
        clashes.iter().filter_map(move |&(a, b)| match i {
            _ if a == i => Some(b),
            _ if b == i => Some(a),
            _ => None,
        })
    };
    let name = |i: usize| candidates[i].0.name.clone();
    let mut losers = BTreeSet::new();
    for i in 0..candidates.len() {
        let beaten_by: Vec<usize> = clashing_with(i).filter(|&j| chose(j, i)).collect();
        if !beaten_by.is_empty() {
            losers.insert(i);
            let with = beaten_by.into_iter().map(name).collect();
            refused.insert(name(i), conflict(with, Standing::NotChosen));
        }
    }
    let mut joining = Vec::new();
    for (i, member) in candidates.iter().enumerate() {
        if losers.contains(&i) {
            continue;
        }
        let waits_for: Vec<usize> = clashing_with(i)
            .filter(|j| !losers.contains(j) && !chose(i, *j))
            .collect();
        if waits_for.is_empty() {
            joining.push(*member);
        } else {
            let with = waits_for.into_iter().map(name).collect();
            refused.insert(name(i), conflict(with, Standing::Waiting));
        }
    }
    joining
}

fn conflict(mut with: Vec<String>, standing: Standing) -> Answer {
    with.sort();
    with.dedup();
    Answer::Conflict(Conflict { with, standing })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::input::ResolvedInstance;

    #[test]
    fn a_failing_input_keeps_what_runs_and_a_waiting_one_only_what_runs() {
        let listed = [ResolvedInstance {
            name: "rs-db".into(),
            ..Default::default()
        }];
        let running = BTreeMap::from([("rs-db".to_owned(), "db.v1".to_owned())]);
        let nothing_runs = BTreeMap::new();
        let waiting = Answer::Conflict(Conflict {
            with: vec!["other".into()],
            standing: Standing::Waiting,
        });
        let failed = Answer::Unsatisfiable {
            summary: "s".into(),
            explanation: "e".into(),
        };
        // Its spec changed to one that conflicts: what runs stays.
        assert!(keeps(Some(&waiting), &listed, &running));
        // It only sat in a set waiting for approval: not kept.
        assert!(!keeps(Some(&waiting), &listed, &nothing_runs));
        // Failing for another reason, what it installed stays as before.
        assert!(keeps(Some(&failed), &listed, &nothing_runs));
        assert!(!keeps(Some(&failed), &[], &running));
        assert!(!keeps(
            Some(&Answer::Resolved(listed.to_vec())),
            &listed,
            &running
        ));
    }
}
