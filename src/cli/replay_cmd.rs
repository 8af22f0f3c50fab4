//! `retrylab replay`: run a saved trace strictly and show whether its violation reproduces.

use super::{ReplayArgs, EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK};
use super::json::{print_line, ReplayLine};
use crate::spec;

pub fn run(args: &ReplayArgs) -> i32 {
    let file = args.trace.display().to_string();
    let text = match std::fs::read_to_string(&args.trace) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("error: {file}: cannot read: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    let outcome = spec::parse_trace(&file, &text).and_then(|parsed| spec::replay(&file, &parsed));
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            eprintln!("error: {error}");
            return EXIT_BAD_INPUT;
        }
    };
    if args.json {
        print_line(&ReplayLine {
            model: outcome.model.path.clone(),
            property: outcome.property.name().to_string(),
            reproduced: outcome.violated_at.is_some(),
            steps: outcome.steps.len(),
            trace: file.clone(),
            violated_at: outcome.violated_at,
        });
    } else {
        println!("{} ({})", outcome.model.path, outcome.model.description);
        println!(
            "property {}: {}",
            outcome.property.name(),
            outcome.property.description()
        );
        for step in &outcome.steps {
            println!("  {:>3}. {}", step.step, step.text);
        }
        match outcome.violated_at {
            Some(step) => println!(
                "reproduced: {} violated at step {step}",
                outcome.property.name()
            ),
            None => println!(
                "NOT reproduced: the trace ran, but {} was not violated",
                outcome.property.name()
            ),
        }
    }
    if outcome.violated_at.is_some() {
        EXIT_OK
    } else {
        EXIT_MISMATCH
    }
}
