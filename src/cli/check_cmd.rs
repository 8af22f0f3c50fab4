//! `retrylab check`: exhaustive exploration of every model.

use super::json::{print_line, CheckLine};
use super::{names, output};
use super::{CheckArgs, OnOff, EXIT_MISMATCH, EXIT_OK};
use retrylab::builtin::{AtRest, World, WorldProperty};
use retrylab::check::{Checker, Comparison, Por, Report};
use retrylab::spec::{self, ModelFile};
use std::collections::BTreeMap;
use std::time::Instant;

pub fn run(args: &CheckArgs) -> i32 {
    let models = match output::load_all(&args.paths) {
        Ok(models) => models,
        Err(code) => return code,
    };
    let paths: Vec<&str> = models.iter().map(|model| model.path.as_str()).collect();
    let names = names::unique_names(&paths);
    let mut all_match = true;
    let mut vacuous_models = 0usize;
    let mut replay_commands = Vec::new();
    let mut report_entries = Vec::new();
    for (model, name) in models.iter().zip(names) {
        let checked = match check_one(args, model, &name.stem) {
            Ok(checked) => checked,
            Err(message) => {
                errln!("error: {message}");
                return super::EXIT_BAD_INPUT;
            }
        };
        all_match &= checked.matches;
        vacuous_models += usize::from(checked.vacuous);
        replay_commands.extend(checked.replay_commands);
        if args.report.is_some() {
            report_entries.push(retrylab::report::Entry {
                model: model.clone(),
                report: checked.report,
                elapsed_ms: checked.elapsed_ms,
                stem: name.stem,
                shown: name.shown,
            });
        }
    }
    if let Some(path) = &args.report {
        let is_html = path
            .extension()
            .is_some_and(|extension| extension == "html");
        let written = if is_html {
            retrylab::report::write_html_report(path, &report_entries)
        } else {
            retrylab::report::write_report(path, &report_entries)
        };
        if let Err(message) = written {
            errln!("error: {message}");
            return super::EXIT_BAD_INPUT;
        }
        if !args.json {
            outln!("Report written to {}.", path.display());
        }
    }
    if !args.json {
        print_summary(models.len(), all_match, &replay_commands);
        print_vacuity_summary(vacuous_models, args.strict);
    }
    if all_match && !(args.strict && vacuous_models > 0) {
        EXIT_OK
    } else {
        EXIT_MISMATCH
    }
}

/// One model's search, as printed.
struct Checked {
    report: Report<World>,
    elapsed_ms: u64,
    matches: bool,
    /// A safety property holds vacuously (see `spec::evidence`).
    vacuous: bool,
    replay_commands: Vec<String>,
}

/// Search one model, save its counterexamples under `stem` (and remove those of properties that now hold), and
/// print its rows or its JSON line. An error is a file that could not be written.
fn check_one(args: &CheckArgs, model: &ModelFile, stem: &str) -> Result<Checked, String> {
    let bar = output::progress(args.json, &format!("{} states", model.path));
    let started = Instant::now();
    let report = Checker::new(&model.world)
        .states_max(args.states_max.unwrap_or(model.limits.states_max))
        .depth_max(args.depth_max.unwrap_or(model.limits.depth_max))
        .memory_mib_max(super::memory_mib_max(args.memory_mib_max))
        .symmetry(args.symmetry)
        .por(match args.por {
            OnOff::On => Por::On,
            OnOff::Off => Por::Off,
        })
        .on_progress(|progress| {
            if let Some(bar) = &bar {
                bar.set_position(progress.states);
            }
        })
        .bfs();
    let elapsed_ms = started.elapsed().as_millis() as u64;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let comparison = report.compare(&model.expected());
    let saved = output::save_traces(
        &args.traces,
        stem,
        model,
        output::counterexamples(&report).into_iter(),
        "bfs",
        args.verbose,
        &comparison.mismatched,
    )?;
    let removed = output::remove_stale_traces(&args.traces, stem, model, &report)?;
    let traces = saved.paths;
    let evidence = spec::evidence(model, &report);
    let mut replay_commands = Vec::new();
    if args.json {
        print_json(args, model, &report, &comparison, &traces, elapsed_ms);
    } else {
        let header = header(model, &report, elapsed_ms);
        output::print_rows(model, &report, &output::lengths(&report), &header);
        if !comparison.missing_scenarios.is_empty() {
            outln!(
                "  NOT REACHED (the passing verdicts may be vacuous): {}",
                comparison.missing_scenarios.join(", ")
            );
        }
        output::print_evidence(&evidence);
        print_found(args, model, &removed, &saved.timelines);
        for (property, path) in &traces {
            let unexpected = comparison
                .mismatched
                .iter()
                .any(|name| name == property.name());
            let marker = if unexpected { "  (unexpected)" } else { "" };
            replay_commands.push(format!("retrylab replay {path}{marker}"));
        }
        outln!();
    }
    Ok(Checked {
        report,
        elapsed_ms,
        matches: comparison.matches,
        vacuous: evidence.vacuous.is_some(),
        replay_commands,
    })
}

/// The stale traces removed and the counterexamples to show.
fn print_found(
    args: &CheckArgs,
    model: &ModelFile,
    removed: &[std::path::PathBuf],
    timelines: &[(WorldProperty, spec::WorldTrace)],
) {
    for path in removed {
        outln!("  removed {} (the property now holds)", path.display());
    }
    for (property, trace) in timelines {
        output::print_counterexample(&model.world, *property, trace, args.full_trace);
    }
}

fn print_json(
    args: &CheckArgs,
    model: &ModelFile,
    report: &Report<World>,
    comparison: &Comparison,
    traces: &BTreeMap<WorldProperty, String>,
    elapsed_ms: u64,
) {
    let evidence = spec::evidence(model, report);
    let at_rest: BTreeMap<String, AtRest> = output::counterexamples(report)
        .into_iter()
        .filter_map(|(property, _, path)| {
            let at_rest = model.world.at_rest(property, path).ok().flatten()?;
            Some((property.name().to_string(), at_rest))
        })
        .collect();
    print_line(&CheckLine {
        complete: report.complete,
        counterexample_len: report.shortest_counterexample(),
        counterexample_lens: output::by_name(&output::lengths(report)),
        depth: report.depth,
        description: model.description.clone(),
        elapsed_ms,
        expected: output::expected_map(model),
        matches: comparison.matches,
        missing_scenarios: comparison.missing_scenarios.clone(),
        model: model.path.clone(),
        not_reached: evidence.not_reached.clone(),
        peak_bytes: report.peak_bytes,
        por: args.por == OnOff::On,
        por_reduced_states: report.reduced_states,
        properties: output::verdict_map(report),
        reached: output::reached_names(report),
        rss_peak_bytes: report.rss_peak_bytes,
        slice_steps: at_rest
            .iter()
            .map(|(name, at_rest)| (name.clone(), at_rest.slice_steps.clone()))
            .collect(),
        states: report.states,
        // Known when nothing was reduced (the search was a full one); a reduced search does not know it.
        states_full: (report.reduced_states == 0).then_some(report.states),
        stopped_by: report.stopped_by.as_ref().map(ToString::to_string),
        traces: output::by_name(traces),
        transitions: report.transitions,
        unresolved: at_rest
            .into_iter()
            .map(|(name, at_rest)| (name, at_rest.unresolved))
            .collect(),
        vacuous: evidence.vacuous,
        vacuous_warning: evidence.warning(),
        visited_bytes_per_state: bytes_per_state(report),
    });
}

/// The visited set's bytes per unique state, to one decimal.
fn bytes_per_state(report: &Report<World>) -> f64 {
    (report.visited_bytes as f64 / report.states.max(1) as f64 * 10.0).round() / 10.0
}

fn header(model: &ModelFile, report: &Report<World>, elapsed_ms: u64) -> String {
    let completeness = match &report.stopped_by {
        None => "complete".to_string(),
        Some(reason) => format!("INCOMPLETE: {reason}"),
    };
    format!(
        "{}  [{} states, depth {}, {}, {:.2} s]",
        model.path,
        report.states,
        report.depth,
        completeness,
        elapsed_ms as f64 / 1000.0
    )
}

fn print_vacuity_summary(vacuous_models: usize, strict: bool) {
    if vacuous_models == 0 {
        return;
    }
    let consequence = if strict {
        "with --strict this fails the run"
    } else {
        "--strict fails the run on it"
    };
    outln!(
        "WARNING: {vacuous_models} model(s) hold only vacuously (no fault enabled, or no dangerous scenario \
         reached): {consequence}."
    );
}

fn print_summary(models: usize, all_match: bool, replay_commands: &[String]) {
    let verdict = if all_match {
        "every model got the verdicts it declares"
    } else {
        "SOME MODELS DID NOT get the verdicts they declare"
    };
    outln!("{models} model(s) checked: {verdict}.");
    if !replay_commands.is_empty() {
        outln!("Counterexamples (replay any with the command shown):");
        for command in replay_commands {
            outln!("  {command}");
        }
    }
}
