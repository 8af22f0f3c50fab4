//! `retrylab merge`: combine the JSON lines of `simulate --shard K/N` runs. For each model: a property is
//! violated if any shard violated it; the counterexample kept is the shortest (then the lowest seed); counts add
//! up; scenarios reached are the union; `matches` is judged again on the whole.

use super::{MergeArgs, EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

pub fn run(args: &MergeArgs) -> i32 {
    let mut models: BTreeMap<String, Vec<Value>> = BTreeMap::new();
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
            let value: Value = match serde_json::from_str(line) {
                Ok(value) => value,
                Err(error) => {
                    eprintln!("error: {name}:{}:{}: {error}", index + 1, error.column());
                    return EXIT_BAD_INPUT;
                }
            };
            let Some(model) = value
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string)
            else {
                eprintln!(
                    "error: {name}:{}:1: model: missing; not a `simulate --json` line",
                    index + 1
                );
                return EXIT_BAD_INPUT;
            };
            if value.get("properties").and_then(Value::as_object).is_none() {
                eprintln!(
                    "error: {name}:{}:1: properties: missing; not a `simulate --json` line",
                    index + 1
                );
                return EXIT_BAD_INPUT;
            }
            models.entry(model).or_default().push(value);
        }
    }
    let mut all_match = true;
    for (model, shards) in &models {
        let merged = merge(model, shards);
        all_match &= merged["matches"] == json!(true);
        println!("{merged}");
    }
    if all_match {
        EXIT_OK
    } else {
        EXIT_MISMATCH
    }
}

fn number(value: &Value, field: &str) -> u64 {
    value.get(field).and_then(Value::as_u64).unwrap_or(0)
}

fn merge(model: &str, shards: &[Value]) -> Value {
    let mut properties: BTreeMap<String, String> = BTreeMap::new();
    // property -> (length, seed, trace)
    let mut best: BTreeMap<String, (u64, u64, Value)> = BTreeMap::new();
    let mut reached: Vec<String> = Vec::new();
    let mut required: Vec<String> = Vec::new();
    let mut shard_names = Vec::new();
    for shard in shards {
        for (property, verdict) in shard["properties"].as_object().into_iter().flatten() {
            let verdict = verdict.as_str().unwrap_or("incomplete").to_string();
            let entry = properties
                .entry(property.clone())
                .or_insert_with(|| "incomplete".to_string());
            if verdict == "violated" {
                *entry = verdict;
            }
        }
        for (property, length) in shard["counterexample_lens"]
            .as_object()
            .into_iter()
            .flatten()
        {
            let length = length.as_u64().unwrap_or(u64::MAX);
            let seed = shard["counterexample_seeds"][property]
                .as_u64()
                .unwrap_or(u64::MAX);
            let trace = shard["traces"][property].clone();
            let better = best
                .get(property)
                .is_none_or(|(l, s, _)| (length, seed) < (*l, *s));
            if better {
                best.insert(property.clone(), (length, seed, trace));
            }
        }
        for name in shard["reached"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !reached.iter().any(|seen| seen == name) {
                reached.push(name.to_string());
            }
        }
        for name in shard["required_scenarios"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !required.iter().any(|seen| seen == name) {
                required.push(name.to_string());
            }
        }
        shard_names.push(shard["shard"].clone());
    }
    let expected = shards[0]["expected"].clone();
    let contradicted = expected
        .as_object()
        .into_iter()
        .flatten()
        .any(|(property, declared)| {
            let actual = properties
                .get(property)
                .map_or("incomplete", String::as_str);
            match declared.as_str() {
                Some("violated") => actual != "violated",
                Some("holds") => actual == "violated",
                _ => false,
            }
        });
    let missing: Vec<&String> = required
        .iter()
        .filter(|name| !reached.contains(name))
        .collect();
    let sum = |field: &str| shards.iter().map(|shard| number(shard, field)).sum::<u64>();
    json!({
        "model": model,
        "properties": properties,
        "expected": expected,
        "matches": !contradicted && missing.is_empty(),
        "shards": shard_names,
        "walks": sum("walks"),
        "states": sum("states"),
        "cut_walks": sum("cut_walks"),
        "depth": shards.iter().map(|shard| number(shard, "depth")).max().unwrap_or(0),
        "counterexample_len": best.values().map(|(length, _, _)| *length).min(),
        "counterexample_lens": best.iter().map(|(p, (l, _, _))| (p.clone(), json!(l))).collect::<Map<_, _>>(),
        "counterexample_seeds": best.iter().map(|(p, (_, s, _))| (p.clone(), json!(s))).collect::<Map<_, _>>(),
        "traces": best.iter().map(|(p, (_, _, t))| (p.clone(), t.clone())).collect::<Map<_, _>>(),
        "reached": reached,
        "missing_scenarios": missing,
        "elapsed_ms": sum("elapsed_ms"),
    })
}
