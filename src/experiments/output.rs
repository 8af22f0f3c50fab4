//! What an experiment writes: CSV tables, charts, its claims and its README, as data until
//! [`Output::write`] puts them in a folder (every file atomically).

use std::path::Path;

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
        for (name, text) in &self.files {
            write(name, text)?;
        }
        if !self.claims.is_empty() {
            write(CLAIMS_CSV, &csv_text(&self.claims)?)?;
        }
        for (stem, chart) in &self.charts {
            draw(chart, dir, stem)?;
        }
        Ok(())
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
