//! `retrylab check`: exhaustive exploration of every model.

use super::json::{print_line, CheckLine};
use super::output;
use super::{CheckArgs, EXIT_MISMATCH, EXIT_OK};
use crate::check::{Checker, Report};
use crate::model::World;
use crate::spec::Model;
use std::time::Instant;

pub fn run(args: &CheckArgs) -> i32 {
    let models = match output::load_all(&args.paths) {
        Ok(models) => models,
        Err(code) => return code,
    };
    let mut all_match = true;
    let mut replay_commands = Vec::new();
    let mut report_entries = Vec::new();
    if !args.json {
        println!(
            "{:<28} {:<11} {:<10} {:<9} counterexample",
            "  property", "verdict", "expected", ""
        );
    }
    for model in &models {
        let bar = output::progress(args.json, &format!("{} states", model.path));
        let started = Instant::now();
        let report = Checker::new(&model.world)
            .max_states(args.max_states.unwrap_or(model.limits.max_states))
            .max_depth(args.max_depth.unwrap_or(model.limits.max_depth))
            .max_memory_mib(args.max_memory)
            .symmetry(args.symmetry)
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
        all_match &= comparison.matches;
        let saved = output::save_traces(
            &args.traces,
            model,
            output::counterexamples(&report).into_iter(),
            "bfs",
            args.verbose,
            &comparison.mismatched,
        );
        let (traces, timelines) = match saved {
            Ok(saved) => (saved.paths, saved.timelines),
            Err(message) => {
                eprintln!("error: {message}");
                return super::EXIT_BAD_INPUT;
            }
        };
        let lengths = output::lengths(&report);
        if args.json {
            print_line(&CheckLine {
                complete: report.complete,
                counterexample_len: report.shortest_counterexample(),
                counterexample_lens: lengths
                    .iter()
                    .map(|(property, length)| (property.name().to_string(), *length))
                    .collect(),
                depth: report.depth,
                description: model.description.clone(),
                elapsed_ms,
                expected: output::expected_map(model),
                matches: comparison.matches,
                missing_scenarios: comparison.missing_scenarios.clone(),
                model: model.path.clone(),
                peak_bytes: report.peak_bytes,
                properties: output::verdict_map(&report),
                reached: output::reached_names(&report),
                states: report.states,
                stopped_by: report.stopped_by.clone(),
                traces: traces
                    .iter()
                    .map(|(property, path)| (property.name().to_string(), path.clone()))
                    .collect(),
                transitions: report.transitions,
                visited_bytes_per_state: bytes_per_state(&report),
            });
        } else {
            let header = header(model, &report, elapsed_ms);
            output::print_rows(model, &report, &lengths, &header);
            if !comparison.missing_scenarios.is_empty() {
                println!(
                    "  NOT REACHED (the passing verdicts may be vacuous): {}",
                    comparison.missing_scenarios.join(", ")
                );
            }
            for (property, trace) in &timelines {
                println!(
                    "  counterexample for {} ({} steps):",
                    property.name(),
                    trace.steps.len()
                );
                output::print_timeline(trace);
            }
            for (property, path) in &traces {
                let unexpected = comparison.mismatched.iter().any(|name| name == property.name());
                let marker = if unexpected { "  (unexpected)" } else { "" };
                replay_commands.push(format!("retrylab replay {path}{marker}"));
            }
            println!();
        }
        if args.report.is_some() {
            report_entries.push(crate::report::Entry {
                model: model.clone(),
                report,
                elapsed_ms,
            });
        }
    }
    if let Some(path) = &args.report {
        if let Err(message) = crate::report::write_report(path, &report_entries) {
            eprintln!("error: {message}");
            return super::EXIT_BAD_INPUT;
        }
        if !args.json {
            println!("Report written to {}.", path.display());
        }
    }
    if !args.json {
        print_summary(models.len(), all_match, &replay_commands);
    }
    if all_match {
        EXIT_OK
    } else {
        EXIT_MISMATCH
    }
}

/// The visited set's bytes per unique state, to one decimal.
fn bytes_per_state(report: &Report<World>) -> f64 {
    (report.visited_bytes as f64 / report.states.max(1) as f64 * 10.0).round() / 10.0
}

fn header(model: &Model, report: &Report<World>, elapsed_ms: u64) -> String {
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

fn print_summary(models: usize, all_match: bool, replay_commands: &[String]) {
    let verdict = if all_match {
        "every model got the verdicts it declares"
    } else {
        "SOME MODELS DID NOT get the verdicts they declare"
    };
    println!("{models} model(s) checked: {verdict}.");
    if !replay_commands.is_empty() {
        println!("Counterexamples (replay any with the command shown):");
        for command in replay_commands {
            println!("  {command}");
        }
    }
}
