//! `retrylab check PATH... --report FILE.html`: an index page listing every model and its violations, and one
//! self-contained explorer page per violation in the folder beside it (`r.html` -> `r/<model>.<property>.html`),
//! each with the sequence diagram, a step slider and the state after each step as panels.

use super::html::{trace_page, PageText};
use super::svg::escape;
use super::{counterexample_picture, svg, svg_folder, Entry, REGENERATE_COMMAND};
use crate::atomic::write_atomic;
use crate::builtin::WorldProperty;
use crate::check::Verdict;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One violation's page, as the index links it.
struct Linked {
    property: WorldProperty,
    steps: usize,
    href: String,
}

/// Whether a violation was declared in the model file: expected, a MISMATCH (declared holds), or not declared.
fn declared_note(entry: &Entry, property: WorldProperty) -> &'static str {
    match entry.model.expected.get(&property) {
        Some(Verdict::Violated) => "declared violated (expected)",
        Some(_) => "MISMATCH: declared holds",
        None => "not declared",
    }
}

/// Write the index and the pages (each atomically); stale pages of violations gone since are removed from the
/// folder. Returns the paths written.
pub fn write_html_report(report_path: &Path, entries: &[Entry]) -> Result<Vec<PathBuf>, String> {
    let folder = svg_folder(report_path);
    let folder_name = folder.file_name().map_or("report".to_string(), |name| {
        name.to_string_lossy().to_string()
    });
    let mut pages: Vec<(PathBuf, String)> = Vec::new();
    let mut links: Vec<Vec<Linked>> = Vec::with_capacity(entries.len());
    for entry in entries {
        let mut linked = Vec::new();
        for (found, actions) in entry.report.counterexamples() {
            let (property, picture) = counterexample_picture(entry, &found.name, actions)?;
            let title = format!(
                "{}: {} violated ({} steps)",
                entry.shown,
                property.name(),
                actions.len()
            );
            let subtitle = format!(
                "{} | {}: {} | {}",
                entry.model.description,
                property.name(),
                property.description(),
                declared_note(entry, property)
            );
            let drawn = svg::render(&picture, &title);
            let text = PageText {
                title: &title,
                subtitle: &subtitle,
                svg: Some(&drawn),
                replay_command: None,
            };
            let html = trace_page(&entry.model.world, actions, found.cycle_from, &text)
                .map_err(|step| format!("internal error: {title} diverges at step {step}"))?;
            let file_name = format!("{}.{}.html", entry.stem, property.name());
            pages.push((folder.join(&file_name), html));
            linked.push(Linked {
                property,
                steps: actions.len(),
                href: format!("{folder_name}/{file_name}"),
            });
        }
        links.push(linked);
    }
    let mut written = Vec::new();
    for (path, html) in &pages {
        write_atomic(path, html.as_bytes())
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        written.push(path.clone());
    }
    let keep: BTreeSet<PathBuf> = pages.iter().map(|(path, _)| path.clone()).collect();
    remove_stale_pages(&folder, &keep)?;
    write_atomic(report_path, index(entries, &links).as_bytes())
        .map_err(|error| format!("cannot write {}: {error}", report_path.display()))?;
    written.push(report_path.to_path_buf());
    Ok(written)
}

/// The index: a row per model, its violations linked to their pages (each saying whether it was declared), the
/// properties that hold, and the scenarios its search reached.
fn index(entries: &[Entry], links: &[Vec<Linked>]) -> String {
    let mut rows = String::new();
    for (entry, linked) in entries.iter().zip(links) {
        rows.push_str(&format!(
            "<tr class=\"row\"><td class=\"label\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             </tr>\n",
            escape(&entry.shown),
            escape(&entry.model.description),
            entry.report.states,
            violations_cell(entry, linked),
            holds_cell(entry),
            scenarios_cell(entry)
        ));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>retrylab verdicts</title>\n\
         <style>{}</style>\n</head>\n<body>\n<header><h1>retrylab verdicts</h1><p>Each violation opens in a trace \
         explorer: drag the slider to a step and read the state after it. Made by a command like: {}</p></header>\n\
         <div class=\"panel\" style=\"margin:14px 18px\"><table>\n<tr><td><b>model</b></td><td><b>description</b>\
         </td><td><b>states</b></td><td><b>violations</b></td><td><b>holds</b></td><td><b>scenarios</b></td></tr>\n\
         {rows}</table></div>\n</body>\n</html>\n",
        include_str!("assets/explorer.css"),
        escape(&REGENERATE_COMMAND.replace("verdicts.md", "verdicts.html"))
    )
}

fn violations_cell(entry: &Entry, linked: &[Linked]) -> String {
    if linked.is_empty() {
        return "no violation".to_string();
    }
    let items: Vec<String> = linked
        .iter()
        .map(|link| {
            let note = declared_note(entry, link.property);
            let class = if note.starts_with("MISMATCH") {
                " class=\"error\""
            } else {
                ""
            };
            format!(
                "<a href=\"{}\">{}</a> ({} steps) <span{class}>{note}</span>",
                escape(&link.href),
                escape(link.property.name()),
                link.steps
            )
        })
        .collect();
    items.join("<br>")
}

/// The properties that hold, each marked when its declared verdict was `violated` (a MISMATCH); those left
/// `incomplete` by a search cut short are listed apart.
fn holds_cell(entry: &Entry) -> String {
    let with = |verdict: Verdict| -> Vec<String> {
        WorldProperty::all()
            .filter(|property| entry.report.verdict(property.name()) == verdict)
            .map(|property| match entry.model.expected.get(&property) {
                Some(Verdict::Violated) => format!(
                    "{} <span class=\"error\">MISMATCH: declared violated</span>",
                    property.name()
                ),
                _ => property.name().to_string(),
            })
            .collect()
    };
    let mut cell = with(Verdict::Holds).join("<br>");
    let incomplete = with(Verdict::Incomplete);
    if !incomplete.is_empty() {
        cell.push_str(&format!(
            "<br>incomplete (no proof): {}",
            incomplete.join(", ")
        ));
    }
    cell
}

/// The scenarios reached and not, and the warning when what holds holds vacuously.
fn scenarios_cell(entry: &Entry) -> String {
    let evidence = crate::spec::evidence(&entry.model, &entry.report);
    let mut cell = format!(
        "reached: {}<br>not reached: {}",
        crate::spec::listed(&evidence.reached),
        crate::spec::listed(&evidence.not_reached)
    );
    if let Some(warning) = evidence.warning() {
        cell.push_str(&format!(
            "<br><span class=\"error\">WARNING: {}</span>",
            escape(&warning)
        ));
    }
    cell
}

/// Only `*.html` files directly in the report's folder, and only those this run did not write.
fn remove_stale_pages(folder: &Path, keep: &BTreeSet<PathBuf>) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_page = path
            .extension()
            .is_some_and(|extension| extension == "html");
        if is_page && path.is_file() && !keep.contains(&path) {
            std::fs::remove_file(&path)
                .map_err(|error| format!("cannot remove stale {}: {error}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Checker;

    /// select-then-insert's duplicate, declared `violated` (expected) or, in the twin, `holds` (a MISMATCH).
    fn index_of(declared: &str) -> String {
        let text =
            std::fs::read_to_string(crate::repository_file("models/select-then-insert.toml"))
                .unwrap()
                .replace(
                    "no-duplicate-effect = \"violated\"",
                    &format!("no-duplicate-effect = \"{declared}\""),
                );
        let model = crate::spec::parse_model("select-then-insert.toml", &text).unwrap();
        let report = Checker::new(&model.world).bfs();
        let entry = Entry {
            model,
            report,
            elapsed_ms: 0,
            stem: "s".to_string(),
            shown: "s.toml".to_string(),
        };
        let linked: Vec<Linked> = entry
            .report
            .counterexamples()
            .map(|(found, path)| Linked {
                property: WorldProperty::by_name(&found.name).unwrap(),
                steps: path.len(),
                href: "r/x.html".to_string(),
            })
            .collect();
        index(std::slice::from_ref(&entry), &[linked])
    }

    #[test]
    fn a_violation_says_whether_it_was_declared() {
        let expected = index_of("violated");
        assert!(
            expected.contains("<span>declared violated (expected)</span>"),
            "{expected}"
        );
        assert!(!expected.contains("MISMATCH"));
        let mismatch = index_of("holds");
        assert!(
            mismatch.contains("<span class=\"error\">MISMATCH: declared holds</span>"),
            "{mismatch}"
        );
        // The properties that hold are listed in their own column.
        assert!(expected.contains("no-lost-effect<br>"), "{expected}");
    }
}
