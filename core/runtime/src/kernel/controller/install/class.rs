//! The class step: the ProvisionerClass the Instance names, and the
//! parameters the later steps read (unpack limits, drift mode, rollout,
//! progression probes),
//! each refused with the parameter named when it is wrong. The class's
//! watch brings the Instance back once an admin fixes it.

use kube::ResourceExt;
use kube::runtime::controller::Action;
use pakket_api::condition::ConditionStatus;
use pakket_api::{Instance, ProvisionerClass, Reason};

use super::super::report::Report;
use super::super::revision;
use super::*;
use crate::apply::probes::ProgressionProbes;
use crate::content::UnpackOptions;
use crate::drift_mode::DriftMode;

/// The class and what its parameters say.
pub(super) struct Settings<'a> {
    pub class: &'a ProvisionerClass,
    pub unpack: UnpackOptions,
    pub drift: DriftMode,
    pub ignored: crate::drift_mode::Ignored,
    pub rollout: revision::Settings,
    pub probes: ProgressionProbes,
}

/// The class `instance` names and its parameters, or why not.
pub(super) fn settings<'a>(
    instance: &Instance,
    class: Option<&'a ProvisionerClass>,
    report: &mut Report,
) -> Flow<Settings<'a>> {
    let Some(class) = class else {
        let message = format!(
            "ProvisionerClass {} does not exist; create it or fix spec.class",
            instance.spec.class
        );
        report.set(Reason::InstallPending, ConditionStatus::False, message);
        return Flow::Stop(Action::requeue(WAITING_FOR_OBJECT));
    };
    let parameters = class.spec.parameters.as_ref();
    // The class is wrong, not the Bundle: its watch brings the Instance
    // back once an admin fixes it. A bad unpack limit is said where the
    // unpack would have been.
    let mut refused = |reason: Reason, error: &dyn std::fmt::Display| {
        let message = format!(
            "ProvisionerClass {}: {error}; fix the class",
            class.name_any()
        );
        report.set(reason, ConditionStatus::False, message);
        Flow::Stop(Action::requeue(WAITING_FOR_OBJECT))
    };
    let unpack = match UnpackOptions::from_parameters(parameters, DEFAULT_MAX_OBJECT_SIZE) {
        Ok(options) => UnpackOptions {
            class: class.name_any(),
            ..options
        },
        Err(error) => return refused(Reason::UnpackFailed, &error),
    };
    let drift = match crate::drift_mode::from_parameters(parameters) {
        Ok(mode) => mode,
        Err(error) => return refused(Reason::InstallFailed, &error),
    };
    let ignored = match crate::drift_mode::Ignored::from_parameters(parameters) {
        Ok(ignored) => ignored,
        Err(error) => return refused(Reason::InstallFailed, &error),
    };
    let mut rollout = match revision::Settings::from_parameters(parameters) {
        Ok(settings) => settings,
        Err(error) => return refused(Reason::InstallFailed, &error),
    };
    let probes = match ProgressionProbes::from_parameters(parameters) {
        Ok(probes) => probes,
        Err(error) => return refused(Reason::InstallFailed, &error),
    };
    // The Instance's own drift settings win over its class's, each of
    // mode and ignore where given.
    let (drift, ignored) = match instance_drift(instance, drift, ignored) {
        Ok(settings) => settings,
        Err(message) => {
            report.set(Reason::InvalidConfig, ConditionStatus::False, message);
            return Flow::Stop(Action::await_change());
        }
    };
    // The Instance's own deadline wins over its class's.
    if let Err(message) = instance_deadline(instance, &mut rollout) {
        report.set(Reason::InvalidConfig, ConditionStatus::False, message);
        return Flow::Stop(Action::await_change());
    }
    Flow::Next(Settings {
        class,
        unpack,
        drift,
        ignored,
        rollout,
        probes,
    })
}

/// `spec.progressDeadline` in place of the class's deadline, where given.
fn instance_deadline(instance: &Instance, rollout: &mut revision::Settings) -> Result<(), String> {
    let Some(text) = &instance.spec.progress_deadline else {
        return Ok(());
    };
    let deadline = crate::class_parameters::parse_duration(text).ok_or_else(|| {
        format!(
            "spec.progressDeadline: {text:?} is not a duration of a second or more; write e.g. 90s, 10m or 1h30m in the Instance"
        )
    })?;
    rollout.progress_deadline = deadline;
    rollout.deadline_source = revision::INSTANCE_DEADLINE;
    Ok(())
}

/// The drift mode for `instance`: its `spec.drift.mode` where given,
/// else the class's. An Instance may not ignore fields: what an ignored
/// field holds is written in place of what the content has, past its
/// approval (a Role's rules kept that a new version drops, say), so that
/// is the class admin's call. A wrong value is named as the Instance's
/// field.
fn instance_drift(
    instance: &Instance,
    class_mode: DriftMode,
    class_ignored: crate::drift_mode::Ignored,
) -> Result<(DriftMode, crate::drift_mode::Ignored), String> {
    let Some(own) = &instance.spec.drift else {
        return Ok((class_mode, class_ignored));
    };
    if own.contains_key("ignore") {
        return Err(
            "spec.drift.ignore: an Instance may not ignore fields, since what they hold is written in place of the approved content; remove it, or ask an admin for a class whose drift parameter ignores them"
                .to_owned(),
        );
    }
    let mut parameters = serde_json::Map::new();
    parameters.insert("drift".into(), serde_json::Value::Object(own.clone()));
    let mode = crate::drift_mode::from_parameters(Some(&parameters)).map_err(|error| {
        format!(
            "spec.{}: {}; fix the Instance's spec.drift",
            error.name, error.problem
        )
    })?;
    Ok((
        if own.contains_key("mode") {
            mode
        } else {
            class_mode
        },
        class_ignored,
    ))
}
