//! What an experiment writes: CSV tables, charts, its claims and its README, as data until
//! [`Output::write`] puts them in a folder (every file atomically).

use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;

use super::claim::Claim;
use super::table::csv_text;
use crate::plot::LineChart;

/// The file every experiment writes its claims to (read back by [`super::index`]).
pub const CLAIMS_CSV: &str = "claims.csv";

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    /// (file name, text): CSV tables and the README.
    pub files: Vec<(String, String)>,
    /// (file stem, chart): written as `<stem>.svg` and `<stem>.png`.
    pub charts: Vec<(String, LineChart)>,
    pub claims: Vec<Claim>,
}

impl Output {
    /// Adds `rows` as the CSV file `name`.
    pub fn table<R: Serialize>(&mut self, name: &str, rows: &[R]) -> Result<(), String> {
        let text = csv_text(rows).map_err(|e| format!("{name}: {e}"))?;
        self.files.push((name.to_string(), text));
        Ok(())
    }

    pub fn text(&mut self, name: &str, text: String) {
        self.files.push((name.to_string(), text));
    }

    pub fn chart(&mut self, stem: &str, chart: LineChart) {
        self.charts.push((stem.to_string(), chart));
    }

    /// The text of file `name`, if the output has it.
    pub fn file(&self, name: &str) -> Option<&str> {
        self.files
            .iter()
            .find(|(file, _)| file == name)
            .map(|(_, text)| text.as_str())
    }

    /// Writes every file, `claims.csv` and every chart into `dir` (created if missing).
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            crate::atomic::write_atomic(&path, text.as_bytes())
                .map_err(|e| format!("writing {}: {e}", path.display()))
        };
        let claims = if self.claims.is_empty() {
            None
        } else {
            Some(csv_text(&self.claims)?)
        };
        let texts = self
            .files
            .iter()
            .map(|(name, text)| (name.as_str(), text.as_str()))
            .chain(claims.as_deref().map(|text| (CLAIMS_CSV, text)));
        // Charts are drawn in parallel: each is an SVG and a PNG rendered and encoded on its
        // own, most of the time it takes to write a short run's output. The first error in
        // file order is the one reported.
        let (written, drawn): (Vec<_>, Vec<_>) = rayon::join(
            || texts.map(|(name, text)| write(name, text)).collect(),
            || {
                self.charts
                    .par_iter()
                    .map(|(stem, chart)| draw(chart, dir, stem))
                    .collect()
            },
        );
        written.into_iter().chain(drawn).collect()
    }
}

#[cfg(feature = "plot")]
fn draw(chart: &LineChart, dir: &Path, stem: &str) -> Result<(), String> {
    crate::plot::write_line_chart(chart, dir, stem).map_err(|e| e.to_string())
}

#[cfg(not(feature = "plot"))]
fn draw(_chart: &LineChart, _dir: &Path, stem: &str) -> Result<(), String> {
    Err(format!(
        "chart {stem}: retrylab was built without the `plot` feature"
    ))
}
