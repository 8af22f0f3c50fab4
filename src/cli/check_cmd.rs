//! `retrylab check`: exhaustive exploration of every model.

use super::output::{self, Comparison};
use super::{CheckArgs, EXIT_MISMATCH, EXIT_OK};
use crate::check::{explore, BfsOptions};
use crate::model::Property;
use serde_json::json;
use std::collections::BTreeMap;
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
        let options = BfsOptions {
            max_states: args.max_states.unwrap_or(model.limits.max_states),
            max_depth: args.max_depth.unwrap_or(model.limits.max_depth),
            max_memory_bytes: args.max_memory.saturating_mul(1 << 20),
            stop_on: None,
            symmetry: args.symmetry,
        };
        let bar = output::progress(args.json, &format!("{} states", model.path));
        let started = Instant::now();
        let report = explore(&model.world, &options, &mut |states, _depth| {
            if let Some(bar) = &bar {
                bar.set_position(states);
            }
        });
        let elapsed_ms = started.elapsed().as_millis() as u64;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        if args.report.is_some() {
            report_entries.push(crate::report::Entry {
                model: model.clone(),
                report: report.clone(),
                elapsed_ms,
            });
        }
        let comparison: Comparison =
            output::compare(model, &report.verdicts, report.reached, false);
        all_match &= comparison.matches;

        let saved = output::save_traces(
            &args.traces,
            model,
            report
                .counterexamples
                .iter()
                .map(|(property, actions)| (*property, None, actions.as_slice())),
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
        let lengths: BTreeMap<Property, usize> = report
            .counterexamples
            .iter()
            .map(|(property, actions)| (*property, actions.len()))
            .collect();

        if args.json {
            let line = json!({
                "model": model.path,
                "description": model.description,
                "properties": output::verdict_map(&report.verdicts),
                "expected": output::expected_map(model),
                "matches": comparison.matches,
                "states": report.states,
                "transitions": report.transitions,
                "depth": report.depth,
                "complete": report.complete,
                "stopped_by": report.stopped_by,
                "visited_bytes_per_state": (report.visited_bytes as f64 / report.states.max(1) as f64 * 10.0).round() / 10.0,
                "peak_bytes": report.peak_bytes,
                "counterexample_len": report.shortest_counterexample(),
                "counterexample_lens": lengths.iter().map(|(p, n)| (p.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                "reached": output::reached_names(report.reached),
                "missing_scenarios": comparison.missing_scenarios,
                "traces": traces.iter().map(|(p, path)| (p.name().to_string(), json!(path))).collect::<serde_json::Map<_, _>>(),
                "elapsed_ms": elapsed_ms,
            });
            println!("{line}");
            continue;
        }
        let completeness = match &report.stopped_by {
            None => "complete".to_string(),
            Some(reason) => format!("INCOMPLETE: {reason}"),
        };
        let header = format!(
            "{}  [{} states, depth {}, {}, {:.2} s]",
            model.path,
            report.states,
            report.depth,
            completeness,
            elapsed_ms as f64 / 1000.0
        );
        output::print_rows(model, &report.verdicts, &lengths, &header);
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
            let marker = if comparison.mismatched.contains(property) {
                "  (unexpected)"
            } else {
                ""
            };
            replay_commands.push(format!("retrylab replay {path}{marker}"));
        }
        println!();
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
        let verdict = if all_match {
            "every model got the verdicts it declares"
        } else {
            "SOME MODELS DID NOT get the verdicts they declare"
        };
        println!("{} model(s) checked: {verdict}.", models.len());
        if !replay_commands.is_empty() {
            println!("Counterexamples (replay any with the command shown):");
            for command in &replay_commands {
                println!("  {command}");
            }
        }
    }
    if all_match {
        EXIT_OK
    } else {
        EXIT_MISMATCH
    }
}
