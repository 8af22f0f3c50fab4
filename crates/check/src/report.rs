//! What a run found, property by property, and the one comparison of found against declared verdicts.

use super::model::Model;
use super::property::Kind;
use super::Verdict;
use std::collections::BTreeMap;

/// How a report was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Exhaustive breadth-first search: a `holds` is a proof (within the model's bounds).
    Bfs,
    /// Seeded random walks: they find violations and examples, never prove; unviolated is `incomplete`.
    Walks,
    /// One given path.
    Replay,
}

/// One property's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PropertyReport<A> {
    /// The property's name.
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// What it got.
    pub verdict: Verdict,
    /// `always`, `eventually`: the counterexample (breadth-first: a shortest one; for `eventually`, a shortest
    /// way to where faults stop, then the non-fault steps that never reach the goal). `sometimes`: an example.
    pub path: Option<Vec<A>>,
    /// A lasso: the path ends in the state it was in after this many steps (a cycle that never reaches the goal).
    pub cycle_from: Option<usize>,
    /// Walks: the seed whose walk found the path.
    pub seed: Option<u64>,
    /// Replay: the 1-based step at which the property was violated (or, for `sometimes`, witnessed).
    pub at_step: Option<usize>,
}

/// Why a search stopped before it explored everything within its depth (it is then incomplete). Shown, in text
/// and JSON, as the sentence `Display` writes (`max-states 1000 reached`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoppedBy {
    /// `stop_on`: the first violation of the property of this name was found.
    FirstViolation(String),
    /// `max-states`: this many states were numbered.
    MaxStates(u64),
    /// `max-depth`: the deepest level allowed was reached and some of its states could still move.
    MaxDepth(u32),
    /// `max-memory`: the search would hold more than this many bytes.
    MaxMemory(u64),
    /// The search would number more states than 32-bit node ids can (this many).
    NodeIds(u64),
    /// `timeout`: this many milliseconds passed.
    Timeout(u128),
}

impl std::fmt::Display for StoppedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoppedBy::FirstViolation(name) => {
                write!(f, "stopped at the first violation of {name}")
            }
            StoppedBy::MaxStates(states) => write!(f, "max-states {states} reached"),
            StoppedBy::MaxDepth(depth) => write!(f, "max-depth {depth} reached"),
            StoppedBy::MaxMemory(bytes) => write!(f, "max-memory {bytes} bytes reached"),
            StoppedBy::NodeIds(states) => {
                write!(f, "{states} states reached (node ids are 32-bit)")
            }
            StoppedBy::Timeout(ms) => write!(f, "timeout {ms} ms reached"),
        }
    }
}

/// What a run found.
pub struct Report<M: Model> {
    /// How the run searched.
    pub method: Method,
    /// In the order of `Model::properties`.
    pub properties: Vec<PropertyReport<M::Action>>,
    /// Everything some explored step observed.
    pub observed: M::Obs,
    /// Unique states (walks: steps walked).
    pub states: u64,
    /// Transitions taken (walks: steps).
    pub transitions: u64,
    /// Depth of the deepest level expanded (walks: the step bound).
    pub depth: u32,
    /// Whether nothing cut the search short.
    pub complete: bool,
    /// Why the search stopped early, if it did.
    pub stopped_by: Option<StoppedBy>,
    /// Bytes held by the visited set at the end.
    pub visited_bytes: u64,
    /// The most bytes the search's own structures held at once.
    pub peak_bytes: u64,
    /// The most resident memory of the whole process seen after a round (Linux; `None` elsewhere and for
    /// walks): the program and everything else it holds included.
    pub rss_peak_bytes: Option<u64>,
    /// Walks: how many, and how many were cut by the step bound before coming to rest.
    pub walks: u64,
    /// Walks cut by the step bound before coming to rest.
    pub cut_walks: u64,
    /// Breadth-first search with partial-order reduction: states expanded with a reduced set (one action
    /// instead of all). Zero: the search was a full one.
    pub reduced_states: u64,
}

impl<M: Model> Clone for Report<M> {
    fn clone(&self) -> Self {
        Report {
            method: self.method,
            properties: self.properties.clone(),
            observed: self.observed,
            states: self.states,
            transitions: self.transitions,
            depth: self.depth,
            complete: self.complete,
            stopped_by: self.stopped_by.clone(),
            visited_bytes: self.visited_bytes,
            peak_bytes: self.peak_bytes,
            rss_peak_bytes: self.rss_peak_bytes,
            walks: self.walks,
            cut_walks: self.cut_walks,
            reduced_states: self.reduced_states,
        }
    }
}

impl<M: Model> std::fmt::Debug for Report<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Report")
            .field("method", &self.method)
            .field("properties", &self.properties)
            .field("observed", &self.observed)
            .field("states", &self.states)
            .field("transitions", &self.transitions)
            .field("depth", &self.depth)
            .field("complete", &self.complete)
            .field("stopped_by", &self.stopped_by)
            .field("reduced_states", &self.reduced_states)
            .finish()
    }
}

impl<M: Model> Report<M> {
    /// The property named `name`. Panics with the valid names when there is none.
    pub fn property(&self, name: &str) -> &PropertyReport<M::Action> {
        self.properties
            .iter()
            .find(|property| property.name == name)
            .unwrap_or_else(|| {
                panic!(
                    "no property named '{name}'; the model's properties are: {}",
                    self.names().join(", ")
                )
            })
    }

    /// The properties' names, in the model's order.
    pub fn names(&self) -> Vec<&str> {
        self.properties
            .iter()
            .map(|property| property.name.as_str())
            .collect()
    }

    /// The verdict of the property of that name (panics on a name the model does not have).
    pub fn verdict(&self, name: &str) -> Verdict {
        self.property(name).verdict
    }

    /// The counterexample of a violated `always` or `eventually` property.
    pub fn counterexample(&self, name: &str) -> Option<&[M::Action]> {
        let property = self.property(name);
        match (property.kind, property.verdict) {
            (Kind::Sometimes, _) | (_, Verdict::Holds | Verdict::Incomplete) => None,
            (_, Verdict::Violated) => property.path.as_deref(),
        }
    }

    /// The example path of a witnessed `sometimes` property.
    pub fn example(&self, name: &str) -> Option<&[M::Action]> {
        let property = self.property(name);
        (property.kind == Kind::Sometimes)
            .then_some(property.path.as_deref())
            .flatten()
    }

    /// The violated `always` and `eventually` properties with their counterexamples, in model order.
    pub fn counterexamples(
        &self,
    ) -> impl Iterator<Item = (&PropertyReport<M::Action>, &[M::Action])> {
        self.properties.iter().filter_map(|property| {
            let violated =
                property.kind != Kind::Sometimes && property.verdict == Verdict::Violated;
            property
                .path
                .as_deref()
                .filter(|_| violated)
                .map(|path| (property, path))
        })
    }

    /// Length of the shortest counterexample over all violated properties.
    pub fn shortest_counterexample(&self) -> Option<usize> {
        self.counterexamples().map(|(_, path)| path.len()).min()
    }

    /// Whether the `sometimes` property `name` was witnessed.
    pub fn reached(&self, name: &str) -> bool {
        let property = self.property(name);
        property.kind == Kind::Sometimes && property.verdict == Verdict::Holds
    }

    /// Panics unless every `always` and `eventually` property holds and every `sometimes` was witnessed;
    /// the message names each failure with its counterexample.
    pub fn assert_properties(&self) {
        let failures: Vec<String> = self
            .properties
            .iter()
            .filter(|property| property.verdict != Verdict::Holds)
            .map(|property| self.failure(property))
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// Panics unless every `sometimes` property was witnessed (the dangerous scenarios were reached).
    pub fn assert_reached(&self) {
        let failures: Vec<String> = self
            .properties
            .iter()
            .filter(|property| {
                property.kind == Kind::Sometimes && property.verdict != Verdict::Holds
            })
            .map(|property| self.failure(property))
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    fn failure(&self, property: &PropertyReport<M::Action>) -> String {
        let mut text = format!(
            "{} ({:?}) is {}",
            property.name,
            property.kind,
            property.verdict.name()
        );
        if let Some(reason) = &self.stopped_by {
            text.push_str(&format!(" (search cut short: {reason})"));
        }
        if let Some(path) = property
            .path
            .as_ref()
            .filter(|_| property.kind != Kind::Sometimes)
        {
            text.push_str(&format!("; counterexample: {path:?}"));
        }
        text
    }

    /// Compare with what a model declares (see [`compare`]).
    pub fn compare(&self, expected: &Expected) -> Comparison {
        compare(&self.verdicts(), self.method == Method::Walks, expected)
    }

    /// Every property's verdict by name.
    pub fn verdicts(&self) -> BTreeMap<String, Verdict> {
        self.properties
            .iter()
            .map(|property| (property.name.clone(), property.verdict))
            .collect()
    }
}

/// What a model declares: a verdict for some properties, and the `sometimes` properties that must be witnessed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    /// Declared verdicts, by property name.
    pub verdicts: BTreeMap<String, Verdict>,
    /// `sometimes` properties that must be witnessed.
    pub reached: Vec<String>,
}

/// How found verdicts compare with declared ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    /// Whether every declared verdict was found and every required scenario witnessed.
    pub matches: bool,
    /// Declared properties whose verdict differs, in declaration (name) order.
    pub mismatched: Vec<String>,
    /// Required `sometimes` properties not witnessed, in declaration order.
    pub missing_scenarios: Vec<String>,
}

/// The one comparison of found against declared verdicts, used by `retrylab check`, `retrylab merge` and the
/// tests. `walks`: the verdicts come from random walks, so a declared `holds` is matched by `incomplete` (walks
/// prove nothing), while a declared `violated` must have been found. A required scenario must be `holds`.
pub fn compare(found: &BTreeMap<String, Verdict>, walks: bool, expected: &Expected) -> Comparison {
    let verdict = |name: &str| found.get(name).copied().unwrap_or(Verdict::Incomplete);
    let mismatched: Vec<String> = expected
        .verdicts
        .iter()
        .filter(|(name, declared)| {
            let actual = verdict(name);
            let acceptable = **declared == actual
                || (walks && **declared == Verdict::Holds && actual == Verdict::Incomplete);
            !acceptable
        })
        .map(|(name, _)| name.clone())
        .collect();
    let missing_scenarios: Vec<String> = expected
        .reached
        .iter()
        .filter(|name| verdict(name) != Verdict::Holds)
        .cloned()
        .collect();
    Comparison {
        matches: mismatched.is_empty() && missing_scenarios.is_empty(),
        mismatched,
        missing_scenarios,
    }
}

#[cfg(test)]
mod tests {
    use super::StoppedBy;

    /// The sentences text and JSON output show, spelt as they were when `stopped_by` was a string.
    #[test]
    fn stopped_by_reads_as_before() {
        let cases = [
            (
                StoppedBy::FirstViolation("no-lost-effect".into()),
                "stopped at the first violation of no-lost-effect",
            ),
            (StoppedBy::MaxStates(1000), "max-states 1000 reached"),
            (StoppedBy::MaxDepth(40), "max-depth 40 reached"),
            (
                StoppedBy::MaxMemory(1 << 20),
                "max-memory 1048576 bytes reached",
            ),
            (
                StoppedBy::NodeIds(7),
                "7 states reached (node ids are 32-bit)",
            ),
            (StoppedBy::Timeout(250), "timeout 250 ms reached"),
        ];
        for (stopped_by, text) in cases {
            assert_eq!(stopped_by.to_string(), text);
        }
    }
}
