//! Partial-order reduction on toys small enough to count by hand: a reduction that happens (fewer states, the
//! same verdicts), the cycle proviso keeping a state a cycle would hide, and the two ways a declaration can be
//! wrong (an independence that does not hold, an action that changes a predicate), each shown changing a
//! verdict and caught by the checked mode.

use super::toys::bfs_on_threads;
use super::*;

/// Three counters, each from 0 to `top`, stepped in any order: independent of each other.
struct Counters {
    top: u8,
    /// Also judge an `eventually` on the state graph (the reduction then expands in full).
    graph_property: bool,
}

impl Model for Counters {
    type State = [u8; 3];
    type Action = usize;
    /// Bit `i`: counter `i` reached the top.
    type Obs = u8;

    fn init_state(&self) -> [u8; 3] {
        [0; 3]
    }

    fn actions(&self, state: &[u8; 3], out: &mut Vec<usize>) {
        out.clear();
        out.extend((0..3).filter(|counter| state[*counter] < self.top));
    }

    fn apply(&self, state: &mut [u8; 3], counter: &usize) -> u8 {
        state[*counter] += 1;
        if state[*counter] == self.top {
            1 << counter
        } else {
            0
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always("within bounds", |model: &Counters, state: &[u8; 3]| {
                state.iter().all(|value| *value <= model.top)
            }),
            Property::always_unobserved("counter 0 never tops", 1),
            Property::sometimes_observed("counter 2 tops", 1 << 2),
            Property::eventually_at_rest("all at the top", |model: &Counters, state: &[u8; 3]| {
                state.iter().all(|value| *value == model.top)
            }),
        ];
        if self.graph_property {
            properties.push(Property::eventually(
                "counter 1 tops",
                |model: &Counters, state: &[u8; 3]| state[1] == model.top,
            ));
        }
        properties
    }

    fn acyclic(&self) -> bool {
        true
    }

    /// Every step touches its own counter only, and what it observes depends on that counter alone.
    fn independent_of_rest(&self, _state: &[u8; 3], _counter: &usize) -> bool {
        true
    }
}

#[test]
fn independent_counters_are_explored_in_one_order_with_the_same_verdicts() {
    let model = Counters {
        top: 2,
        graph_property: false,
    };
    let full = bfs_on_threads(&model);
    assert_eq!(full.states, 27);
    let reduced = model.checker().por(Por::Checked).bfs();
    // One line: counter 0 to the top, then counter 1, then counter 2 (the last steps have one action each, so
    // nothing is reduced there): 7 states, 4 of them reduced.
    assert_eq!(reduced.states, 7);
    assert_eq!(reduced.reduced_states, 4);
    assert_eq!(full.verdicts(), reduced.verdicts());
    assert_eq!(reduced.verdict("counter 0 never tops"), Verdict::Violated);
    assert_eq!(reduced.verdict("counter 2 tops"), Verdict::Holds);
    assert_eq!(reduced.verdict("all at the top"), Verdict::Holds);
    assert_eq!(
        full.counterexample("counter 0 never tops").unwrap().len(),
        2
    );
    assert_eq!(
        reduced
            .counterexample("counter 0 never tops")
            .unwrap()
            .len(),
        2
    );
    // The same on any thread count.
    for threads in [1, 2, 3] {
        let again = model.checker().threads(threads).por(Por::On).bfs();
        assert_eq!(again.states, 7);
        assert_eq!(again.properties, reduced.properties);
    }
    // An `eventually` judged on the graph needs every edge: no reduction.
    let graph = Counters {
        top: 2,
        graph_property: true,
    };
    let unreduced = graph.checker().por(Por::On).bfs();
    assert_eq!((unreduced.states, unreduced.reduced_states), (27, 0));
}

/// A spinner that toggles forever, and a job that finishes once: on a cyclic model, a search that always took
/// the (independent) spin alone would go round the cycle and never see the job finish.
struct Spinner;

impl Model for Spinner {
    /// (spinning, finished)
    type State = (bool, bool);
    type Action = &'static str;
    type Obs = ();

    fn init_state(&self) -> (bool, bool) {
        (false, false)
    }

    fn actions(&self, state: &(bool, bool), out: &mut Vec<&'static str>) {
        out.clear();
        out.push("spin");
        if !state.1 {
            out.push("finish");
        }
    }

    fn apply(&self, state: &mut (bool, bool), action: &&'static str) {
        match *action {
            "spin" => state.0 = !state.0,
            _ => state.1 = true,
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::sometimes(
            "finishes",
            |_, state: &(bool, bool)| state.1,
        )]
    }

    fn independent_of_rest(&self, _state: &(bool, bool), action: &&'static str) -> bool {
        *action == "spin"
    }
}

#[test]
fn the_cycle_proviso_expands_a_state_whose_one_successor_was_seen() {
    let report = Spinner.checker().por(Por::Checked).bfs();
    assert!(report.reduced_states >= 1, "the initial state is reduced");
    assert_eq!(report.verdict("finishes"), Verdict::Holds);
    assert_eq!(report.states, Spinner.checker().bfs().states);
}

/// A writer sets a flag; a reader that runs before the write sees it unset and goes bad. `wrong` declares the
/// write independent of the rest, which it is not (the read's result depends on the order).
struct Race {
    wrong: bool,
}

impl Model for Race {
    /// (written, read, bad)
    type State = (bool, bool, bool);
    type Action = &'static str;
    type Obs = ();

    fn init_state(&self) -> (bool, bool, bool) {
        (false, false, false)
    }

    fn actions(&self, state: &(bool, bool, bool), out: &mut Vec<&'static str>) {
        out.clear();
        if !state.0 {
            out.push("write");
        }
        if !state.1 {
            out.push("read");
        }
    }

    fn apply(&self, state: &mut (bool, bool, bool), action: &&'static str) {
        match *action {
            "write" => state.0 = true,
            _ => {
                state.1 = true;
                state.2 = !state.0;
            }
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always(
            "never bad",
            |_, state: &(bool, bool, bool)| !state.2,
        )]
    }

    fn acyclic(&self) -> bool {
        true
    }

    fn independent_of_rest(&self, _state: &(bool, bool, bool), action: &&'static str) -> bool {
        self.wrong && *action == "write"
    }
}

#[test]
fn a_wrongly_declared_independence_hides_a_violation_and_checked_mode_catches_it() {
    let right = Race { wrong: false };
    let reduced = right.checker().por(Por::On).bfs();
    assert_eq!(reduced.verdict("never bad"), Verdict::Violated);
    assert_eq!(reduced.reduced_states, 0);
    // The stakes: taking the write alone never lets the read go first.
    let wrong = Race { wrong: true };
    assert_eq!(
        wrong.checker().bfs().verdict("never bad"),
        Verdict::Violated
    );
    assert_eq!(
        wrong.checker().por(Por::On).bfs().verdict("never bad"),
        Verdict::Holds
    );
    let message = checked_mode_complaint(&wrong).expect("checked mode tests the declaration");
    assert!(
        message.contains(
            "\"write\", declared independent of the rest, is not independent of \"read\""
        ) && message.contains("the two orders reach different states"),
        "{message}"
    );
}

/// Two flags set in any order: the steps commute, but "y before x" is a predicate the x step changes.
struct Flags;

impl Model for Flags {
    type State = (bool, bool);
    type Action = &'static str;
    type Obs = ();

    fn init_state(&self) -> (bool, bool) {
        (false, false)
    }

    fn actions(&self, state: &(bool, bool), out: &mut Vec<&'static str>) {
        out.clear();
        if !state.0 {
            out.push("x");
        }
        if !state.1 {
            out.push("y");
        }
    }

    fn apply(&self, state: &mut (bool, bool), action: &&'static str) {
        match *action {
            "x" => state.0 = true,
            _ => state.1 = true,
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::sometimes(
            "y before x",
            |_, state: &(bool, bool)| state.1 && !state.0,
        )]
    }

    fn acyclic(&self) -> bool {
        true
    }

    /// Wrong: the x step commutes with the y step, but it is visible (it falsifies "y before x").
    fn independent_of_rest(&self, _state: &(bool, bool), action: &&'static str) -> bool {
        *action == "x"
    }
}

#[test]
fn a_visible_action_taken_alone_misses_a_scenario_and_checked_mode_catches_it() {
    assert_eq!(Flags.checker().bfs().verdict("y before x"), Verdict::Holds);
    assert_eq!(
        Flags.checker().por(Por::On).bfs().verdict("y before x"),
        Verdict::Violated
    );
    let message = checked_mode_complaint(&Flags).expect("checked mode tests visibility");
    assert!(
        message.contains("changes the predicate of 'y before x'"),
        "{message}"
    );
}
