//! Persistent sets on a toy small enough to count by hand: two workers racing for one register and two ticks
//! racing for another. No single action is independent of the rest (each races its twin), but the workers
//! together are a persistent set (the ticks never touch their register), so the search explores the workers'
//! orders first and the ticks' only after them. A wrongly declared set hides a scenario, and the checked mode
//! catches it.

use super::toys::bfs_on_threads;
use super::*;

/// The workers write 1 and 2 into `register`, the ticks 1 and 2 into `ticks`, each action once.
struct Races {
    /// Declare the first tick a member of the workers' set (it races the second tick, outside the set).
    wrong: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Registers {
    register: u8,
    ticks: u8,
    /// Bit `i`: action `i` has run (workers 0 and 1, ticks 2 and 3).
    done: u8,
}

/// Observed when a tick leaves `ticks` at 1 with both ticks done: the second tick ran first.
const SECOND_TICK_FIRST: u8 = 1;

impl Model for Races {
    type State = Registers;
    type Action = u8;
    type Obs = u8;

    fn init_state(&self) -> Registers {
        Registers::default()
    }

    fn actions(&self, state: &Registers, out: &mut Vec<u8>) {
        out.clear();
        out.extend((0..4).filter(|action| state.done & (1 << action) == 0));
    }

    fn apply(&self, state: &mut Registers, action: &u8) -> u8 {
        state.done |= 1 << action;
        let value = action % 2 + 1;
        if *action < 2 {
            state.register = value;
            return 0;
        }
        state.ticks = value;
        u8::from(state.done & 0b1100 == 0b1100 && value == 1) * SECOND_TICK_FIRST
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::sometimes_observed("the second tick first", SECOND_TICK_FIRST),
            Property::eventually_at_rest("all done", |_, state: &Registers| state.done == 0b1111),
        ]
    }

    fn acyclic(&self) -> bool {
        true
    }

    /// The enabled workers (and, when `wrong`, the first tick).
    fn persistent_set(&self, _state: &Registers, actions: &[u8], out: &mut Vec<usize>) {
        let member = |action: u8| action < 2 || (self.wrong && action == 2);
        if actions.iter().any(|action| *action < 2) || self.wrong {
            out.extend((0..actions.len()).filter(|index| member(actions[*index])));
        }
    }
}

#[test]
fn a_persistent_set_explores_the_workers_orders_before_the_ticks_with_the_same_verdicts() {
    let model = Races { wrong: false };
    let full = bfs_on_threads(&model);
    // Each pair of racers has 5 states (none ran, either one, both in either order): 25 in all.
    assert_eq!(full.states, 25);
    let reduced = model.checker().por(Por::Checked).bfs();
    // The workers' 5 states with the ticks untouched, then the ticks' 5 after each of the workers' 2 ends.
    assert_eq!(reduced.states, 3 + 2 * 5);
    // Reduced: the 3 states where a worker is left.
    assert_eq!(reduced.reduced_states, 3);
    assert_eq!(full.verdicts(), reduced.verdicts());
    assert_eq!(reduced.verdict("the second tick first"), Verdict::Holds);
    assert_eq!(reduced.verdict("all done"), Verdict::Holds);
    for threads in [1, 2, 3] {
        let again = model.checker().threads(threads).por(Por::On).bfs();
        assert_eq!(again.states, reduced.states);
        assert_eq!(again.properties, reduced.properties);
    }
}

#[test]
fn a_wrongly_declared_persistent_set_hides_a_scenario_and_checked_mode_catches_it() {
    let wrong = Races { wrong: true };
    assert_eq!(
        wrong.checker().bfs().verdict("the second tick first"),
        Verdict::Holds
    );
    // The stakes: with the first tick always in the set, the second never runs before it.
    assert_eq!(
        wrong
            .checker()
            .por(Por::On)
            .bfs()
            .verdict("the second tick first"),
        Verdict::Violated
    );
    let caught = std::panic::catch_unwind(|| wrong.checker().por(Por::Checked).bfs());
    let message = *caught
        .expect_err("checked mode tests the declaration")
        .downcast::<String>()
        .unwrap();
    assert!(
        message.contains("2, in the declared persistent set [0, 1, 2], is not independent of 3")
            && message.contains("the two orders reach different states"),
        "{message}"
    );
}
