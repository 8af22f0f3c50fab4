//! The discrete-event core: virtual clock, event queue ordered by (time, sequence), runner.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Virtual time in nanoseconds since the start of a run. Integer so that ordering and equality
/// are exact; experiments think in milliseconds and convert at the edges.
pub type TimeNs = u64;

const NS_PER_MS: f64 = 1_000_000.0;

/// Milliseconds to nanoseconds, rounded to the nearest nanosecond; negative or NaN gives 0.
pub fn ms_to_ns(ms: f64) -> TimeNs {
    // Adding 0.5 then truncating rounds half up for non-negative values (cheaper than `round`,
    // which is a libm call on the hot path); `as` saturates, so NaN and negatives give 0 and
    // huge values cannot wrap.
    let ns = ms * NS_PER_MS + 0.5;
    // The same value, cheaper: in [0, 2^63) the conversion is one instruction. The saturating
    // `as` adds a NaN test and two bounds clamps to it, five conversions per event in the AWS
    // world; the unsigned one needs two conversions and a fix-up besides. NaN and negatives fail
    // the range test and take the saturating path, which gives 0.
    if (0.0..I64_LIMIT).contains(&ns) {
        // SAFETY: `ns` is finite and in [0, 2^63), so its truncation is an `i64`, and >= 0.
        unsafe { ns.to_int_unchecked::<i64>() as TimeNs }
    } else {
        saturating_ns(ns)
    }
}

/// Out of line and cold: inline, LLVM computed this path too on every call and selected.
#[cold]
#[inline(never)]
fn saturating_ns(ns: f64) -> TimeNs {
    ns as TimeNs
}

/// 2^63 as f64: the first value `as i64` cannot hold.
const I64_LIMIT: f64 = 9_223_372_036_854_775_808.0;

pub fn ns_to_ms(ns: TimeNs) -> f64 {
    ns as f64 / NS_PER_MS
}

/// The generator for one run: the pinned ChaCha8 seeded from `seed`, on its own `stream`, so runs
/// are independent and each can be replayed alone from (seed, stream).
pub fn run_rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

struct Scheduled<E> {
    /// `at_ns` in the high 64 bits, the sequence number in the low 64: one integer comparison
    /// orders by (time, sequence). Sequence numbers are unique and increasing, so ties at the
    /// same instant go in scheduling order and the order of events is total.
    key: u128,
    event: E,
}

impl<E> Scheduled<E> {
    fn at_ns(&self) -> TimeNs {
        (self.key >> 64) as TimeNs
    }
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Scheduled<E> {}
impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Scheduled<E> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest event.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// Scheduling beyond the queue's bound, or into the past.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("event queue full ({len_max} pending events)")]
    Full { len_max: usize },
    #[error("event scheduled at {at_ns} ns, before now ({now_ns} ns)")]
    InThePast { at_ns: TimeNs, now_ns: TimeNs },
}

/// Pending events, earliest first, and the clock, which only moves when an event is popped.
///
/// A binary heap: `pop` sifts the hole to the bottom with one comparison per level, then the
/// last element back up (usually a step or two, since new events lie in the future). A 4-ary
/// heap with a payload slab was measured 40% slower on the AWS sweep. Worlds with at most one
/// pending event per client can use [`super::slot_queue::SlotQueue`] instead (same order of
/// events, cheaper per event; the AWS world does).
pub struct EventQueue<E> {
    heap: BinaryHeap<Scheduled<E>>,
    now_ns: TimeNs,
    seq_next: u64,
    len_max: usize,
}

impl<E> EventQueue<E> {
    /// An empty queue at time 0 that refuses to hold more than `len_max` pending events.
    pub fn new(len_max: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(len_max.min(1 << 16)),
            now_ns: 0,
            seq_next: 0,
            len_max,
        }
    }

    pub fn now_ns(&self) -> TimeNs {
        self.now_ns
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    pub fn schedule_at(&mut self, at_ns: TimeNs, event: E) -> Result<(), ScheduleError> {
        if at_ns < self.now_ns {
            return Err(ScheduleError::InThePast {
                at_ns,
                now_ns: self.now_ns,
            });
        }
        if self.heap.len() >= self.len_max {
            return Err(ScheduleError::Full {
                len_max: self.len_max,
            });
        }
        let seq = self.seq_next;
        self.seq_next += 1;
        self.heap.push(Scheduled {
            key: (u128::from(at_ns) << 64) | u128::from(seq),
            event,
        });
        Ok(())
    }

    pub fn schedule_after(&mut self, delay_ns: TimeNs, event: E) -> Result<(), ScheduleError> {
        self.schedule_at(self.now_ns.saturating_add(delay_ns), event)
    }

    /// Removes the earliest event and advances the clock to its time.
    pub fn pop(&mut self) -> Option<(TimeNs, E)> {
        let next = self.heap.pop()?;
        let at_ns = next.at_ns();
        debug_assert!(at_ns >= self.now_ns, "time must not go backwards");
        self.now_ns = at_ns;
        Some((at_ns, next.event))
    }
}

/// What a world's handler tells the runner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Continue,
    Stop,
}

/// What [`run`] needs of an event queue: the earliest event, emptiness and the clock. Worlds
/// schedule through their queue's own methods. [`EventQueue`] serves any world;
/// [`super::slot_queue::SlotQueue`] serves worlds with at most one pending event per slot, in the
/// same order of events.
pub trait Queue {
    type Event;
    /// Removes the earliest event and advances the clock to its time.
    fn pop(&mut self) -> Option<(TimeNs, Self::Event)>;
    fn is_empty(&self) -> bool;
    fn now_ns(&self) -> TimeNs;
}

impl<E> Queue for EventQueue<E> {
    type Event = E;

    #[inline(always)]
    fn pop(&mut self) -> Option<(TimeNs, E)> {
        EventQueue::pop(self)
    }

    fn is_empty(&self) -> bool {
        EventQueue::is_empty(self)
    }

    fn now_ns(&self) -> TimeNs {
        EventQueue::now_ns(self)
    }
}

/// A simulated world: reacts to one event at a time, scheduling further events on the queue and
/// drawing randomness only from the run's generator.
pub trait TimedWorld {
    type Event;
    /// The queue it schedules on: `EventQueue<Self::Event>` unless the world has a cheaper one.
    type Queue: Queue<Event = Self::Event>;
    /// Schedules the initial events (at time 0 the queue is empty).
    fn start(&mut self, queue: &mut Self::Queue, rng: &mut ChaCha8Rng);
    fn handle(
        &mut self,
        now_ns: TimeNs,
        event: Self::Event,
        queue: &mut Self::Queue,
        rng: &mut ChaCha8Rng,
    ) -> Control;
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// No event left.
    Drained,
    /// The world asked to stop.
    Stopped,
    /// `events_max` events were handled and some remain: the run is incomplete.
    EventLimit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunStats {
    pub end: RunEnd,
    pub event_count: u64,
    pub end_ns: TimeNs,
}

/// Runs `world` until it drains, stops, or has handled `events_max` events.
pub fn run<M: TimedWorld>(
    world: &mut M,
    queue: &mut M::Queue,
    rng: &mut ChaCha8Rng,
    events_max: u64,
) -> RunStats {
    world.start(queue, rng);
    let mut event_count = 0;
    let end = loop {
        if event_count == events_max {
            break if queue.is_empty() {
                RunEnd::Drained
            } else {
                RunEnd::EventLimit
            };
        }
        let Some((now_ns, event)) = queue.pop() else {
            break RunEnd::Drained;
        };
        event_count += 1;
        if world.handle(now_ns, event, queue, rng) == Control::Stop {
            break RunEnd::Stopped;
        }
    };
    RunStats {
        end,
        event_count,
        end_ns: queue.now_ns(),
    }
}

/// Runs `world` on a fresh queue of at most `queue_len_max` pending events until it drains; a
/// run cut short by the event bound is an error, never a result.
pub fn run_drained<M>(
    world: &mut M,
    queue_len_max: usize,
    rng: &mut ChaCha8Rng,
    events_max: u64,
) -> Result<RunStats, String>
where
    M: TimedWorld<Queue = EventQueue<<M as TimedWorld>::Event>>,
{
    let mut queue = EventQueue::new(queue_len_max);
    let stats = run(world, &mut queue, rng, events_max);
    if stats.end != RunEnd::Drained {
        return Err(format!("run did not drain: {:?}", stats.end));
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn pops_in_time_then_sequence_order() {
        let mut queue = EventQueue::new(16);
        queue.schedule_at(30, 'c').unwrap();
        queue.schedule_at(10, 'a').unwrap();
        queue.schedule_at(30, 'd').unwrap();
        queue.schedule_at(10, 'b').unwrap();
        let order: Vec<(TimeNs, char)> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(order, [(10, 'a'), (10, 'b'), (30, 'c'), (30, 'd')]);
        assert_eq!(queue.now_ns(), 30);
    }

    #[test]
    fn matches_a_sorted_reference_under_random_interleaving() {
        // Interleave pushes and pops at random; every pop must be the minimum (time, seq) of
        // what is pending, as a sorted list says.
        let mut rng = run_rng(11, 0);
        let mut queue = EventQueue::new(1_000);
        let mut reference: Vec<(TimeNs, u64)> = Vec::new();
        let mut seq = 0u64;
        for _ in 0..20_000 {
            if reference.is_empty() || rng.random_bool(0.55) {
                if reference.len() == 1_000 {
                    continue;
                }
                let at_ns = queue.now_ns() + rng.random_range(0..50);
                queue.schedule_at(at_ns, seq).unwrap();
                reference.push((at_ns, seq));
                seq += 1;
            } else {
                reference.sort_unstable();
                let expected = reference.remove(0);
                assert_eq!(queue.pop(), Some(expected));
            }
            assert_eq!(queue.len(), reference.len());
        }
    }

    #[test]
    fn refuses_the_past_and_overflow() {
        let mut queue = EventQueue::new(2);
        queue.schedule_at(5, ()).unwrap();
        queue.pop();
        assert_eq!(
            queue.schedule_at(4, ()),
            Err(ScheduleError::InThePast {
                at_ns: 4,
                now_ns: 5
            })
        );
        queue.schedule_after(1, ()).unwrap();
        queue.schedule_after(1, ()).unwrap();
        assert_eq!(
            queue.schedule_after(1, ()),
            Err(ScheduleError::Full { len_max: 2 })
        );
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let draw = |seed, stream| -> Vec<u64> {
            let mut rng = run_rng(seed, stream);
            (0..4).map(|_| rng.random()).collect()
        };
        assert_eq!(draw(1, 2), draw(1, 2));
        assert_ne!(draw(1, 2), draw(1, 3));
        assert_ne!(draw(1, 2), draw(2, 2));
    }

    /// Ping-pong that never ends on its own: the event limit must report an incomplete run.
    struct Forever;
    impl TimedWorld for Forever {
        type Event = ();
        type Queue = EventQueue<()>;
        fn start(&mut self, queue: &mut EventQueue<()>, _: &mut ChaCha8Rng) {
            queue.schedule_at(0, ()).unwrap();
        }
        fn handle(
            &mut self,
            _: TimeNs,
            _: (),
            queue: &mut EventQueue<()>,
            _: &mut ChaCha8Rng,
        ) -> Control {
            queue.schedule_after(1, ()).unwrap();
            Control::Continue
        }
    }

    #[test]
    fn event_limit_is_reported_not_hidden() {
        let stats = run(
            &mut Forever,
            &mut EventQueue::new(4),
            &mut run_rng(0, 0),
            100,
        );
        assert_eq!(stats.end, RunEnd::EventLimit);
        assert_eq!(stats.event_count, 100);
        assert_eq!(stats.end_ns, 99);
    }

    #[test]
    fn ms_conversions() {
        assert_eq!(ms_to_ns(1.5), 1_500_000);
        assert_eq!(ms_to_ns(-3.0), 0);
        assert_eq!(ms_to_ns(f64::NAN), 0);
        assert_eq!(ms_to_ns(0.0000004), 0);
        assert_eq!(ms_to_ns(0.0000006), 1);
        assert_eq!(ns_to_ms(2_500_000), 2.5);
    }

    #[test]
    fn ms_to_ns_is_the_plain_unsigned_conversion() {
        let plain = |ms: f64| (ms * NS_PER_MS + 0.5) as TimeNs;
        let below = f64::from_bits(I64_LIMIT.to_bits() - 1) / NS_PER_MS;
        let edges = [
            0.0,
            -0.0,
            -1e-7,
            -1e300,
            4.9999e-7,
            5e-7,
            10.0,
            below,
            I64_LIMIT / NS_PER_MS,
            2.0 * I64_LIMIT / NS_PER_MS,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let mut rng = run_rng(5, 0);
        let random = (0..10_000).map(|_| {
            let scale = 10f64.powi(rng.random_range(-9..16));
            (rng.random::<f64>() - 0.1) * scale
        });
        for ms in edges.into_iter().chain(random) {
            assert_eq!(ms_to_ns(ms), plain(ms), "{ms:e} ms");
        }
    }
}
