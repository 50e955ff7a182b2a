//! `kubectl instance graph` on real catalogs (no cluster).
//!
//! Data (unedited, see the shared data README):
//! - `fbc/community-operators-prod-derived/catalog.json`: DERIVED from every
//!   bundle of redhat-openshift-ecosystem/community-operators-prod at 699495f2;
//! - `fbc/community-operators-prod-v4.20/`: verbatim
//!   `catalogs/v4.20/<pkg>/catalog.yaml` files of the same repository and commit.

use pakket_testkit::data as data_path;
use std::collections::BTreeSet;
use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn derived() -> String {
    data("fbc/community-operators-prod-derived/catalog.json")
}

fn graph(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kubectl-instance"))
        .arg("graph")
        .args(args)
        .output()
        .expect("running kubectl-instance graph")
}

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// The channels of `package` in a JSON-stream catalog, read without the
/// engine: (channel, entries as raw JSON).
fn raw_channels(path: &str, package: &str) -> Vec<(String, Vec<Value>)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|doc| doc["schema"] == "olm.channel" && doc["package"] == package)
        .map(|doc| {
            let name = doc["name"].as_str().unwrap().to_owned();
            (name, doc["entries"].as_array().unwrap().clone())
        })
        .collect()
}

/// What a DOT document declares: node ids and edges (by quoted id), after
/// checking that braces and brackets balance outside quoted strings.
struct Dot {
    nodes: BTreeSet<String>,
    edges: Vec<(String, String, String)>,
}

fn parse_dot(text: &str) -> Dot {
    let body: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect();
    assert!(body[0].starts_with("digraph \""), "{text}");
    let (mut braces, mut brackets, mut quoted, mut escaped) = (0i32, 0i32, false, false);
    for c in body.join("\n").chars() {
        match (quoted, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (_, false, '"') => quoted = !quoted,
            (false, _, '{') => braces += 1,
            (false, _, '}') => braces -= 1,
            (false, _, '[') => brackets += 1,
            (false, _, ']') => brackets -= 1,
            _ => {}
        }
        assert!(
            braces >= 0 && brackets >= 0,
            "closes before it opens:\n{text}"
        );
    }
    assert!(
        !quoted && braces == 0 && brackets == 0,
        "unbalanced:\n{text}"
    );
    let quoted_at = |line: &str, from: usize| -> Option<(String, usize)> {
        let start = line[from..].find('"')? + from;
        let mut end = start + 1;
        let bytes = line.as_bytes();
        while bytes[end] != b'"' {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        Some((line[start + 1..end].to_owned(), end + 1))
    };
    let mut dot = Dot {
        nodes: BTreeSet::new(),
        edges: Vec::new(),
    };
    for line in body.iter().map(|line| line.trim()) {
        if !line.starts_with('"') {
            continue;
        }
        let (first, after) = quoted_at(line, 0).unwrap();
        if line[after..].trim_start().starts_with("->") {
            let (second, after) = quoted_at(line, after).unwrap();
            let label = line[after..]
                .split("label=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_default()
                .to_owned();
            dot.edges.push((first, second, label));
        } else {
            assert!(line.ends_with("];"), "a node statement: {line}");
            dot.nodes.insert(first);
        }
    }
    for (from, to, _) in &dot.edges {
        assert!(
            dot.nodes.contains(from) && dot.nodes.contains(to),
            "edge {from} -> {to} names an undeclared node:\n{text}"
        );
    }
    dot
}

/// Runs Graphviz on the document when it is installed.
fn graphviz_accepts(text: &str) {
    let Ok(mut child) = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    else {
        eprintln!("graphviz `dot` is not installed; checked the DOT structurally only");
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "dot refused it: {output:?}");
}

#[test]
fn etcd_text_lists_the_default_channel_first_heads_first() {
    let text = stdout(&graph(&["etcd", "--catalog", &derived()]));
    let first_block = text.split("\n\n").next().unwrap();
    assert_eq!(
        first_block,
        "package etcd channel singlenamespace-alpha (default) (catalog community-operators-prod-derived): 3 entries, head etcdoperator.v0.9.4\n\
         \x20 etcdoperator.v0.9.4  0.9.4  (head)\n\
         \x20   replaces etcdoperator.v0.9.2\n\
         \x20 etcdoperator.v0.9.2  0.9.2\n\
         \x20   replaces etcdoperator.v0.9.0\n\
         \x20 etcdoperator.v0.9.0  0.9.0"
    );
    let headers: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("package "))
        .collect();
    assert_eq!(headers.len(), 3, "{text}");
    assert!(
        headers[1].starts_with("package etcd channel alpha "),
        "{text}"
    );
    assert!(
        headers[2].starts_with("package etcd channel clusterwide-alpha "),
        "{text}"
    );
}

#[test]
fn oadp_dot_has_an_edge_for_every_replaces_and_skips_and_declares_every_node() {
    let catalog = derived();
    let text = stdout(&graph(&[
        "oadp-operator",
        "--catalog",
        &catalog,
        "--format",
        "dot",
    ]));
    let dot = parse_dot(&text);
    let channels = raw_channels(&catalog, "oadp-operator");
    assert_eq!(channels.len(), 3);
    // Clusters are numbered in the order the text prints channels: the
    // default (stable) first, then by name.
    let order = ["stable", "alpha", "beta"];
    for (channel, entries) in &channels {
        let cluster = order.iter().position(|name| name == channel).unwrap();
        let id = |name: &str| format!("c{cluster}/{name}");
        for entry in entries {
            let to = entry["name"].as_str().unwrap();
            assert!(dot.nodes.contains(&id(to)), "{channel}: {to} not declared");
            let mut sources: Vec<(&str, &str)> = entry["skips"]
                .as_array()
                .map(|skips| {
                    skips
                        .iter()
                        .map(|s| (s.as_str().unwrap(), "skips"))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(replaced) = entry["replaces"].as_str() {
                sources.push((replaced, "replaces"));
            }
            for (from, field) in sources {
                assert!(
                    dot.edges.iter().any(|(f, t, label)| *f == id(from)
                        && *t == id(to)
                        && label.contains(field)),
                    "{channel}: no {field} edge {from} -> {to}\n{text}"
                );
            }
        }
    }
    // skipRange edges exist too: v0.5.6's range covers every older stable entry.
    assert!(
        dot.edges
            .iter()
            .any(|(f, t, label)| f == "c0/oadp-operator.v0.5.0"
                && t == "c0/oadp-operator.v0.5.6"
                && label.contains("skipRange"))
    );
    graphviz_accepts(&text);
}

#[test]
fn a_directory_catalog_with_prereleases_prints_every_entry_once() {
    let catalog = data("fbc/community-operators-prod-v4.20");
    let text = stdout(&graph(&["jumpstarter-operator", "--catalog", &catalog]));
    // The channel as written in catalog.yaml, read without the engine.
    let file = data("fbc/community-operators-prod-v4.20/jumpstarter-operator/catalog.yaml");
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&std::fs::read_to_string(file).unwrap()).unwrap();
    let channel = docs
        .iter()
        .find(|doc| doc["schema"] == "olm.channel")
        .unwrap();
    let names: Vec<&str> = channel["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    let listed: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("  ") && !line.starts_with("    "))
        .map(|line| line.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(listed.len(), names.len(), "{text}");
    for name in &names {
        assert_eq!(
            listed.iter().filter(|listed| *listed == name).count(),
            1,
            "{name}:\n{text}"
        );
    }
    assert_eq!(
        listed[0], "jumpstarter-operator.v0.9.0",
        "the head comes first:\n{text}"
    );
    assert!(
        text.contains("  jumpstarter-operator.v0.9.0  0.9.0  (head)\n"),
        "{text}"
    );

    let dot = stdout(&graph(&[
        "jumpstarter-operator",
        "--catalog",
        &catalog,
        "--format",
        "dot",
    ]));
    let parsed = parse_dot(&dot);
    assert_eq!(parsed.nodes.len(), names.len());
    graphviz_accepts(&dot);
}

#[test]
fn an_unknown_package_or_channel_fails_naming_what_exists() {
    let output = graph(&["no-such-package", "--catalog", &derived()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: package no-such-package is in none of the catalogs (community-operators-prod-derived); check its name (olm.package documents)\n"
    );
    let output = graph(&["etcd", "--catalog", &derived(), "--channel", "beta"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("its channels: alpha, clusterwide-alpha, singlenamespace-alpha")
    );
    let output = graph(&["etcd", "--catalog", "/nonexistent/catalog.json"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("--catalog /nonexistent/catalog.json: no such file or directory")
    );
}

/// A path in the shared test data, as an argument (`pakket_testkit::data`).
fn data(path: &str) -> String {
    data_path(path).display().to_string()
}
