//! What check and simulate share: loading every model first (so bad input stops everything before any output
//! is written), progress bars, verdict comparison, trace files and the JSON line.

use crate::atomic::write_atomic;
use crate::check::{timeline, Trace, Verdict};
use crate::model::{Action, Event, Events, Property};
use crate::spec::{self, Model};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Every model under `paths`, or the first error (already printed).
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Model>, i32> {
    let mut models = Vec::new();
    for path in paths {
        let files = spec::model_files(path).map_err(report_bad_input)?;
        for file in files {
            models.push(spec::load_model(&file).map_err(report_bad_input)?);
        }
    }
    Ok(models)
}

fn report_bad_input(error: spec::SpecError) -> i32 {
    eprintln!("error: {error}");
    super::EXIT_BAD_INPUT
}

/// A spinner on stderr when it is a terminal and the output is for people.
pub fn progress(json: bool, message: &str) -> Option<ProgressBar> {
    if json || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {pos} {wide_msg}")
            .unwrap_or(ProgressStyle::default_spinner()),
    );
    bar.set_message(message.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(bar)
}

/// How a model's verdicts compare with what it declares.
pub struct Comparison {
    pub matches: bool,
    pub missing_scenarios: Vec<&'static str>,
    pub mismatched: Vec<Property>,
}

/// `walks_only`: the verdicts come from random walks, so a declared `holds` is matched by `incomplete`.
pub fn compare(
    model: &Model,
    verdicts: &BTreeMap<Property, Verdict>,
    reached: Events,
    walks_only: bool,
) -> Comparison {
    let mismatched: Vec<Property> = model
        .expected
        .iter()
        .filter(|(property, expected)| {
            let actual = verdicts
                .get(property)
                .copied()
                .unwrap_or(Verdict::Incomplete);
            let acceptable = **expected == actual
                || (walks_only && **expected == Verdict::Holds && actual == Verdict::Incomplete);
            !acceptable
        })
        .map(|(property, _)| *property)
        .collect();
    let missing_scenarios: Vec<&'static str> = model
        .reached
        .iter()
        .filter(|scenario| !reached.has(**scenario))
        .map(|scenario| scenario.scenario_name())
        .collect();
    Comparison {
        matches: mismatched.is_empty() && missing_scenarios.is_empty(),
        missing_scenarios,
        mismatched,
    }
}

/// The scenario names seen, in their fixed order.
pub fn reached_names(reached: Events) -> Vec<&'static str> {
    Event::SCENARIOS
        .iter()
        .filter(|event| reached.has(**event))
        .map(|event| event.scenario_name())
        .collect()
}

/// The trace file for a model's property: `<traces>/<model file stem>.<property>.json`.
pub fn trace_path(traces: &Path, model: &Model, property: Property) -> PathBuf {
    let stem = Path::new(&model.path)
        .file_stem()
        .map_or("model".into(), |stem| stem.to_string_lossy().to_string());
    traces.join(format!("{stem}.{}.json", property.name()))
}

/// Write a counterexample as a trace file; returns the trace (with its timeline) and where it went.
pub fn save_trace(
    traces: &Path,
    model: &Model,
    property: Property,
    actions: &[Action],
    found_by: &str,
    seed: Option<u64>,
) -> Result<(Trace, PathBuf), String> {
    let (steps, _, _) = timeline(&model.world, actions)
        .map_err(|step| format!("internal error: a found path diverges at step {step}"))?;
    let trace = Trace::new(model, property, found_by, seed, steps);
    let path = trace_path(traces, model, property);
    write_atomic(&path, trace.to_json().as_bytes())
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    Ok((trace, path))
}

/// Where each property's trace went, and the timelines to print.
pub struct SavedTraces {
    pub paths: BTreeMap<Property, String>,
    pub timelines: Vec<(Property, Trace)>,
}

/// Save every counterexample of a run as a trace. Returns each property's trace path and the timelines to print
/// (all with `verbose`, otherwise only those of unexpected verdicts).
pub fn save_traces<'a>(
    traces: &Path,
    model: &Model,
    counterexamples: impl Iterator<Item = (Property, Option<u64>, &'a [Action])>,
    found_by: &str,
    verbose: bool,
    mismatched: &[Property],
) -> Result<SavedTraces, String> {
    let mut paths = BTreeMap::new();
    let mut timelines = Vec::new();
    for (property, seed, actions) in counterexamples {
        let (trace, path) = save_trace(traces, model, property, actions, found_by, seed)?;
        paths.insert(property, path.display().to_string());
        if verbose || mismatched.contains(&property) {
            timelines.push((property, trace));
        }
    }
    Ok(SavedTraces { paths, timelines })
}

pub fn verdict_map(verdicts: &BTreeMap<Property, Verdict>) -> Value {
    Value::Object(
        verdicts
            .iter()
            .map(|(property, verdict)| (property.name().to_string(), json!(verdict.name())))
            .collect(),
    )
}

pub fn expected_map(model: &Model) -> Value {
    verdict_map(&model.expected)
}

/// Print a trace's timeline, indented, for people.
pub fn print_timeline(trace: &Trace) {
    for step in &trace.steps {
        println!("    {:>3}. {}", step.step, step.text);
    }
}

/// The verdict table's rows for one model.
pub fn print_rows(
    model: &Model,
    verdicts: &BTreeMap<Property, Verdict>,
    lengths: &BTreeMap<Property, usize>,
    header: &str,
) {
    println!("{header}");
    for property in Property::ALL {
        let actual = verdicts
            .get(&property)
            .copied()
            .unwrap_or(Verdict::Incomplete);
        let expected = model
            .expected
            .get(&property)
            .map_or("-", |verdict| verdict.name());
        let status = match model.expected.get(&property) {
            None => "",
            Some(declared) if *declared == actual => "ok",
            Some(Verdict::Holds) if actual == Verdict::Incomplete => "unproven",
            Some(_) => "MISMATCH",
        };
        let length = lengths
            .get(&property)
            .map_or(String::new(), |steps| format!("{steps} steps"));
        println!(
            "  {:<26} {:<11} {:<10} {:<9} {}",
            property.name(),
            actual.name(),
            expected,
            status,
            length
        );
    }
}
