//! The verdict matrix report (`retrylab check PATH --report FILE`): a Markdown file with one row per model and
//! every counterexample as a Mermaid sequence diagram, plus the same diagrams as SVG files in a folder named after
//! the report (`results/verdicts.md` -> `results/verdicts/<model>.<property>.svg`).
//!
//! With `--report FILE.html` it is the trace explorer instead (`html_report.rs`): an index and one page per
//! violation with a step slider and the state after each step.
//!
//! Apart from the time column the output is a function of the model files, so it can be committed and compared
//! with a fresh run (`tests/cli/report.rs`).

mod diagram;
mod explored;
pub mod html;
mod html_report;
mod markdown;
mod mermaid;
mod svg;

pub use diagram::{diagram, Diagram, Item, Lane, Shape};
pub use explored::{explore_path, explore_run, ExploredPath, ExploredStep, PROPERTIES_PANEL};
pub use html_report::write_html_report;
pub use markdown::TIME_HEADER;

use crate::atomic::write_atomic;
use crate::builtin::{PropertyKind, World, WorldProperty};
use crate::check::{timeline, Report};
use crate::spec::ModelFile;
use markdown::Drawn;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The command the committed report comes from (printed at its top; fixed, so the text does not depend on where
/// a run wrote it).
pub const REGENERATE_COMMAND: &str =
    "cargo run --release -- check models --por off --report results/verdicts.md";

/// One checked model.
pub struct Entry {
    pub model: ModelFile,
    pub report: Report<World>,
    /// Wall-clock time of the search: the one nondeterministic column.
    pub elapsed_ms: u64,
    /// The model's name in file names and anchors, unique in the run (the file stem unless two models share it).
    pub stem: String,
    /// The model's name in the table and headings (the file name unless two models share it).
    pub shown: String,
}

/// The folder of a report's SVG files: beside the report, named after it.
pub fn svg_folder(report_path: &Path) -> PathBuf {
    if report_path.extension().is_some() {
        report_path.with_extension("")
    } else {
        // `--report out`: the folder cannot take the file's own name.
        let mut name = report_path.as_os_str().to_os_string();
        name.push("-svg");
        PathBuf::from(name)
    }
}

/// Write the report and its SVGs (each atomically); stale SVGs of models or properties that no longer violate
/// are removed from the SVG folder. Returns the paths written.
pub fn write_report(report_path: &Path, entries: &[Entry]) -> Result<Vec<PathBuf>, String> {
    let folder = svg_folder(report_path);
    let folder_name = folder.file_name().map_or("verdicts".to_string(), |name| {
        name.to_string_lossy().to_string()
    });
    let mut drawn_all = Vec::with_capacity(entries.len());
    let mut svgs: Vec<(PathBuf, String)> = Vec::new();
    for entry in entries {
        let stem = &entry.stem;
        let mut drawn = Vec::new();
        for (found, actions) in entry.report.counterexamples() {
            let (property, picture) = counterexample_picture(entry, &found.name, actions)?;
            let steps = &picture.items;
            let file_name = format!("{stem}.{}.svg", property.name());
            let title = format!(
                "{}: {} violated ({} steps)",
                entry.shown,
                property.name(),
                steps.len()
            );
            svgs.push((folder.join(&file_name), svg::render(&picture, &title)));
            drawn.push(Drawn {
                property,
                steps: steps.len(),
                svg_link: format!("{folder_name}/{file_name}"),
                mermaid: mermaid::sequence_diagram(&picture),
            });
        }
        drawn_all.push(drawn);
    }
    let text = markdown::render(entries, &drawn_all, REGENERATE_COMMAND);

    let mut written = Vec::new();
    for (path, svg) in &svgs {
        write_atomic(path, svg.as_bytes())
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        written.push(path.clone());
    }
    remove_stale_svgs(
        &folder,
        &svgs.iter().map(|(path, _)| path.clone()).collect(),
    )?;
    write_atomic(report_path, text.as_bytes())
        .map_err(|error| format!("cannot write {}: {error}", report_path.display()))?;
    written.push(report_path.to_path_buf());
    Ok(written)
}

/// A counterexample of `entry` for property `name` as a diagram; a liveness counterexample's last step says
/// what stays unresolved.
fn counterexample_picture(
    entry: &Entry,
    name: &str,
    actions: &[crate::builtin::Action],
) -> Result<(WorldProperty, Diagram), String> {
    let property = WorldProperty::by_name(name).expect("the world's own property");
    let world = &entry.model.world;
    let run = timeline(world, actions).map_err(|step| {
        format!(
            "internal error: the counterexample for {} in {} diverges at step {step}",
            property.name(),
            entry.model.path
        )
    })?;
    let mut picture = diagram(&world.described_steps(&run));
    if property.kind() == PropertyKind::Eventually {
        // A liveness counterexample ends where only faults could happen next: say so on its last step,
        // naming what stays unresolved.
        let culprit = world
            .liveness_culprit(property, run.last_state())
            .map_or(", and".to_string(), |culprit| format!(" and {culprit}, so"));
        if let Some(last) = picture.items.last_mut() {
            last.violations.push(format!(
                "{}: only faults can happen from here on{culprit} the property fails: {}",
                property.name(),
                property.description()
            ));
        }
    }
    Ok((property, picture))
}

/// Only `*.svg` files directly in the report's own folder, and only those this run did not write.
fn remove_stale_svgs(folder: &Path, keep: &BTreeSet<PathBuf>) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Ok(()); // nothing was drawn and the folder does not exist
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_svg = path.extension().is_some_and(|extension| extension == "svg");
        if is_svg && path.is_file() && !keep.contains(&path) {
            std::fs::remove_file(&path)
                .map_err(|error| format!("cannot remove stale {}: {error}", path.display()))?;
        }
    }
    Ok(())
}
