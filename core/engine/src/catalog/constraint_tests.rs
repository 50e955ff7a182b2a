use serde_json::json;

use super::*;

/// A bundle for formulas: package, version, APIs and properties.
struct Bundle {
    package: &'static str,
    version: Version,
    provides: Vec<Gvk>,
    properties: Vec<Value>,
}

impl Subject for Bundle {
    fn package(&self) -> &str {
        self.package
    }
    fn version(&self) -> &Version {
        &self.version
    }
    fn provides(&self, gvk: &Gvk) -> bool {
        self.provides.contains(gvk)
    }
    fn properties(&self) -> Vec<Value> {
        self.properties.clone()
    }
}

fn etcd(version: &str) -> Bundle {
    Bundle {
        package: "etcd",
        version: Version::parse(version).unwrap(),
        provides: vec![Gvk::new(
            "etcd.database.coreos.com",
            "v1beta2",
            "EtcdCluster",
        )],
        properties: vec![
            json!({"type": "olm.package", "value": {"packageName": "etcd", "version": version}}),
            json!({"type": "certified", "value": "true"}),
            json!({"type": "olm.maxOpenShiftVersion", "value": 4.12}),
        ],
    }
}

/// Whether the constraint holds, or why a CEL rule in it failed.
fn holds(constraint: &str, bundle: &Bundle) -> Result<bool, String> {
    let mut failures = Vec::new();
    let result = Constraint::parse(constraint)
        .unwrap()
        .formula
        .holds(bundle, &mut failures);
    match failures.first() {
        Some(why) => Err(why.clone()),
        None => Ok(result),
    }
}

fn refusal(constraint: &str) -> String {
    Constraint::parse(constraint).unwrap_err().to_string()
}

#[test]
fn compound_formulas_are_about_one_bundle() {
    let both = r#"{"failureMessage": "needs etcd with its API",
        "all": {"constraints": [
            {"package": {"packageName": "etcd", "versionRange": ">=0.9.4"}},
            {"gvk": {"group": "etcd.database.coreos.com", "version": "v1beta2", "kind": "EtcdCluster"}}]}}"#;
    assert_eq!(holds(both, &etcd("0.9.4")), Ok(true));
    assert_eq!(holds(both, &etcd("0.9.2")), Ok(false));
    let constraint = Constraint::parse(both).unwrap();
    assert_eq!(
        constraint.failure_message.as_deref(),
        Some("needs etcd with its API")
    );
    assert_eq!(
        constraint.to_string(),
        "all of (package etcd >=0.9.4, API etcd.database.coreos.com/v1beta2, Kind=EtcdCluster)"
    );

    let either = r#"{"any": {"constraints": [
        {"package": {"packageName": "other", "versionRange": ">=1.0.0"}},
        {"package": {"packageName": "etcd", "versionRange": "<0.9.3"}}]}}"#;
    assert_eq!(holds(either, &etcd("0.9.2")), Ok(true));
    assert_eq!(holds(either, &etcd("0.9.4")), Ok(false));

    let neither = r#"{"not": {"constraints": [
        {"package": {"packageName": "etcd", "versionRange": "0.9.2"}}]}}"#;
    assert_eq!(holds(neither, &etcd("0.9.2")), Ok(false));
    assert_eq!(holds(neither, &etcd("0.9.4")), Ok(true));
    assert!(refusal(r#"{"all": {"constraints": 3}}"#).contains("list of constraints"));
}

#[test]
fn cel_rules_see_properties_as_olm_binds_them() {
    let certified =
        r#"{"cel": {"rule": "properties.exists(p, p.type == 'certified' && p.value == 'true')"}}"#;
    assert_eq!(holds(certified, &etcd("0.9.4")), Ok(true));
    // JSON numbers are doubles, as cel-go gets them from encoding/json.
    let openshift = r#"{"cel": {"rule": "properties.exists(p, p.type == 'olm.maxOpenShiftVersion' && p.value >= 4.12)"}}"#;
    assert_eq!(holds(openshift, &etcd("0.9.4")), Ok(true));
    let typed = r#"{"cel": {"rule": "properties.all(p, type(p.type) == string)"}}"#;
    assert_eq!(holds(typed, &etcd("0.9.4")), Ok(true));
    let newer = r#"{"cel": {"rule": "properties.exists(p, p.type == 'olm.package' && semver_compare(p.value.version, 'v0.9.3') >= 0)"}}"#;
    assert_eq!(holds(newer, &etcd("0.9.4")), Ok(true));
    assert_eq!(holds(newer, &etcd("0.9.2")), Ok(false));
}

#[test]
fn a_cel_rule_that_fails_while_evaluating_says_why() {
    let bad = r#"{"cel": {"rule": "properties.exists(p, semver_compare(p.value, '1.0.0') == 0)"}}"#;
    let failure = holds(bad, &etcd("0.9.4")).unwrap_err();
    assert!(failure.contains("semver_compare"), "{failure}");
    let number = r#"{"cel": {"rule": "size(properties)"}}"#;
    let failure = holds(number, &etcd("0.9.4")).unwrap_err();
    assert!(failure.contains("not true or false"), "{failure}");
    // False where it stands, as in OLM: so `not` of it holds.
    let negated = r#"{"not": {"constraints": [{"cel": {"rule": "size(properties)"}}]}}"#;
    let mut failures = Vec::new();
    let formula = Constraint::parse(negated).unwrap().formula;
    assert!(formula.holds(&etcd("0.9.4"), &mut failures));
    assert_eq!(failures.len(), 1);
}

#[test]
fn what_cannot_be_evaluated_is_refused_by_name() {
    assert!(refusal(r#"{"label": {"label": "x"}}"#).contains(r#"unknown constraint kind "label""#));
    assert!(refusal(r#"{"failureMessage": "only words"}"#).contains("the constraint is empty"));
    let two = refusal(
        r#"{"package": {"packageName": "a", "versionRange": "1.0.0"}, "gvk": {"group": "", "version": "v1", "kind": "A"}}"#,
    );
    assert!(two.contains("has both"), "{two}");
    assert!(refusal(r#"{"none": {"constraints": []}}"#).contains("write `not`"));
    let syntax =
        refusal(r#"{"all": {"constraints": [{"cel": {"rule": "properties.exists(p,"}}]}}"#);
    assert!(
        syntax.starts_with("value.all.constraints[0].cel.rule: the CEL rule does not parse"),
        "{syntax}"
    );
    let variable = refusal(r#"{"cel": {"rule": "bundle.name == 'x'"}}"#);
    assert!(variable.contains(r#"uses "bundle""#), "{variable}");
    let range = refusal(r#"{"package": {"packageName": "a", "versionRange": "not a range"}}"#);
    assert!(range.starts_with("value.package.versionRange"), "{range}");
    let field =
        refusal(r#"{"package": {"packageName": "a", "versionRange": "1.0.0", "extra": "x"}}"#);
    assert!(
        field.starts_with("value.package.extra: unknown field"),
        "{field}"
    );
    let huge = format!(
        r#"{{"failureMessage": "{}", "cel": {{"rule": "true"}}}}"#,
        "x".repeat(MAX_CONSTRAINT_SIZE)
    );
    assert!(refusal(&huge).contains("more than the"));
}

#[test]
fn versions_are_read_as_blang_reads_them_tolerantly() {
    let parse = |text: &str| parse_tolerant(text).map(|v| v.to_string());
    assert_eq!(parse(" v1.2 ").as_deref(), Some("1.2.0"));
    assert_eq!(parse("1").as_deref(), Some("1.0.0"));
    assert_eq!(parse("01.002.3").as_deref(), Some("1.2.3"));
    assert_eq!(parse("1.2-rc.1"), None);
    assert_eq!(parse("banana"), None);
}

#[test]
fn catalogs_holding_constraints_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Constraint>();
    shareable::<crate::catalog::Catalog>();
}

#[test]
fn a_hostile_cel_rule_is_refused_naming_the_limit_not_crashing_the_resolver() {
    // 2,000 nested parentheses overflow the parser's stack; the rule is
    // refused from its text, on a thread smaller than tokio's.
    let deep = format!("{}true{}", "(".repeat(2_000), ")".repeat(2_000));
    let constraint = json!({"cel": {"rule": deep}}).to_string();
    let refused = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || refusal(&constraint))
        .unwrap()
        .join()
        .unwrap();
    assert!(
        refused.starts_with("value.cel.rule: the CEL rule nests brackets 2000 deep")
            && refused.contains("the nesting limit"),
        "{refused}"
    );
    // Loops over list literals (and `.all (` with a space) are counted from
    // the parsed rule: past the cost limit, it is not run, and is false.
    let hundred = (0..100)
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let rule = format!(
        "[{hundred}].all (a, [{hundred}].all (b, [{hundred}].exists (c, properties.size() < 0)))"
    );
    let error = holds(&json!({"cel": {"rule": rule}}).to_string(), &etcd("0.9.4")).unwrap_err();
    assert!(
        error.contains("is not run") && error.contains("the cost limit"),
        "{error}"
    );
}
