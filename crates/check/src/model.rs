//! What the checker explores: any protocol written as a `Model`. Three methods say what the protocol is (its
//! initial state, the actions enabled in a state, what an action does); the rest are hooks with defaults.

use super::property::Property;
use rand_chacha::ChaCha8Rng;
use std::fmt::Debug;
use std::hash::Hash;

/// What one step did that a property may look at, computed by `Model::apply` alongside the next state. A
/// bitmask is the fast choice: a safety property about steps is then one intersection per transition, and no
/// history needs to be kept in the state. Models with nothing to say use `()`.
pub trait Observation: Copy + Debug + Default + PartialEq + Send + Sync {
    /// Everything either observed.
    fn union(self, other: Self) -> Self;
    /// Whether the two share something.
    fn intersects(self, other: Self) -> bool;
}

impl Observation for () {
    fn union(self, _other: ()) {}
    fn intersects(self, _other: ()) -> bool {
        false
    }
}

/// Plain integers are bitmasks: one bit per thing a step can do.
macro_rules! bitmask_observation {
    ($($int:ty),*) => {$(
        impl Observation for $int {
            #[inline]
            fn union(self, other: $int) -> $int {
                self | other
            }
            #[inline]
            fn intersects(self, other: $int) -> bool {
                self & other != 0
            }
        }
    )*};
}

bitmask_observation!(u8, u16, u32, u64, u128);

/// A protocol as a state machine. The explorers (`Checker::bfs`, `Checker::walks`, `Checker::replay`) need only
/// this; see `examples/own_protocol.rs` for a complete one in a hundred lines.
///
/// Determinism is the model's part of the bargain: `actions` must list the enabled actions in the same order
/// every time for the same state, and `apply` must depend on nothing but its arguments (no clock, no OS
/// entropy, no `HashMap` iteration). The checker then gives the same verdicts, state counts and
/// counterexamples whatever the thread count.
pub trait Model: Sized + Sync {
    /// A state of the model: cloned, hashed and compared by the visited set.
    type State: Clone + Debug + Eq + Hash + Send + Sync;
    /// A step from one state to the next: what a trace is made of.
    type Action: Clone + Debug + PartialEq + Send + Sync;
    /// What a step did (see [`Observation`]).
    type Obs: Observation;

    /// The one state every search starts from.
    fn init_state(&self) -> Self::State;

    /// Every action enabled in `state`, in a deterministic order, pushed onto `out` (which the checker has
    /// cleared; it is reused so that listing allocates nothing).
    fn actions(&self, state: &Self::State, out: &mut Vec<Self::Action>);

    /// Apply an enabled action in place and return what the step did.
    fn apply(&self, state: &mut Self::State, action: &Self::Action) -> Self::Obs;

    /// The properties to check, in the order reports list them.
    fn properties(&self) -> Vec<Property<Self>>;

    /// Whether `action` is a fault (a loss, a crash, a timeout that should not have fired). Faults happen
    /// finitely often: `eventually` properties are judged once they stop, where only faults remain enabled.
    fn is_fault(&self, _state: &Self::State, _action: &Self::Action) -> bool {
        false
    }

    /// A promise that no cycle of non-fault actions exists (faults have budgets, clients make progress). It lets
    /// the explorer judge `eventually_at_rest` properties at rest states alone, without keeping the state graph;
    /// debug builds check the promise on searches of up to `ACYCLIC_CHECK_STATES` states.
    fn acyclic(&self) -> bool {
        false
    }

    /// Partial-order reduction (`Checker::por`, see `check::por`): whether `action`, enabled in `state` and not a
    /// fault there, may be explored alone from `state`. `true` promises that along every path from `state` that
    /// does not take `action`, every action taken is independent of it where it is taken (the two orders reach
    /// the same state, neither disables the other, each observes the same either way), and `action` stays
    /// enabled and a non-fault action; and that `action` never changes a state-judged `always` or `sometimes`
    /// predicate. With symmetry the answer must not depend on which symmetric state is asked. The default,
    /// `false`, declares nothing independent: the state is expanded in full.
    fn independent_of_rest(&self, _state: &Self::State, _action: &Self::Action) -> bool {
        false
    }

    /// Partial-order reduction, when no single action is independent of the rest: a persistent set of the
    /// enabled `actions` of `state`, as indices into `actions` in increasing order, pushed onto `out` (left
    /// empty to declare none). Pushing promises C1 of `check::por` for every path from `state` that takes no
    /// action of the set: each action of the set that is enabled at the path's end could have been taken first
    /// (to the same state, every step observing the same), and some non-fault action of the set (the key)
    /// stays enabled and a non-fault action along it (a set whose actions stay enabled and are independent of
    /// every action of such a path, where it is taken, promises both); that each of them leaves every
    /// state-judged `always` or `sometimes` predicate as it was; and, on a model that promises `acyclic`, that
    /// no fault of the set lies on a cycle (it spends a budget). The search uses
    /// the set only when it is smaller than `actions`. With symmetry the answer must be symmetric, as for
    /// `independent_of_rest`. The default declares none.
    fn persistent_set(
        &self,
        _state: &Self::State,
        _actions: &[Self::Action],
        _out: &mut Vec<usize>,
    ) {
    }

    /// Set when `pack` and `unpack_into` are written: the frontier then holds packed states (often a fifth of
    /// their size) and a state's fingerprint is the hash of its packing. Otherwise states are cloned and
    /// fingerprinted through `Hash`.
    const PACKED: bool = false;

    /// An injective byte encoding of a state (two distinct states never pack alike), inverted by `unpack_into`.
    fn pack(&self, _state: &Self::State, _out: &mut Vec<u8>) {
        unreachable!("Model::pack called on a model whose PACKED is false")
    }

    /// Decode a packing into `state`, reusing its buffers.
    fn unpack_into(&self, _bytes: &[u8], _state: &mut Self::State) {
        unreachable!("Model::unpack_into called on a model whose PACKED is false")
    }

    /// [`Model::apply`], and which parts of the state it may have changed: a mask of parts the model numbers
    /// itself (bit `i` is part `i`, as in [`crate::PartSpans`]). Promises that every part outside the mask is
    /// as it was. The default, [`crate::ALL_PARTS`], promises nothing.
    #[inline]
    fn apply_touching(&self, state: &mut Self::State, action: &Self::Action) -> (Self::Obs, u32) {
        (self.apply(state, action), crate::ALL_PARTS)
    }

    /// [`Model::unpack_into`], noting where each part of the state lies in `bytes` (for
    /// [`Model::pack_successor`]). The default notes nothing.
    #[inline]
    fn unpack_parts(&self, bytes: &[u8], state: &mut Self::State, _spans: &mut crate::PartSpans) {
        self.unpack_into(bytes, state)
    }

    /// Append the packing of `next`, a state that differs from the one packed in `parent` (its parts at
    /// `spans`, as `unpack_parts` noted them) only in the parts of `touched`: the same bytes as
    /// [`Model::pack`], written by copying the parent's around the touched parts (`crate::splice_parts`).
    /// The default packs `next` in full.
    #[inline]
    fn pack_successor(
        &self,
        next: &Self::State,
        _touched: u32,
        _parent: &[u8],
        _spans: &crate::PartSpans,
        out: &mut Vec<u8>,
    ) {
        self.pack(next, out)
    }

    /// Make `next` equal to `state` again, given that they differ only in the parts of `touched` (the explorer
    /// applies every action of a state to one copy of it and puts the copy back after each). The default
    /// copies the whole state.
    #[inline]
    fn restore(&self, next: &mut Self::State, state: &Self::State, _touched: u32) {
        next.clone_from(state)
    }

    /// Symmetry reduction: the canonical representative of the state's symmetry class (for example, clients
    /// sorted), or `None` when the model has no symmetry. Any choice within the class is sound; properties must
    /// not tell symmetric states apart. Counterexamples are mapped back to the unreduced model by the checker
    /// (at each step it picks the real action whose successor has the same canonical form), so nothing else is
    /// needed.
    fn canonicalize(&self, _state: &Self::State) -> Option<Self::State> {
        None
    }

    /// [`Model::canonicalize`] in place: the explorer's form, called once per transition. The default
    /// replaces the state with `canonicalize`'s answer; a model can relabel without building a new state
    /// (and skip the work when the state is already canonical). Must agree with `canonicalize`.
    #[inline]
    fn canonicalize_in_place(&self, state: &mut Self::State) {
        if let Some(canonical) = self.canonicalize(state) {
            *state = canonical;
        }
    }

    /// One line for people: what `action` did, from `before` to `after`. Timelines and traces use it.
    fn describe_step(
        &self,
        _before: &Self::State,
        action: &Self::Action,
        _after: &Self::State,
        _obs: Self::Obs,
    ) -> String {
        format!("{action:?}")
    }

    /// Why `action` is not enabled in `state`: what a trace replayed on a model it was not found on (another
    /// design, an edited model) reports where it diverges (`Diverged::reason`). The default names the action
    /// and what is enabled instead; a model that knows its actions can say more.
    fn why_not_enabled(&self, state: &Self::State, action: &Self::Action) -> String {
        let mut enabled_here = Vec::new();
        enabled(self, state, &mut enabled_here);
        let instead: Vec<String> = enabled_here
            .iter()
            .map(|other| {
                let mut after = state.clone();
                let observed = self.apply(&mut after, other);
                self.describe_step(state, other, &after, observed)
            })
            .collect();
        format!(
            "{action:?} is not enabled here; enabled instead: {}",
            if instead.is_empty() {
                "nothing".to_string()
            } else {
                instead.join("; ")
            }
        )
    }

    /// The state as panels of titled rows, for the trace explorer (the HTML report, `retrylab explore`). The
    /// default shows the state's debug form; a model with its own view gets panels compared step by step.
    fn view(&self, state: &Self::State) -> super::StateView {
        super::StateView::debug(state)
    }

    /// Swarm testing for random walks: a variant of the model drawn from the walk's generator (for example
    /// with every fault budget between zero and the declared one), walked instead of the model itself. Its
    /// paths must be paths of the model too. `None`: walk the model as it is.
    fn swarm(&self, _rng: &mut ChaCha8Rng) -> Option<Self> {
        None
    }

    /// The checker builder: `model.checker().threads(2).bfs()`.
    fn checker(&self) -> super::Checker<'_, Self> {
        super::Checker::new(self)
    }
}

/// The enabled actions of `state` into `out`, cleared first.
#[inline]
pub(crate) fn enabled<M: Model>(model: &M, state: &M::State, out: &mut Vec<M::Action>) {
    out.clear();
    model.actions(state, out);
}

/// Searches larger than this skip the debug-build check of `Model::acyclic` (it keeps every edge).
pub const ACYCLIC_CHECK_STATES: u64 = 1_000_000;
