//! Symmetry reduction merges states but changes no verdict, no counterexample length, and its counterexamples
//! replay on the unreduced model.

use retrylab::builtin::WorldProperty;
use retrylab::check::{replay_path, Model as _};
use retrylab::spec::{load_model, model_files};
use std::path::Path;

#[test]
fn reduction_keeps_verdicts_and_shortest_lengths_and_traces_replay() {
    let files = model_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("models")).unwrap();
    let mut reduced_somewhere = false;
    for file in files {
        let model = load_model(&file).unwrap();
        let reduced = model.world.checker().symmetry(true).bfs();
        assert!(reduced.complete, "{}", model.path);
        for (property, expected) in &model.expected {
            assert_eq!(
                reduced.verdict(property.name()),
                *expected,
                "{} {}",
                model.path,
                property.name()
            );
        }
        // Every counterexample, mapped back to real actions, replays on the unreduced model and violates there.
        for (found, actions) in reduced.counterexamples() {
            let replayed =
                replay_path(&model.world, actions, found.cycle_from).unwrap_or_else(|diverged| {
                    panic!(
                        "{} {}: diverges at {}",
                        model.path, found.name, diverged.step
                    )
                });
            assert_eq!(
                replayed.property(&found.name).at_step,
                Some(actions.len()),
                "{} {}",
                model.path,
                found.name
            );
        }
        // Compare with the full search where that is cheap.
        if reduced.states < 50_000 {
            let full = model.world.checker().bfs();
            assert_eq!(full.verdicts(), reduced.verdicts(), "{}", model.path);
            for property in WorldProperty::all() {
                assert_eq!(
                    full.counterexample(property.name()).map(<[_]>::len),
                    reduced.counterexample(property.name()).map(<[_]>::len),
                    "{} {}",
                    model.path,
                    property.name()
                );
            }
            assert!(reduced.states <= full.states);
            reduced_somewhere |= reduced.states < full.states;
        }
    }
    assert!(
        reduced_somewhere,
        "symmetry reduction never merged a state: it is not doing anything"
    );
}

/// The explorer's in-place canonical form is `canonicalize`'s, on states of every model reached by seeded
/// random walks, both where the clients must be relabelled and where they are already in order.
#[test]
fn canonicalizing_in_place_agrees_with_canonicalize() {
    use rand::{Rng, SeedableRng};
    let files = model_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("models")).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let (mut relabelled, mut kept) = (0u32, 0u32);
    for file in files {
        let model = load_model(&file).unwrap();
        let world = &model.world;
        let mut actions = Vec::new();
        for _walk in 0..20 {
            let mut state = world.init_state();
            for _step in 0..40 {
                let expected = world.canonicalize(&state).expect("the world has symmetry");
                let mut in_place = state.clone();
                world.canonicalize_in_place(&mut in_place);
                assert_eq!(in_place, expected, "{}", model.path);
                if expected.clients == state.clients {
                    kept += 1;
                } else {
                    relabelled += 1;
                }
                actions.clear();
                world.actions(&state, &mut actions);
                if actions.is_empty() {
                    break;
                }
                let action = actions[rng.random_range(0..actions.len())];
                world.apply(&mut state, &action);
            }
        }
    }
    assert!(
        relabelled > 100 && kept > 100,
        "{relabelled} relabelled, {kept} kept"
    );
}
