//! `retrylab merge`: combine the JSON lines of `simulate --shard K/N` runs. For each model: a property is
//! violated if any shard violated it; the counterexample kept is the shortest (then the lowest seed); counts add
//! up; scenarios reached are the union; `matches` is judged again on the whole by `check::compare`.

use super::json::{print_line, MergeLine, SimulateLine, Verdicts};
use super::{MergeArgs, EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK};
use retrylab::check::{compare, Expected, Verdict};
use std::collections::BTreeMap;

pub fn run(args: &MergeArgs) -> i32 {
    let mut models: BTreeMap<String, Vec<SimulateLine>> = BTreeMap::new();
    for file in &args.files {
        let name = file.display().to_string();
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(error) => {
                eprintln!("error: {name}: cannot read: {error}");
                return EXIT_BAD_INPUT;
            }
        };
        for (index, line) in text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
        {
            match serde_json::from_str::<SimulateLine>(line) {
                Ok(shard) => models.entry(shard.model.clone()).or_default().push(shard),
                Err(error) => {
                    eprintln!(
                        "error: {name}:{}:{}: not a `simulate --json` line: {error}",
                        index + 1,
                        error.column()
                    );
                    return EXIT_BAD_INPUT;
                }
            }
        }
    }
    let mut all_match = true;
    for (model, shards) in &models {
        let merged = merge(model, shards);
        all_match &= merged.matches;
        print_line(&merged);
    }
    if all_match {
        EXIT_OK
    } else {
        EXIT_MISMATCH
    }
}

/// A verdict name as written by `simulate --json`.
fn parse_verdict(name: &str) -> Verdict {
    match name {
        "violated" => Verdict::Violated,
        "holds" => Verdict::Holds,
        _ => Verdict::Incomplete,
    }
}

fn merge(model: &str, shards: &[SimulateLine]) -> MergeLine {
    let mut properties: Verdicts = BTreeMap::new();
    // property -> (length, seed, trace)
    let mut best: BTreeMap<String, (usize, u64, String)> = BTreeMap::new();
    let mut reached: Vec<String> = Vec::new();
    let mut required: Vec<String> = Vec::new();
    for shard in shards {
        for (property, verdict) in &shard.properties {
            let entry = properties
                .entry(property.clone())
                .or_insert_with(|| "incomplete".to_string());
            if verdict == "violated" {
                *entry = verdict.clone();
            }
        }
        for (property, length) in &shard.counterexample_lens {
            let seed = shard
                .counterexample_seeds
                .get(property)
                .copied()
                .unwrap_or(u64::MAX);
            let trace = shard.traces.get(property).cloned().unwrap_or_default();
            let better = best
                .get(property)
                .is_none_or(|(l, s, _)| (*length, seed) < (*l, *s));
            if better {
                best.insert(property.clone(), (*length, seed, trace));
            }
        }
        for name in &shard.reached {
            if !reached.contains(name) {
                reached.push(name.clone());
            }
        }
        for name in &shard.required_scenarios {
            if !required.contains(name) {
                required.push(name.clone());
            }
        }
    }
    let expected = shards[0].expected.clone();
    let mut found: BTreeMap<String, Verdict> = properties
        .iter()
        .map(|(name, verdict)| (name.clone(), parse_verdict(verdict)))
        .collect();
    found.extend(reached.iter().map(|name| (name.clone(), Verdict::Holds)));
    let declared = Expected {
        verdicts: expected
            .iter()
            .map(|(name, verdict)| (name.clone(), parse_verdict(verdict)))
            .collect(),
        reached: required,
    };
    let comparison = compare(&found, true, &declared);
    let sum = |field: fn(&SimulateLine) -> u64| shards.iter().map(field).sum::<u64>();
    MergeLine {
        counterexample_len: best.values().map(|(length, _, _)| *length).min(),
        counterexample_lens: best.iter().map(|(p, (l, _, _))| (p.clone(), *l)).collect(),
        counterexample_seeds: best.iter().map(|(p, (_, s, _))| (p.clone(), *s)).collect(),
        cut_walks: sum(|shard| shard.cut_walks),
        depth: shards.iter().map(|shard| shard.depth).max().unwrap_or(0),
        elapsed_ms: sum(|shard| shard.elapsed_ms),
        expected,
        matches: comparison.matches,
        missing_scenarios: comparison.missing_scenarios,
        model: model.to_string(),
        properties,
        reached,
        shards: shards.iter().map(|shard| shard.shard.clone()).collect(),
        states: sum(|shard| shard.states),
        traces: best.into_iter().map(|(p, (_, _, t))| (p, t)).collect(),
        walks: sum(|shard| shard.walks),
    }
}
