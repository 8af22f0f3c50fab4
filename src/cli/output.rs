//! What check and simulate share: loading every model first (so bad input stops everything before any output
//! is written), progress bars, the verdicts of a report by name, trace files and the verdict table.

use super::json::Verdicts;
use indicatif::{ProgressBar, ProgressStyle};
use retrylab::atomic::write_atomic;
use retrylab::builtin::{Action, AtRest, World, WorldProperty};
use retrylab::check::{timeline, Kind, Report, Verdict};
use retrylab::spec::{self, ModelFile, WorldTrace};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Every model under `paths`, or the first error (already printed).
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<ModelFile>, i32> {
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
    errln!("error: {error}");
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
    // A model's path is input: its escape codes must not reach the terminal through the spinner either.
    bar.set_message(super::stdout::terminal_safe(message));
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(bar)
}

/// The world's seven properties' verdicts by name (the `sometimes` scenarios are listed apart, as `reached`).
pub fn verdict_map(report: &Report<World>) -> Verdicts {
    report
        .properties
        .iter()
        .filter(|property| property.kind != Kind::Sometimes)
        .map(|property| (property.name.clone(), property.verdict.name().to_string()))
        .collect()
}

/// The verdicts a model file declares, by name.
pub fn expected_map(model: &ModelFile) -> Verdicts {
    model
        .expected
        .iter()
        .map(|(property, verdict)| (property.name().to_string(), verdict.name().to_string()))
        .collect()
}

/// The scenarios witnessed, in their fixed order.
pub fn reached_names(report: &Report<World>) -> Vec<String> {
    report
        .properties
        .iter()
        .filter(|property| property.kind == Kind::Sometimes && property.verdict == Verdict::Holds)
        .map(|property| property.name.clone())
        .collect()
}

/// Each violated property's counterexample, with the world's property and the walk's seed.
pub fn counterexamples(report: &Report<World>) -> Vec<(WorldProperty, Option<u64>, &[Action])> {
    report
        .counterexamples()
        .map(|(found, path)| {
            let property = WorldProperty::by_name(&found.name).expect("the world's own property");
            (property, found.seed, path)
        })
        .collect()
}

/// Counterexample lengths by property.
pub fn lengths(report: &Report<World>) -> BTreeMap<WorldProperty, usize> {
    counterexamples(report)
        .into_iter()
        .map(|(property, _, path)| (property, path.len()))
        .collect()
}

/// A per-property map keyed by property name, as the JSON lines write it.
pub fn by_name<T: Clone>(map: &BTreeMap<WorldProperty, T>) -> BTreeMap<String, T> {
    map.iter()
        .map(|(property, value)| (property.name().to_string(), value.clone()))
        .collect()
}

/// The trace file for a model's property: `<traces>/<name>.<property>.json`, with the model's name in its run
/// (`names::unique_names`: the file stem unless two models of the run share it).
pub fn trace_path(traces: &Path, stem: &str, property: WorldProperty) -> PathBuf {
    traces.join(format!("{stem}.{}.json", property.name()))
}

/// Write a counterexample as a trace file; returns the trace (with its timeline) and where it went.
fn save_trace(
    traces: &Path,
    stem: &str,
    model: &ModelFile,
    property: WorldProperty,
    actions: &[Action],
    found_by: &str,
    seed: Option<u64>,
) -> Result<(WorldTrace, PathBuf), String> {
    let run = timeline(&model.world, actions)
        .map_err(|step| format!("internal error: a found path diverges at step {step}"))?;
    let trace = spec::new_trace(model, property.name(), found_by, seed, run.steps);
    let path = trace_path(traces, stem, property);
    write_atomic(&path, trace.to_json().as_bytes())
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    Ok((trace, path))
}

/// Where each property's trace went, and the timelines to print.
pub struct SavedTraces {
    pub paths: BTreeMap<WorldProperty, String>,
    pub timelines: Vec<(WorldProperty, WorldTrace)>,
}

/// Save every counterexample of a run as a trace. Returns each property's trace path and the timelines to print
/// (all with `verbose`, otherwise only those of unexpected verdicts).
pub fn save_traces<'a>(
    traces: &Path,
    stem: &str,
    model: &ModelFile,
    counterexamples: impl Iterator<Item = (WorldProperty, Option<u64>, &'a [Action])>,
    found_by: &str,
    verbose: bool,
    mismatched: &[String],
) -> Result<SavedTraces, String> {
    let mut paths = BTreeMap::new();
    let mut timelines = Vec::new();
    for (property, seed, actions) in counterexamples {
        let (trace, path) = save_trace(traces, stem, model, property, actions, found_by, seed)?;
        paths.insert(property, path.display().to_string());
        if verbose || mismatched.iter().any(|name| name == property.name()) {
            timelines.push((property, trace));
        }
    }
    Ok(SavedTraces { paths, timelines })
}

/// Remove the trace files this model left for properties that now hold: a fixed model's old counterexample
/// would otherwise still replay as "reproduced" (against the old text it keeps). Only a trace of this same model
/// path goes: another model that once had this name (in another run) keeps its file. Returns the paths removed.
pub fn remove_stale_traces(
    traces: &Path,
    stem: &str,
    model: &ModelFile,
    report: &Report<World>,
) -> Result<Vec<PathBuf>, String> {
    let mut removed = Vec::new();
    for property in WorldProperty::all() {
        if report.verdict(property.name()) != Verdict::Holds {
            continue; // violated: overwritten by this run; incomplete: the old trace may still be right
        }
        let path = trace_path(traces, stem, property);
        let Ok(text) = retrylab::input::read_text(&path) else {
            continue;
        };
        let file = path.display().to_string();
        let ours = spec::parse_trace(&file, &text).is_ok_and(|trace| trace.model == model.path);
        if ours {
            std::fs::remove_file(&path)
                .map_err(|error| format!("cannot remove stale {file}: {error}"))?;
            removed.push(path);
        }
    }
    Ok(removed)
}

/// Print a counterexample's timeline, indented, for people. A liveness counterexample ends with what stays
/// unresolved at rest; unless `full_trace`, it shows only the steps that the unresolved operations depend on
/// (numbered as in the whole path), and says how many others it left out.
pub fn print_counterexample(
    world: &World,
    property: WorldProperty,
    trace: &WorldTrace,
    full_trace: bool,
) {
    let at_rest = at_rest_of(world, property, trace);
    let sliced = at_rest
        .as_ref()
        .filter(|at_rest| !full_trace && at_rest.slice_steps.len() < trace.steps.len());
    match sliced {
        None => outln!(
            "  counterexample for {} ({} steps):",
            property.name(),
            trace.steps.len()
        ),
        Some(at_rest) => outln!(
            "  counterexample for {} ({} steps; the {} that {} depends on, --full-trace for all):",
            property.name(),
            trace.steps.len(),
            at_rest.slice_steps.len(),
            operations(at_rest)
        ),
    }
    for step in &trace.steps {
        if sliced.is_none_or(|at_rest| at_rest.slice_steps.contains(&step.step)) {
            outln!("    {:>3}. {}", step.step, step.text);
        }
    }
    print_at_rest(at_rest.as_ref(), "  ");
}

/// What a liveness counterexample leaves unresolved at its end, and the steps that depend on it.
pub fn at_rest_of(world: &World, property: WorldProperty, trace: &WorldTrace) -> Option<AtRest> {
    let actions: Vec<Action> = trace.steps.iter().map(|step| step.action).collect();
    world.at_rest(property, &actions).ok().flatten()
}

/// Print a trace's every step, indented, for people.
pub fn print_timeline(trace: &WorldTrace) {
    for step in &trace.steps {
        outln!("    {:>3}. {}", step.step, step.text);
    }
}

/// "C2.op1" or "C2.op1 and C3.op1": the operations left unresolved.
fn operations(at_rest: &AtRest) -> String {
    let names: Vec<&str> = at_rest
        .unresolved
        .iter()
        .map(|unresolved| unresolved.operation.as_str())
        .collect();
    names.join(" and ")
}

/// The lines saying what stays unresolved at rest, after a liveness counterexample.
pub fn print_at_rest(at_rest: Option<&AtRest>, indent: &str) {
    let Some(at_rest) = at_rest else {
        return;
    };
    outln!("{indent}at rest (from here on only faults could happen):");
    for unresolved in &at_rest.unresolved {
        outln!("{indent}  {}", unresolved.sentence());
    }
}

/// The scenarios reached and not reached, and the warning when a `holds` rests on no danger met.
pub fn print_evidence(evidence: &spec::Evidence) {
    outln!("  scenarios reached: {}", spec::listed(&evidence.reached));
    outln!(
        "  scenarios not reached: {}",
        spec::listed(&evidence.not_reached)
    );
    if let Some(warning) = evidence.warning() {
        outln!("  WARNING: {warning}");
    }
}

/// The verdict table's rows for one model.
pub fn print_rows(
    model: &ModelFile,
    report: &Report<World>,
    lengths: &BTreeMap<WorldProperty, usize>,
    header: &str,
) {
    outln!("{header}");
    outln!(
        "  {:<26} {:<11} {:<10} {:<9} {}",
        "property",
        "verdict",
        "declared",
        "match",
        "counterexample"
    );
    for property in WorldProperty::all() {
        let actual = report.verdict(property.name());
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
        outln!(
            "  {:<26} {:<11} {:<10} {:<9} {}",
            property.name(),
            actual.name(),
            expected,
            status,
            length
        );
    }
}
