//! A package two Catalogs offer at the same, highest priority is
//! ambiguous: which of them an Input installs from would be decided by
//! catalog names, which nobody chose for that. OLM refuses it too. An
//! Input that names no catalog for such a package is refused, naming the
//! catalogs and the two ways to choose (an `olm.catalog` constraint, or a
//! higher priority for one of them). Only the Input's own request is
//! judged: a dependency is the engine's to pick, by priority.

use pakket_engine::catalog::CatalogSet;
use pakket_engine::resolve::Request;

/// Why `request` is ambiguous in `set`, if it is.
pub fn refused(set: &CatalogSet, request: &Request) -> Option<String> {
    let Request::Package {
        package,
        catalog: None,
        ..
    } = request
    else {
        return None;
    };
    // Highest priority first (the set's order).
    let offering: Vec<(&str, i32)> = set
        .package(package)
        .into_iter()
        .filter_map(|(index, _)| set.catalog(index))
        .map(|catalog| (catalog.name.as_str(), catalog.priority))
        .collect();
    let (_, highest) = *offering.first()?;
    let tied: Vec<&str> = offering
        .iter()
        .filter(|(_, priority)| *priority == highest)
        .map(|(name, _)| *name)
        .collect();
    (tied.len() > 1).then(|| {
        format!(
            "package {package} is offered by Catalogs {} at the same priority ({highest}), so which one it comes from would be left to chance; name one in an olm.catalog constraint ({{\"name\": \"{}\", \"package\": \"{package}\"}}), or give one Catalog a higher spec.priority",
            tied.join(" and "),
            tied[0]
        )
    })
}

#[cfg(test)]
mod tests {
    use pakket_engine::catalog::{Catalog, Format};

    use super::*;

    fn catalog(name: &str, priority: i32, package: &str) -> Catalog {
        let text = format!(
            r#"{{"schema":"olm.package","name":"{package}","defaultChannel":"stable"}}
{{"schema":"olm.channel","package":"{package}","name":"stable","entries":[{{"name":"{package}.v1"}}]}}
{{"schema":"olm.bundle","package":"{package}","name":"{package}.v1","image":"example.com/{package}:v1","properties":[{{"type":"olm.package","value":{{"packageName":"{package}","version":"1.0.0"}}}}]}}
"#
        );
        Catalog::from_str(&text, name, Format::Json, name, priority).unwrap()
    }

    #[test]
    fn a_package_two_catalogs_offer_at_the_highest_priority_is_refused_unless_one_is_named() {
        let set = CatalogSet::new(vec![
            catalog("community", 0, "etcd"),
            catalog("mirror", 0, "etcd"),
            catalog("lower", -5, "etcd"),
        ]);
        let why = refused(&set, &Request::package("etcd")).expect("ambiguous");
        assert!(why.contains("Catalogs community and mirror"), "{why}");
        assert!(why.contains("olm.catalog"), "{why}");
        assert!(why.contains("spec.priority"), "{why}");
        let named = Request::Package {
            package: "etcd".into(),
            channel: None,
            range: None,
            catalog: Some("mirror".into()),
        };
        assert_eq!(refused(&set, &named), None);
    }

    #[test]
    fn a_higher_priority_or_a_single_catalog_decides() {
        let set = CatalogSet::new(vec![
            catalog("community", 0, "etcd"),
            catalog("preferred", 10, "etcd"),
            catalog("other", 10, "redis"),
        ]);
        assert_eq!(refused(&set, &Request::package("etcd")), None);
        assert_eq!(refused(&set, &Request::package("redis")), None);
        assert_eq!(refused(&set, &Request::package("absent")), None);
    }
}
