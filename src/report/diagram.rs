//! A counterexample as a sequence diagram: which lanes take part and one arrow or note per step. Both writers
//! (Mermaid and SVG) draw from this, so they always agree.

use crate::check::TimelineStep;
use crate::model::Action;
use std::collections::BTreeSet;

/// A participant lane, in drawing order (left to right): clients, the network, server processes, the store, the
/// payment provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    Client(u8),
    Network,
    Proc(u8),
    Store,
    Provider,
}

impl Lane {
    /// The header people read (C1, Network, P1, Store, Provider).
    pub fn label(self) -> String {
        match self {
            Lane::Client(client) => format!("C{}", u16::from(client) + 1),
            Lane::Network => "Network".to_string(),
            Lane::Proc(proc) => format!("P{}", u16::from(proc) + 1),
            Lane::Store => "Store".to_string(),
            Lane::Provider => "Provider".to_string(),
        }
    }
}

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

/// How `describe` appends a violation to a step's text.
const MARKER: &str = "   <-- ";

pub fn diagram(steps: &[TimelineStep<Action>]) -> Diagram {
    let mut lanes = BTreeSet::new();
    let items: Vec<Item> = steps
        .iter()
        .map(|step| {
            let mut parts = step.text.split(MARKER);
            let text = parts.next().unwrap_or_default().to_string();
            let violations = parts.map(str::to_string).collect();
            let shape = shape_of(&step.action, &text);
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
                step: step.step,
                shape,
                text,
                violations,
            }
        })
        .collect();
    Diagram {
        lanes: lanes.into_iter().collect(),
        items,
    }
}

/// Map a step to lanes. Actions this function does not know (the model grows) still get a note, placed by the
/// fields they carry, so a new action never breaks a report.
fn shape_of(action: &Action, text: &str) -> Shape {
    match *action {
        Action::Send { client } => Shape::Arrow {
            from: Lane::Client(client),
            to: Lane::Network,
        },
        Action::Timeout { client } if text.contains("GIVES UP") => Shape::Note {
            over: Lane::Client(client),
        },
        // A timeout that retries sends the next attempt.
        Action::Timeout { client } => Shape::Arrow {
            from: Lane::Client(client),
            to: Lane::Network,
        },
        Action::DeliverRequest { proc, .. } => Shape::Arrow {
            from: Lane::Network,
            to: Lane::Proc(proc),
        },
        Action::DeliverResponse { response } => Shape::Arrow {
            from: Lane::Network,
            to: Lane::Client(response.to.client),
        },
        Action::Step { proc } => Shape::Arrow {
            from: Lane::Proc(proc),
            to: step_target(text),
        },
        Action::Drop { .. } | Action::Duplicate { .. } => Shape::Note {
            over: Lane::Network,
        },
        Action::Crash { proc } => Shape::Note {
            over: Lane::Proc(proc),
        },
        // ExpireLease and whatever comes later.
        _ => Shape::Note {
            over: fallback_lane(action),
        },
    }
}

/// A handler step talks to the provider, answers into the network, or works on the store.
fn step_target(text: &str) -> Lane {
    let lower = text.to_lowercase();
    if lower.contains("provider") {
        Lane::Provider
    } else if lower.contains(" answers ") {
        Lane::Network
    } else {
        Lane::Store
    }
}

/// The lane of an action known only by its serialised fields: its process, else its client, else the store.
fn fallback_lane(action: &Action) -> Lane {
    let value = serde_json::to_value(action).unwrap_or_default();
    let field = |name: &str| {
        value
            .get(name)
            .and_then(serde_json::Value::as_u64)
            .and_then(|number| u8::try_from(number).ok())
    };
    if let Some(proc) = field("proc") {
        Lane::Proc(proc)
    } else if let Some(client) = field("client") {
        Lane::Client(client)
    } else {
        Lane::Store
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
    use crate::model::Key;

    fn step(number: usize, action: Action, text: &str) -> TimelineStep<Action> {
        TimelineStep {
            step: number,
            action,
            text: text.to_string(),
        }
    }

    #[test]
    fn steps_map_to_lanes_and_markers_split_off() {
        let steps = vec![
            step(1, Action::Send { client: 1 }, "C2 sends"),
            step(2, Action::Step { proc: 0 }, "P1 claims key k1 of C2"),
            step(3, Action::Step { proc: 0 }, "P1 answers 201 payment #1"),
            step(
                4,
                Action::Step { proc: 2 },
                "P3 commits payment #2   <-- DUPLICATE EFFECT: two   <-- LOST EFFECT: none",
            ),
            step(5, Action::Crash { proc: 1 }, "P2 CRASHES"),
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
    }

    #[test]
    fn an_action_without_its_own_rule_becomes_a_note() {
        let key = Key { scope: 0, value: 1 };
        assert_eq!(
            shape_of(&Action::ExpireLease { key }, "lease expires"),
            Shape::Note { over: Lane::Store }
        );
        assert_eq!(
            shape_of(&Action::Step { proc: 1 }, "P2 calls the Provider"),
            Shape::Arrow {
                from: Lane::Proc(1),
                to: Lane::Provider
            }
        );
    }

    #[test]
    fn wrap_keeps_words_whole_and_lines_short() {
        assert_eq!(wrap("aa bb cc", 5), vec!["aa bb", "cc"]);
        assert_eq!(wrap("abcdefgh x", 3), vec!["abcdefgh", "x"]);
        assert_eq!(wrap("", 3), vec![""]);
    }
}
