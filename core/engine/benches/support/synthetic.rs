//! Synthetic File-Based Catalogs of any size, shared by the load bench and
//! the tests that check large catalogs load the same way small ones do.
//!
//! Every package has the shapes real catalogs have, so each part of loading
//! works in proportion: a `stable` channel with every bundle on a replaces
//! chain, some `skips` and bounded `skipRange`s (as operators write
//! `>=1.4.0 <1.8.0`), a `fast` channel with the newer half, one provided API
//! per package, required APIs and packages pointing at other packages, and an
//! `olm.deprecations` document on every tenth package.

use std::fmt::Write;

/// The shape of a generated catalog.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// How many packages.
    pub packages: usize,
    /// How many bundles each package has (all in its `stable` channel).
    pub bundles_per_package: usize,
}

impl Shape {
    /// `bundles` bundles in packages of 20 (the derived community catalog
    /// averages 21): many short channels.
    pub fn wide(bundles: usize) -> Self {
        Self {
            packages: bundles.div_ceil(20),
            bundles_per_package: 20,
        }
    }

    /// `bundles` bundles in 10 packages: channels thousands of entries long.
    pub fn deep(bundles: usize) -> Self {
        Self {
            packages: 10,
            bundles_per_package: bundles.div_ceil(10),
        }
    }

    /// The number of bundles the catalog holds.
    pub fn bundles(&self) -> usize {
        self.packages * self.bundles_per_package
    }
}

/// The package name of index `p`.
pub fn package(p: usize) -> String {
    format!("pkg-{p:05}")
}

/// The bundle name of bundle `j` of package `p`.
pub fn bundle(p: usize, j: usize) -> String {
    format!("pkg-{p:05}.v1.{j}.0")
}

fn gvk(p: usize) -> String {
    format!(r#"{{"group":"pkg{p}.example.com","version":"v1","kind":"Widget"}}"#)
}

/// The catalog as one JSON stream, one document per line.
pub fn catalog(shape: Shape) -> String {
    let Shape {
        packages,
        bundles_per_package: count,
    } = shape;
    let mut out = String::with_capacity(shape.bundles() * 700);
    for p in 0..packages {
        let name = package(p);
        writeln!(
            out,
            r#"{{"schema":"olm.package","name":"{name}","defaultChannel":"stable"}}"#
        )
        .unwrap();
        let mut stable = Vec::with_capacity(count);
        for j in 0..count {
            let mut entry = format!(r#"{{"name":"{}""#, bundle(p, j));
            if j > 0 {
                write!(entry, r#","replaces":"{}""#, bundle(p, j - 1)).unwrap();
            }
            if j >= 2 && j % 7 == 0 {
                write!(entry, r#","skips":["{}"]"#, bundle(p, j - 2)).unwrap();
            }
            if j >= 5 && j % 5 == 0 {
                write!(entry, r#","skipRange":">=1.{}.0 <1.{j}.0""#, j - 4).unwrap();
            }
            entry.push('}');
            stable.push(entry);
        }
        writeln!(
            out,
            r#"{{"schema":"olm.channel","package":"{name}","name":"stable","entries":[{}]}}"#,
            stable.join(",")
        )
        .unwrap();
        let fast: Vec<String> = (count / 2..count)
            .map(|j| {
                if j > count / 2 {
                    format!(
                        r#"{{"name":"{}","replaces":"{}"}}"#,
                        bundle(p, j),
                        bundle(p, j - 1)
                    )
                } else {
                    format!(r#"{{"name":"{}"}}"#, bundle(p, j))
                }
            })
            .collect();
        writeln!(
            out,
            r#"{{"schema":"olm.channel","package":"{name}","name":"fast","entries":[{}]}}"#,
            fast.join(",")
        )
        .unwrap();
        for j in 0..count {
            let mut properties = vec![
                format!(
                    r#"{{"type":"olm.package","value":{{"packageName":"{name}","version":"1.{j}.0"}}}}"#
                ),
                format!(r#"{{"type":"olm.gvk","value":{}}}"#, gvk(p)),
                format!(
                    r#"{{"type":"olm.csv.metadata","value":{{"displayName":"Package {p}","description":"Synthetic bundle {j} of package {p}.","keywords":["synthetic"],"maturity":"stable"}}}}"#
                ),
            ];
            if p > 0 && p % 3 == 1 {
                properties.push(format!(
                    r#"{{"type":"olm.gvk.required","value":{}}}"#,
                    gvk(p - 1)
                ));
            }
            if p > 1 && p % 4 == 2 {
                properties.push(format!(
                    r#"{{"type":"olm.package.required","value":{{"packageName":"{}","versionRange":">=1.0.0"}}}}"#,
                    package(p - 2)
                ));
            }
            writeln!(
                out,
                r#"{{"schema":"olm.bundle","name":"{}","package":"{name}","image":"quay.io/synthetic/{name}@sha256:{:064x}","properties":[{}]}}"#,
                bundle(p, j),
                p * count + j,
                properties.join(",")
            )
            .unwrap();
        }
        if p % 10 == 0 && count >= 2 {
            writeln!(
                out,
                r#"{{"schema":"olm.deprecations","package":"{name}","entries":[{{"reference":{{"schema":"olm.bundle","name":"{}"}},"message":"{} has a known defect"}},{{"reference":{{"schema":"olm.bundle","name":"{}"}},"message":"too old"}}]}}"#,
                bundle(p, 0),
                bundle(p, 0),
                bundle(p, 1)
            )
            .unwrap();
        }
    }
    out
}
