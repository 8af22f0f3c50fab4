//! A path through any `check::Model` as the trace explorer shows it: each step's text, whether it was a fault,
//! the properties it violated, and the state after it as the model's panels (`Model::view`) with one more panel
//! saying which property broke where. The HTML report and `retrylab explore` both draw from this, so they agree.

use crate::check::{self, Kind, Model, Row, StateView};
use serde::Serialize;

/// The panel the explorer adds to every model's view.
pub const PROPERTIES_PANEL: &str = "Properties";

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExploredStep {
    /// 1-based.
    pub step: usize,
    pub text: String,
    /// A fault (a loss, a crash, a timeout that should not have fired): the model's `is_fault`.
    pub fault: bool,
    /// The `always` and `eventually` properties first violated at this step.
    pub violated: Vec<String>,
}

/// A path: its steps and the state before the first and after each (`views[0]` is the initial state).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExploredPath {
    pub steps: Vec<ExploredStep>,
    pub views: Vec<StateView>,
}

/// Run `actions` from the initial state and view every state; `Err(step)` names the 1-based step whose action
/// is not enabled. `cycle_from` as in a trace (a lasso's return point), for judging `eventually` properties.
pub fn explore_path<M: Model>(
    model: &M,
    actions: &[M::Action],
    cycle_from: Option<usize>,
) -> Result<ExploredPath, usize> {
    Ok(explore_run(
        model,
        &check::timeline(model, actions)?,
        cycle_from,
    ))
}

/// [`explore_path`] of a path already run (`check::timeline`).
pub fn explore_run<M: Model>(
    model: &M,
    run: &check::Run<M>,
    cycle_from: Option<usize>,
) -> ExploredPath {
    let judged = check::judge_run(model, run, cycle_from);
    let steps = run
        .steps
        .iter()
        .enumerate()
        .map(|(index, step)| ExploredStep {
            step: step.step,
            text: step.text.clone(),
            fault: model.is_fault(&run.states[index], &step.action),
            violated: judged
                .properties
                .iter()
                .filter(|found| found.kind != Kind::Sometimes && found.at_step == Some(step.step))
                .map(|found| found.name.clone())
                .collect(),
        })
        .collect();
    let views = run
        .states
        .iter()
        .enumerate()
        .map(|(after, state)| {
            let mut view = model.view(state);
            view.panel(PROPERTIES_PANEL, property_rows(&judged, after));
            view
        })
        .collect();
    ExploredPath { steps, views }
}

/// Every safety and liveness property, violated or not after `after` steps, then the scenarios reached so far.
fn property_rows<M: Model>(judged: &check::Report<M>, after: usize) -> Vec<Row> {
    let decided = judged
        .properties
        .iter()
        .filter(|found| found.kind != Kind::Sometimes);
    let mut rows: Vec<Row> = decided
        .map(|found| {
            let value = match found.at_step {
                Some(step) if step <= after => format!("VIOLATED at step {step}"),
                _ => "not violated so far".to_string(),
            };
            Row::new(found.name.clone(), value)
        })
        .collect();
    rows.extend(
        judged
            .properties
            .iter()
            .filter(|found| found.kind == Kind::Sometimes)
            .filter_map(|found| {
                let step = found.at_step.filter(|step| *step <= after)?;
                Some(Row::new(
                    format!("scenario {}", found.name),
                    format!("reached at step {step}"),
                ))
            }),
    );
    rows
}
