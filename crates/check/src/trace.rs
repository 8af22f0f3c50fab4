//! Versioned JSON traces: a path as data, generic over the model's action type. A trace keeps the text the
//! model was built from (a model file, a handler's name and settings: whatever the caller wants) as an opaque
//! string, so it replays even after that file changed or moved; turning the text back into a model is the
//! caller's part (`spec::replay_trace` for model files).

use super::path::TimelineStep;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The `format` every trace file carries.
pub const TRACE_FORMAT: &str = "retrylab-trace";
/// 2: the built-in world names a payment by its operation and execution number (an object, not a position in
/// the payments table) and fences with a token per key, so a version 1 trace is refused by its version, not by a
/// field that no longer parses.
pub const TRACE_VERSION: u32 = 2;

/// A trace file: the actions of one path, with the model it was found on and what it shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace<A> {
    /// Always `TRACE_FORMAT`.
    pub format: String,
    /// The trace format's version: a file of another version is refused by it.
    pub version: u32,
    /// Where the model came from (a model file's path, as given on the command line).
    pub model: String,
    /// The model's own text, opaque to the checker.
    pub model_source: String,
    /// The property the trace decides.
    pub property: String,
    /// `bfs` (a shortest counterexample), `random-walk` or `by-hand`.
    pub found_by: String,
    /// The walk's seed, for `random-walk`.
    pub seed: Option<u64>,
    /// A lasso: the last state is the state after this many steps (a cycle that never reaches the goal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle_from: Option<usize>,
    /// The steps, in order.
    pub steps: Vec<TimelineStep<A>>,
}

/// Why a trace file could not be read: 1-based line and column, and the field. 0 when no position is known: the
/// JSON is well-formed but `field` is wrong (its format or version), and the caller, which has the text and a JSON
/// locator (`spec::parse_trace`), places it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// 1-based line, 0 when unknown.
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub column: usize,
    /// The field at fault.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl<A: Serialize + DeserializeOwned> Trace<A> {
    /// A trace of `steps` found on the model of that name and source.
    pub fn new(
        model: &str,
        model_source: &str,
        property: &str,
        found_by: &str,
        seed: Option<u64>,
        steps: Vec<TimelineStep<A>>,
    ) -> Trace<A> {
        Trace {
            format: TRACE_FORMAT.to_string(),
            version: TRACE_VERSION,
            model: model.to_string(),
            model_source: model_source.to_string(),
            property: property.to_string(),
            found_by: found_by.to_string(),
            seed,
            cycle_from: None,
            steps,
        }
    }

    /// The trace as pretty-printed JSON, as written to a file.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a trace always serialises");
        text.push('\n');
        text
    }

    /// Parse a trace file's text, checking its format and version.
    pub fn from_json(text: &str) -> Result<Trace<A>, TraceError> {
        let trace: Trace<A> = serde_json::from_str(text).map_err(|error| TraceError {
            line: error.line(),
            column: error.column(),
            field: String::new(),
            message: error.to_string(),
        })?;
        if trace.format != TRACE_FORMAT || trace.version != TRACE_VERSION {
            return Err(TraceError {
                line: 0,
                column: 0,
                // The field that is wrong; its position is the caller's to find (a parsed trace keeps none).
                field: if trace.format != TRACE_FORMAT {
                    "format"
                } else {
                    "version"
                }
                .to_string(),
                message: format!(
                    "not a {TRACE_FORMAT} version {TRACE_VERSION} file (found {} version {})",
                    trace.format, trace.version
                ),
            });
        }
        Ok(trace)
    }
}
