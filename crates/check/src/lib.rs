//! The model checker, generic over any protocol written as a [`Model`]: exhaustive breadth-first search
//! (shortest counterexamples), seeded swarm random walks, and strict replay of a saved trace, all through one
//! builder ([`Checker`]) and one [`Report`]. Verdicts are honest: a search cut short says `incomplete`, never
//! `holds`. This module knows no world and no file format.

#![warn(missing_docs)]

mod bfs;
mod checker;
mod expand;
mod fingerprint;
mod fingerprint_table;
mod graph;
mod judge;
mod level;
pub mod memory_budget;
mod model;
mod nodes;
mod parts;
mod path;
mod plan;
mod por;
mod property;
mod report;
mod resident;
mod trace;
mod varint;
mod verdicts;
mod view;
mod visited;
mod walk;

#[cfg(test)]
mod toys;
#[cfg(test)]
mod toys_persistent;
#[cfg(test)]
mod toys_por;

pub use checker::{diverged, judge_run, replay_path, Bounds, Checker, Diverged, Progress};
pub use fingerprint::hashed_fingerprint;
pub use model::{Model, Observation, ACYCLIC_CHECK_STATES};
pub use parts::{splice_parts, PartSpans, ALL_PARTS, PARTS_MAX};
pub use path::{canonical, rebuild_path, rebuild_path_reduced, timeline, Run, TimelineStep};
pub use por::{checked_mode_complaint, Por};
pub use property::{Kind, Property};
pub use report::{compare, Comparison, Expected, Method, PropertyReport, Report, StoppedBy};
pub use resident::resident_bytes;
pub use trace::{Trace, TraceError, TRACE_FORMAT, TRACE_VERSION};
pub use view::{Panel, Row, StateView};
pub use walk::{walk_seed, Seeds, WalkResult};

use serde::{Deserialize, Serialize};

/// What a property got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Never violated in a search that was complete.
    Holds,
    /// Violated: a counterexample exists (in the report).
    Violated,
    /// Not violated in what was explored, but the exploration was cut short (or was random): no proof.
    Incomplete,
}

impl Verdict {
    /// The verdict as printed and serialised: `holds`, `violated`, `incomplete`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Violated => "violated",
            Verdict::Incomplete => "incomplete",
        }
    }
}
