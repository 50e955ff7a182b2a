//! A channel's update graph, with OLM's semantics.
//!
//! Entry `E` can upgrade an installed bundle `I` of the same package when
//! `E.replaces == I.name`, or `I.name` is in `E.skips`, or `E.skipRange`
//! contains `I`'s version. `I` need not be in the channel (that is how a
//! subscription switches channels or leaves a pruned bundle).
//!
//! A *head* is an entry that no entry of the channel replaces or skips by
//! name. As in operator-registry's `Channel.Head`, `skipRange` does not count:
//! a range-skipped entry can still be a head, and a channel upgraded only
//! through ranges has several heads.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet, VecDeque};

use super::diagnostic::{Diagnostic, DiagnosticCode, object};
use super::document::SCHEMA_CHANNEL;
use super::model::{Channel, ChannelEntry};
use crate::Version;

/// The update graph of one channel.
///
/// Entries are identified by bundle name; when a channel lists a name twice,
/// the first entry is the one used.
#[derive(Debug)]
pub struct UpdateGraph<'a> {
    channel: &'a Channel,
    /// Bundle name to entry index (first entry of that name).
    index: HashMap<&'a str, usize>,
    /// Each entry's bundle version, when the catalog has the bundle.
    versions: Vec<Option<&'a Version>>,
    /// Whether an entry is the first of its name (the one used).
    used: Vec<bool>,
    /// Entry indices in preference order: heads first, then by distance.
    order: Vec<usize>,
    /// Hops from the nearest head along replaces and skips edges.
    distance: Vec<Option<usize>>,
    heads: Vec<usize>,
}

impl<'a> UpdateGraph<'a> {
    /// The graph of `channel`; `version_of` gives a bundle's version by name
    /// (for skipRange and ordering), `None` when the catalog lacks it.
    pub fn new(channel: &'a Channel, version_of: impl Fn(&str) -> Option<&'a Version>) -> Self {
        let entries = &channel.entries;
        let mut index = HashMap::with_capacity(entries.len());
        let mut used = vec![false; entries.len()];
        for (i, entry) in entries.iter().enumerate() {
            if !index.contains_key(entry.name.as_str()) {
                index.insert(entry.name.as_str(), i);
                used[i] = true;
            }
        }
        let versions = entries.iter().map(|e| version_of(&e.name)).collect();
        let targets: HashSet<&str> = live(entries, &used)
            .flat_map(|(_, e)| e.replaces.iter().chain(&e.skips).map(String::as_str))
            .collect();
        let heads: Vec<usize> = live(entries, &used)
            .filter(|(_, e)| !targets.contains(e.name.as_str()))
            .map(|(i, _)| i)
            .collect();
        let mut graph = Self {
            channel,
            index,
            versions,
            used,
            order: Vec::new(),
            distance: vec![None; entries.len()],
            heads,
        };
        graph.rank();
        graph
    }

    /// Breadth-first from the heads; then orders by distance, version
    /// (descending) and name.
    fn rank(&mut self) {
        let channel = self.channel;
        let entries = &channel.entries;
        let mut queue: VecDeque<usize> = self.heads.iter().copied().collect();
        for &head in &self.heads {
            self.distance[head] = Some(0);
        }
        while let Some(i) = queue.pop_front() {
            let next = self.distance[i].map_or(0, |d| d + 1);
            let entry = &entries[i];
            for target in entry.replaces.iter().chain(&entry.skips) {
                if let Some(&j) = self.index.get(target.as_str())
                    && self.distance[j].is_none()
                {
                    self.distance[j] = Some(next);
                    queue.push_back(j);
                }
            }
        }
        let mut order: Vec<usize> = live(entries, &self.used).map(|(i, _)| i).collect();
        order.sort_by(|&a, &b| self.compare(a, b));
        let mut heads = std::mem::take(&mut self.heads);
        heads.sort_by(|&a, &b| self.compare(a, b));
        self.heads = heads;
        self.order = order;
    }

    fn compare(&self, a: usize, b: usize) -> Ordering {
        let by_distance = match (self.distance[a], self.distance[b]) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        let by_version = match (self.versions[a], self.versions[b]) {
            (Some(x), Some(y)) => y.cmp(x),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        };
        by_distance.then(by_version).then_with(|| {
            self.channel.entries[a]
                .name
                .cmp(&self.channel.entries[b].name)
        })
    }

    /// The channel this graph is of.
    pub fn channel(&self) -> &'a Channel {
        self.channel
    }

    /// Entries no other entry replaces or skips by name, newest first.
    pub fn heads(&self) -> Vec<&'a ChannelEntry> {
        let entries = &self.channel.entries;
        self.heads.iter().map(|&i| &entries[i]).collect()
    }

    /// Whether the channel lists bundle `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// The entry for bundle `name`.
    pub fn entry(&self, name: &str) -> Option<&'a ChannelEntry> {
        let entries = &self.channel.entries;
        self.index.get(name).map(|&i| &entries[i])
    }

    /// The version of bundle `name`, when the catalog has it.
    pub fn version_of(&self, name: &str) -> Option<&'a Version> {
        self.index.get(name).and_then(|&i| self.versions[i])
    }

    /// Hops from the nearest head to `name` along replaces and skips edges;
    /// `None` when `name` is not in the channel or no head reaches it.
    pub fn distance_from_head(&self, name: &str) -> Option<usize> {
        self.index.get(name).and_then(|&i| self.distance[i])
    }

    /// Every entry in preference order: heads first, then down the replaces
    /// and skips edges by distance from the nearest head; ties by version
    /// (newest first), then name. Entries no head reaches come last.
    pub fn ordered(&self) -> Vec<&'a ChannelEntry> {
        let entries = &self.channel.entries;
        self.order.iter().map(|&i| &entries[i]).collect()
    }

    /// Entries that can upgrade an installed bundle called `installed_name`
    /// at `installed_version`, in preference order (see [`Self::ordered`]).
    /// The installed bundle itself is never one of them.
    pub fn upgrades_from(
        &self,
        installed_name: &str,
        installed_version: &Version,
    ) -> Vec<&'a ChannelEntry> {
        let entries = &self.channel.entries;
        self.order
            .iter()
            .map(|&i| &entries[i])
            .filter(|entry| {
                entry.name != installed_name
                    && (entry.replaces.as_deref() == Some(installed_name)
                        || entry.skips.iter().any(|skip| skip == installed_name)
                        || entry
                            .skip_range
                            .as_ref()
                            .is_some_and(|range| range.contains(installed_version)))
            })
            .collect()
    }

    /// What [`Self::upgrades_from`] gives for every bundle the channel lists,
    /// at once: each entry in use whose version `version_of` knows, with the
    /// entries that can upgrade it in preference order. Asking
    /// `upgrades_from` entry by entry scans the whole channel each time,
    /// quadratic in its length; here names are looked up, `skipRange`s
    /// search versions sorted once, and each edge is visited once.
    pub fn every_upgrade<'v>(
        &self,
        version_of: impl Fn(&str) -> Option<&'v Version>,
    ) -> Vec<(&'a ChannelEntry, Vec<&'a ChannelEntry>)> {
        let channel = self.channel;
        let entries = &channel.entries;
        let versions: Vec<Option<&Version>> = entries
            .iter()
            .zip(&self.used)
            .map(|(entry, &used)| if used { version_of(&entry.name) } else { None })
            .collect();
        // Per entry, the entries that upgrade it (indices, any order yet).
        let mut upgrades: Vec<Vec<usize>> = vec![Vec::new(); entries.len()];
        for (to, entry) in live(entries, &self.used) {
            for name in entry.replaces.iter().chain(&entry.skips) {
                if let Some(&from) = self.index.get(name.as_str())
                    && from != to
                {
                    upgrades[from].push(to);
                }
            }
        }
        let mut by_version: Vec<(usize, &Version)> = versions
            .iter()
            .enumerate()
            .filter_map(|(i, version)| Some((i, (*version)?)))
            .collect();
        by_version.sort_by(|a, b| a.1.cmp(b.1));
        for (to, entry) in live(entries, &self.used) {
            let Some(range) = &entry.skip_range else {
                continue;
            };
            for (lo, hi) in range.intervals() {
                let start =
                    by_version.partition_point(|(_, v)| precedence(v.semver()) < precedence(lo));
                for &(from, version) in &by_version[start..] {
                    if hi.is_some_and(|hi| precedence(version.semver()) >= precedence(hi)) {
                        break;
                    }
                    if from != to && range.contains(version) {
                        upgrades[from].push(to);
                    }
                }
            }
        }
        let mut rank = vec![usize::MAX; entries.len()];
        for (position, &i) in self.order.iter().enumerate() {
            rank[i] = position;
        }
        live(entries, &self.used)
            .filter(|(i, _)| versions[*i].is_some())
            .map(|(from, _)| {
                let mut targets = std::mem::take(&mut upgrades[from]);
                targets.sort_unstable_by_key(|&to| rank[to]);
                // Overlapping intervals, or a replaces and a skip of one
                // entry, can name the same edge twice.
                targets.dedup();
                let targets = targets.into_iter().map(|to| &entries[to]).collect();
                (&entries[from], targets)
            })
            .collect()
    }

    /// Structural problems: replaces cycles, replaces naming bundles outside
    /// the channel, and a channel without exactly one head.
    pub fn check(&self) -> Vec<Diagnostic> {
        let channel = self.channel;
        let name = format!("{}/{}", channel.package, channel.name);
        let diagnostic = |code, message: String| {
            Diagnostic::new(
                code,
                channel.origin.clone(),
                object(SCHEMA_CHANNEL, &name),
                message,
            )
        };
        let mut found = Vec::new();
        let entries = &channel.entries;
        if self.heads.is_empty() && !entries.is_empty() {
            found.push(diagnostic(
                DiagnosticCode::NoHead,
                "every entry is replaced or skipped by another entry, so the channel has no head"
                    .into(),
            ));
        }
        if self.heads.len() > 1 {
            let heads = self.heads.iter().map(|&i| entries[i].name.as_str());
            found.push(diagnostic(
                DiagnosticCode::MultipleHeads,
                format!(
                    "the channel has {} heads: {}",
                    self.heads.len(),
                    join(heads)
                ),
            ));
        }
        for (i, entry) in live(entries, &self.used) {
            if let Some(replaces) = &entry.replaces
                && !self.index.contains_key(replaces.as_str())
            {
                found.push(
                    diagnostic(
                        DiagnosticCode::DanglingReplaces,
                        format!(
                            "entry {:?} replaces {replaces:?}, which is not in the channel",
                            entry.name
                        ),
                    )
                    .with_field(format!("entries[{i}].replaces")),
                );
            }
        }
        for cycle in self.replaces_cycles() {
            let mut names: Vec<&str> = cycle.iter().map(|&i| entries[i].name.as_str()).collect();
            names.push(names[0]);
            found.push(diagnostic(
                DiagnosticCode::ReplacesCycle,
                format!(
                    "entries replace each other in a cycle: {}",
                    names.join(" -> ")
                ),
            ));
        }
        found
    }

    /// Cycles of the replaces relation (each entry replaces at most one), each
    /// starting at its earliest entry and listed once.
    fn replaces_cycles(&self) -> Vec<Vec<usize>> {
        let entries = &self.channel.entries;
        let next = |i: usize| {
            let replaces = entries[i].replaces.as_deref()?;
            self.index.get(replaces).copied()
        };
        // 0 = unseen, 1 = on the current walk, 2 = done.
        let mut state = vec![0u8; entries.len()];
        let mut cycles = Vec::new();
        for (start, _) in live(entries, &self.used) {
            let mut walk = Vec::new();
            let mut current = Some(start);
            while let Some(i) = current {
                match state[i] {
                    0 => {
                        state[i] = 1;
                        walk.push(i);
                        current = next(i);
                    }
                    1 => {
                        if let Some(at) = walk.iter().position(|&w| w == i) {
                            let mut cycle = walk[at..].to_vec();
                            if let Some(first) = (0..cycle.len()).min_by_key(|&k| cycle[k]) {
                                cycle.rotate_left(first);
                            }
                            cycles.push(cycle);
                        }
                        break;
                    }
                    _ => break,
                }
            }
            for i in walk {
                state[i] = 2;
            }
        }
        cycles
    }
}

/// The entries a graph uses: the first of each name.
fn live<'e>(
    entries: &'e [ChannelEntry],
    used: &'e [bool],
) -> impl Iterator<Item = (usize, &'e ChannelEntry)> + 'e {
    entries
        .iter()
        .enumerate()
        .filter(move |(i, _)| used.get(*i).copied().unwrap_or(false))
}

/// Semver precedence, build metadata ignored: the order of [`Version`] and
/// of range bounds.
fn precedence(version: &semver::Version) -> (u64, u64, u64, &semver::Prerelease) {
    (version.major, version.minor, version.patch, &version.pre)
}

fn join<'s>(names: impl Iterator<Item = &'s str>) -> String {
    names
        .map(|name| format!("{name:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
