//! The packed form of a state (`model::pack`) is what the explorer fingerprints and keeps in its frontier, so
//! it must be injective and exactly invertible. Checked on the states every shipped model reaches (up to a cap
//! per model, breadth first so that every kind of step is covered early).

use retrylab::model::{pack, unpack, State};
use retrylab::spec::load_model;
use std::collections::{HashSet, VecDeque};

const STATES_PER_MODEL_MAX: usize = 20_000;

fn reachable_states(path: &std::path::Path) -> Vec<State> {
    let model = load_model(path).expect("shipped models load");
    let world = &model.world;
    let mut seen: HashSet<State> = HashSet::new();
    let mut order = Vec::new();
    let mut queue = VecDeque::from([world.init_state()]);
    let mut actions = Vec::new();
    while let Some(state) = queue.pop_front() {
        if order.len() >= STATES_PER_MODEL_MAX {
            break;
        }
        if !seen.insert(state.clone()) {
            continue;
        }
        world.actions(&state, &mut actions);
        for action in &actions {
            queue.push_back(world.next_state(&state, action).0);
        }
        order.push(state);
    }
    order
}

#[test]
fn packing_is_injective_and_unpacking_inverts_it() {
    let mut models: Vec<_> = std::fs::read_dir("models")
        .expect("models/")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    models.sort();
    assert!(models.len() >= 30, "the catalogue is there");
    let mut total = 0;
    for path in &models {
        let states = reachable_states(path);
        let mut packings = HashSet::new();
        for state in &states {
            let mut bytes = Vec::new();
            pack(state, &mut bytes);
            assert_eq!(
                &unpack(&bytes),
                state,
                "{}: unpack(pack(s)) != s",
                path.display()
            );
            packings.insert(bytes);
        }
        // `states` are pairwise distinct, so equal counts mean no two of them pack alike.
        assert_eq!(
            packings.len(),
            states.len(),
            "{}: two states pack alike",
            path.display()
        );
        total += states.len();
    }
    assert!(total > 50_000, "enough states were compared: {total}");
}
