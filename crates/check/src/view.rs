//! What a state looks like to a person: panels of titled rows, drawn by the trace explorer (the HTML report and
//! `retrylab explore`). A model builds it in `Model::view`; the default is the state's debug form, so any model
//! gets the explorer, and a model that writes its own view gets panels a reader can compare step by step.
//!
//! Rows are matched across steps by their panel's title and their label, so labels should name a thing that
//! lives on (a key, a process, a payment), and the order is the model's own (deterministic, never a hash map's).

use serde::{Deserialize, Serialize};
use std::fmt::Debug;

/// One state, as panels.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateView {
    /// The panels, top to bottom.
    pub panels: Vec<Panel>,
}

/// A titled group of rows ("Store", "Network", ...).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Panel {
    /// The panel's title.
    pub title: String,
    /// Its rows.
    pub rows: Vec<Row>,
}

/// One thing and what it is now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    /// The row's label.
    pub label: String,
    /// Its value, as text.
    pub value: String,
}

impl StateView {
    /// The default view: one panel holding the state's pretty debug form, a row per line.
    pub fn debug<S: Debug>(state: &S) -> StateView {
        let text = format!("{state:#?}");
        let rows = text
            .lines()
            .enumerate()
            .map(|(index, line)| Row::new(format!("{:>3}", index + 1), line))
            .collect();
        StateView {
            panels: vec![Panel {
                title: "State (debug form)".to_string(),
                rows,
            }],
        }
    }

    /// Add a panel (empty panels are kept: "no messages in flight" is worth seeing).
    pub fn panel(&mut self, title: &str, rows: Vec<Row>) -> &mut Self {
        self.panels.push(Panel {
            title: title.to_string(),
            rows,
        });
        self
    }
}

impl Row {
    /// A row of that label and value.
    pub fn new(label: impl Into<String>, value: impl Into<String>) -> Row {
        Row {
            label: label.into(),
            value: value.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_view_is_the_debug_form_line_by_line() {
        let view = StateView::debug(&(1u8, "two"));
        assert_eq!(view.panels.len(), 1);
        let lines: Vec<&str> = view.panels[0]
            .rows
            .iter()
            .map(|row| row.value.as_str())
            .collect();
        assert_eq!(lines, vec!["(", "    1,", "    \"two\",", ")"]);
        assert_eq!(view.panels[0].rows[0].label, "  1");
    }
}
