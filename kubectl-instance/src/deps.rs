//! `kubectl instance deps NAME`: who an Instance needs and who needs it,
//! as a tree (or Graphviz DOT with `--format dot`, JSON or YAML with `-o`).
//!
//! From the runtime's API inventory ([`pakket_runtime::kernel::inventory`]): what
//! each installed Instance provides (its CRDs and APIServices, found by the
//! label the runtime writes, and its Bundle's `olm.package`), and what its
//! Bundle requires (`olm.gvk.required`, `olm.package.required`). An edge
//! goes from an Instance to one that provides what it requires. Below the
//! tree, what uses the Instance's APIs: custom resources per namespace,
//! and the Roles and ClusterRoles that name its groups.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write;

use clap::ValueEnum;
use kube::ResourceExt as _;
use pakket_runtime::kernel::inventory::{self, Installed, Users};
use serde::Serialize;

use crate::error::Error;
use crate::output::{self, Format};

/// How `deps` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DepsFormat {
    /// A tree for people.
    Text,
    /// Graphviz DOT.
    Dot,
}

/// One edge: `from` needs `to` for `requires`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Need {
    /// The Instance that requires.
    pub from: String,
    /// The Instance that provides.
    pub to: String,
    /// What, in words.
    pub requires: String,
}

/// The answer.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Deps {
    /// The Instance asked about.
    pub instance: String,
    /// What it provides.
    pub provides: inventory::Provided,
    /// Every edge reachable from it, both ways.
    pub needs: Vec<Need>,
    /// What uses its APIs.
    pub used_by: Users,
}

/// Prints the dependencies of Instance `name`.
pub async fn run(
    client: &kube::Client,
    name: &str,
    format: DepsFormat,
    output: Option<Format>,
    out: &mut impl Write,
) -> Result<(), Error> {
    let everything = inventory::everything(client)
        .await
        .map_err(|error| Error::Config(format!("reading the installed Instances: {error}")))?;
    let Some(me) = everything.iter().find(|i| i.instance.name_any() == name) else {
        return match kube::Api::<pakket_api::Instance>::all(client.clone())
            .get_opt(name)
            .await
        {
            Ok(Some(_)) => Err(Error::Config(format!(
                "Instance {name} is not installed: it provides and needs nothing yet (see `kubectl instance why {name}`)"
            ))),
            _ => Err(Error::NotFound {
                kind: "instance",
                name: name.to_owned(),
            }),
        };
    };
    let used_by = inventory::users(client, &me.instance, &me.provided, true)
        .await
        .map_err(|error| Error::Config(format!("reading who uses Instance {name}: {error}")))?;
    let deps = Deps {
        instance: name.to_owned(),
        provides: me.provided.clone(),
        needs: edges_around(name, &everything),
        used_by,
    };
    match (output, format) {
        (Some(format), _) => output::print(&deps, format, out),
        (None, DepsFormat::Text) => {
            out.write_all(render_text(&deps).as_bytes())?;
            Ok(())
        }
        (None, DepsFormat::Dot) => {
            out.write_all(render_dot(&deps).as_bytes())?;
            Ok(())
        }
    }
}

/// Every "needs" edge between installed Instances.
pub fn all_edges(everything: &[Installed]) -> Vec<Need> {
    let mut edges = Vec::new();
    for from in everything {
        for to in everything {
            if from.instance.name_any() == to.instance.name_any() {
                continue;
            }
            for requires in inventory::requirements_met(&from.properties, &to.provided) {
                edges.push(Need {
                    from: from.instance.name_any(),
                    to: to.instance.name_any(),
                    requires,
                });
            }
        }
    }
    edges.sort();
    edges
}

/// The edges reachable from `name` following needs downwards and
/// needed-by upwards.
fn edges_around(name: &str, everything: &[Installed]) -> Vec<Need> {
    let all = all_edges(everything);
    let mut kept = BTreeSet::new();
    for downwards in [true, false] {
        let mut seen = BTreeSet::from([name.to_owned()]);
        let mut frontier = vec![name.to_owned()];
        while let Some(at) = frontier.pop() {
            for edge in &all {
                let (here, next) = if downwards {
                    (&edge.from, &edge.to)
                } else {
                    (&edge.to, &edge.from)
                };
                if *here == at {
                    kept.insert(edge.clone());
                    if seen.insert(next.clone()) {
                        frontier.push(next.clone());
                    }
                }
            }
        }
    }
    kept.into_iter().collect()
}

/// The tree: what it needs (down), what needs it (up), then its users.
pub fn render_text(deps: &Deps) -> String {
    let mut text = format!("Instance {}\n", deps.instance);
    let provides = describe_provided(&deps.provides);
    let _ = writeln!(
        text,
        "provides: {}",
        if provides.is_empty() {
            "nothing others can use".to_owned()
        } else {
            provides
        }
    );
    for (title, downwards) in [("needs", true), ("needed by", false)] {
        let _ = writeln!(text, "{title}:");
        let mut seen = BTreeSet::from([deps.instance.clone()]);
        let before = text.len();
        branch(&mut text, deps, &deps.instance, downwards, "  ", &mut seen);
        if text.len() == before {
            text.push_str("  (nothing)\n");
        }
    }
    text.push_str("used by:\n");
    if deps.used_by.resources.is_empty() && deps.used_by.rbac.is_empty() {
        text.push_str("  (nothing)\n");
    }
    for used in &deps.used_by.resources {
        let namespaces: Vec<String> = used
            .namespaces
            .iter()
            .map(|(ns, n)| {
                if ns.is_empty() {
                    format!("{n} cluster-wide")
                } else {
                    format!("{n} in {ns}")
                }
            })
            .collect();
        let _ = writeln!(
            text,
            "  {}{} {} objects ({})",
            if used.more { "more than " } else { "" },
            used.count,
            used.kind,
            namespaces.join(", ")
        );
    }
    for role in &deps.used_by.rbac {
        let _ = writeln!(text, "  {role} names its API group (RBAC; not blocking)");
    }
    text
}

fn branch(
    text: &mut String,
    deps: &Deps,
    at: &str,
    downwards: bool,
    indent: &str,
    seen: &mut BTreeSet<String>,
) {
    let edges: Vec<&Need> = deps
        .needs
        .iter()
        .filter(|e| if downwards { e.from == at } else { e.to == at })
        .collect();
    for (index, edge) in edges.iter().enumerate() {
        let last = index + 1 == edges.len();
        let other = if downwards { &edge.to } else { &edge.from };
        let again = !seen.insert(other.clone());
        let _ = writeln!(
            text,
            "{indent}{} {other} ({}){}",
            if last { "└─" } else { "├─" },
            edge.requires,
            if again { " …" } else { "" }
        );
        if !again {
            let deeper = format!("{indent}{}", if last { "   " } else { "│  " });
            branch(text, deps, other, downwards, &deeper, seen);
        }
    }
}

fn describe_provided(provided: &inventory::Provided) -> String {
    let mut parts: Vec<String> = provided
        .kinds
        .iter()
        .map(|kind| format!("{}/{} {}", kind.group, kind.versions.join(","), kind.kind))
        .collect();
    parts.extend(
        provided
            .api_services
            .iter()
            .map(|s| format!("APIService {s}")),
    );
    parts.extend(
        provided
            .packages
            .iter()
            .map(|(name, version)| format!("package {name} {version}")),
    );
    parts.join(", ")
}

/// DOT: one node per Instance, an edge per requirement from the Instance
/// that requires to the one that provides; users as a note.
pub fn render_dot(deps: &Deps) -> String {
    let quote = |text: &str| format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""));
    let mut dot = format!(
        "// Dependencies of Instance {}: an edge goes from an Instance to one it needs.\ndigraph {} {{\n  node [shape=box, fontname=\"sans-serif\"];\n  edge [fontname=\"sans-serif\", fontsize=10];\n",
        deps.instance,
        quote(&deps.instance)
    );
    let _ = writeln!(dot, "  {} [penwidth=2];", quote(&deps.instance));
    for edge in &deps.needs {
        let _ = writeln!(
            dot,
            "  {} -> {} [label={}];",
            quote(&edge.from),
            quote(&edge.to),
            quote(&edge.requires)
        );
    }
    if deps.used_by.in_use() {
        let _ = writeln!(
            dot,
            "  users [shape=note, label={}];\n  users -> {} [style=dashed];",
            quote(&deps.used_by.words()),
            quote(&deps.instance)
        );
    }
    dot.push_str("}\n");
    dot
}

#[cfg(test)]
mod tests {
    use super::*;
    use inventory::{ProvidedKind, ResourcesInUse};

    fn deps() -> Deps {
        Deps {
            instance: "etcd".into(),
            provides: inventory::Provided {
                kinds: vec![ProvidedKind {
                    crd: "etcdclusters.etcd.database.coreos.com".into(),
                    group: "etcd.database.coreos.com".into(),
                    kind: "EtcdCluster".into(),
                    plural: "etcdclusters".into(),
                    versions: vec!["v1beta2".into()],
                    scope: "Namespaced".into(),
                }],
                api_services: Vec::new(),
                packages: [("etcd".to_owned(), "0.9.4".to_owned())].into(),
            },
            needs: vec![
                Need {
                    from: "backup".into(),
                    to: "etcd".into(),
                    requires: "package etcd >=0.9.2".into(),
                },
                Need {
                    from: "etcd".into(),
                    to: "certs".into(),
                    requires: "cert-manager.io/v1 Certificate".into(),
                },
                Need {
                    from: "restore".into(),
                    to: "backup".into(),
                    requires: "package etcd-backup".into(),
                },
            ],
            used_by: Users {
                resources: vec![ResourcesInUse {
                    kind: "etcd.database.coreos.com/EtcdCluster".into(),
                    count: 2,
                    more: false,
                    namespaces: [("team-a".to_owned(), 2)].into(),
                }],
                instances: Vec::new(),
                rbac: vec!["ClusterRole etcd-admin".into()],
            },
        }
    }

    #[test]
    fn the_tree_goes_down_to_what_it_needs_and_up_to_who_needs_it() {
        let text = render_text(&deps());
        assert_eq!(
            text,
            "Instance etcd
provides: etcd.database.coreos.com/v1beta2 EtcdCluster, package etcd 0.9.4
needs:
  └─ certs (cert-manager.io/v1 Certificate)
needed by:
  └─ backup (package etcd >=0.9.2)
     └─ restore (package etcd-backup)
used by:
  2 etcd.database.coreos.com/EtcdCluster objects (2 in team-a)
  ClusterRole etcd-admin names its API group (RBAC; not blocking)
"
        );
    }

    #[test]
    fn dot_draws_requirements_and_users() {
        let dot = render_dot(&deps());
        assert!(
            dot.contains("\"backup\" -> \"etcd\" [label=\"package etcd >=0.9.2\"];"),
            "{dot}"
        );
        assert!(dot.contains("users [shape=note"), "{dot}");
        assert!(dot.trim_end().ends_with('}'));
    }
}
