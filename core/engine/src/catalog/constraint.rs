//! `olm.constraint`: a formula that some bundle of the resolution must
//! satisfy, as operator-framework/api's `pkg/constraints` defines it and
//! OLM's resolver turns it into a dependency.
//!
//! | key | holds for a bundle that |
//! |-----|-------------------------|
//! | `package: {packageName, versionRange}` | is a version of the package in the range |
//! | `gvk: {group, version, kind}` | provides the API |
//! | `all: {constraints: [..]}` | satisfies every one of them |
//! | `any: {constraints: [..]}` | satisfies at least one |
//! | `not: {constraints: [..]}` | satisfies none |
//! | `cel: {rule}` | makes the CEL rule true, `properties` bound to its properties |
//!
//! A formula is about one bundle: `all` of a package and an API is met by a
//! bundle that is both, not by two bundles. A `failureMessage` beside the
//! formula is what explanations say when nothing satisfies it.
//!
//! Reading is as strict as OLM's (unknown keys are errors, values past
//! 128 KiB are refused), and stricter where OLM would quietly drop a part: a
//! formula with two kinds (OLM uses the first it finds), `none` (deprecated,
//! and OLM's resolver rejects it as empty), and a CEL rule naming a variable
//! other than `properties` (cel-go's checker refuses it at compile time;
//! cel-rust has no checker and would only fail while evaluating).
//!
//! CEL rules are held to [`crate::cel_limits`] (cel-go's parser survives
//! deep nesting on Go's growing stacks; cel-rust's does not), and a rule
//! whose cost over a bundle's properties is past the limit is not run: it
//! is false for that bundle, and says why.
//!
//! CEL rules see `properties` as OLM binds it: a list of `{type, value}`
//! maps, values as `encoding/json` decodes them (numbers are doubles). The
//! function `semver_compare(a, b)` compares two versions as blang/semver's
//! `ParseTolerant` and `Compare` do: -1, 0 or 1. A rule that fails while
//! evaluating (a property without the field it reads) is false for that
//! bundle, as in OLM.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use cel::objects::Key;
use cel::{Context, Env, ExecutionError, Value as CelValue};
use serde_json::{Map, Value};

use super::model::{Gvk, PackageRequirement};
use crate::cel_limits::{self, BoundedProgram, CelLimitError};
use crate::{Range, Version};

/// `olm.constraint` values past this many bytes are refused, as in OLM
/// (`2 << 16`): the size is what bounds the nesting depth.
pub const MAX_CONSTRAINT_SIZE: usize = 2 << 16;

/// One `olm.constraint` property: a formula and what to say when nothing
/// satisfies it.
#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    /// The catalog author's words for an unmet constraint, if given.
    pub failure_message: Option<String>,
    /// What a bundle must satisfy.
    pub formula: Formula,
}

/// What one bundle must satisfy.
#[derive(Clone, Debug, PartialEq)]
pub enum Formula {
    /// A version of a package, in a range.
    Package(PackageRequirement),
    /// A provider of an API.
    Gvk(Gvk),
    /// Every one of these.
    All(Vec<Constraint>),
    /// At least one of these.
    Any(Vec<Constraint>),
    /// None of these.
    Not(Vec<Constraint>),
    /// A CEL rule over the bundle's properties.
    Cel(CelRule),
}

/// Why an `olm.constraint` value cannot be read or evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstraintError {
    /// Where in the value (`value.all.constraints[1].cel.rule`).
    pub field: String,
    /// What is wrong, and what to write instead.
    pub message: String,
}

impl fmt::Display for ConstraintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ConstraintError {}

const KINDS: [&str; 6] = ["package", "gvk", "all", "any", "not", "cel"];

impl Constraint {
    /// Reads an `olm.constraint` property's value (JSON text).
    pub fn parse(json: &str) -> Result<Self, ConstraintError> {
        if json.len() > MAX_CONSTRAINT_SIZE {
            return Err(error(
                "value",
                format!(
                    "the constraint is {} bytes, more than the {MAX_CONSTRAINT_SIZE} OLM accepts; split it or shorten it",
                    json.len()
                ),
            ));
        }
        let value: Value = serde_json::from_str(json).map_err(|e| error("value", e.to_string()))?;
        Self::from_value(&value, "value")
    }

    /// Whether the formula has a CEL rule anywhere in it (only those read
    /// a bundle's properties).
    pub fn uses_cel(&self) -> bool {
        match &self.formula {
            Formula::Cel(_) => true,
            Formula::All(items) | Formula::Any(items) | Formula::Not(items) => {
                items.iter().any(Constraint::uses_cel)
            }
            Formula::Package(_) | Formula::Gvk(_) => false,
        }
    }

    fn from_value(value: &Value, at: &str) -> Result<Self, ConstraintError> {
        let object = object(value, at)?;
        let mut failure_message = None;
        let mut kinds = Vec::new();
        for (key, inner) in object {
            match key.as_str() {
                "failureMessage" => {
                    let text = string(inner, &format!("{at}.failureMessage"))?;
                    failure_message = Some(text.to_owned()).filter(|text| !text.is_empty());
                }
                "none" => {
                    return Err(error(
                        format!("{at}.none"),
                        "`none` is deprecated and OLM's resolver does not evaluate it; write `not`",
                    ));
                }
                kind if KINDS.contains(&kind) => kinds.push((kind, inner)),
                other => {
                    return Err(error(
                        format!("{at}.{other}"),
                        format!(
                            "unknown constraint kind {other:?}; write one of package, gvk, all, any, not or cel"
                        ),
                    ));
                }
            }
        }
        let (kind, inner) = match kinds.as_slice() {
            [one] => *one,
            [] => {
                return Err(error(
                    at,
                    "the constraint is empty; give it one of package, gvk, all, any, not or cel",
                ));
            }
            [(first, _), (second, _), ..] => {
                return Err(error(
                    at,
                    format!(
                        "the constraint has both {first} and {second}; write one kind per constraint and combine them under `all`"
                    ),
                ));
            }
        };
        let at = format!("{at}.{kind}");
        let formula = match kind {
            "package" => Formula::Package(package(inner, &at)?),
            "gvk" => Formula::Gvk(gvk(inner, &at)?),
            "all" => Formula::All(compound(inner, &at)?),
            "any" => Formula::Any(compound(inner, &at)?),
            "not" => Formula::Not(compound(inner, &at)?),
            _ => Formula::Cel(cel_rule(inner, &at)?),
        };
        Ok(Self {
            failure_message,
            formula,
        })
    }
}

fn error(field: impl Into<String>, message: impl Into<String>) -> ConstraintError {
    ConstraintError {
        field: field.into(),
        message: message.into(),
    }
}

fn object<'v>(value: &'v Value, at: &str) -> Result<&'v Map<String, Value>, ConstraintError> {
    value
        .as_object()
        .ok_or_else(|| error(at, "expected an object"))
}

fn string<'v>(value: &'v Value, at: &str) -> Result<&'v str, ConstraintError> {
    value.as_str().ok_or_else(|| error(at, "expected a string"))
}

/// The string fields of an object, refusing any key not in `known` (OLM
/// decodes with `DisallowUnknownFields`).
fn fields<'v>(
    value: &'v Value,
    at: &str,
    known: &[&str],
) -> Result<HashMap<&'v str, &'v str>, ConstraintError> {
    let mut found = HashMap::new();
    for (key, inner) in object(value, at)? {
        if !known.contains(&key.as_str()) {
            return Err(error(
                format!("{at}.{key}"),
                format!("unknown field; expected {}", known.join(", ")),
            ));
        }
        found.insert(key.as_str(), string(inner, &format!("{at}.{key}"))?);
    }
    Ok(found)
}

fn package(value: &Value, at: &str) -> Result<PackageRequirement, ConstraintError> {
    let fields = fields(value, at, &["packageName", "versionRange"])?;
    let name = fields.get("packageName").copied().unwrap_or_default();
    if name.is_empty() {
        return Err(error(
            format!("{at}.packageName"),
            "a package constraint needs a packageName",
        ));
    }
    let text = fields.get("versionRange").copied().unwrap_or_default();
    let range = Range::parse(text).map_err(|e| {
        error(
            format!("{at}.versionRange"),
            format!("constraint on package {name:?}: {e}"),
        )
    })?;
    Ok(PackageRequirement {
        package: name.to_owned(),
        range,
    })
}

fn gvk(value: &Value, at: &str) -> Result<Gvk, ConstraintError> {
    let fields = fields(value, at, &["group", "version", "kind"])?;
    let text = |name: &str| fields.get(name).copied().unwrap_or_default().to_owned();
    let gvk = Gvk::new(text("group"), text("version"), text("kind"));
    if gvk.version.is_empty() || gvk.kind.is_empty() {
        return Err(error(at, "a gvk constraint needs a version and a kind"));
    }
    Ok(gvk)
}

fn compound(value: &Value, at: &str) -> Result<Vec<Constraint>, ConstraintError> {
    let object = object(value, at)?;
    if let Some(key) = object.keys().find(|key| *key != "constraints") {
        return Err(error(
            format!("{at}.{key}"),
            "unknown field; a compound constraint holds only `constraints`",
        ));
    }
    match object.get("constraints") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| Constraint::from_value(item, &format!("{at}.constraints[{i}]")))
            .collect(),
        Some(_) => Err(error(
            format!("{at}.constraints"),
            "expected a list of constraints",
        )),
    }
}

fn cel_rule(value: &Value, at: &str) -> Result<CelRule, ConstraintError> {
    let fields = fields(value, at, &["rule"])?;
    let rule = fields.get("rule").copied().unwrap_or_default();
    CelRule::compile(rule).map_err(|message| error(format!("{at}.rule"), message))
}

impl fmt::Display for Constraint {
    /// The formula as prose: `all of (package etcd >=0.9.4, none of (...))`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.formula.fmt(f)
    }
}

impl fmt::Display for Formula {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, word: &str, items: &[Constraint]| {
            write!(f, "{word} (")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{item}")?;
            }
            f.write_str(")")
        };
        match self {
            Self::Package(requirement) => write!(
                f,
                "package {} {}",
                requirement.package,
                requirement.range.as_written()
            ),
            Self::Gvk(gvk) => write!(f, "API {gvk}"),
            Self::All(items) => list(f, "all of", items),
            Self::Any(items) => list(f, "any of", items),
            Self::Not(items) => list(f, "none of", items),
            Self::Cel(rule) => write!(f, "CEL rule {:?}", rule.rule()),
        }
    }
}

/// What a formula is evaluated against: one bundle.
pub trait Subject {
    /// Its package.
    fn package(&self) -> &str;
    /// Its version.
    fn version(&self) -> &Version;
    /// Whether it provides `gvk`.
    fn provides(&self, gvk: &Gvk) -> bool;
    /// Its properties as `{type, value}` objects, for CEL.
    fn properties(&self) -> Vec<Value>;
}

impl Formula {
    /// Whether `subject` satisfies the formula. A CEL rule that fails while
    /// evaluating is false where it stands, as in OLM (so `not` of it
    /// holds); why it failed is added to `failures`.
    pub fn holds(&self, subject: &dyn Subject, failures: &mut Vec<String>) -> bool {
        match self {
            Self::Package(requirement) => {
                subject.package() == requirement.package
                    && requirement.range.contains(subject.version())
            }
            Self::Gvk(gvk) => subject.provides(gvk),
            Self::All(items) => items
                .iter()
                .all(|item| item.formula.holds(subject, failures)),
            Self::Any(items) => items
                .iter()
                .any(|item| item.formula.holds(subject, failures)),
            Self::Not(items) => !items
                .iter()
                .any(|item| item.formula.holds(subject, failures)),
            Self::Cel(rule) => match rule.evaluate(&subject.properties()) {
                Ok(result) => result,
                Err(why) => {
                    failures.push(why);
                    false
                }
            },
        }
    }
}

/// A CEL rule, compiled once.
#[derive(Clone)]
pub struct CelRule {
    rule: String,
    program: Arc<BoundedProgram>,
}

impl fmt::Debug for CelRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CelRule").field(&self.rule).finish()
    }
}

impl PartialEq for CelRule {
    fn eq(&self, other: &Self) -> bool {
        self.rule == other.rule
    }
}

/// The one variable OLM declares for constraint rules.
const PROPERTIES: &str = "properties";

fn environment() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(Env::stdlib()))
}

impl CelRule {
    /// Compiles `rule`; the error says what is wrong with it.
    pub fn compile(rule: &str) -> Result<Self, String> {
        if rule.trim().is_empty() {
            return Err(
                "the CEL rule is empty; write a boolean expression over `properties`".into(),
            );
        }
        // Catalogs are written by anyone who publishes one: the rule is
        // held to the limits every CEL expression is.
        let program = cel_limits::compile_with(environment(), rule, cel_limits::MAX_LENGTH)
            .map_err(|error| match error {
                CelLimitError::Invalid(why) => format!("the CEL rule does not parse {why}"),
                limit => format!("the CEL rule {limit}"),
            })?;
        let mut unknown = free_variables(program.program().expression());
        // Type names (`string`, `int`, ...) read as identifiers too.
        unknown
            .retain(|name| name != PROPERTIES && environment().types().find_type(name).is_none());
        if let Some(name) = unknown.first() {
            return Err(format!(
                "the CEL rule uses {name:?}, but only `properties` (the bundle's properties) is defined"
            ));
        }
        Ok(Self {
            rule: rule.to_owned(),
            program: Arc::new(program),
        })
    }

    /// The rule as written.
    pub fn rule(&self) -> &str {
        &self.rule
    }

    /// Evaluates the rule with `properties` bound to `properties`.
    pub fn evaluate(&self, properties: &[Value]) -> Result<bool, String> {
        let mut context = Context::with_env(Arc::clone(environment()));
        context
            .add_function("semver_compare", semver_compare)
            .map_err(|e| e.to_string())?;
        let widest = properties
            .iter()
            .map(cel_limits::widest_collection)
            .fold(properties.len(), usize::max);
        let program = self
            .program
            .within_cost(widest)
            .map_err(|error| format!("the CEL rule is not run: {error}"))?;
        let list: Vec<CelValue> = properties.iter().map(cel_value).collect();
        context.add_variable_from_value(PROPERTIES, CelValue::List(Arc::new(list)));
        match program.execute(&context) {
            Ok(CelValue::Bool(result)) => Ok(result),
            Ok(other) => Err(format!(
                "the CEL rule gave {:?}, not true or false",
                other.type_of()
            )),
            Err(e) => Err(format!("the CEL rule failed: {}", one_line(&e.to_string()))),
        }
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Identifiers the rule reads that no comprehension (`exists(p, ..)`) binds.
fn free_variables(expression: &cel::IdedExpr) -> Vec<String> {
    use cel::common::ast::{EntryExpr, Expr};
    fn walk(expression: &cel::IdedExpr, bound: &mut Vec<String>, found: &mut Vec<String>) {
        match &expression.expr {
            // The parser names its own accumulators with a leading `@`.
            Expr::Ident(name)
                if !name.starts_with('@') && !bound.contains(name) && !found.contains(name) =>
            {
                found.push(name.clone());
            }
            Expr::Select(select) => walk(&select.operand, bound, found),
            Expr::Call(call) => {
                if let Some(target) = &call.target {
                    walk(target, bound, found);
                }
                for argument in &call.args {
                    walk(argument, bound, found);
                }
            }
            Expr::List(list) => {
                for element in &list.elements {
                    walk(element, bound, found);
                }
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    match &entry.expr {
                        EntryExpr::StructField(field) => walk(&field.value, bound, found),
                        EntryExpr::MapEntry(entry) => {
                            walk(&entry.key, bound, found);
                            walk(&entry.value, bound, found);
                        }
                    }
                }
            }
            Expr::Struct(structure) => {
                for entry in &structure.entries {
                    match &entry.expr {
                        EntryExpr::StructField(field) => walk(&field.value, bound, found),
                        EntryExpr::MapEntry(entry) => {
                            walk(&entry.key, bound, found);
                            walk(&entry.value, bound, found);
                        }
                    }
                }
            }
            Expr::Comprehension(comprehension) => {
                walk(&comprehension.iter_range, bound, found);
                walk(&comprehension.accu_init, bound, found);
                let before = bound.len();
                bound.push(comprehension.iter_var.clone());
                bound.extend(comprehension.iter_var2.clone());
                bound.push(comprehension.accu_var.clone());
                walk(&comprehension.loop_cond, bound, found);
                walk(&comprehension.loop_step, bound, found);
                walk(&comprehension.result, bound, found);
                bound.truncate(before);
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(expression, &mut Vec::new(), &mut found);
    found
}

/// A JSON value as cel-go sees it after `encoding/json`: numbers are doubles.
fn cel_value(value: &Value) -> CelValue {
    match value {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(number) => CelValue::Float(number.as_f64().unwrap_or(f64::NAN)),
        Value::String(text) => CelValue::String(Arc::new(text.clone())),
        Value::Array(items) => CelValue::List(Arc::new(items.iter().map(cel_value).collect())),
        Value::Object(map) => {
            let map: HashMap<Key, CelValue> = map
                .iter()
                .map(|(key, value)| (Key::String(Arc::new(key.clone())), cel_value(value)))
                .collect();
            CelValue::Map(map.into())
        }
    }
}

/// OLM's `semver_compare`: both arguments as text, read tolerantly, then
/// compared by precedence (build metadata ignored).
fn semver_compare(a: CelValue, b: CelValue) -> Result<CelValue, ExecutionError> {
    let version = |value: &CelValue| {
        let text = match value {
            CelValue::String(text) => text.to_string(),
            CelValue::Int(n) => n.to_string(),
            CelValue::UInt(n) => n.to_string(),
            // Go prints a whole float64 without a fraction (`1`, not `1.0`).
            CelValue::Float(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{x:.0}"),
            CelValue::Float(x) => x.to_string(),
            other => format!("{other:?}"),
        };
        parse_tolerant(&text).ok_or_else(|| {
            ExecutionError::function_error(
                "semver_compare",
                format!("unable to parse {text:?} as a semantic version"),
            )
        })
    };
    let ordering = version(&a)?.cmp(&version(&b)?);
    Ok(CelValue::Int(ordering as i64))
}

/// blang/semver's `ParseTolerant`: spaces trimmed, a leading `v` dropped,
/// leading zeros dropped, and a missing minor or patch read as 0.
pub fn parse_tolerant(text: &str) -> Option<Version> {
    let text = text.trim();
    let text = text.strip_prefix('v').unwrap_or(text);
    let mut parts: Vec<String> = text.splitn(3, '.').map(str::to_owned).collect();
    for part in &mut parts {
        if part.len() > 1 {
            let trimmed = part.trim_start_matches('0');
            *part = if trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                trimmed.to_owned()
            } else {
                format!("0{trimmed}")
            };
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|last| last.contains(['+', '-'])) {
            return None;
        }
        parts.resize(3, "0".to_owned());
    }
    Version::parse(&parts.join(".")).ok()
}

#[cfg(test)]
#[path = "constraint_tests.rs"]
mod tests;
