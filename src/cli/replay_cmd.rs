//! `retrylab replay`: run a saved trace strictly and show whether its violation reproduces.

use super::json::{print_line, ReplayLine};
use super::output;
use super::{ReplayArgs, EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK};
use retrylab::builtin::{Action, AtRest};
use retrylab::check::TimelineStep;
use retrylab::spec;

pub fn run(args: &ReplayArgs) -> i32 {
    let file = args.trace.display().to_string();
    let text = match retrylab::input::read_text(&args.trace) {
        Ok(text) => text,
        Err(error) => {
            errln!("error: {file}: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let outcome = spec::parse_trace(&file, &text).and_then(|parsed| {
        let outcome = spec::replay(&file, &text, &parsed)?;
        Ok((outcome, parsed))
    });
    let (outcome, trace) = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            errln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    if let Some(warning) = model_file_warning(&trace) {
        errln!("warning: {warning}");
    }
    let at_rest = output::at_rest_of(&outcome.model.world, outcome.property, &trace)
        .filter(|_| outcome.violated_at.is_some());
    if args.json {
        print_line(&ReplayLine {
            model: outcome.model.path.clone(),
            property: outcome.property.name().to_string(),
            reproduced: outcome.violated_at.is_some(),
            slice_steps: at_rest.as_ref().map(|at_rest| at_rest.slice_steps.clone()),
            steps: outcome.steps.len(),
            trace: file.clone(),
            unresolved: at_rest.map(|at_rest| at_rest.unresolved),
            violated_at: outcome.violated_at,
        });
    } else {
        outln!("{} ({})", outcome.model.path, outcome.model.description);
        outln!(
            "property {}: {}",
            outcome.property.name(),
            outcome.property.description()
        );
        print_steps(&outcome.steps, at_rest.as_ref(), args.full_trace);
        match outcome.violated_at {
            Some(step) => outln!(
                "reproduced: {} violated at step {step}",
                outcome.property.name()
            ),
            None => outln!(
                "NOT reproduced: the trace ran, but {} was not violated",
                outcome.property.name()
            ),
        }
        output::print_at_rest(at_rest.as_ref(), "");
    }
    if outcome.violated_at.is_some() {
        EXIT_OK
    } else {
        EXIT_MISMATCH
    }
}

/// The trace's steps; a liveness trace only those its unresolved operations depend on, unless `full_trace`.
fn print_steps(steps: &[TimelineStep<Action>], at_rest: Option<&AtRest>, full_trace: bool) {
    let slice = at_rest
        .map(|at_rest| &at_rest.slice_steps)
        .filter(|slice| !full_trace && slice.len() < steps.len());
    if let Some(slice) = slice {
        outln!(
            "  ({} of {} steps shown: those the unresolved operations depend on; --full-trace for all)",
            slice.len(),
            steps.len()
        );
    }
    for step in steps {
        if slice.is_none_or(|slice| slice.contains(&step.step)) {
            outln!("  {:>3}. {}", step.step, step.text);
        }
    }
}

/// A trace replays the model text stored in it; when the file it came from now says something else (the model was
/// fixed since) or is gone, a "reproduced" speaks of the old text only: say so. Paths are as the trace's run gave
/// them, so from another folder a file can look gone.
fn model_file_warning(trace: &spec::WorldTrace) -> Option<String> {
    let path = &trace.model;
    // The path comes from the trace file: read it as any input (a trace naming /dev/zero must not fill memory).
    match retrylab::input::read_text(std::path::Path::new(path)) {
        Ok(text) if text == trace.model_source => None,
        Ok(_) => Some(format!(
            "{path} has changed since this trace was written: replayed the model text stored in the trace (check \
             the model again for a current trace)"
        )),
        Err(error) if error.not_found => Some(format!(
            "{path} is gone (from this folder): replayed the model text stored in the trace"
        )),
        Err(error) => Some(format!(
            "{path} cannot be read ({error}): replayed the model text stored in the trace"
        )),
    }
}
