//! The guard on a person's choice between conflicting Inputs
//! (`status.decision` of an Input): writing, changing or removing it needs
//! the `approve` verb on that Input, and it must name the user who writes
//! it. The Input controller never writes it, so its ServiceAccount, which
//! may write Input status, cannot choose either.

use serde_json::Value;

use super::Permission;
use crate::review::{RESOLVE_GROUP, Requester};

/// `status.decision` of an Input, as the request carries it.
pub fn decision_of(input: &Value) -> Option<&Value> {
    input
        .get("status")?
        .get("decision")
        .filter(|d| !d.is_null())
}

/// The permission choosing Input `name` needs.
pub fn permission(name: &str) -> Permission {
    Permission {
        verb: "approve",
        group: RESOLVE_GROUP,
        resource: "inputs",
        namespace: None,
        name: name.to_owned(),
    }
}

/// Whether the write changes the decision, and if so whether the record it
/// leaves names the writer (a removal names no one). The permission is
/// checked by the caller.
pub fn check(
    requester: &Requester,
    name: &str,
    old: Option<&Value>,
    new: Option<&Value>,
) -> Result<bool, String> {
    if old == new {
        return Ok(false);
    }
    let Some(new) = new else {
        return Ok(true);
    };
    let chosen_by = new
        .get("chosenBy")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if chosen_by != requester.username {
        return Err(format!(
            "Input {name:?}: status.decision.chosenBy is {chosen_by:?}, but {requester} writes it; \
             a decision records who took it, so it names the user who writes it (`kubectl instance \
             decide input/{name}` does)"
        ));
    }
    Ok(true)
}

/// Why a decision is refused for lack of the permission.
pub fn denial(requester: &Requester, name: &str) -> String {
    let permission = permission(name);
    format!(
        "Input {name:?}: {requester} may not choose between conflicting Inputs \
         (status.decision): that needs {described}; an admin can grant it with a ClusterRole rule \
         {rule} (see the example ClusterRole pakket-input-decider) bound to the user",
        described = permission.describe(),
        rule = permission.rbac_rule(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn carol() -> Requester {
        Requester::named("carol", &[])
    }

    #[test]
    fn a_decision_names_its_writer_and_leaving_it_alone_is_no_change() {
        let chosen =
            json!({"status": {"decision": {"chosenBy": "carol", "generation": 1, "over": ["u"]}}});
        let forged =
            json!({"status": {"decision": {"chosenBy": "admin", "generation": 1, "over": ["u"]}}});
        let none = json!({"status": {"conditions": []}});
        let d = |v: &Value| decision_of(v).cloned();
        assert_eq!(
            check(&carol(), "b", d(&chosen).as_ref(), d(&chosen).as_ref()),
            Ok(false)
        );
        assert_eq!(
            check(&carol(), "b", d(&none).as_ref(), d(&none).as_ref()),
            Ok(false)
        );
        assert_eq!(check(&carol(), "b", None, d(&chosen).as_ref()), Ok(true));
        assert_eq!(
            check(&carol(), "b", d(&chosen).as_ref(), None),
            Ok(true),
            "removing needs the verb"
        );
        let refused = check(&carol(), "b", None, d(&forged).as_ref()).unwrap_err();
        assert!(
            refused.contains("\"admin\"") && refused.contains("carol"),
            "{refused}"
        );
        assert!(denial(&carol(), "b").contains("verbs: [approve]"));
        assert!(denial(&carol(), "b").contains("resources: [inputs]"));
    }
}
