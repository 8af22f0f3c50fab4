//! A counterexample as a sequence diagram: which lanes take part and one arrow or note per step. Both writers
//! (Mermaid and SVG) draw from this, so they always agree.

use crate::builtin::{DescribedStep, StepKind};
use std::collections::BTreeSet;

/// A participant lane, in drawing order (left to right): the parties of the steps.
pub use crate::builtin::Party as Lane;

/// What one step draws.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    Arrow { from: Lane, to: Lane },
    Note { over: Lane },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// 1-based step number of the timeline.
    pub step: usize,
    pub shape: Shape,
    /// The step's timeline text without its violation markers.
    pub text: String,
    /// The violation markers of this step ("DUPLICATE EFFECT: ..."), drawn highlighted.
    pub violations: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagram {
    /// Only the lanes some step uses, in `Lane` order.
    pub lanes: Vec<Lane>,
    pub items: Vec<Item>,
}

/// The diagram of a timeline's steps (1-based in order), drawn from their kinds.
pub fn diagram(steps: &[DescribedStep]) -> Diagram {
    let mut lanes = BTreeSet::new();
    let items: Vec<Item> = steps
        .iter()
        .enumerate()
        .map(|(index, step)| {
            let shape = shape_of(step.kind);
            match shape {
                Shape::Arrow { from, to } => {
                    lanes.insert(from);
                    lanes.insert(to);
                }
                Shape::Note { over } => {
                    lanes.insert(over);
                }
            }
            Item {
                step: index + 1,
                shape,
                text: step.text.clone(),
                violations: step.violations.clone(),
            }
        })
        .collect();
    Diagram {
        lanes: lanes.into_iter().collect(),
        items,
    }
}

/// A message between two parties is an arrow; something that happens at one is a note over it.
fn shape_of(kind: StepKind) -> Shape {
    match kind {
        StepKind::Send { client } => Shape::Arrow {
            from: Lane::Client(client),
            to: Lane::Network,
        },
        StepKind::GiveUp { client } | StepKind::Republish { client } => Shape::Note {
            over: Lane::Client(client),
        },
        StepKind::Deliver { to } => Shape::Arrow {
            from: Lane::Network,
            to,
        },
        StepKind::Handler { proc, with } => Shape::Arrow {
            from: Lane::Proc(proc),
            to: with,
        },
        StepKind::NetworkFault => Shape::Note {
            over: Lane::Network,
        },
        StepKind::ProcessFault { proc } => Shape::Note {
            over: Lane::Proc(proc),
        },
        StepKind::Expiry => Shape::Note { over: Lane::Store },
    }
}

/// Greedy word wrap to at most `width` characters a line (a longer word gets a line of its own).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::Party;

    fn step(kind: StepKind, text: &str, violations: &[&str]) -> DescribedStep {
        DescribedStep {
            kind,
            text: text.to_string(),
            violations: violations.iter().map(|note| note.to_string()).collect(),
        }
    }

    #[test]
    fn steps_map_to_lanes_by_their_kind() {
        let steps = vec![
            step(StepKind::Send { client: 1 }, "C2 sends", &[]),
            step(
                StepKind::Handler {
                    proc: 0,
                    with: Party::Store,
                },
                "P1 claims key k1 of C2",
                &[],
            ),
            step(
                StepKind::Handler {
                    proc: 0,
                    with: Party::Network,
                },
                "P1 answers 201 payment #1",
                &[],
            ),
            step(
                StepKind::Handler {
                    proc: 2,
                    with: Party::Store,
                },
                "P3 commits payment #2",
                &["DUPLICATE EFFECT: two", "LOST EFFECT: none"],
            ),
            step(StepKind::ProcessFault { proc: 1 }, "P2 CRASHES", &[]),
            // Words in the text no longer decide anything: this one is a note however it reads.
            step(StepKind::GiveUp { client: 1 }, "C2 retries at once", &[]),
        ];
        let diagram = diagram(&steps);
        assert_eq!(
            diagram.lanes,
            vec![
                Lane::Client(1),
                Lane::Network,
                Lane::Proc(0),
                Lane::Proc(1),
                Lane::Proc(2),
                Lane::Store
            ]
        );
        assert_eq!(
            diagram.items[2].shape,
            Shape::Arrow {
                from: Lane::Proc(0),
                to: Lane::Network
            }
        );
        assert_eq!(diagram.items[3].text, "P3 commits payment #2");
        assert_eq!(
            diagram.items[3].violations,
            vec!["DUPLICATE EFFECT: two", "LOST EFFECT: none"]
        );
        assert!(diagram.items[1].violations.is_empty());
        assert_eq!(
            diagram.items[5].shape,
            Shape::Note {
                over: Lane::Client(1)
            }
        );
        assert_eq!(diagram.items[5].step, 6);
    }

    #[test]
    fn wrap_keeps_words_whole_and_lines_short() {
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
        assert_eq!(wrap("abcdefgh x", 3), vec!["abcdefgh", "x"]);
        assert_eq!(wrap("", 3), vec![""]);
    }
}
