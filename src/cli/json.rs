//! The `--json` lines, one serde type per command. Fields are declared in alphabetical order: the lines were
//! first written through `serde_json::Map` (sorted keys), and their bytes stay as they were.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Property name -> verdict name (`holds`, `violated`, `incomplete`).
pub type Verdicts = BTreeMap<String, String>;

/// One line of `retrylab check --json`.
#[derive(Debug, Serialize)]
pub struct CheckLine {
    pub complete: bool,
    pub counterexample_len: Option<usize>,
    pub counterexample_lens: BTreeMap<String, usize>,
    pub depth: u32,
    pub description: String,
    pub elapsed_ms: u64,
    pub expected: Verdicts,
    pub matches: bool,
    pub missing_scenarios: Vec<String>,
    pub model: String,
    /// The scenarios of this kind of world that the search did not reach.
    pub not_reached: Vec<String>,
    pub peak_bytes: u64,
    /// Whether partial-order reduction was on (`--por`).
    pub por: bool,
    /// States expanded with a reduced set (0: nothing was reduced).
    pub por_reduced_states: u64,
    pub properties: Verdicts,
    pub reached: Vec<String>,
    /// The process's resident memory at its highest during the search (Linux; null elsewhere).
    pub rss_peak_bytes: Option<u64>,
    /// Per violated liveness property: the 1-based steps of its counterexample that the unresolved operations
    /// depend on (the trace file keeps the whole path).
    pub slice_steps: BTreeMap<String, Vec<usize>>,
    pub states: u64,
    /// The unreduced search's state count, when known (omitted otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub states_full: Option<u64>,
    pub stopped_by: Option<String>,
    pub traces: BTreeMap<String, String>,
    pub transitions: u64,
    /// Per violated liveness property: what stays unresolved at the end of its counterexample.
    pub unresolved: BTreeMap<String, Vec<retrylab::builtin::Unresolved>>,
    /// Why a safety property that holds holds vacuously (`no-fault`, `no-scenario-reached`), or null.
    pub vacuous: Option<retrylab::spec::Vacuity>,
    /// The warning `check` prints for it, or null.
    pub vacuous_warning: Option<String>,
    pub visited_bytes_per_state: f64,
}

/// One line of `retrylab simulate --json`; `retrylab merge` reads these back.
#[derive(Debug, Serialize, Deserialize)]
pub struct SimulateLine {
    pub counterexample_len: Option<usize>,
    pub counterexample_lens: BTreeMap<String, usize>,
    pub counterexample_seeds: BTreeMap<String, u64>,
    pub cut_walks: u64,
    pub depth: u32,
    pub elapsed_ms: u64,
    pub expected: Verdicts,
    pub first_seed: u64,
    pub matches: bool,
    pub missing_scenarios: Vec<String>,
    pub model: String,
    /// SHA-256 of the model file's text, in hex: shards of one run walked the same model.
    pub model_sha256: String,
    /// The scenarios of this kind of world that no walk witnessed (`check --json`'s field).
    #[serde(default)]
    pub not_reached: Vec<String>,
    pub properties: Verdicts,
    pub reached: Vec<String>,
    pub required_scenarios: Vec<String>,
    pub seeds: u64,
    /// `K/N`, or null for an unsharded run.
    pub shard: Option<String>,
    pub states: u64,
    /// Why the run stopped before its last seed (it is then incomplete), or null.
    pub stopped_by: Option<String>,
    pub traces: BTreeMap<String, String>,
    /// Why a safety property that holds holds vacuously (`no-fault`, `no-scenario-reached`), or null.
    #[serde(default)]
    pub vacuous: Option<retrylab::spec::Vacuity>,
    /// The warning the text output prints for it, or null.
    #[serde(default)]
    pub vacuous_warning: Option<String>,
    pub walks: u64,
}

/// One line of `retrylab merge`.
#[derive(Debug, Serialize)]
pub struct MergeLine {
    pub counterexample_len: Option<usize>,
    pub counterexample_lens: BTreeMap<String, usize>,
    pub counterexample_seeds: BTreeMap<String, u64>,
    pub cut_walks: u64,
    pub depth: u32,
    pub elapsed_ms: u64,
    pub expected: Verdicts,
    pub matches: bool,
    pub missing_scenarios: Vec<String>,
    pub model: String,
    pub model_sha256: String,
    pub properties: Verdicts,
    pub reached: Vec<String>,
    pub shards: Vec<Option<String>>,
    pub states: u64,
    /// The first shard's reason for stopping early, if any stopped (the merge is then incomplete).
    pub stopped_by: Option<String>,
    pub traces: BTreeMap<String, String>,
    pub walks: u64,
}

/// The line of `retrylab replay --json`.
#[derive(Debug, Serialize)]
pub struct ReplayLine {
    pub model: String,
    pub property: String,
    pub reproduced: bool,
    /// A liveness trace: the 1-based steps the unresolved operations depend on (omitted otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slice_steps: Option<Vec<usize>>,
    pub steps: usize,
    pub trace: String,
    /// A liveness trace: what stays unresolved at its end (omitted otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unresolved: Option<Vec<retrylab::builtin::Unresolved>>,
    pub violated_at: Option<usize>,
}

/// Print one line.
pub fn print_line(line: &impl Serialize) {
    outln!(
        "{}",
        serde_json::to_string(line).expect("a JSON line always serialises")
    );
}
