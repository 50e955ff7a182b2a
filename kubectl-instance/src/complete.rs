//! Shell completion, two ways.
//!
//! `kubectl instance completion bash|zsh|fish` prints a script (clap_complete)
//! for `kubectl-instance` run by its own name: verbs, flags and their fixed
//! values.
//!
//! `kubectl instance <TAB>` is kubectl's completion (kubectl >= 1.26): kubectl
//! runs the executable `kubectl_complete-instance` from PATH with the words
//! after `instance`, the last being the word under the cursor (empty for a
//! new one), and reads Cobra's `__complete` answer from its stdout: one
//! candidate a line (`VALUE` or `VALUE<TAB>DESCRIPTION`), then `:DIRECTIVE`.
//! Its stderr goes to the terminal and a non-zero exit makes the shell
//! complete file names, so an answer here never fails and never writes to
//! stderr: a cluster that cannot be read completes nothing.
//!
//! `kubectl_complete-instance` is the second binary of this crate, which runs
//! `kubectl-instance __complete WORDS...` beside it; this binary answers the
//! same when it is called by that name (a symlink does too). A binary, not a
//! shell script: nothing to interpret on the user's machine, and the words
//! are passed as they are, never re-split by a shell.
//!
//! What is completed: verbs and `list`'s kinds; flags after `-`; a flag's
//! fixed values (`-o json|yaml|name`); Instance names where a verb takes
//! one, with `operator/`, `helmchart/NAMESPACE/NAME` and the other forms a
//! verb accepts, read from the cluster as the caller (the same
//! `--kubeconfig` and `--context`, when given after `instance`).

use std::io::Write;
use std::time::Duration;

use clap::Arg;
use clap::builder::ValueHint;

use crate::complete_names::{Named, client, cluster_names};

/// The name kubectl looks for on PATH to complete `kubectl instance`.
pub const HELPER: &str = "kubectl_complete-instance";

/// The argument that asks this binary for a completion answer.
pub const VERB: &str = "__complete";

/// Cobra's ShellCompDirectiveNoSpace: the candidate goes on (`helmchart/`).
const NO_SPACE: u8 = 2;
/// Cobra's ShellCompDirectiveNoFileComp: no file names either.
const NO_FILE: u8 = 4;
/// Cobra's ShellCompDirectiveDefault: the shell may complete file names.
const FILES: u8 = 0;

/// How long a completion may wait for the cluster: a person is at the
/// keyboard.
const CLUSTER_WAIT: Duration = Duration::from_secs(5);

/// What the word under the cursor can be.
#[derive(Debug, PartialEq, Eq)]
pub enum Wanted {
    /// Fixed words, each with a description.
    Words(Vec<(String, String)>),
    /// Names from the cluster: `bare` kinds by name alone, `prefixed` as
    /// `PREFIX/NAME`.
    Names {
        /// Kinds whose names stand alone.
        bare: &'static [Named],
        /// Kinds named with their prefix.
        prefixed: &'static [Named],
    },
    /// A file name: the shell completes it.
    Files,
    /// Nothing we can offer.
    Nothing,
}

/// The kinds each verb's name argument takes (the verb's path, the
/// argument's id): bare kinds, then prefixed ones.
fn names_for(path: &[String], arg: &str) -> Option<(&'static [Named], &'static [Named])> {
    use Named::*;
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    Some(match (path.as_slice(), arg) {
        (["describe"], "name") => (
            &[Instance],
            &[
                Operator,
                ClusterPackage,
                Package,
                OperatorRequest,
                HelmChart,
            ],
        ),
        (["why"], "name") => (
            &[Instance],
            &[Input, ClusterPackage, Package, OperatorRequest, HelmChart],
        ),
        (["approve" | "deny"], "name") => (&[Instance], &[OperatorRequest, HelmChart]),
        (["history" | "rollback" | "deps"], "name") => (&[Instance], &[]),
        (["decide"], "name") => (&[Input], &[Input]),
        (["plan"], "target") => (&[Input, Operator], &[Input, Operator]),
        (_, "instance") => (&[Instance], &[]),
        (_, "namespace") => (&[Namespace], &[]),
        _ => return None,
    })
}

/// The parse of the words before the one under the cursor.
struct Position<'a> {
    /// The (sub)command reached.
    command: &'a clap::Command,
    /// The subcommand names that reached it.
    path: Vec<String>,
    /// How many positional values it has been given.
    positionals: usize,
    /// A flag still waiting for its value: the word under the cursor.
    pending: Option<&'a Arg>,
    /// The cluster flags seen, as `--flag=value`, to reach the same cluster.
    cluster: Vec<String>,
}

/// The flags that choose the cluster, carried into the completion's reads.
const CLUSTER_FLAGS: [&str; 3] = ["kubeconfig", "context", "request-timeout"];

/// Walks `words` (all but the one under the cursor) through `root`.
fn position<'a>(root: &'a clap::Command, words: &[String]) -> Position<'a> {
    let mut at = Position {
        command: root,
        path: Vec::new(),
        positionals: 0,
        pending: None,
        cluster: Vec::new(),
    };
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let flag = if let Some(long) = word.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            at.command
                .get_arguments()
                .find(|arg| arg.get_long() == Some(name))
                .map(|arg| (arg, value.map(str::to_owned)))
        } else if let Some(short) = word.strip_prefix('-').filter(|rest| !rest.is_empty()) {
            let mut chars = short.chars();
            let letter = chars.next();
            let rest: String = chars.collect();
            at.command
                .get_arguments()
                .find(|arg| arg.get_short() == letter)
                .map(|arg| (arg, (!rest.is_empty()).then_some(rest)))
        } else {
            None
        };
        if word.starts_with('-') && word.len() > 1 {
            let Some((arg, inline)) = flag else {
                continue;
            };
            if !arg.get_action().takes_values() {
                continue;
            }
            let value = match inline {
                Some(value) => Some(value.clone()),
                None => words.next().cloned(),
            };
            match value {
                Some(value) => {
                    if let Some(long) = arg.get_long().filter(|long| CLUSTER_FLAGS.contains(long)) {
                        at.cluster.push(format!("--{long}={value}"));
                    }
                }
                None => at.pending = Some(arg),
            }
            continue;
        }
        if at.positionals == 0
            && let Some(sub) = at.command.find_subcommand(word)
        {
            at.command = sub;
            at.path.push(sub.get_name().to_owned());
            continue;
        }
        at.positionals += 1;
    }
    at
}

/// The words of `values`, fixed by the argument, with their help.
fn values_of(arg: &Arg) -> Vec<(String, String)> {
    arg.get_possible_values()
        .iter()
        .filter(|value| !value.is_hide_set())
        .map(|value| {
            let help = value
                .get_help()
                .map(ToString::to_string)
                .unwrap_or_default();
            (value.get_name().to_owned(), help)
        })
        .collect()
}

/// What can go where the cursor is, after `words`, typing `partial`.
pub fn wanted(root: &clap::Command, words: &[String], partial: &str) -> Wanted {
    let at = position(root, words);
    let for_value = |arg: &Arg, path: &[String]| {
        let values = values_of(arg);
        if !values.is_empty() {
            return Wanted::Words(values);
        }
        if let Some((bare, prefixed)) = names_for(path, arg.get_id().as_str()) {
            return Wanted::Names { bare, prefixed };
        }
        match arg.get_value_hint() {
            ValueHint::FilePath | ValueHint::AnyPath | ValueHint::DirPath => Wanted::Files,
            _ => Wanted::Nothing,
        }
    };
    if let Some(arg) = at.pending {
        return for_value(arg, &at.path);
    }
    if partial.starts_with('-') {
        let flags = at
            .command
            .get_arguments()
            .filter(|arg| !arg.is_positional() && !arg.is_hide_set())
            .filter_map(|arg| {
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                Some((format!("--{}", arg.get_long()?), first_line(&help)))
            })
            .collect();
        return Wanted::Words(flags);
    }
    if at.positionals == 0 && at.command.has_subcommands() {
        let verbs = at
            .command
            .get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .map(|sub| {
                let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
                (sub.get_name().to_owned(), first_line(&about))
            })
            .collect();
        return Wanted::Words(verbs);
    }
    match at.command.get_positionals().nth(at.positionals) {
        Some(arg) => for_value(arg, &at.path),
        None => Wanted::Nothing,
    }
}

/// A description's head: shells show one short line beside a candidate,
/// so the text up to its first sentence, clause or aside.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let end = [". ", ": ", " (", "; ", ", "]
        .iter()
        .filter_map(|stop| line.find(stop))
        .min()
        .unwrap_or(line.len());
    line[..end].trim().trim_end_matches('.').to_owned()
}

/// Cobra's answer: the candidates starting with `partial`, one a line,
/// then `:DIRECTIVE`.
pub fn answer(candidates: &[(String, String)], partial: &str, files: bool) -> String {
    let mut text = String::new();
    let mut directive = if files { FILES } else { NO_FILE };
    for (value, description) in candidates {
        if !value.starts_with(partial) {
            continue;
        }
        if value.ends_with('/') {
            directive |= NO_SPACE;
        }
        text.push_str(value);
        if !description.is_empty() {
            text.push('\t');
            text.push_str(description);
        }
        text.push('\n');
    }
    text.push_str(&format!(":{directive}\n"));
    text
}

/// Answers a completion request: `words` are those after `instance`, the
/// last the one under the cursor.
pub async fn run(
    root: clap::Command,
    words: &[String],
    out: &mut impl Write,
) -> std::io::Result<()> {
    let mut root = root;
    root.build();
    let (partial, before) = match words.split_last() {
        Some((partial, before)) => (partial.as_str(), before),
        None => ("", words),
    };
    let text = match wanted(&root, before, partial) {
        Wanted::Words(words) => answer(&words, partial, false),
        Wanted::Files => answer(&[], partial, true),
        Wanted::Nothing => answer(&[], partial, false),
        Wanted::Names { bare, prefixed } => {
            let cluster = position(&root, before).cluster;
            let read = async {
                let client = client(&cluster).await?;
                cluster_names(&client, bare, prefixed, partial).await.ok()
            };
            let found = tokio::time::timeout(CLUSTER_WAIT, read)
                .await
                .ok()
                .flatten()
                .unwrap_or_default();
            let candidates: Vec<(String, String)> = found
                .into_iter()
                .map(|name| (name, String::new()))
                .collect();
            answer(&candidates, partial, false)
        }
    };
    out.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn wanted_after(words: &[&str]) -> Wanted {
        let mut root = crate::Cli::command();
        root.build();
        let words: Vec<String> = words.iter().map(|word| (*word).to_owned()).collect();
        let (partial, before) = words.split_last().unwrap();
        wanted(&root, before, partial)
    }

    fn words(wanted: Wanted) -> Vec<String> {
        match wanted {
            Wanted::Words(words) => words.into_iter().map(|(word, _)| word).collect(),
            other => panic!("not words: {other:?}"),
        }
    }

    #[test]
    fn the_first_word_is_a_verb_and_hidden_ones_are_not_offered() {
        let verbs = words(wanted_after(&[""]));
        for verb in ["list", "describe", "approve", "why", "completion"] {
            assert!(verbs.iter().any(|v| v == verb), "{verb} in {verbs:?}");
        }
        assert!(!verbs.iter().any(|v| v.starts_with("__")), "{verbs:?}");
        // Cluster flags before the verb are skipped with their values.
        let verbs = words(wanted_after(&["--context", "alice", ""]));
        assert!(verbs.iter().any(|v| v == "approve"), "{verbs:?}");
    }

    #[test]
    fn fixed_values_come_from_the_arguments() {
        assert_eq!(
            words(wanted_after(&["list", ""])),
            ["instances", "operators", "packages", "helmcharts"]
        );
        assert_eq!(
            words(wanted_after(&["list", "operators", "-o", ""])),
            ["json", "yaml", "name"]
        );
        assert_eq!(
            words(wanted_after(&["completion", ""]))[..3],
            ["bash", "elvish", "fish"]
        );
    }

    #[test]
    fn names_are_asked_of_the_cluster_where_a_verb_takes_one() {
        assert_eq!(
            wanted_after(&["approve", "w"]),
            Wanted::Names {
                bare: &[Named::Instance],
                prefixed: &[Named::OperatorRequest, Named::HelmChart],
            }
        );
        assert_eq!(
            wanted_after(&["--context", "bob", "history", ""]),
            Wanted::Names {
                bare: &[Named::Instance],
                prefixed: &[],
            }
        );
        assert_eq!(
            wanted_after(&["policy", "test", "p", "--instance", ""]),
            Wanted::Names {
                bare: &[Named::Instance],
                prefixed: &[],
            }
        );
        // One name only: nothing after it.
        assert_eq!(wanted_after(&["approve", "web", ""]), Wanted::Nothing);
        assert_eq!(wanted_after(&["plan", "x", "-f", ""]), Wanted::Files);
    }

    #[test]
    fn flags_are_offered_after_a_dash() {
        let flags = words(wanted_after(&["approve", "--"]));
        assert!(flags.iter().any(|f| f == "--message"), "{flags:?}");
        assert!(flags.iter().any(|f| f == "--context"), "{flags:?}");
    }

    #[test]
    fn the_cluster_flags_typed_choose_the_cluster() {
        let mut root = crate::Cli::command();
        root.build();
        let typed: Vec<String> = ["--kubeconfig", "/k", "--context=bob", "why"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(
            position(&root, &typed).cluster,
            ["--kubeconfig=/k", "--context=bob"]
        );
    }

    #[test]
    fn answers_are_filtered_and_end_with_the_directive() {
        let candidates = [
            ("web".to_owned(), String::new()),
            ("db".to_owned(), String::new()),
            ("helmchart/".to_owned(), String::new()),
        ];
        assert_eq!(answer(&candidates, "w", false), "web\n:4\n");
        // A prefix goes on without a space.
        assert_eq!(answer(&candidates, "h", false), "helmchart/\n:6\n");
        assert_eq!(answer(&[], "", false), ":4\n");
        assert_eq!(answer(&[], "", true), ":0\n");
        assert_eq!(
            first_line("List Instances (or Operators: `list operators`), like `kubectl get`"),
            "List Instances"
        );
        assert_eq!(
            first_line("Show an Instance: conditions"),
            "Show an Instance"
        );
        let described = [("list".to_owned(), "List Instances".to_owned())];
        assert_eq!(answer(&described, "", false), "list\tList Instances\n:4\n");
    }
}
