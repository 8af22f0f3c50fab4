//! Explorers over a world: exhaustive breadth-first search (shortest counterexamples), seeded swarm random walks,
//! and strict replay of a saved trace. Verdicts are honest: a search cut short says `incomplete`, never `holds`.

mod bfs;
mod fingerprint;
mod path;
mod visited;

mod walk;

pub use bfs::{explore, BfsOptions, BfsReport};
pub use fingerprint::state_fingerprint;
pub use path::{rebuild_path, rebuild_path_reduced, timeline, TimelineStep};
pub mod trace;
pub use trace::{parse_trace, replay, ReplayOutcome, Trace, TRACE_FORMAT, TRACE_VERSION};
pub use walk::{simulate, walk_seed, SimulateOptions, SimulateReport, WalkResult};

use serde::{Deserialize, Serialize};

/// What a property got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Holds,
    Violated,
    /// Not violated in what was explored, but the exploration was cut short (or was random): no proof.
    Incomplete,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Violated => "violated",
            Verdict::Incomplete => "incomplete",
        }
    }
}
