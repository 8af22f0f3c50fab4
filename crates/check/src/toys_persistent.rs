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
    let message = checked_mode_complaint(&wrong).expect("checked mode tests the declaration");
    assert!(
        message.contains("2, in the declared persistent set [0, 1, 2], is not independent of 3")
            && message.contains("the two orders reach different states"),
        "{message}"
    );
}

/// Two workers that each work once, unless crashed first, with one crash for both: crashing either disables
/// crashing the other, so the two crashes are not independent. A worker's actions together are still a set C1
/// accepts in its stubborn form: a path that crashes worker 1 cannot crash worker 0 after it, and worker 0's
/// work, the key, stays enabled whatever worker 1 does.
struct OneCrash {
    /// Declare worker 0's crash with worker 1's work instead: worker 1's crash disables that work, so the set
    /// has no key.
    wrong: bool,
}

/// Per worker: 0 idle, 1 worked, 2 crashed; and the crashes left.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Workers {
    worker: [u8; 2],
    crashes: u8,
}

/// Observed when worker `i` crashes: bit `i`.
const CRASHED: [u8; 2] = [1, 2];

impl Model for OneCrash {
    type State = Workers;
    type Action = u8;
    type Obs = u8;

    fn init_state(&self) -> Workers {
        Workers {
            worker: [0, 0],
            crashes: 1,
        }
    }

    /// Actions 0 and 1: worker 0 or 1 works; 2 and 3: worker 0 or 1 crashes.
    fn actions(&self, state: &Workers, out: &mut Vec<u8>) {
        out.clear();
        out.extend((0..2).filter(|&i| state.worker[i as usize] == 0));
        if state.crashes > 0 {
            out.extend(
                (0..2)
                    .filter(|&i| state.worker[i as usize] == 0)
                    .map(|i| i + 2),
            );
        }
    }

    fn apply(&self, state: &mut Workers, action: &u8) -> u8 {
        let worker = (action % 2) as usize;
        if *action < 2 {
            state.worker[worker] = 1;
            return 0;
        }
        state.worker[worker] = 2;
        state.crashes -= 1;
        CRASHED[worker]
    }

    fn is_fault(&self, _state: &Workers, action: &u8) -> bool {
        *action >= 2
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::sometimes_observed("worker 0 crashed", CRASHED[0]),
            Property::sometimes_observed("worker 1 crashed", CRASHED[1]),
            Property::eventually_at_rest("all settled", |_, state: &Workers| {
                state.worker.iter().all(|&worker| worker != 0)
            }),
        ]
    }

    fn acyclic(&self) -> bool {
        true
    }

    /// Worker 0's work and crash, while it is idle (the wrong set: its crash and worker 1's work).
    fn persistent_set(&self, state: &Workers, actions: &[u8], out: &mut Vec<usize>) {
        if state.worker[0] != 0 {
            return;
        }
        let members: &[u8] = if self.wrong { &[1, 2] } else { &[0, 2] };
        out.extend((0..actions.len()).filter(|&index| members.contains(&actions[index])));
    }
}

#[test]
fn a_set_whose_crash_races_another_for_the_last_of_a_budget_is_accepted_with_the_same_verdicts() {
    let model = OneCrash { wrong: false };
    let full = bfs_on_threads(&model);
    // Each worker idle, worked or crashed, but not both crashed: 8 states.
    assert_eq!(full.states, 8);
    // The checked mode would panic on a pair that does not commute: worker 1's crash disables worker 0's.
    let reduced = model.checker().por(Por::Checked).bfs();
    // Worker 0 first (worked or crashed), then worker 1 from each: 1 + 2 + 2 + 1.
    assert_eq!(reduced.states, 6);
    assert_eq!(reduced.reduced_states, 1);
    assert_eq!(full.verdicts(), reduced.verdicts());
    assert_eq!(reduced.verdict("worker 1 crashed"), Verdict::Holds);
}

#[test]
fn a_set_without_a_key_hides_a_scenario_and_checked_mode_catches_it() {
    let wrong = OneCrash { wrong: true };
    // The stakes: worker 0 never works before worker 1 does, so worker 1 never crashes.
    assert_eq!(
        wrong
            .checker()
            .por(Por::On)
            .bfs()
            .verdict("worker 1 crashed"),
        Verdict::Violated
    );
    let message = checked_mode_complaint(&wrong).expect("checked mode tests the declaration");
    assert!(
        message.contains("in the declared persistent set [1, 2], is not independent of 3")
            && message.contains("no key"),
        "{message}"
    );
}
