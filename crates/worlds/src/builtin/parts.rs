//! The state's parts, for the explorer's successors built from their parent (`check::PartSpans`): each client,
//! the network, each process, the store's four tables, the ghost ledger of first successes and the budgets, in
//! the order `pack` writes them. An action touches a few of them (a `Send` one client and the network, a
//! `DeliverRequest` the network and one process), so the explorer rewrites and puts back only those.
//!
//! `touches` must name every part an action may change. It is checked, not trusted: in debug builds (the test
//! profile keeps debug assertions) `restore` asserts that the state is its parent again once the touched parts
//! are put back, and `pack_successor` that the spliced packing equals the full one, on every transition of
//! every search the tests run.

use super::action::Action;
use super::sorted_map::copy_items;
use super::state::{JobStep, Proc, State};
use super::world::{Server, WorldOf};
use crate::check::{splice_parts, PartSpans, ALL_PARTS};

/// Client `i` is part `CLIENT_0 + i` (at most 8 clients).
pub(super) const CLIENT_0: usize = 0;
pub(super) const NETWORK: usize = 8;
/// Process `i` is part `PROC_0 + i` (at most 4 processes).
pub(super) const PROC_0: usize = 9;
pub(super) const RECORDS: usize = 13;
pub(super) const PAYMENTS: usize = 14;
pub(super) const VERSIONS: usize = 15;
pub(super) const CHARGES: usize = 16;
pub(super) const FIRST_SUCCESS: usize = 17;
pub(super) const BUDGETS: usize = 18;

const fn bit(part: usize) -> u32 {
    1 << part
}

fn client(index: u8) -> u32 {
    bit(CLIENT_0 + index as usize)
}

fn proc(index: u8) -> u32 {
    bit(PROC_0 + index as usize)
}

/// What a handler step of the server role may write besides its process: the store's tables and, when it
/// answers, the network and the ledger.
const HANDLER: u32 =
    bit(RECORDS) | bit(PAYMENTS) | bit(VERSIONS) | bit(NETWORK) | bit(FIRST_SUCCESS);

impl<S: Server> WorldOf<S> {
    /// The parts `action` may change when applied to `state` (before it is applied).
    #[inline]
    pub(super) fn touches(&self, state: &State, action: &Action) -> u32 {
        match *action {
            Action::Send { client: index } => client(index) | bit(NETWORK),
            Action::Timeout { client: index } => client(index) | bit(NETWORK) | bit(BUDGETS),
            Action::DeliverRequest { proc: index, .. } => proc(index) | bit(NETWORK),
            Action::DeliverResponse { response } => client(response.to.client) | bit(NETWORK),
            Action::Step { proc: index } => proc(index) | step_touches(state, index),
            Action::Drop { .. } | Action::Duplicate { .. } => bit(NETWORK) | bit(BUDGETS),
            // A role that stays inside touches processes and the store only (`Server::SERVER_STAYS_INSIDE`);
            // the queue's crash puts a delivery back on the network.
            Action::Crash { proc: index } | Action::Fail { proc: index }
                if S::SERVER_STAYS_INSIDE =>
            {
                proc(index) | bit(BUDGETS) | bit(RECORDS)
            }
            Action::ExpireKey { .. } | Action::ExpireLease { .. } => bit(RECORDS) | bit(BUDGETS),
            Action::Crash { .. } | Action::Fail { .. } | Action::Republish { .. } => ALL_PARTS,
        }
    }

    /// `apply`, and the parts it may have changed.
    #[inline]
    pub(super) fn apply_touching(
        &self,
        state: &mut State,
        action: &Action,
    ) -> (super::Events, u32) {
        let touched = self.touches(state, action);
        (self.apply(state, action), touched)
    }
}

/// What the next handler step of process `index` writes besides the process itself.
#[inline]
fn step_touches(state: &State, index: u8) -> u32 {
    match state.procs[index as usize] {
        Proc::Busy(job) => match job.step {
            JobStep::Effect => 0,
            JobStep::Provider => bit(CHARGES),
            JobStep::Respond { .. } => bit(NETWORK) | bit(FIRST_SUCCESS),
            _ => HANDLER,
        },
        Proc::Idle => 0,
    }
}

/// Append the packing of `next`, which differs from the state packed in `parent` only in the parts of
/// `touched`.
#[inline]
pub(super) fn pack_successor(
    next: &State,
    touched: u32,
    parent: &[u8],
    spans: &PartSpans,
    out: &mut Vec<u8>,
) {
    if touched == ALL_PARTS {
        return super::pack::pack(next, out);
    }
    let start = out.len();
    out.reserve(256);
    splice_parts(parent, spans, touched, out, |part, out| {
        super::pack::pack_part(next, part, out)
    });
    if cfg!(debug_assertions) {
        let mut full = Vec::new();
        super::pack::pack(next, &mut full);
        assert_eq!(
            out[start..],
            full[..],
            "the spliced packing is the full one"
        );
    }
}

/// Put the parts of `touched` of `next` back to `state`'s.
#[inline]
pub(super) fn restore(next: &mut State, state: &State, touched: u32) {
    restore_parts(next, state, touched);
    debug_assert!(
        next == state,
        "an action changed a part `touches` does not name"
    );
}

#[inline]
fn restore_parts(next: &mut State, state: &State, touched: u32) {
    if touched == ALL_PARTS {
        next.clone_from(state);
        return;
    }
    let mut rest = touched;
    while rest != 0 {
        let part = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        match part {
            NETWORK => next.network.clone_from(&state.network),
            RECORDS => next.store.records.clone_from(&state.store.records),
            PAYMENTS => next.store.payments.clone_from(&state.store.payments),
            VERSIONS => next.store.versions.clone_from(&state.store.versions),
            CHARGES => copy_items(
                &mut next.store.provider_charges,
                &state.store.provider_charges,
            ),
            FIRST_SUCCESS => next.first_success.clone_from(&state.first_success),
            BUDGETS => next.budgets = state.budgets,
            _ if part >= PROC_0 => next.procs[part - PROC_0] = state.procs[part - PROC_0],
            _ => next.clients[part - CLIENT_0].clone_from(&state.clients[part - CLIENT_0]),
        }
    }
}

/// `touches` against what actions do, on the states the catalogue's models reach (up to a cap each, breadth
/// first): the spliced packing is the full one and putting the touched parts back gives the parent, whatever
/// the build's debug assertions.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::World;
    use std::collections::{HashSet, VecDeque};

    const STATES_PER_MODEL_MAX: usize = 3_000;

    /// Every transition of up to `STATES_PER_MODEL_MAX` states of `world`, as (parent, action).
    fn transitions(world: &World) -> Vec<(State, Action)> {
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([world.init_state()]);
        let (mut found, mut actions) = (Vec::new(), Vec::new());
        while let Some(state) = queue.pop_front() {
            if seen.len() >= STATES_PER_MODEL_MAX || !seen.insert(state.clone()) {
                continue;
            }
            world.actions(&state, &mut actions);
            for action in &actions {
                queue.push_back(world.next_state(&state, action).0);
                found.push((state.clone(), *action));
            }
        }
        found
    }

    fn catalogue() -> Vec<World> {
        let mut paths: Vec<_> = std::fs::read_dir(crate::repository_file("models"))
            .expect("models/")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
            .collect();
        paths.sort();
        let models = paths.iter().map(|path| crate::spec::load_model(path));
        models.map(|model| model.expect("shipped").world).collect()
    }

    /// The successor of `parent` by `action` made in place, packed from the parent's packing and put back,
    /// with the parts `mask` keeps of what `touches` names: (spliced packing, full packing, put back).
    fn splice_and_restore(
        world: &World,
        parent: &State,
        action: &Action,
        mask: u32,
    ) -> (Vec<u8>, Vec<u8>, State) {
        let mut packed = Vec::new();
        crate::builtin::pack::pack(parent, &mut packed);
        let mut spans = PartSpans::default();
        let mut next = parent.clone();
        crate::builtin::pack::unpack_parts(&packed, &mut next, &mut spans);
        let touched = crate::check::Model::apply_touching(world, &mut next, action).1 & mask;
        let (mut spliced, mut full) = (Vec::new(), Vec::new());
        if touched == ALL_PARTS {
            // (a role that does not stay inside: the explorer packs these in full)
            crate::builtin::pack::pack(&next, &mut spliced);
        } else {
            splice_parts(&packed, &spans, touched, &mut spliced, |part, out| {
                crate::builtin::pack::pack_part(&next, part, out)
            });
        }
        crate::builtin::pack::pack(&next, &mut full);
        restore_parts(&mut next, parent, touched);
        (spliced, full, next)
    }

    #[test]
    fn touched_parts_are_all_an_action_changes() {
        let mut checked = 0;
        for world in catalogue() {
            for (parent, action) in transitions(&world) {
                let (spliced, full, restored) =
                    splice_and_restore(&world, &parent, &action, ALL_PARTS);
                assert_eq!(spliced, full, "{action:?} from {parent:?}");
                assert_eq!(restored, parent, "{action:?} from {parent:?}");
                checked += 1;
            }
        }
        assert!(
            checked > 50_000,
            "enough transitions were checked: {checked}"
        );
    }

    /// The twin: a mask that leaves out the network, on a step that sends, is caught by both comparisons.
    #[test]
    fn a_part_left_out_of_the_mask_is_caught() {
        let world = &catalogue()[0];
        let (parent, action) = transitions(world)
            .into_iter()
            .find(|(_, action)| matches!(action, Action::Send { .. }))
            .expect("a client sends");
        let (spliced, full, restored) = splice_and_restore(world, &parent, &action, !bit(NETWORK));
        assert_ne!(spliced, full);
        assert_ne!(restored, parent);
    }
}
