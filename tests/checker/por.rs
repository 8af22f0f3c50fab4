//! Partial-order reduction keeps every verdict on the whole catalogue, with and without symmetry: the seven
//! properties and every `sometimes` scenario equal under all four combinations (plain, symmetry, POR, POR on the
//! symmetry quotient), each violation still found (its counterexample replaying on the unreduced model, and no
//! shorter than the full search's shortest), every example replaying; and somewhere it does save states, on the
//! quotient too. The command line's `--por on|off` and its JSON fields.

use retrylab::builtin::World;
use retrylab::check::{replay_path, Kind, Por, Report};
use retrylab::spec::{model_files, ModelFile};
use std::path::Path;

use crate::cli_support;
use crate::model_support;
use cli_support::{models, retrylab};

/// Searches of at most this many states also run the checked mode (every declaration tested in every state).
const CHECKED_STATES_MAX: u64 = 150_000;

#[test]
fn por_keeps_every_verdict_and_scenario_on_the_catalogue_with_and_without_symmetry() {
    let files = model_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("models")).unwrap();
    assert!(files.len() >= 30, "models/ holds the catalogue");
    let mut saved_somewhere = false;
    let mut saved_on_the_quotient = false;
    for file in files {
        let model = retrylab::spec::load_model(&file).unwrap();
        let plain = model_support::checker(&model).bfs();
        for symmetry in [false, true] {
            let full = model_support::checker(&model).symmetry(symmetry).bfs();
            let por = if full.states <= CHECKED_STATES_MAX {
                Por::Checked
            } else {
                Por::On
            };
            let reduced = model_support::checker(&model)
                .symmetry(symmetry)
                .por(por)
                .bfs();
            let case = format!("{} (symmetry {symmetry})", model.path);
            compare(&model, &case, &full, &reduced);
            // Every combination says what the plain search says: each property's verdict and each scenario.
            assert_eq!(plain.verdicts(), full.verdicts(), "{case}, POR off");
            assert_eq!(plain.verdicts(), reduced.verdicts(), "{case}, POR on");
            saved_on_the_quotient |= symmetry && reduced.states < full.states;
            println!(
                "{case}: states {} with --por off, {} with --por on ({} reduced)",
                full.states, reduced.states, reduced.reduced_states
            );
            saved_somewhere |= reduced.states < full.states;
        }
    }
    assert!(saved_somewhere, "the reduction saves states on some model");
    assert!(
        saved_on_the_quotient,
        "the reduction saves states on the symmetry quotient of some model"
    );
}

/// Everything `reduced` says agrees with `full`, and its paths are real.
fn compare(model: &ModelFile, case: &str, full: &Report<World>, reduced: &Report<World>) {
    assert!(full.complete && reduced.complete, "{case}");
    assert_eq!(full.verdicts(), reduced.verdicts(), "{case}");
    assert!(reduced.states <= full.states, "{case}");
    assert_eq!(full.reduced_states, 0, "{case}");
    assert!(reduced.compare(&model.expected()).matches, "{case}");
    for property in &reduced.properties {
        let Some(path) = &property.path else {
            continue;
        };
        let replayed =
            replay_path(&model.world, path, property.cycle_from).unwrap_or_else(|diverged| {
                panic!("{case} {}: diverges at {}", property.name, diverged.step)
            });
        assert_eq!(
            replayed.property(&property.name).at_step,
            Some(path.len()),
            "{case} {}",
            property.name
        );
        if property.kind != Kind::Sometimes {
            let shortest = full.counterexample(&property.name).unwrap().len();
            assert!(path.len() >= shortest, "{case} {}", property.name);
            println!(
                "{case}: {} violated, counterexample {shortest} steps with --por off, {} with --por on; \
                 states {} -> {}",
                property.name,
                path.len(),
                full.states,
                reduced.states
            );
        }
    }
}

fn json_line(args: &[&str]) -> serde_json::Value {
    let folder = tempfile::tempdir().unwrap();
    let out = retrylab(args, folder.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_command_line_switches_por_and_reports_the_saving() {
    let model = models().join("lease-fenced-duplicates.toml");
    let model = model.to_str().unwrap();
    let off = json_line(&["check", "--json", "--por", "off", model]);
    assert_eq!(off["por"], false);
    assert_eq!(off["por_reduced_states"], 0);
    // Nothing reduced: the search was the full one, so its count is known.
    assert_eq!(off["states_full"], off["states"]);
    let on = json_line(&["check", "--json", "--por", "on", model]);
    let default = json_line(&["check", "--json", model]);
    assert_eq!(on["por"], true);
    assert_eq!(default["por"], true, "on by default");
    assert_eq!(default["states"], on["states"]);
    assert_eq!(on["properties"], off["properties"]);
    assert!(on["por_reduced_states"].as_u64().unwrap() > 0);
    assert!(on["states"].as_u64().unwrap() < off["states"].as_u64().unwrap());
    // A reduced search does not know the full count: the field is left out.
    assert!(on.get("states_full").is_none(), "{on}");
    let folder = tempfile::tempdir().unwrap();
    let bad = retrylab(&["check", "--por", "maybe", model], folder.path());
    assert_eq!(bad.status.code(), Some(2));
}
