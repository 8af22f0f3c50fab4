//! Which order of statements to try next: a stateless depth-first search over the choices of one run, bounded
//! by preemptions as CHESS bounds it (Musuvathi and Qadeer, "Iterative context bounding for systematic testing of
//! multithreaded programs", PLDI 2007) and by a number of schedules.
//!
//! A run of `interleaved-same-key` meets decision points: several requests each wait with a held statement, and
//! the controller releases one. The service cannot be snapshotted, so every schedule is a fresh run from the
//! start: the explorer hands out a prefix of choices, the run follows it and then keeps to the default (the
//! request released last, while it can go on; else the lowest), and reports what it met at each point. Every
//! alternative at a point past the prefix becomes a new prefix to try, unless taking it would exceed the
//! preemption bound. A preemption is releasing another request while the one released last could still go on.
//!
//! Why preemptions: most concurrency bugs need few of them (the CHESS paper's finding), and the number of
//! schedules with at most k preemptions grows polynomially in the run's length, not exponentially. The verdict
//! says which bound held: every schedule, every schedule within k preemptions (naming how many were left out),
//! or incomplete when `schedules_max` cut the search.
//!
//! Deterministic: the same runs give the same prefixes in the same order (the stack is a `Vec`, the enabled
//! sets are sorted).

/// How far the search goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub schedules_max: usize,
    pub preemptions_max: usize,
}

/// One decision point of a run: the requests that could be released (sorted), and the one that was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    pub enabled: Vec<u32>,
    pub taken: u32,
}

/// How much of the space the search covered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// Every schedule was run.
    Complete,
    /// Every schedule with at most `preemptions_max` preemptions was run; `pruned` alternatives needed more.
    WithinPreemptions { pruned: usize },
    /// `schedules_max` schedules were run and others were left: not a pass.
    Incomplete { explored: usize },
}

/// The search's state between runs.
#[derive(Debug)]
pub struct Explorer {
    bounds: Bounds,
    stack: Vec<Vec<u32>>,
    /// The prefix handed out last, awaiting its run's points.
    running: Option<Vec<u32>>,
    schedules: usize,
    pruned: usize,
    /// Decision points (over every run) where more than one request could go: none means no order was ever chosen.
    contested: usize,
    started: bool,
}

/// Past the prefix: keep releasing the request released last while it can go on, else the lowest enabled.
pub fn default_choice(previous: Option<u32>, enabled: &[u32]) -> u32 {
    assert!(!enabled.is_empty(), "a decision point has a choice");
    match previous {
        Some(request) if enabled.contains(&request) => request,
        _ => enabled[0],
    }
}

/// Whether releasing `taken` after `previous` preempts `previous` (it could have gone on).
fn is_preemption(previous: Option<u32>, enabled: &[u32], taken: u32) -> bool {
    previous.is_some_and(|request| request != taken && enabled.contains(&request))
}

impl Explorer {
    pub fn new(bounds: Bounds) -> Explorer {
        assert!(bounds.schedules_max > 0, "at least one schedule");
        Explorer {
            bounds,
            stack: Vec::new(),
            running: None,
            schedules: 0,
            pruned: 0,
            contested: 0,
            started: false,
        }
    }

    /// The choices the next run follows (empty: the default schedule). None: the search is over (complete,
    /// or cut by `schedules_max`).
    pub fn next_prefix(&mut self) -> Option<Vec<u32>> {
        assert!(self.running.is_none(), "record the last run first");
        if self.schedules >= self.bounds.schedules_max {
            return None;
        }
        let prefix = if self.started {
            self.stack.pop()?
        } else {
            self.started = true;
            Vec::new()
        };
        self.running = Some(prefix.clone());
        Some(prefix)
    }

    /// What the run handed the last prefix did at each of its decision points (the prefix's points first).
    pub fn record(&mut self, points: &[Point]) {
        let run = self.running.take().expect("a prefix was handed out");
        self.schedules += 1;
        let mut previous = None;
        let mut preemptions = 0;
        self.contested += points.iter().filter(|p| p.enabled.len() > 1).count();
        for (index, point) in points.iter().enumerate() {
            assert!(
                point.enabled.contains(&point.taken),
                "the request released at point {index} was enabled"
            );
            if index >= run.len() {
                // Highest request pushed first, so the lowest is popped first.
                for &other in point.enabled.iter().rev().filter(|&&r| r != point.taken) {
                    let spent =
                        preemptions + usize::from(is_preemption(previous, &point.enabled, other));
                    if spent > self.bounds.preemptions_max {
                        self.pruned += 1;
                        continue;
                    }
                    let mut prefix: Vec<u32> = points[..index].iter().map(|p| p.taken).collect();
                    prefix.push(other);
                    // Deeper points are pushed later and so run first: depth first.
                    self.stack.push(prefix);
                }
            }
            preemptions += usize::from(is_preemption(previous, &point.enabled, point.taken));
            previous = Some(point.taken);
        }
    }

    /// Schedules run so far.
    pub fn schedules(&self) -> usize {
        self.schedules
    }

    /// Decision points, over every run so far, where more than one request could go. Zero: the runs never had a
    /// choice (the service serialised the requests before the gates), so no order was explored at all.
    pub fn contested_points(&self) -> usize {
        self.contested
    }

    /// What the search covered (final once `next_prefix` returned None).
    pub fn coverage(&self) -> Coverage {
        if !self.stack.is_empty() || self.running.is_some() {
            return Coverage::Incomplete {
                explored: self.schedules,
            };
        }
        match self.pruned {
            0 => Coverage::Complete,
            pruned => Coverage::WithinPreemptions { pruned },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// A fake system: `requests` requests of `steps` statements each; a decision point wherever more than one
    /// request has statements left. Returns the run's points and the order of releases.
    fn run(prefix: &[u32], requests: u32, steps: u32) -> (Vec<Point>, Vec<u32>) {
        let mut left = vec![steps; requests as usize];
        let mut points = Vec::new();
        let mut order = Vec::new();
        let mut previous = None;
        loop {
            let enabled: Vec<u32> = (0..requests).filter(|&r| left[r as usize] > 0).collect();
            if enabled.is_empty() {
                return (points, order);
            }
            let taken = match prefix.get(points.len()) {
                Some(&choice) => choice,
                None => default_choice(previous, &enabled),
            };
            points.push(Point { enabled, taken });
            left[taken as usize] -= 1;
            order.push(taken);
            previous = Some(taken);
        }
    }

    fn explore(bounds: Bounds, requests: u32, steps: u32) -> (BTreeSet<Vec<u32>>, Explorer) {
        let mut explorer = Explorer::new(bounds);
        let mut orders = BTreeSet::new();
        while let Some(prefix) = explorer.next_prefix() {
            let (points, order) = run(&prefix, requests, steps);
            explorer.record(&points);
            assert!(orders.insert(order), "no schedule is run twice");
        }
        (orders, explorer)
    }

    #[test]
    fn with_no_bound_every_interleaving_is_run_once() {
        let unbounded = Bounds {
            schedules_max: 10_000,
            preemptions_max: usize::MAX,
        };
        // Two requests of three statements: C(6,3) = 20 interleavings; three of two: 6!/(2!2!2!) = 90.
        let (orders, explorer) = explore(unbounded, 2, 3);
        assert_eq!(orders.len(), 20);
        assert_eq!(explorer.coverage(), Coverage::Complete);
        assert!(explorer.contested_points() > 0);
        // The twin: one request alone is never a choice.
        let (orders, alone) = explore(unbounded, 1, 3);
        assert_eq!((orders.len(), alone.contested_points()), (1, 0));
        let (orders, _) = explore(unbounded, 3, 2);
        assert_eq!(orders.len(), 90);
    }

    #[test]
    fn the_preemption_bound_prunes_and_says_so() {
        let bounds = Bounds {
            schedules_max: 10_000,
            preemptions_max: 0,
        };
        // No preemption: each request runs to its end once started; the order of the two requests is the choice.
        let (orders, explorer) = explore(bounds, 2, 3);
        let expected: BTreeSet<Vec<u32>> = [vec![0, 0, 0, 1, 1, 1], vec![1, 1, 1, 0, 0, 0]].into();
        assert_eq!(orders, expected);
        assert!(matches!(
            explorer.coverage(),
            Coverage::WithinPreemptions { pruned } if pruned > 0
        ));
        // One preemption allows more, and still fewer than all 20.
        let (orders, _) = explore(
            Bounds {
                preemptions_max: 1,
                ..bounds
            },
            2,
            3,
        );
        assert!(orders.len() > 2 && orders.len() < 20, "{}", orders.len());
    }

    #[test]
    fn a_search_cut_by_schedules_max_is_incomplete() {
        let bounds = Bounds {
            schedules_max: 5,
            preemptions_max: usize::MAX,
        };
        let (orders, explorer) = explore(bounds, 2, 3);
        assert_eq!(orders.len(), 5);
        assert_eq!(explorer.coverage(), Coverage::Incomplete { explored: 5 });
        // The twin: a bound the space fits in is complete.
        let (_, explorer) = explore(
            Bounds {
                schedules_max: 20,
                ..bounds
            },
            2,
            3,
        );
        assert_eq!(explorer.coverage(), Coverage::Complete);
    }

    #[test]
    fn the_first_schedule_is_the_default_and_the_order_is_fixed() {
        let bounds = Bounds {
            schedules_max: 4,
            preemptions_max: 2,
        };
        let mut explorer = Explorer::new(bounds);
        let mut prefixes = Vec::new();
        while let Some(prefix) = explorer.next_prefix() {
            let (points, _) = run(&prefix, 2, 2);
            explorer.record(&points);
            prefixes.push(prefix);
        }
        assert_eq!(prefixes[0], Vec::<u32>::new());
        // Depth first: the deepest alternative of the default run comes next.
        assert_eq!(prefixes[1], vec![0, 1]);
        let mut again = Explorer::new(bounds);
        let mut replayed = Vec::new();
        while let Some(prefix) = again.next_prefix() {
            let (points, _) = run(&prefix, 2, 2);
            again.record(&points);
            replayed.push(prefix);
        }
        assert_eq!(prefixes, replayed);
    }
}
