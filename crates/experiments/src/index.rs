//! `results/README.md`: one section per experiment (its headline chart, its claims table and the
//! command that regenerates it) and the verdict matrix's summary, made from the committed files
//! alone (each experiment's `claims.csv`, `results/verdicts.md`), so a test can tell when it is
//! stale without running anything. Every experiment binary rewrites it after writing into
//! `results/`.

use std::path::Path;

use super::claim::{markdown_table, Claim};
use super::output::CLAIMS_CSV;

/// The index's file name inside the results folder.
pub const INDEX_FILE: &str = "README.md";

/// One experiment's folder in `results/`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Entry {
    pub folder: &'static str,
    pub title: &'static str,
    /// The chart shown in the index.
    pub headline: &'static str,
    /// The command that regenerates the folder (its README says the same).
    pub command: &'static str,
}

/// Every experiment's committed folder, in the order of the index.
pub const ENTRIES: [Entry; 8] = [
    Entry {
        folder: "aws-jitter",
        title: "Exponential backoff and jitter (Brooker, AWS, 2015), reproduced",
        headline: "work.png",
        command: "cargo run --release --bin aws-jitter",
    },
    Entry {
        folder: "retry-layers",
        title: "Retries at every layer multiply",
        headline: "bottom-requests.png",
        command: "cargo run --release --bin retry-layers",
    },
    Entry {
        folder: "retry-budget",
        title: "Retry controls against a failing server (Brooker, 2022)",
        headline: "amplification.png",
        command: "cargo run --release --bin retry-budget",
    },
    Entry {
        folder: "metastability",
        title: "Retries that keep a recovered server down (10 s capacity drop)",
        headline: "goodput.png",
        command: "cargo run --release --bin metastability",
    },
    Entry {
        folder: "metastability-1s",
        title: "The same after a 1 s capacity drop",
        headline: "goodput.png",
        command: "cargo run --release --bin metastability -- --out results/metastability-1s --trigger-s 1",
    },
    Entry {
        folder: "retry-safety",
        title: "Timed out is not failed: duplicate effects with and without a key",
        headline: "duplicates.png",
        command: "cargo run --release --bin retry-safety",
    },
    Entry {
        folder: "dedup-window",
        title: "Where the dedup lives: broker window, session, consumer inbox",
        headline: "restart.png",
        command: "cargo run --release --bin dedup-window",
    },
    Entry {
        folder: "state-space",
        title: "State-space growth, with and without symmetry reduction",
        headline: "clients.png",
        command: "cargo run --release --bin state-space",
    },
];

/// The claims an experiment folder holds (none when it has no `claims.csv`).
pub fn read_claims(folder: &Path) -> Result<Vec<Claim>, String> {
    let path = folder.join(CLAIMS_CSV);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let mut reader =
        csv::Reader::from_path(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    reader
        .deserialize()
        .collect::<Result<Vec<Claim>, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The verdict matrix's summary line ("38 models; 38 got every verdict ..."), if it has one.
fn matrix_summary(results: &Path) -> Result<String, String> {
    let path = results.join("verdicts.md");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .find(|line| {
            line.split_once(" models; ")
                .is_some_and(|(count, _)| count.parse::<u32>().is_ok())
        })
        .map(str::to_string)
        .ok_or_else(|| format!("{}: no summary line (\"N models; ...\")", path.display()))
}

/// The index of the results folder `results`.
pub fn render(results: &Path) -> Result<String, String> {
    let mut text = String::from(
        "# Results\n\nGenerated from the committed files of this folder: do not edit by hand. Every experiment binary \
         rewrites it after writing into `results/`; `tests/experiments/experiments_index.rs` fails when it is \
         stale. Each experiment's own README has its world, its tables and every chart.\n\n",
    );
    text += "## Verdict matrix\n\n";
    text += &format!(
        "[`verdicts.md`](verdicts.md): every model in `models/` checked, made by `cargo run --release -- check models \
         --report results/verdicts.md`. {}\n\n",
        matrix_summary(results)?
    );
    for entry in ENTRIES {
        let folder = results.join(entry.folder);
        text += &format!(
            "## [{}]({}/README.md): {}\n\n",
            entry.folder, entry.folder, entry.title
        );
        text += &format!("    {}\n\n", entry.command);
        text += &format!(
            "![{}]({}/{})\n\n",
            entry.folder, entry.folder, entry.headline
        );
        let claims = read_claims(&folder)?;
        if claims.is_empty() {
            text += "No claims: the counts are exact, see the folder's README.\n\n";
        } else {
            text += &markdown_table(&claims);
            text.push('\n');
        }
    }
    Ok(text)
}

/// Rewrites `<results>/README.md`; says whether its text changed (an unchanged index is not written).
pub fn write(results: &Path) -> Result<bool, String> {
    let path = results.join(INDEX_FILE);
    let text = render(results)?;
    if std::fs::read_to_string(&path).is_ok_and(|old| old == text) {
        return Ok(false);
    }
    crate::atomic::write_atomic(&path, text.as_bytes())
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(true)
}

/// Refreshes the index when `out` is a folder of a results folder that has a verdict matrix (an
/// experiment written into `results/`); says whether its text changed.
pub fn refresh_for(out: &Path) -> Result<bool, String> {
    match out.parent() {
        Some(results)
            if results.file_name().is_some_and(|name| name == "results")
                && results.join("verdicts.md").exists() =>
        {
            write(results)
        }
        _ => Ok(false),
    }
}
