//! `POST /v1/plan` on the server: each [`PlannedInput`] read as the
//! controller reads its Input, then the controller's own pass
//! ([`input_resolve::plan`]) against the served catalogs.

use pakket_engine::Version;
use pakket_resolve_api::protocol::BadRequest;
pub use pakket_resolve_api::protocol::plan::*;

use crate::catalogs::serving::Served;
use crate::inputs::input_request::{request_of, with_fields};
use crate::inputs::input_resolve::{self, Answer, Asked};

/// Its request with its class's constraints, or why it has none: what
/// the controller resolves for it.
pub fn asked(planned: &PlannedInput) -> Asked {
    let fields = with_fields(
        &planned.constraints,
        &planned.input_class,
        &planned.class_constraints,
    );
    let filters = crate::inputs::input_filter::filters_of(&fields);
    let request = match &filters {
        Ok(_) => request_of(&fields).map_err(|error| error.to_string()),
        Err(problem) => Err(problem.clone()),
    };
    Asked {
        name: planned.name.clone(),
        request,
        dry_run: planned.dry_run,
        force: planned.force,
        filters: filters.unwrap_or_default(),
        // The API's caller gives no history: name order decides.
        seniority: Default::default(),
        uid: String::new(),
        chosen_over: Default::default(),
        held: None,
    }
}

/// What the controller's answer for one Input says on the wire.
fn answered(answer: Answer) -> PlanAnswer {
    match answer {
        Answer::Resolved(instances) => PlanAnswer::Resolved { instances },
        Answer::Invalid(message) => PlanAnswer::Invalid { message },
        // The API's Inputs have no history, so none is new and this does
        // not arise; said plainly if it ever does.
        Answer::Conflict(conflict) => PlanAnswer::Unsatisfiable {
            summary: format!("conflicts with {}", conflict.with.join(", ")),
            explanation: format!(
                "it resolves alone but conflicts with Inputs {}",
                conflict.with.join(", ")
            ),
        },
        Answer::OwnedByAnother { package, owner } => {
            let words = crate::inputs::package_owner::refusal_words(&package, &owner);
            PlanAnswer::Unsatisfiable {
                summary: words.clone(),
                explanation: words,
            }
        }
        Answer::Held(held) => PlanAnswer::Unsatisfiable {
            summary: held.why.clone(),
            explanation: held.why,
        },
        Answer::Unsatisfiable {
            summary,
            explanation,
        } => PlanAnswer::Unsatisfiable {
            summary,
            explanation,
        },
    }
}

/// The controller's pass over `request`'s Inputs against `served`.
pub fn plan(served: &Served, request: &PlanRequest) -> Result<PlanResponse, BadRequest> {
    let mut asked: Vec<Asked> = request.inputs.iter().map(asked).collect();
    let cluster = match &request.kube_version {
        Some(text) => Some(major_minor(text).ok_or_else(|| {
            BadRequest::new(
                "kubeVersion",
                format!("{text:?} is not a Kubernetes version; write MAJOR.MINOR (1.35)"),
            )
        })?),
        None => None,
    };
    input_resolve::narrow(&served.set, &mut asked, cluster);
    let mut previous = Vec::with_capacity(request.current.len());
    for (i, entry) in request.current.iter().enumerate() {
        let version = Version::parse(&entry.version)
            .map_err(|error| BadRequest::new(format!("current[{i}].version"), error.to_string()))?;
        previous.push((entry.package.clone(), version));
    }
    let installed = input_resolve::still_asked(&previous, &asked);
    let planned = input_resolve::plan(&served.universe, &asked, &installed, &request.set);
    Ok(PlanResponse {
        answers: planned
            .answers
            .into_iter()
            .map(|(name, answer)| (name, answered(answer)))
            .collect(),
        set: planned.set,
    })
}
