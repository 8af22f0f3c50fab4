//! A diagram as a Mermaid `sequenceDiagram` (rendered by GitHub, GitLab and most Markdown viewers).

use super::diagram::{wrap, Diagram, Lane, Shape};
use std::fmt::Write;

/// Characters per line of a message before it wraps (`<br/>`): keeps the rendered diagram narrow.
const WRAP_CHARS: usize = 60;

fn id(lane: Lane) -> String {
    match lane {
        Lane::Network => "N".to_string(),
        Lane::Store => "S".to_string(),
        Lane::Provider => "V".to_string(),
        other => other.label(),
    }
}

/// Mermaid reads `#...;` as an entity, `;` may end a statement and `<`/`>` can open HTML: write them as entities.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '#' => out.push_str("#35;"),
            ';' => out.push_str("#59;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            other => out.push(other),
        }
    }
    out
}

fn message(text: &str) -> String {
    wrap(text, WRAP_CHARS)
        .iter()
        .map(|line| escape(line))
        .collect::<Vec<_>>()
        .join("<br/>")
}

/// The diagram's Mermaid source (without the code fence).
pub fn sequence_diagram(diagram: &Diagram) -> String {
    let mut out = String::from("sequenceDiagram\n");
    for lane in &diagram.lanes {
        let label = lane.label();
        if id(*lane) == label {
            let _ = writeln!(out, "    participant {label}");
        } else {
            let _ = writeln!(out, "    participant {} as {label}", id(*lane));
        }
    }
    for item in &diagram.items {
        let violating = !item.violations.is_empty();
        let indent = if violating { "        " } else { "    " };
        if violating {
            out.push_str("    rect rgb(255, 225, 225)\n");
        }
        let text = message(&format!("{}. {}", item.step, item.text));
        // A violation note spans the lanes of the step it belongs to.
        let span = match item.shape {
            Shape::Arrow { from, to } => {
                let _ = writeln!(out, "{indent}{}->>{}: {text}", id(from), id(to));
                format!("{},{}", id(from), id(to))
            }
            Shape::Note { over } => {
                let _ = writeln!(out, "{indent}Note over {}: {text}", id(over));
                id(over)
            }
        };
        for violation in &item.violations {
            let _ = writeln!(
                out,
                "{indent}Note over {span}: {}",
                message(&format!("VIOLATION {violation}"))
            );
        }
        if violating {
            out.push_str("    end\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::diagram::Item;

    #[test]
    fn writes_participants_arrows_notes_and_a_highlighted_violation() {
        let diagram = Diagram {
            lanes: vec![Lane::Client(0), Lane::Network, Lane::Proc(0), Lane::Store],
            items: vec![
                Item {
                    step: 1,
                    shape: Shape::Arrow {
                        from: Lane::Client(0),
                        to: Lane::Network,
                    },
                    text: "C1 sends body {\"a\":1}; #1".to_string(),
                    violations: vec![],
                },
                Item {
                    step: 2,
                    shape: Shape::Note {
                        over: Lane::Network,
                    },
                    text: "network LOSES it".to_string(),
                    violations: vec!["DUPLICATE EFFECT: two".to_string()],
                },
            ],
        };
        let text = sequence_diagram(&diagram);
        assert_eq!(
            text,
            "sequenceDiagram\n    participant C1\n    participant N as Network\n    participant P1\n    \
             participant S as Store\n    C1->>N: 1. C1 sends body {\"a\":1}#59; #35;1\n    rect rgb(255, 225, 225)\n        \
             Note over N: 2. network LOSES it\n        Note over N: VIOLATION DUPLICATE EFFECT: two\n    end\n"
        );
    }
}
