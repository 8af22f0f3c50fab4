//! An event queue for worlds where each of `n` slots (say, clients) has at most one pending
//! event: a tournament tree over the slots' next keys. Pops in exactly the order of
//! [`EventQueue`](super::kernel::EventQueue): by (time, sequence), sequence numbers given in
//! scheduling order.
//!
//! Why not the heap: a heap's sift walks down a path that each comparison picks, so every level
//! waits for the previous level's loads (about 10 cycles a level at a few hundred events, a third
//! of the AWS sweep's time). Here a slot's path to the root is fixed by its index: the siblings'
//! keys can all be loaded at once, and only the `min` of each level waits for the one below.

use super::kernel::{Queue, ScheduleError, TimeNs};

/// Key of a slot without a pending event: above every real key.
const EMPTY: u128 = u128::MAX;

/// Pending events of `slots` slots, earliest first, and the clock.
pub struct SlotQueue<E> {
    /// Node 1 is the root, node `i` has children `2i` and `2i + 1`, the leaves are
    /// `leaf_count..2 * leaf_count` (slot `s` at `leaf_count + s`); node 0 is unused. Each inner
    /// node holds the least key below it. A key is `at_ns` in the high 64 bits, then the
    /// sequence number, then the slot in the low `slot_bits`: keys are unique and order by
    /// (time, sequence) as the heap's do, and the root names its own slot.
    tree: Vec<u128>,
    events: Vec<E>,
    leaf_count: usize,
    slot_bits: u32,
    /// The slot whose event was popped last, while its leaf still holds the popped key: the
    /// next `schedule` for it replaces that key on the way up, saving a second walk to the root
    /// (the usual case: a handler schedules the popped slot's next event).
    popped: Option<usize>,
    len: usize,
    now_ns: TimeNs,
    seq_next: u64,
}

impl<E: Copy> SlotQueue<E> {
    /// An empty queue at time 0 for slots `0..slots`; `fill` is the event slots start with
    /// (never returned: only scheduled events are).
    pub fn new(slots: usize, fill: E) -> Self {
        let leaf_count = slots.max(1).next_power_of_two();
        SlotQueue {
            tree: vec![EMPTY; 2 * leaf_count],
            events: vec![fill; slots],
            leaf_count,
            slot_bits: leaf_count.trailing_zeros(),
            popped: None,
            len: 0,
            now_ns: 0,
            seq_next: 0,
        }
    }

    pub fn now_ns(&self) -> TimeNs {
        self.now_ns
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Schedules `event` for `slot`, which must have no pending event.
    ///
    /// # Panics
    /// If `slot` is out of range or already has a pending event (a bug in the world), or after
    /// 2^(64 - slot bits) events (sequence numbers would collide with slot bits).
    ///
    /// Inlined, as `pop`: called out of line, the event went through the stack in pieces and
    /// was read back whole, a failed store-to-load forwarding on every event (`#[inline]` alone
    /// was not taken).
    #[inline(always)]
    pub fn schedule_at(
        &mut self,
        slot: usize,
        at_ns: TimeNs,
        event: E,
    ) -> Result<(), ScheduleError> {
        if at_ns < self.now_ns {
            return Err(ScheduleError::InThePast {
                at_ns,
                now_ns: self.now_ns,
            });
        }
        assert!(slot < self.events.len(), "slot {slot} out of range");
        if self.popped.is_some_and(|popped| popped != slot) {
            self.retire_popped();
        }
        assert!(
            self.popped.is_some() || self.tree[self.leaf_count + slot] == EMPTY,
            "slot {slot} already has a pending event"
        );
        self.popped = None;
        let seq = self.seq_next;
        self.seq_next += 1;
        assert!(
            seq <= u64::MAX >> self.slot_bits,
            "sequence numbers exhausted"
        );
        let low = (seq << self.slot_bits) | slot as u64;
        self.events[slot] = event;
        self.len += 1;
        self.replay(slot, (u128::from(at_ns) << 64) | u128::from(low));
        Ok(())
    }

    /// Removes the earliest event, advances the clock to its time, and returns the time, the
    /// slot and the event.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(TimeNs, usize, E)> {
        if self.popped.is_some() {
            self.retire_popped();
        }
        // Emptiness from the count, not `tree[1] == EMPTY`: the root was just stored in two
        // 8-byte halves, and a 16-byte compare waited on the failed forwarding (a fifth of the
        // run's time in the profile).
        if self.len == 0 {
            return None;
        }
        let key = self.tree[1];
        let slot = (key as u64 & ((1 << self.slot_bits) - 1)) as usize;
        let at_ns = (key >> 64) as TimeNs;
        debug_assert!(at_ns >= self.now_ns, "time must not go backwards");
        self.now_ns = at_ns;
        self.popped = Some(slot);
        self.len -= 1;
        Some((at_ns, slot, self.events[slot]))
    }

    /// The popped slot got no new event: its leaf empties. Out of line: once per slot's last
    /// event, against every event for `replay` in `schedule_at`.
    #[inline(never)]
    fn retire_popped(&mut self) {
        if let Some(slot) = self.popped.take() {
            self.replay(slot, EMPTY);
        }
    }

    /// Sets `slot`'s leaf to `key` and recomputes the minima on its path to the root.
    ///
    /// Unrolled for each tree height: in a loop, LLVM turns the `min` into a branch (to let the
    /// CPU run ahead of the loop-carried minimum), and that branch is a coin toss at every level
    /// (measured: the queue took 46% of the run and the sweep ran at 0.6x). Straight-line code
    /// keeps the conditional moves. Inlined, so the height's dispatch is a predicted jump in
    /// the caller rather than a call on every event.
    #[inline(always)]
    fn replay(&mut self, slot: usize, key: u128) {
        match self.slot_bits {
            0 => self.replay_height::<0>(slot, key),
            1 => self.replay_height::<1>(slot, key),
            2 => self.replay_height::<2>(slot, key),
            3 => self.replay_height::<3>(slot, key),
            4 => self.replay_height::<4>(slot, key),
            5 => self.replay_height::<5>(slot, key),
            6 => self.replay_height::<6>(slot, key),
            7 => self.replay_height::<7>(slot, key),
            8 => self.replay_height::<8>(slot, key),
            9 => self.replay_height::<9>(slot, key),
            10 => self.replay_height::<10>(slot, key),
            11 => self.replay_height::<11>(slot, key),
            12 => self.replay_height::<12>(slot, key),
            13 => self.replay_height::<13>(slot, key),
            14 => self.replay_height::<14>(slot, key),
            _ => self.replay_loop(slot, key),
        }
    }

    #[inline(always)]
    fn replay_height<const HEIGHT: u32>(&mut self, slot: usize, key: u128) {
        debug_assert_eq!(self.slot_bits, HEIGHT);
        let tree = &mut self.tree[..];
        let mut node = self.leaf_count + slot;
        tree[node] = key;
        let mut least = key;
        for _ in 0..HEIGHT {
            least = least.min(tree[node ^ 1]);
            node >>= 1;
            tree[node] = least;
        }
    }

    /// Trees of more than 2^14 slots.
    fn replay_loop(&mut self, slot: usize, key: u128) {
        let tree = &mut self.tree[..];
        let mut node = self.leaf_count + slot;
        tree[node] = key;
        let mut least = key;
        while node > 1 {
            least = least.min(tree[node ^ 1]);
            node >>= 1;
            tree[node] = least;
        }
    }
}

/// For [`super::kernel::run`]: the popped event without its slot.
impl<E: Copy> Queue for SlotQueue<E> {
    type Event = E;

    #[inline(always)]
    fn pop(&mut self) -> Option<(TimeNs, E)> {
        SlotQueue::pop(self).map(|(at_ns, _, event)| (at_ns, event))
    }

    fn is_empty(&self) -> bool {
        SlotQueue::is_empty(self)
    }

    fn now_ns(&self) -> TimeNs {
        SlotQueue::now_ns(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::kernel::{run_rng, EventQueue};
    use rand::Rng;

    #[test]
    fn pops_in_time_then_sequence_order() {
        let mut queue = SlotQueue::new(4, ' ');
        queue.schedule_at(0, 30, 'c').unwrap();
        queue.schedule_at(3, 10, 'a').unwrap();
        queue.schedule_at(1, 30, 'd').unwrap();
        queue.schedule_at(2, 10, 'b').unwrap();
        let order: Vec<(TimeNs, usize, char)> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(
            order,
            [(10, 3, 'a'), (10, 2, 'b'), (30, 0, 'c'), (30, 1, 'd')]
        );
        assert_eq!(queue.now_ns(), 30);
        assert!(queue.is_empty());
    }

    /// The property the AWS world relies on: driven by the same schedule calls, the slot queue
    /// pops exactly what the kernel's heap pops, ties included. Each popped slot is mostly
    /// rescheduled at once (the fused path), sometimes later or never (the retire path), and
    /// times repeat often so that ties are exercised.
    #[test]
    fn pops_what_the_heap_pops() {
        for (slots, seed) in [(1, 1), (5, 2), (190, 3), (1000, 4)] {
            let mut rng = run_rng(seed, 0);
            let mut slot_queue = SlotQueue::new(slots, 0u64);
            let mut heap = EventQueue::new(slots);
            let mut idle: Vec<usize> = Vec::new();
            for slot in 0..slots {
                let at_ns = rng.random_range(0..20);
                slot_queue.schedule_at(slot, at_ns, slot as u64).unwrap();
                heap.schedule_at(at_ns, (slot, slot as u64)).unwrap();
            }
            let (mut pops, mut ties, mut retired) = (0u32, 0u32, 0u32);
            let mut last_ns = None;
            while let Some((at_ns, slot, event)) = slot_queue.pop() {
                assert_eq!(heap.pop(), Some((at_ns, (slot, event))));
                assert_eq!(slot_queue.len(), heap.len());
                pops += 1;
                ties += u32::from(last_ns == Some(at_ns));
                last_ns = Some(at_ns);
                if pops > 20_000 {
                    continue;
                }
                match rng.random_range(0..10) {
                    0 => {
                        idle.push(slot);
                        retired += 1;
                    }
                    _ => {
                        let next_ns = at_ns + rng.random_range(0..30);
                        slot_queue
                            .schedule_at(slot, next_ns, u64::from(pops))
                            .unwrap();
                        heap.schedule_at(next_ns, (slot, u64::from(pops))).unwrap();
                    }
                }
                if rng.random_bool(0.5) {
                    if let Some(slot) = idle.pop() {
                        let next_ns = at_ns + rng.random_range(0..30);
                        slot_queue.schedule_at(slot, next_ns, 7).unwrap();
                        heap.schedule_at(next_ns, (slot, 7)).unwrap();
                    }
                }
            }
            assert!(heap.is_empty());
            // One slot ends at its first retirement; the others must have reached every path.
            assert!(
                slots == 1 || (pops > 20_000 && ties > 100 && retired > 100),
                "{slots} slots: {pops} pops, {ties} ties, {retired} retired"
            );
        }
    }

    #[test]
    fn refuses_the_past() {
        let mut queue = SlotQueue::new(2, ());
        queue.schedule_at(0, 5, ()).unwrap();
        queue.pop();
        assert_eq!(
            queue.schedule_at(1, 4, ()),
            Err(ScheduleError::InThePast {
                at_ns: 4,
                now_ns: 5
            })
        );
    }

    #[test]
    #[should_panic(expected = "already has a pending event")]
    fn one_pending_event_per_slot() {
        let mut queue = SlotQueue::new(2, ());
        queue.schedule_at(1, 5, ()).unwrap();
        let _ = queue.schedule_at(1, 6, ());
    }
}
