//! The verdict matrix as Markdown: one row per model, then every counterexample as a Mermaid diagram with a link
//! to its SVG. Everything but the last column (wall-clock time) is a function of the model files.

use super::Entry;
use crate::builtin::WorldProperty;
use crate::check::Verdict;
use std::fmt::Write;

/// One drawn counterexample.
pub struct Drawn {
    pub property: WorldProperty,
    pub steps: usize,
    /// The SVG's path relative to the Markdown file.
    pub svg_link: String,
    pub mermaid: String,
}

/// The header of the time column; `tests/cli/report.rs` masks this column.
pub const TIME_HEADER: &str = "time (wall clock)";

fn anchor(entry: &Entry, property: WorldProperty) -> String {
    let raw = format!("{}--{}", entry.stem, property.name());
    raw.chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() || character == '-' {
                character.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// A table cell must not contain a pipe or a line break, and text from a model file is text, not HTML: a
/// description holding `<script>` or `<img onerror=...>` must not become markup in a viewer that renders HTML.
fn cell(text: &str) -> String {
    text_only(text)
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

/// Text from a model file as Markdown shows it: HTML's special characters escaped (Markdown renders the entities
/// as the characters) and control characters dropped.
fn text_only(text: &str) -> String {
    text.chars()
        .filter(|character| !character.is_control() || *character == '\n')
        .collect::<String>()
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn verdict_cell(entry: &Entry, property: WorldProperty) -> String {
    let actual = entry.report.verdict(property.name());
    let declared = entry.model.expected.get(&property).copied();
    let name = actual.name();
    let shown = if declared.is_some() {
        format!("**{name}**")
    } else {
        name.to_string()
    };
    let shown = if actual == Verdict::Violated {
        format!("[{shown}](#{})", anchor(entry, property))
    } else {
        shown
    };
    match declared {
        None => shown,
        Some(expected) if expected == actual => format!("{shown} ✓"),
        Some(expected) => format!("{shown} ✗ (declared {})", expected.name()),
    }
}

/// Whether the model got what it declares, or what went wrong.
fn declared_cell(entry: &Entry) -> String {
    let mut problems = Vec::new();
    for (property, expected) in &entry.model.expected {
        let actual = entry.report.verdict(property.name());
        if actual != *expected {
            problems.push(format!("{} not {}", property.name(), expected.name()));
        }
    }
    for scenario in &entry.model.reached {
        if !entry.report.reached(scenario.scenario_name()) {
            problems.push(format!("{} not reached", scenario.scenario_name()));
        }
    }
    if problems.is_empty() {
        "yes".to_string()
    } else {
        format!("**NO**: {}", problems.join("; "))
    }
}

fn matches(entry: &Entry) -> bool {
    declared_cell(entry) == "yes"
}

fn states_cell(entry: &Entry) -> String {
    match &entry.report.stopped_by {
        None => entry.report.states.to_string(),
        Some(reason) => format!("{} (incomplete: {reason})", entry.report.states),
    }
}

/// Per model, the scenarios its search reached and did not, and a warning when what holds holds vacuously.
fn scenarios(out: &mut String, entries: &[Entry]) {
    out.push_str(
        "\n## Scenarios reached\n\nWhat each search met of the dangerous scenarios (a `holds` means something only \
         if the danger was met). Not reached: the scenarios of its kind of world (HTTP or queue) the search never \
         saw.\n\n",
    );
    for entry in entries {
        let evidence = crate::spec::evidence(&entry.model, &entry.report);
        let _ = write!(
            out,
            "- `{}`: reached {}; not reached {}.",
            entry.shown,
            crate::spec::listed(&evidence.reached),
            crate::spec::listed(&evidence.not_reached)
        );
        match evidence.warning() {
            Some(warning) => {
                let _ = writeln!(out, " **WARNING: {warning}.**");
            }
            None => out.push('\n'),
        }
    }
}

/// The whole Markdown file. `command` is how it was made (printed at the top); `drawn[i]` belongs to `entries[i]`.
pub fn render(entries: &[Entry], drawn: &[Vec<Drawn>], command: &str) -> String {
    let mut out = String::new();
    intro(&mut out, entries, command);
    matrix(&mut out, entries);
    scenarios(&mut out, entries);
    counterexamples(&mut out, entries, drawn);
    out
}

/// The title, how the file was made, how many models matched, how to read a cell, and the properties.
fn intro(out: &mut String, entries: &[Entry], command: &str) {
    out.push_str("# Verdict matrix\n\n");
    let _ = writeln!(
        out,
        "Generated by `{command}`: do not edit by hand. **Regenerate and commit this file and its SVG folder whenever a \
         model changes**; `tests/cli/report.rs` regenerates it and compares (timings masked).\n"
    );
    let matching = entries.iter().filter(|entry| matches(entry)).count();
    let vacuous = entries
        .iter()
        .filter(|entry| {
            crate::spec::evidence(&entry.model, &entry.report)
                .vacuous
                .is_some()
        })
        .count();
    let vacuous_note = if vacuous > 0 {
        format!(" **{vacuous} hold only vacuously** (see \"Scenarios reached\").")
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "{} models; {matching} got every verdict they declare and reached every scenario they declare.{vacuous_note}\n",
        entries.len()
    );
    out.push_str(
        "How to read a cell: **bold** = declared in the model file, ✓ = the checker agrees, ✗ = it does not; plain = \
         not declared (what the checker found). `incomplete` = the search was cut short (no proof). A violated cell \
         links to its shortest counterexample below. States are unique states explored (breadth-first, exhaustive). \
         The last column is wall-clock time on the machine that generated the file, the only part that varies.\n\n",
    );
    out.push_str("Properties:\n\n");
    for property in WorldProperty::all() {
        let _ = writeln!(
            out,
            "- `{}`: {}",
            property.name(),
            cell(property.description())
        );
    }
    out.push('\n');
}

/// The verdict matrix: a row per model, a column per property.
fn matrix(out: &mut String, entries: &[Entry]) {
    out.push_str("| model | what it models |");
    for property in WorldProperty::all() {
        let _ = write!(out, " {} |", property.name());
    }
    let _ = writeln!(out, " states | depth | as declared | {TIME_HEADER} |");
    out.push_str("|---|---|");
    for _ in WorldProperty::all() {
        out.push_str("---|");
    }
    out.push_str("---:|---:|---|---:|\n");
    for entry in entries {
        let _ = write!(
            out,
            "| `{}` | {} |",
            entry.shown,
            cell(&entry.model.description)
        );
        for property in WorldProperty::all() {
            let _ = write!(out, " {} |", verdict_cell(entry, property));
        }
        let _ = writeln!(
            out,
            " {} | {} | {} | {:.2} s |",
            states_cell(entry),
            entry.report.depth,
            declared_cell(entry),
            entry.elapsed_ms as f64 / 1000.0
        );
    }
}

/// Each violation's shortest counterexample, by model: a Mermaid diagram and a link to its SVG.
fn counterexamples(out: &mut String, entries: &[Entry], drawn: &[Vec<Drawn>]) {
    if drawn.iter().any(|violations| !violations.is_empty()) {
        out.push_str("\n## Counterexamples\n\n");
        out.push_str(
            "The shortest path (breadth-first) to each violation. Lanes: clients (C1, C2, ...), the network, server \
             processes (P1, P2, ...), the store and the provider, as far as a step involves them. The step that \
             violates the property is highlighted. Each diagram is also an SVG, for viewers without Mermaid.\n",
        );
    }
    for (entry, violations) in entries.iter().zip(drawn) {
        if violations.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n### `{}`\n\n{}",
            entry.shown,
            text_only(&entry.model.description)
        );
        if !entry.model.source.is_empty() {
            let _ = writeln!(out, "\nSource: {}", text_only(&entry.model.source));
        }
        for violation in violations {
            let declared = match entry.model.expected.get(&violation.property) {
                Some(Verdict::Violated) => "declared violated",
                Some(_) => "UNEXPECTED: declared holds",
                None => "not declared",
            };
            let _ = writeln!(
                out,
                "\n<a id=\"{}\"></a>\n\n#### {}: violated ({declared}), {} steps\n\nSVG: [{}]({})\n\n```mermaid\n{}```",
                anchor(entry, violation.property),
                violation.property.name(),
                violation.steps,
                violation.svg_link,
                violation.svg_link,
                violation.mermaid
            );
        }
    }
}
