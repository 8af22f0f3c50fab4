//! `retrylab simulate`: seeded swarm random walks. Walks never prove a property: what they do not violate is
//! `incomplete`. The JSON output is identical from run to run for the same seeds (`elapsed_ms` aside), and each
//! line says which run and shard it is (model text hash, seeds, shard) so that `retrylab merge` can check it.

use super::json::{print_line, SimulateLine};
use super::{names, output};
use super::{SimulateArgs, EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK};
use retrylab::builtin::World;
use retrylab::check::{Checker, Comparison, Report};
use retrylab::spec::ModelFile;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Instant;

pub fn run(args: &SimulateArgs) -> i32 {
    if let Err(message) = check_seeds(args.seeds, args.depth_max) {
        errln!("error: --seeds: {message}");
        return EXIT_BAD_INPUT;
    }
    let models = match output::load_all(&args.paths) {
        Ok(models) => models,
        Err(code) => return code,
    };
    let paths: Vec<&str> = models.iter().map(|model| model.path.as_str()).collect();
    let names = names::unique_names(&paths);
    // Shards may run side by side on one machine: each writes its traces to its own folder.
    let traces_dir = match args.shard {
        Some((k, n)) => args.traces.join(format!("shard-{k}-of-{n}")),
        None => args.traces.clone(),
    };
    let mut all_match = true;
    let mut replay_commands = Vec::new();
    for (model, name) in models.iter().zip(names) {
        match simulate_one(args, model, &traces_dir, &name.stem) {
            Ok((matches, commands)) => {
                all_match &= matches;
                replay_commands.extend(commands);
            }
            Err(message) => {
                errln!("error: {message}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    if !args.json {
        let verdict = if all_match {
            "no contradiction with the declared verdicts (walks prove nothing: unviolated is 'incomplete')"
        } else {
            "SOME MODELS DID NOT get the verdicts they declare"
        };
        outln!("{} model(s) simulated: {verdict}.", models.len());
        for command in &replay_commands {
            outln!("  {command}");
        }
    }
    if all_match {
        EXIT_OK
    } else {
        EXIT_MISMATCH
    }
}

/// Refuse a run whose summary could not be counted: every walk's steps add up in a u64 (and `merge` adds the
/// shards' up again), so seeds x max-depth must fit.
fn check_seeds(seeds: u64, depth_max: u32) -> Result<(), String> {
    if seeds == 0 {
        return Err("must be at least 1".to_string());
    }
    if seeds.checked_mul(u64::from(depth_max)).is_none() {
        return Err(format!(
            "{seeds} walks of up to {depth_max} steps: the step total would not fit in 64 bits (at most {} seeds \
             at this --max-depth)",
            u64::MAX / u64::from(depth_max)
        ));
    }
    Ok(())
}

/// The hash that tells one model text from another in `simulate --json` lines (`merge` compares it).
fn model_sha256(model: &ModelFile) -> String {
    hex::encode(Sha256::digest(model.source_text.as_bytes()))
}

/// Walk one model, save its counterexamples under `stem`, print its rows or its JSON line. Returns whether its
/// verdicts match and its replay commands; an error is a file that could not be written.
fn simulate_one(
    args: &SimulateArgs,
    model: &ModelFile,
    traces_dir: &Path,
    stem: &str,
) -> Result<(bool, Vec<String>), String> {
    let bar = output::progress(args.json, &format!("{} walks", model.path));
    let started = Instant::now();
    let mut checker = Checker::new(&model.world)
        .depth_max(args.depth_max)
        .memory_mib_max(super::memory_mib_max(args.memory_mib_max));
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
    let saved = output::save_traces(
        traces_dir,
        stem,
        model,
        output::counterexamples(&report).into_iter(),
        "random-walk",
        args.verbose,
        &comparison.mismatched,
    )?;
    if args.json {
        print_line(&json_line(
            args,
            model,
            &report,
            &comparison,
            &saved.paths,
            elapsed_ms,
        ));
        return Ok((comparison.matches, Vec::new()));
    }
    print_human(args, model, &report, &comparison, &saved, elapsed_ms);
    let commands = saved
        .paths
        .values()
        .map(|path| format!("retrylab replay {path}"))
        .collect();
    Ok((comparison.matches, commands))
}

fn print_human(
    args: &SimulateArgs,
    model: &ModelFile,
    report: &Report<World>,
    comparison: &Comparison,
    saved: &output::SavedTraces,
    elapsed_ms: u64,
) {
    let stopped = match &report.stopped_by {
        None => String::new(),
        Some(reason) => format!(", INCOMPLETE: {reason} after {} walks", report.walks),
    };
    let header = format!(
        "{}  [{} walks from seed {}, {} steps, {} cut at depth {}{stopped}, {:.2} s]",
        model.path,
        args.seeds,
        args.seed,
        report.states,
        report.cut_walks,
        args.depth_max,
        elapsed_ms as f64 / 1000.0
    );
    output::print_rows(model, report, &output::lengths(report), &header);
    if !comparison.missing_scenarios.is_empty() {
        outln!("  NOT REACHED: {}", comparison.missing_scenarios.join(", "));
    }
    output::print_evidence(&retrylab::spec::evidence(model, report));
    for (property, trace) in &saved.timelines {
        outln!(
            "  counterexample for {} ({}, {} steps):",
            property.name(),
            trace
                .seed
                .map_or("no seed".to_string(), |seed| format!("seed {seed}")),
            trace.steps.len()
        );
        output::print_timeline(trace);
        output::print_at_rest(
            output::at_rest_of(&model.world, *property, trace).as_ref(),
            "  ",
        );
    }
    outln!();
}

fn json_line(
    args: &SimulateArgs,
    model: &ModelFile,
    report: &Report<World>,
    comparison: &Comparison,
    traces: &std::collections::BTreeMap<retrylab::builtin::WorldProperty, String>,
    elapsed_ms: u64,
) -> SimulateLine {
    let counterexamples = output::counterexamples(report);
    let lengths = output::lengths(report);
    let evidence = retrylab::spec::evidence(model, report);
    SimulateLine {
        counterexample_len: lengths.values().min().copied(),
        counterexample_lens: output::by_name(&lengths),
        counterexample_seeds: counterexamples
            .iter()
            .filter_map(|(property, seed, _)| Some((property.name().to_string(), (*seed)?)))
            .collect(),
        cut_walks: report.cut_walks,
        depth: args.depth_max,
        elapsed_ms,
        expected: output::expected_map(model),
        first_seed: args.seed,
        matches: comparison.matches,
        missing_scenarios: comparison.missing_scenarios.clone(),
        model: model.path.clone(),
        model_sha256: model_sha256(model),
        not_reached: evidence.not_reached.clone(),
        properties: output::verdict_map(report),
        reached: output::reached_names(report),
        required_scenarios: model.expected().reached,
        seeds: args.seeds,
        shard: args.shard.map(|(k, n)| format!("{k}/{n}")),
        states: report.states,
        stopped_by: report.stopped_by.as_ref().map(ToString::to_string),
        traces: output::by_name(traces),
        vacuous: evidence.vacuous,
        vacuous_warning: evidence.warning(),
        walks: report.walks,
    }
}
