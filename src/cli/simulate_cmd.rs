//! `retrylab simulate`: seeded swarm random walks. Walks never prove a property: what they do not violate is
//! `incomplete`. The JSON output is identical from run to run for the same seeds (`elapsed_ms` aside).

use super::output;
use super::{SimulateArgs, EXIT_MISMATCH, EXIT_OK};
use crate::check::{simulate, SimulateOptions};
use crate::model::Property;
use serde_json::json;
use std::collections::BTreeMap;
use std::time::Instant;

pub fn run(args: &SimulateArgs) -> i32 {
    if args.seeds == 0 {
        eprintln!("error: --seeds: must be at least 1");
        return super::EXIT_BAD_INPUT;
    }
    let models = match output::load_all(&args.paths) {
        Ok(models) => models,
        Err(code) => return code,
    };
    // Shards may run side by side on one machine: each writes its traces to its own folder.
    let traces_dir = match args.shard {
        Some((k, n)) => args.traces.join(format!("shard-{k}-of-{n}")),
        None => args.traces.clone(),
    };
    let mut all_match = true;
    let mut replay_commands = Vec::new();
    for model in &models {
        let options = SimulateOptions {
            first_seed: args.seed,
            seeds: args.seeds,
            max_depth: args.max_depth,
            shard: args.shard,
        };
        let bar = output::progress(args.json, &format!("{} walks", model.path));
        let started = Instant::now();
        let report = simulate(&model.world, &options, &|walks| {
            if let Some(bar) = &bar {
                bar.inc(walks);
            }
        });
        let elapsed_ms = started.elapsed().as_millis() as u64;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        let comparison = output::compare(model, &report.verdicts, report.reached, true);
        all_match &= comparison.matches;
        let seeds: BTreeMap<Property, u64> = report
            .counterexamples
            .iter()
            .map(|(property, (seed, _))| (*property, *seed))
            .collect();
        let saved = output::save_traces(
            &traces_dir,
            model,
            report
                .counterexamples
                .iter()
                .map(|(property, (seed, actions))| (*property, Some(*seed), actions.as_slice())),
            "random-walk",
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
            .map(|(property, (_, actions))| (*property, actions.len()))
            .collect();
        let shortest = lengths.values().min().copied();
        if args.json {
            let line = json!({
                "model": model.path,
                "properties": output::verdict_map(&report.verdicts),
                "expected": output::expected_map(model),
                "matches": comparison.matches,
                "first_seed": args.seed,
                "seeds": args.seeds,
                "shard": args.shard.map(|(k, n)| format!("{k}/{n}")),
                "walks": report.walks,
                "required_scenarios": model.reached.iter().map(|event| event.scenario_name()).collect::<Vec<_>>(),
                "counterexample_lens": lengths.iter().map(|(p, n)| (p.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                "states": report.steps,
                "depth": args.max_depth,
                "cut_walks": report.cut_walks,
                "counterexample_len": shortest,
                "counterexample_seeds": seeds.iter().map(|(p, s)| (p.name().to_string(), json!(s))).collect::<serde_json::Map<_, _>>(),
                "reached": output::reached_names(report.reached),
                "missing_scenarios": comparison.missing_scenarios,
                "traces": traces.iter().map(|(p, path)| (p.name().to_string(), json!(path))).collect::<serde_json::Map<_, _>>(),
                "elapsed_ms": elapsed_ms,
            });
            println!("{line}");
            continue;
        }
        let header = format!(
            "{}  [{} walks from seed {}, {} steps, {} cut at depth {}, {:.2} s]",
            model.path,
            args.seeds,
            args.seed,
            report.steps,
            report.cut_walks,
            args.max_depth,
            elapsed_ms as f64 / 1000.0
        );
        output::print_rows(model, &report.verdicts, &lengths, &header);
        if !comparison.missing_scenarios.is_empty() {
            println!("  NOT REACHED: {}", comparison.missing_scenarios.join(", "));
        }
        for (property, trace) in &timelines {
            println!(
                "  counterexample for {} (seed {:?}, {} steps):",
                property.name(),
                trace.seed,
                trace.steps.len()
            );
            output::print_timeline(trace);
        }
        for path in traces.values() {
            replay_commands.push(format!("retrylab replay {path}"));
        }
        println!();
    }
    if !args.json {
        let verdict = if all_match {
            "no contradiction with the declared verdicts (walks prove nothing: unviolated is 'incomplete')"
        } else {
            "SOME MODELS DID NOT get the verdicts they declare"
        };
        println!("{} model(s) simulated: {verdict}.", models.len());
        for command in &replay_commands {
            println!("  {command}");
        }
    }
    if all_match {
        EXIT_OK
    } else {
        EXIT_MISMATCH
    }
}
