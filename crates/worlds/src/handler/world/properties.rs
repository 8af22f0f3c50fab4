//! Your own properties on a handler world: `always` and `sometimes` conditions, written as closures over what
//! the world holds ([`Seen`]: the store's committed rows and key-value entries, the ghost ledger of effects and
//! provider charges with the operation each was made for, what each client was told), checked beside the fixed
//! list (which stays the default) by every explorer, as `check::Property` values of the world.
//!
//! Why an index table: the checker's properties hold plain functions, which its threads copy for free and which
//! need no `'static` bound on the handler; a closure is not one. So the world keeps the closures, and the
//! property made for the `i`-th one is a function that reads closure `i` of the world it is given
//! ([`OWN_PROPERTIES_MAX`] of them per world). A world with no own properties checks exactly what it did.
//!
//! An own `sometimes` is a scenario of the design's own ("the sweeper reset a live claim"): reports say
//! `reached` / `not reached`, and a `not reached` fails only when the scenario is wanted (`wants`).

use super::{HandlerState, HandlerWorld, Op, OpOutcome};
use crate::check::{self, Kind, Model};
use crate::handler::api::{Handler, Reply, Worker};
use crate::handler::sim::NO_OPERATION;
use std::sync::Arc;

/// At most this many own properties per world.
pub const OWN_PROPERTIES_MAX: usize = 16;

/// A condition over what the world holds.
type Condition = Arc<dyn Fn(&Seen) -> bool + Send + Sync>;

/// A design's own properties and the scenarios it wants reached (built-in or its own `sometimes`).
#[derive(Clone, Default)]
pub(in crate::handler) struct Own {
    properties: Vec<(String, Kind, Condition)>,
    pub(super) wanted: Vec<String>,
}

/// What a state of the world holds, read-only, for an own property: committed rows and key-value entries (an
/// open transaction's writes are not seen until they commit), the ledger, the provider, the replies, the clock.
pub struct Seen<'a> {
    state: &'a HandlerState,
}

/// An effect row in the ledger: its id (1-based in commit order of its table, as `insert_effect` returned it),
/// its value, and the operation it was made for (`None`: a worker's run that had read no record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effect<'a> {
    pub id: u64,
    pub value: &'a str,
    pub op: Option<Op>,
}

/// A provider charge: its idempotency key (if any), and the operation it was made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Charge<'a> {
    pub idempotency_key: Option<&'a str>,
    pub op: Option<Op>,
}

fn op_of(ghost: u16) -> Option<Op> {
    (ghost != NO_OPERATION).then_some(Op {
        client: (ghost / 16) as u8,
        op: (ghost % 16) as u8,
    })
}

impl<'a> Seen<'a> {
    /// The logical clock, in milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.state.store.now_ms
    }

    /// A committed row's value.
    pub fn row(&self, table: &str, key: &str) -> Option<&'a str> {
        let rows = &self.state.store.rows;
        let found = rows.iter().find(|((t, k), _)| t == table && k == key);
        found.map(|(_, (value, _))| value.as_str())
    }

    /// A table's committed rows, (key, value) in key order.
    pub fn rows<'s>(&'s self, table: &'s str) -> impl Iterator<Item = (&'a str, &'a str)> + 's {
        let rows = &self.state.store.rows;
        rows.iter()
            .filter(move |((t, _), _)| t == table)
            .map(|((_, key), (value, _))| (key.as_str(), value.as_str()))
    }

    /// A key-value entry's value (an expired entry is gone).
    pub fn kv(&self, key: &str) -> Option<&'a str> {
        let kv = &self.state.store.kv;
        kv.get(key).map(|(value, _)| value.as_str())
    }

    /// The committed effects of a table, in commit order.
    pub fn effects<'s>(&'s self, table: &'s str) -> impl Iterator<Item = Effect<'a>> + 's {
        let effects = &self.state.store.effects;
        (effects.iter().filter(move |(t, _, _)| t == table))
            .zip(1..)
            .map(|((_, value, ghost), id)| Effect {
                id,
                value: value.as_str(),
                op: op_of(*ghost),
            })
    }

    /// The committed effect of a table with this id.
    pub fn effect(&self, table: &str, id: u64) -> Option<Effect<'a>> {
        self.effects(table).find(|effect| effect.id == id)
    }

    /// The provider's charges, in order.
    pub fn charges(&self) -> impl Iterator<Item = Charge<'a>> + 'a {
        let charges = &self.state.store.charges;
        charges.iter().map(|(key, ghost)| Charge {
            idempotency_key: key.as_deref(),
            op: op_of(*ghost),
        })
    }

    /// What each operation's client was told so far (pending, a success, a failure, gave up).
    pub fn told(&self) -> impl Iterator<Item = (Op, &'a OpOutcome)> + 'a {
        let clients = &self.state.clients;
        clients.iter().enumerate().flat_map(|(client, state)| {
            state.outcomes.iter().enumerate().map(move |(op, outcome)| {
                let op = Op {
                    client: client as u8,
                    op: op as u8,
                };
                (op, outcome)
            })
        })
    }

    /// The successes the clients were told: (operation, reply).
    pub fn replies(&self) -> impl Iterator<Item = (Op, &'a Reply)> + 'a {
        self.told().filter_map(|(op, outcome)| match outcome {
            OpOutcome::Succeeded(reply) => Some((op, reply)),
            _ => None,
        })
    }

    /// The first success the server sent for an operation (delivered or not).
    pub fn sent(&self, op: Op) -> Option<&'a Reply> {
        self.state.first_success.get(&op)
    }

    /// The attempts being served now: (operation, attempt), one per busy server process.
    pub fn serving(&self) -> impl Iterator<Item = (Op, u8)> + 'a {
        let procs = &self.state.procs;
        procs.iter().flatten().filter_map(|job| job.task.serving())
    }
}

/// Own property `I`'s condition in `state` (see the module docs).
fn own_condition<H, W, const I: usize>(world: &HandlerWorld<H, W>, state: &HandlerState) -> bool {
    (world.own.properties[I].2)(&Seen { state })
}

type Judge<H, W> = fn(&HandlerWorld<H, W>, &HandlerState) -> bool;

fn judges<H, W>() -> [Judge<H, W>; OWN_PROPERTIES_MAX] {
    [
        own_condition::<H, W, 0>,
        own_condition::<H, W, 1>,
        own_condition::<H, W, 2>,
        own_condition::<H, W, 3>,
        own_condition::<H, W, 4>,
        own_condition::<H, W, 5>,
        own_condition::<H, W, 6>,
        own_condition::<H, W, 7>,
        own_condition::<H, W, 8>,
        own_condition::<H, W, 9>,
        own_condition::<H, W, 10>,
        own_condition::<H, W, 11>,
        own_condition::<H, W, 12>,
        own_condition::<H, W, 13>,
        own_condition::<H, W, 14>,
        own_condition::<H, W, 15>,
    ]
}

impl<H: Handler, W: Worker> HandlerWorld<H, W> {
    /// Your own safety property: `holds` is true in every reachable state (over [`Seen`]).
    pub fn always(self, name: &str, holds: impl Fn(&Seen) -> bool + Send + Sync + 'static) -> Self {
        self.own_property(name, Kind::Always, Arc::new(holds))
    }

    /// Your own scenario: `happened` is true in some reachable state; reported `reached` or `not reached`, and
    /// failing only when wanted (`wants`).
    pub fn sometimes(
        self,
        name: &str,
        happened: impl Fn(&Seen) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.own_property(name, Kind::Sometimes, Arc::new(happened))
    }

    /// The scenarios a check must reach (built-in ones, or own `sometimes` declared before): a report fails
    /// when one is not reached. A name that is no scenario of this world is refused here, with the valid ones.
    pub fn wants(mut self, scenarios: &[&str]) -> Self {
        for scenario in scenarios {
            self.refuse_unknown("wants", scenario, Kind::Sometimes);
            if !self.own.wanted.iter().any(|wanted| wanted == scenario) {
                self.own.wanted.push(scenario.to_string());
            }
        }
        self
    }

    fn own_property(mut self, name: &str, kind: Kind, condition: Condition) -> Self {
        let taken = self.properties().iter().any(|p| p.name() == name);
        assert!(
            !name.is_empty() && !taken,
            "own property '{name}': a property or scenario of this world has that name (or it is empty)"
        );
        assert!(
            self.own.properties.len() < OWN_PROPERTIES_MAX,
            "own property '{name}': at most {OWN_PROPERTIES_MAX} own properties per world"
        );
        self.own
            .properties
            .push((name.to_string(), kind, condition));
        self
    }

    /// The own properties as the checker's (after the fixed list).
    pub(super) fn own_properties(&self) -> impl Iterator<Item = check::Property<Self>> + '_ {
        let judges = judges::<H, W>();
        (self.own.properties.iter().enumerate()).map(move |(index, (name, kind, _))| match kind {
            Kind::Sometimes => check::Property::sometimes(name.clone(), judges[index]),
            _ => check::Property::always(name.clone(), judges[index]),
        })
    }

    /// The names of this world's properties of `kind` (`Sometimes`: its scenarios; otherwise its `always` and
    /// `eventually` properties), in report order.
    pub fn names_of(&self, kind: Kind) -> Vec<String> {
        let scenarios = kind == Kind::Sometimes;
        (self.properties().into_iter())
            .filter(|property| (property.kind() == Kind::Sometimes) == scenarios)
            .map(|property| property.name().to_string())
            .collect()
    }

    /// Panics, naming `what` and the valid names, unless `name` is a property (or, for `Sometimes`, a
    /// scenario) of this world: a misspelt name is refused before any search.
    pub(super) fn refuse_unknown(&self, what: &str, name: &str, kind: Kind) {
        if self.names_of(kind).iter().any(|known| known == name) {
            return;
        }
        let (asked, other) = match kind {
            Kind::Sometimes => ("scenario", "property (not a scenario)"),
            _ => ("property", "scenario (use assert_reached)"),
        };
        let other_kind = if kind == Kind::Sometimes {
            Kind::Always
        } else {
            Kind::Sometimes
        };
        if self.names_of(other_kind).iter().any(|known| known == name) {
            panic!("{what}: '{name}' is a {other}");
        }
        panic!(
            "{what}: no {asked} '{name}' in this world; its {asked}s: {}",
            self.names_of(kind).join(", ")
        );
    }
}
