//! Properties as values: a name, a kind, and a condition on states or on what steps observe.
//!
//! - `always`: holds in every reachable state (or: no step ever observes the mask). Violated: a path to the
//!   first bad state or step (breadth-first, so a shortest one).
//! - `sometimes`: holds in some reachable state (or: some step observes the mask). The evidence that a passing
//!   `always` was not vacuous; its witness path is kept as an example. Not witnessed by a complete search:
//!   violated.
//! - `eventually`: once faults stop, the goal is reached. Precisely: from the initial state and from every state
//!   a fault leads to, every path of non-fault actions reaches a goal state, where a path ends only when no
//!   non-fault action is enabled (the model is at rest) or goes on forever (a cycle). Violated: a path to such a
//!   start state, then non-fault steps through non-goal states to a rest state or round a cycle (a lasso). This
//!   is judged on the whole state graph, so joins (two paths into one state) and cycles are handled: the classic
//!   mistake of judging it along the search tree (stateright's issue 3) reports `holds` for a path that joins a
//!   state first reached through the goal. Without faults it is the usual "every path reaches the goal".
//! - `eventually_at_rest`: once faults stop, the model comes to rest in a state where the predicate holds:
//!   `eventually` with the goal "at rest and the predicate". On a model that promises `Model::acyclic` it is
//!   judged at rest states alone, with no graph kept.

use super::model::Model;

/// When a property is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Holds in every reachable state.
    Always,
    /// Every fair run gets to a state where it holds.
    Eventually,
    /// Holds in some reachable state: a scenario to witness, not a requirement.
    Sometimes,
}

/// A condition on states, or on what a step observes.
pub(crate) enum Condition<M: Model> {
    State(fn(&M, &M::State) -> bool),
    Observed(M::Obs),
    AtRest(fn(&M, &M::State) -> bool),
}

impl<M: Model> Clone for Condition<M> {
    fn clone(&self) -> Self {
        match self {
            Condition::State(predicate) => Condition::State(*predicate),
            Condition::Observed(mask) => Condition::Observed(*mask),
            Condition::AtRest(predicate) => Condition::AtRest(*predicate),
        }
    }
}

/// A named property of a model.
pub struct Property<M: Model> {
    pub(crate) name: String,
    pub(crate) kind: Kind,
    pub(crate) condition: Condition<M>,
}

impl<M: Model> Clone for Property<M> {
    fn clone(&self) -> Self {
        Property {
            name: self.name.clone(),
            kind: self.kind,
            condition: self.condition.clone(),
        }
    }
}

impl<M: Model> Property<M> {
    /// `predicate` holds in every reachable state.
    pub fn always(name: impl Into<String>, predicate: fn(&M, &M::State) -> bool) -> Self {
        Self::new(name, Kind::Always, Condition::State(predicate))
    }

    /// No step observes anything in `mask` (one intersection per transition).
    pub fn always_unobserved(name: impl Into<String>, mask: M::Obs) -> Self {
        Self::new(name, Kind::Always, Condition::Observed(mask))
    }

    /// `predicate` holds in some reachable state.
    pub fn sometimes(name: impl Into<String>, predicate: fn(&M, &M::State) -> bool) -> Self {
        Self::new(name, Kind::Sometimes, Condition::State(predicate))
    }

    /// Some step observes something in `mask`.
    pub fn sometimes_observed(name: impl Into<String>, mask: M::Obs) -> Self {
        Self::new(name, Kind::Sometimes, Condition::Observed(mask))
    }

    /// Once faults stop, a state where `goal` holds is reached (see the module docs).
    pub fn eventually(name: impl Into<String>, goal: fn(&M, &M::State) -> bool) -> Self {
        Self::new(name, Kind::Eventually, Condition::State(goal))
    }

    /// Once faults stop, the model comes to rest in a state where `predicate` holds.
    pub fn eventually_at_rest(
        name: impl Into<String>,
        predicate: fn(&M, &M::State) -> bool,
    ) -> Self {
        Self::new(name, Kind::Eventually, Condition::AtRest(predicate))
    }

    fn new(name: impl Into<String>, kind: Kind, condition: Condition<M>) -> Self {
        Property {
            name: name.into(),
            kind,
            condition,
        }
    }

    /// The property's name, as declared and reported.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it is `always`, `eventually` or `sometimes`.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The observation mask of a step-based property.
    pub(crate) fn mask(&self) -> Option<M::Obs> {
        match self.condition {
            Condition::Observed(mask) => Some(mask),
            _ => None,
        }
    }

    /// The state predicate of a state-based `always` or `sometimes`, or the goal of an `eventually`.
    pub(crate) fn state_predicate(&self) -> Option<fn(&M, &M::State) -> bool> {
        match self.condition {
            Condition::State(predicate) => Some(predicate),
            _ => None,
        }
    }

    /// For an `eventually` property: whether `state` (at rest or not, as `at_rest` says) is a goal state.
    pub(crate) fn goal(&self, model: &M, state: &M::State, at_rest: bool) -> bool {
        match self.condition {
            Condition::State(goal) => goal(model, state),
            Condition::AtRest(predicate) => at_rest && predicate(model, state),
            Condition::Observed(_) => false,
        }
    }
}
