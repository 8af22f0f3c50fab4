//! `retrylab simulate`: seeded swarm random walks. Walks never prove a property: what they do not violate is
//! `incomplete`. The JSON output is identical from run to run for the same seeds (`elapsed_ms` aside).

use super::json::{print_line, SimulateLine};
use super::output;
use super::{SimulateArgs, EXIT_MISMATCH, EXIT_OK};
use retrylab::check::Checker;
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
        let bar = output::progress(args.json, &format!("{} walks", model.path));
        let started = Instant::now();
        let mut checker = Checker::new(&model.world).max_depth(args.max_depth);
        if let Some((k, n)) = args.shard {
            checker = checker.shard(k, n);
        }
        let report = checker
            .on_progress(|progress| {
                if let Some(bar) = &bar {
                    bar.set_position(progress.states);
                }
            })
            .walks(args.seed, args.seeds);
        let elapsed_ms = started.elapsed().as_millis() as u64;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        let comparison = report.compare(&model.expected());
        all_match &= comparison.matches;
        let counterexamples = output::counterexamples(&report);
        let saved = output::save_traces(
            &traces_dir,
            model,
            counterexamples.iter().copied(),
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
        let lengths = output::lengths(&report);
        if args.json {
            print_line(&SimulateLine {
                counterexample_len: lengths.values().min().copied(),
                counterexample_lens: lengths
                    .iter()
                    .map(|(property, length)| (property.name().to_string(), *length))
                    .collect(),
                counterexample_seeds: counterexamples
                    .iter()
                    .filter_map(|(property, seed, _)| Some((property.name().to_string(), (*seed)?)))
                    .collect(),
                cut_walks: report.cut_walks,
                depth: args.max_depth,
                elapsed_ms,
                expected: output::expected_map(model),
                first_seed: args.seed,
                matches: comparison.matches,
                missing_scenarios: comparison.missing_scenarios.clone(),
                model: model.path.clone(),
                properties: output::verdict_map(&report),
                reached: output::reached_names(&report),
                required_scenarios: model.expected().reached,
                seeds: args.seeds,
                shard: args.shard.map(|(k, n)| format!("{k}/{n}")),
                states: report.states,
                traces: traces
                    .iter()
                    .map(|(property, path)| (property.name().to_string(), path.clone()))
                    .collect(),
                walks: report.walks,
            });
            continue;
        }
        let header = format!(
            "{}  [{} walks from seed {}, {} steps, {} cut at depth {}, {:.2} s]",
            model.path,
            args.seeds,
            args.seed,
            report.states,
            report.cut_walks,
            args.max_depth,
            elapsed_ms as f64 / 1000.0
        );
        output::print_rows(model, &report, &lengths, &header);
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
