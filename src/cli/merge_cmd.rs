//! `retrylab merge`: combine the JSON lines of `simulate --shard K/N` runs. First the shards are checked: per
//! model they must be one run's (same model text, first seed, seed count and depth), with one N, and every K from
//! 1 to N exactly once, each having walked all its seeds unless it says why not; anything else (a failed task's
//! missing shard, one file given twice, two runs mixed, an empty input) is refused with exit 2, since a merge of
//! it would look complete. Then, for each model: a property is violated if any shard violated it; the
//! counterexample kept is the shortest (then the lowest seed); counts add up; scenarios reached are the union;
//! `matches` is judged again on the whole by `check::compare`.

use super::json::{print_line, MergeLine, SimulateLine, Verdicts};
use super::{MergeArgs, EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK};
use retrylab::check::{compare, Expected, Seeds, Verdict};
use std::collections::BTreeMap;

/// One shard's line and where it was read (`file:line`, for the messages).
struct Shard {
    line: SimulateLine,
    at: String,
    k: u64,
    n: u64,
}

pub fn run(args: &MergeArgs) -> i32 {
    let merged = read_shards(&args.files).and_then(|models| {
        models
            .iter()
            .map(|(model, shards)| {
                check_shards(model, shards)?;
                merge(model, shards)
            })
            .collect::<Result<Vec<MergeLine>, String>>()
    });
    let merged = match merged {
        Ok(merged) => merged,
        Err(message) => {
            errln!("error: merge: {message}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut all_match = true;
    for line in &merged {
        all_match &= line.matches;
        print_line(line);
    }
    if all_match {
        EXIT_OK
    } else {
        EXIT_MISMATCH
    }
}

/// Every line of every file, by model path.
fn read_shards(files: &[std::path::PathBuf]) -> Result<BTreeMap<String, Vec<Shard>>, String> {
    let mut models: BTreeMap<String, Vec<Shard>> = BTreeMap::new();
    for file in files {
        let name = file.display().to_string();
        let text = retrylab::input::read_text(file).map_err(|error| format!("{name}: {error}"))?;
        let lines = text.lines().enumerate();
        for (index, line) in lines.filter(|(_, line)| !line.trim().is_empty()) {
            let at = format!("{name}:{}", index + 1);
            let line = serde_json::from_str::<SimulateLine>(line).map_err(|error| {
                format!(
                    "{at}:{}: not a `simulate --json` line: {error}",
                    error.column()
                )
            })?;
            let (k, n) = match &line.shard {
                None => (1, 1),
                Some(text) => {
                    super::parse_shard(text).map_err(|error| format!("{at}: shard: {error}"))?
                }
            };
            models
                .entry(line.model.clone())
                .or_default()
                .push(Shard { line, at, k, n });
        }
    }
    if models.is_empty() {
        let names: Vec<String> = files
            .iter()
            .map(|file| file.display().to_string())
            .collect();
        return Err(format!(
            "no `simulate --json` lines in {}",
            names.join(", ")
        ));
    }
    Ok(models)
}

/// Missing shards named in the message at most (the rest are counted).
const MISSING_NAMED_MAX: usize = 8;

/// The shards of one model are exactly one run's, all there, each once.
fn check_shards(model: &str, shards: &[Shard]) -> Result<(), String> {
    let first = &shards[0];
    let run = |shard: &Shard| {
        format!(
            "--seed {} --seeds {} --max-depth {}",
            shard.line.first_seed, shard.line.seeds, shard.line.depth
        )
    };
    for shard in &shards[1..] {
        if shard.line.model_sha256 != first.line.model_sha256 {
            return Err(format!(
                "{model}: {} and {} walked different model texts",
                first.at, shard.at
            ));
        }
        if run(shard) != run(first) {
            return Err(format!(
                "{model}: {} ran {} but {} ran {}",
                first.at,
                run(first),
                shard.at,
                run(shard)
            ));
        }
        if shard.n != first.n {
            return Err(format!(
                "{model}: mixed shard counts, {}/{} at {} and {}/{} at {}",
                first.k, first.n, first.at, shard.k, shard.n, shard.at
            ));
        }
    }
    let mut by_k: BTreeMap<u64, &Shard> = BTreeMap::new();
    for shard in shards {
        if let Some(earlier) = by_k.insert(shard.k, shard) {
            let places = if earlier.at == shard.at {
                format!("{} (the file is named twice)", shard.at)
            } else {
                format!("at {} and {}", earlier.at, shard.at)
            };
            return Err(format!(
                "{model}: shard {}/{} given twice, {places}",
                shard.k, shard.n
            ));
        }
        check_walks(model, shard)?;
    }
    // N comes from the file: walk only as far as the first few missing shards (at most one step per shard
    // given, plus the few named), never 1..=N itself, which a hostile "1/1000000000000000" makes endless.
    let missing_count = first.n - by_k.len() as u64;
    let mut missing: Vec<String> = (1..=first.n)
        .filter(|k| !by_k.contains_key(k))
        .take(MISSING_NAMED_MAX)
        .map(|k| format!("{k}/{}", first.n))
        .collect();
    if missing_count > missing.len() as u64 {
        missing.push(format!("and {} more", missing_count - missing.len() as u64));
    }
    if missing_count > 0 {
        let have: Vec<String> = by_k
            .values()
            .map(|s| format!("{}/{} at {}", s.k, s.n, s.at))
            .collect();
        return Err(format!(
            "{model}: shard(s) {} missing (have {})",
            missing.join(", "),
            have.join(", ")
        ));
    }
    Ok(())
}

/// A shard walked all its seeds, or says why it stopped.
fn check_walks(model: &str, shard: &Shard) -> Result<(), String> {
    let seeds = Seeds {
        first: shard.line.first_seed,
        count: shard.line.seeds,
        shard: Some((shard.k, shard.n)),
    };
    let walks = shard.line.walks;
    let complete = walks == seeds.len() || (walks < seeds.len() && shard.line.stopped_by.is_some());
    if complete {
        return Ok(());
    }
    Err(format!(
        "{model}: {}: shard {}/{} reports {walks} walks of its {} seeds",
        shard.at,
        shard.k,
        shard.n,
        seeds.len()
    ))
}

/// A verdict name as written by `simulate --json`.
fn parse_verdict(name: &str) -> Verdict {
    match name {
        "violated" => Verdict::Violated,
        "holds" => Verdict::Holds,
        _ => Verdict::Incomplete,
    }
}

/// A count summed over the shards; a total that does not fit is refused (the shards themselves could not have
/// produced it).
fn sum(
    model: &str,
    shards: &[Shard],
    what: &str,
    field: fn(&SimulateLine) -> u64,
) -> Result<u64, String> {
    shards
        .iter()
        .try_fold(0u64, |total, shard| total.checked_add(field(&shard.line)))
        .ok_or_else(|| format!("{model}: the shards' {what} add up to more than 64 bits hold"))
}

fn merge(model: &str, shards: &[Shard]) -> Result<MergeLine, String> {
    let mut properties: Verdicts = BTreeMap::new();
    // property -> (length, seed, trace)
    let mut best: BTreeMap<String, (usize, u64, String)> = BTreeMap::new();
    let mut reached: Vec<String> = Vec::new();
    for shard in shards.iter().map(|shard| &shard.line) {
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
    }
    // One model text (checked), so one declaration.
    let first = &shards[0].line;
    let comparison = compare(&found(&properties, &reached), true, &declared(first));
    Ok(MergeLine {
        counterexample_len: best.values().map(|(length, _, _)| *length).min(),
        counterexample_lens: best.iter().map(|(p, (l, _, _))| (p.clone(), *l)).collect(),
        counterexample_seeds: best.iter().map(|(p, (_, s, _))| (p.clone(), *s)).collect(),
        cut_walks: sum(model, shards, "cut walks", |shard| shard.cut_walks)?,
        depth: first.depth,
        elapsed_ms: sum(model, shards, "times", |shard| shard.elapsed_ms)?,
        expected: first.expected.clone(),
        matches: comparison.matches,
        missing_scenarios: comparison.missing_scenarios,
        model: model.to_string(),
        model_sha256: first.model_sha256.clone(),
        properties,
        reached,
        shards: shards
            .iter()
            .map(|shard| shard.line.shard.clone())
            .collect(),
        states: sum(model, shards, "steps", |shard| shard.states)?,
        stopped_by: shards
            .iter()
            .find_map(|shard| shard.line.stopped_by.clone()),
        traces: best.into_iter().map(|(p, (_, _, t))| (p, t)).collect(),
        walks: sum(model, shards, "walks", |shard| shard.walks)?,
    })
}

/// What the shards found together: their verdicts, and the scenarios any reached as holding.
fn found(properties: &Verdicts, reached: &[String]) -> BTreeMap<String, Verdict> {
    let mut found: BTreeMap<String, Verdict> = properties
        .iter()
        .map(|(name, verdict)| (name.clone(), parse_verdict(verdict)))
        .collect();
    found.extend(reached.iter().map(|name| (name.clone(), Verdict::Holds)));
    found
}

fn declared(line: &SimulateLine) -> Expected {
    Expected {
        verdicts: line
            .expected
            .iter()
            .map(|(name, verdict)| (name.clone(), parse_verdict(verdict)))
            .collect(),
        reached: line.required_scenarios.clone(),
    }
}
