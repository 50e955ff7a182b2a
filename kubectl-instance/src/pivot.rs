//! Pivot history: the chain of Bundles an Instance moved through.
//!
//! When an Instance pivots from Bundle A to B, the runtime labels A with
//! `core.pakket.dev/replaced-by=B`. Walking those labels back from the
//! active Bundle gives the history, newest last.

use std::collections::{BTreeMap, BTreeSet};

use kube::ResourceExt;
use kube::api::{Api, ListParams};
use pakket_api::Bundle;
use serde::Serialize;

use crate::error::{self, Error};

/// The label the runtime puts on a Bundle an Instance pivoted away from.
pub const REPLACED_BY_LABEL: &str = "core.pakket.dev/replaced-by";

/// One pivot: `bundle` was replaced by `replaced_by`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pivot {
    /// The Bundle pivoted away from.
    pub bundle: String,
    /// The Bundle pivoted to.
    pub replaced_by: String,
}

/// Every Bundle that carries the replaced-by label, as (bundle, successor).
pub async fn replaced_bundles(client: &kube::Client) -> Result<Vec<Pivot>, Error> {
    let bundles: Api<Bundle> = Api::all(client.clone());
    let list = bundles
        .list(&ListParams::default().labels(REPLACED_BY_LABEL))
        .await
        .map_err(error::api(format!(
            "listing Bundles labelled {REPLACED_BY_LABEL}"
        )))?;
    Ok(list
        .items
        .iter()
        .filter_map(|bundle| {
            let successor = bundle.labels().get(REPLACED_BY_LABEL)?;
            Some(Pivot {
                bundle: bundle.name_any(),
                replaced_by: successor.clone(),
            })
        })
        .collect())
}

/// The pivots that lead to `active`, oldest first: each generation back
/// from `active` is one step; Bundles of the same step sort by name.
pub fn history(active: &str, pivots: &[Pivot]) -> Vec<Pivot> {
    let mut predecessors: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for pivot in pivots {
        predecessors
            .entry(pivot.replaced_by.as_str())
            .or_default()
            .insert(pivot.bundle.as_str());
    }
    let mut seen = BTreeSet::from([active]);
    let mut generation = vec![active];
    let mut newest_first = Vec::new();
    while !generation.is_empty() {
        let mut older = Vec::new();
        for &successor in &generation {
            for &bundle in predecessors.get(successor).into_iter().flatten() {
                // A label loop must not loop us.
                if seen.insert(bundle) {
                    newest_first.push(Pivot {
                        bundle: bundle.to_owned(),
                        replaced_by: successor.to_owned(),
                    });
                    older.push(bundle);
                }
            }
        }
        generation = older;
    }
    newest_first.reverse();
    newest_first
}

/// The history as one line per chain step: `a → b → c (active)`; Bundles
/// replaced into the same successor are listed together (`a, b → c`).
pub fn render(history: &[Pivot], active: &str) -> String {
    // Steps oldest first: consecutive pivots into the same successor merge.
    let mut steps: Vec<(Vec<&str>, &str)> = Vec::new();
    for pivot in history {
        match steps.last_mut() {
            Some((bundles, successor)) if *successor == pivot.replaced_by => {
                bundles.push(&pivot.bundle);
            }
            _ => steps.push((vec![&pivot.bundle], &pivot.replaced_by)),
        }
    }
    let mut parts: Vec<String> = steps
        .iter()
        .map(|(bundles, _)| {
            let mut bundles = bundles.clone();
            bundles.sort_unstable();
            bundles.join(", ")
        })
        .collect();
    parts.push(format!("{active} (active)"));
    parts.join(" → ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pivot(bundle: &str, replaced_by: &str) -> Pivot {
        Pivot {
            bundle: bundle.into(),
            replaced_by: replaced_by.into(),
        }
    }

    #[test]
    fn history_walks_back_from_the_active_bundle_oldest_first() {
        let pivots = [
            pivot("web.v2", "web.v3"),
            pivot("other.v1", "other.v2"),
            pivot("web.v1", "web.v2"),
        ];
        let history = history("web.v3", &pivots);
        assert_eq!(
            history,
            [pivot("web.v1", "web.v2"), pivot("web.v2", "web.v3")]
        );
        assert_eq!(
            render(&history, "web.v3"),
            "web.v1 → web.v2 → web.v3 (active)"
        );
    }

    #[test]
    fn history_survives_label_loops_and_merges_siblings() {
        let pivots = [
            pivot("a", "c"),
            pivot("b", "c"),
            pivot("c", "d"),
            pivot("d", "c"),
        ];
        let history = history("d", &pivots);
        assert_eq!(render(&history, "d"), "a, b → c → d (active)");
        assert!(super::history("z", &pivots).is_empty());
        assert_eq!(render(&[], "z"), "z (active)");
    }
}
