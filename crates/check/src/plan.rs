//! A model's properties sorted by how the explorers judge them, once per run, so the hot loop tests a mask or
//! walks a short list instead of matching on every property for every transition.

use super::model::{Model, Observation};
use super::property::{Kind, Property};

/// A property's index, and its state predicate.
pub(crate) type StateCheck<M> = (usize, fn(&M, &<M as Model>::State) -> bool);

pub(crate) struct Plan<M: Model> {
    pub properties: Vec<Property<M>>,
    /// Union of the masks of the step-based `always` properties: a transition observing none of it needs no
    /// further look.
    pub violating: M::Obs,
    /// Step-based `always` properties (index, mask).
    pub always_observed: Vec<(usize, M::Obs)>,
    /// State-based `always` properties.
    pub always_state: Vec<StateCheck<M>>,
    /// Step-based `sometimes` properties.
    pub sometimes_observed: Vec<(usize, M::Obs)>,
    /// State-based `sometimes` properties.
    pub sometimes_state: Vec<StateCheck<M>>,
    /// `eventually_at_rest` properties judged at rest states alone (the model promises acyclicity).
    pub at_rest: Vec<StateCheck<M>>,
    /// `eventually` properties judged on the state graph; bit `i` of a node's goal mask is `graph[i]`'s goal.
    pub graph: Vec<usize>,
    /// Every `eventually` property (walks and replay judge them all alike, along the path).
    pub eventually: Vec<usize>,
}

/// At most this many `eventually` properties are judged on the graph (their goals are one `u32` per state).
pub(crate) const GRAPH_PROPERTIES_MAX: usize = 32;

impl<M: Model> Plan<M> {
    pub fn new(model: &M) -> Plan<M> {
        let properties = model.properties();
        let acyclic = model.acyclic();
        let mut plan: Plan<M> = Plan {
            violating: M::Obs::default(),
            always_observed: Vec::new(),
            always_state: Vec::new(),
            sometimes_observed: Vec::new(),
            sometimes_state: Vec::new(),
            at_rest: Vec::new(),
            graph: Vec::new(),
            eventually: Vec::new(),
            properties: Vec::new(),
        };
        for (index, property) in properties.iter().enumerate() {
            assert!(
                !properties[..index]
                    .iter()
                    .any(|other| other.name == property.name),
                "two properties are named '{}'",
                property.name
            );
            match (property.kind, property.mask(), property.state_predicate()) {
                (Kind::Always, Some(mask), _) => {
                    plan.violating = plan.violating.union(mask);
                    plan.always_observed.push((index, mask));
                }
                (Kind::Always, None, Some(predicate)) => plan.always_state.push((index, predicate)),
                (Kind::Sometimes, Some(mask), _) => plan.sometimes_observed.push((index, mask)),
                (Kind::Sometimes, None, Some(predicate)) => {
                    plan.sometimes_state.push((index, predicate))
                }
                (Kind::Eventually, ..) => {
                    plan.eventually.push(index);
                    match property.condition {
                        super::property::Condition::AtRest(predicate) if acyclic => {
                            plan.at_rest.push((index, predicate))
                        }
                        _ => plan.graph.push(index),
                    }
                }
                _ => unreachable!("property constructors pair kinds and conditions"),
            }
        }
        assert!(
            plan.graph.len() <= GRAPH_PROPERTIES_MAX,
            "at most {GRAPH_PROPERTIES_MAX} eventually properties per model"
        );
        plan.properties = properties;
        plan
    }

    /// The goal mask of a state for the graph-judged properties.
    pub fn goals(&self, model: &M, state: &M::State, at_rest: bool) -> u32 {
        let mut goals = 0;
        for (bit, index) in self.graph.iter().enumerate() {
            if self.properties[*index].goal(model, state, at_rest) {
                goals |= 1 << bit;
            }
        }
        goals
    }
}
