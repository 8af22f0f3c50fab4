//! Trace files of model-file worlds: a `check::Trace` of the world's actions whose opaque model text is the
//! model file's, parsed again on replay.

use super::json_locate::{self, Seg};
use super::{parse_model, ModelFile, SpecError};
use crate::builtin::{Action, WorldProperty};
use crate::check::{self, TimelineStep, Trace};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A trace of a model file's world.
pub type WorldTrace = Trace<Action>;

/// A trace of `model` deciding `property`.
pub fn new_trace(
    model: &ModelFile,
    property: &str,
    found_by: &str,
    seed: Option<u64>,
    steps: Vec<TimelineStep<Action>>,
) -> WorldTrace {
    Trace::new(
        &model.path,
        &model.source_text,
        property,
        found_by,
        seed,
        steps,
    )
}

/// Parse a trace file's text (`file` names it in errors).
pub fn parse_trace(file: &str, text: &str) -> Result<WorldTrace, SpecError> {
    parse_trace_of(file, text)
}

/// [`parse_trace`] for any model's actions: errors placed at their line and column.
pub fn parse_trace_of<A: Serialize + DeserializeOwned>(
    file: &str,
    text: &str,
) -> Result<Trace<A>, SpecError> {
    Trace::from_json(text).map_err(|error| {
        if error.line == 0 {
            // Well-formed JSON with a wrong field (the format or its version): at that field's value, or at the
            // file's start if it cannot be found.
            let offset = json_locate::offset(text, &[Seg::Key(&error.field)]).unwrap_or(0);
            return SpecError::at(file, text, offset, &error.field, &error.message);
        }
        SpecError {
            file: file.to_string(),
            line: error.line,
            // serde_json says column 0 for an error at a line's end (a raw newline inside a string): the contract
            // is 1-based.
            column: error.column.max(1),
            field: error.field,
            message: error.message,
        }
    })
}

/// What replaying a trace showed.
#[derive(Clone, Debug)]
pub struct ReplayOutcome {
    pub model: ModelFile,
    pub property: WorldProperty,
    pub steps: Vec<TimelineStep<Action>>,
    /// The 1-based step at which the property was violated, if it was.
    pub violated_at: Option<usize>,
}

/// Replay a trace against its embedded model file, strictly. `text` is the trace file's text (`trace` was
/// parsed from it), so that an error can name its line and column.
pub fn replay(file: &str, text: &str, trace: &WorldTrace) -> Result<ReplayOutcome, SpecError> {
    let located = |path: &[Seg], field: &str, message: &str| match json_locate::offset(text, path) {
        Some(offset) => SpecError::at(file, text, offset, field, message),
        None => SpecError::whole_file(file, field, message),
    };
    let model = parse_model(&trace.model, &trace.model_source).map_err(|error| SpecError {
        // The text that failed is the trace's copy, not the file on disk (which may since have changed).
        file: format!("{file} (its embedded model {})", trace.model),
        ..error
    })?;
    let property = WorldProperty::by_name(&trace.property).ok_or_else(|| {
        located(
            &[Seg::Key("property")],
            "property",
            &format!(
                "unknown property '{}', expected one of: {}",
                trace.property,
                WorldProperty::names()
            ),
        )
    })?;
    let actions: Vec<Action> = trace.steps.iter().map(|step| step.action).collect();
    let diverged = |step: usize| {
        located(
            &[Seg::Key("steps"), Seg::Index(step - 1)],
            "steps",
            &check::diverged(&model.world, &actions, step).to_string(),
        )
    };
    let run = check::timeline(&model.world, &actions).map_err(diverged)?;
    let report = check::judge_run(&model.world, &run, trace.cycle_from);
    let decided = report.property(property.name());
    Ok(ReplayOutcome {
        property,
        steps: run.steps,
        violated_at: decided
            .at_step
            .filter(|_| decided.verdict == check::Verdict::Violated),
        model,
    })
}
