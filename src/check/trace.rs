//! Versioned JSON traces: a counterexample as data, replayed strictly (a step that is not enabled is an error).

use super::path::{timeline, TimelineStep};
use crate::model::{Property, PropertyKind};
use crate::spec::{self, Model, SpecError};
use serde::{Deserialize, Serialize};

pub const TRACE_FORMAT: &str = "retrylab-trace";
pub const TRACE_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace {
    pub format: String,
    pub version: u32,
    /// The model file's path, as given on the command line.
    pub model: String,
    /// The model file's text: a trace replays even after the file changed or moved.
    pub model_source: String,
    /// The property the trace violates.
    pub property: String,
    /// `bfs` (a shortest counterexample) or `random-walk`.
    pub found_by: String,
    /// The walk's seed, for `random-walk`.
    pub seed: Option<u64>,
    pub steps: Vec<TimelineStep>,
}

impl Trace {
    pub fn new(
        model: &Model,
        property: Property,
        found_by: &str,
        seed: Option<u64>,
        steps: Vec<TimelineStep>,
    ) -> Trace {
        Trace {
            format: TRACE_FORMAT.to_string(),
            version: TRACE_VERSION,
            model: model.path.clone(),
            model_source: model.source_text.clone(),
            property: property.name().to_string(),
            found_by: found_by.to_string(),
            seed,
            steps,
        }
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a trace always serialises");
        text.push('\n');
        text
    }
}

/// What replaying a trace showed.
#[derive(Clone, Debug)]
pub struct ReplayOutcome {
    pub model: Model,
    pub property: Property,
    pub steps: Vec<TimelineStep>,
    /// The 1-based step at which the property was violated, if it was.
    pub violated_at: Option<usize>,
}

/// Parse a trace file's text (`file` names it in errors).
pub fn parse_trace(file: &str, text: &str) -> Result<Trace, SpecError> {
    let trace: Trace = serde_json::from_str(text).map_err(|error| SpecError {
        file: file.to_string(),
        line: error.line(),
        column: error.column(),
        field: String::new(),
        message: error.to_string(),
    })?;
    if trace.format != TRACE_FORMAT || trace.version != TRACE_VERSION {
        return Err(SpecError::whole_file(
            file,
            "format",
            &format!(
                "not a {TRACE_FORMAT} version {TRACE_VERSION} file (found {} version {})",
                trace.format, trace.version
            ),
        ));
    }
    Ok(trace)
}

/// Replay a trace against its embedded model, strictly.
pub fn replay(file: &str, trace: &Trace) -> Result<ReplayOutcome, SpecError> {
    let model = spec::parse_model(&trace.model, &trace.model_source)?;
    let property = Property::by_name(&trace.property).ok_or_else(|| {
        SpecError::whole_file(
            file,
            "property",
            &format!("unknown property '{}'", trace.property),
        )
    })?;
    let actions: Vec<_> = trace.steps.iter().map(|step| step.action).collect();
    let (steps, last, events) = timeline(&model.world, &actions).map_err(|step| {
        SpecError::whole_file(
            file,
            "steps",
            &format!("the trace diverges at step {step}: its action is not enabled in the model"),
        )
    })?;
    let violated_at = match property.kind() {
        PropertyKind::Always => events
            .iter()
            .position(|events| property.violated_by(*events))
            .map(|at| at + 1),
        PropertyKind::Eventually => {
            let mut enabled = Vec::new();
            model.world.actions(&last, &mut enabled);
            let at_rest = enabled
                .iter()
                .all(|action| model.world.is_fault(&last, action));
            (at_rest && property.violated_at_rest(&model.world, &last)).then_some(steps.len())
        }
    };
    Ok(ReplayOutcome {
        model,
        property,
        steps,
        violated_at,
    })
}
