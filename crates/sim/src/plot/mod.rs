//! Charts: line charts with 95% bands, as data ([`LineChart`]) and, with the `plot` feature,
//! drawn on plotters as SVG and PNG ([`write_line_chart`]).
//!
//! Text is rendered with a bundled DejaVu Sans (crates/sim/assets/fonts), registered with plotters' ab_glyph
//! support, so charts need no fontconfig and look the same on every machine. Files are written
//! atomically: into a temporary file in the target folder, then renamed over the final name.

use std::path::{Path, PathBuf};

#[cfg(feature = "plot")]
mod draw;
#[cfg(feature = "plot")]
pub use draw::{ensure_font, write_line_chart, PALETTE};

/// One point of a series: the estimate `y` and its band `[low, high]` (equal to `y` for none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandPoint {
    pub x: f64,
    pub y: f64,
    pub low: f64,
    pub high: f64,
}

impl BandPoint {
    pub fn exact(x: f64, y: f64) -> Self {
        BandPoint {
            x,
            y,
            low: y,
            high: y,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LineStyle {
    #[default]
    Solid,
    Dashed,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<BandPoint>,
    /// Index into the palette (wraps), so related series can share a colour.
    pub colour_index: usize,
    pub line: LineStyle,
}

impl Series {
    pub fn new(label: impl Into<String>, colour_index: usize, points: Vec<BandPoint>) -> Self {
        Series {
            label: label.into(),
            points,
            colour_index,
            line: LineStyle::Solid,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scale {
    #[default]
    Linear,
    Log,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LegendAt {
    UpperLeft,
    UpperRight,
    LowerRight,
    /// In a column to the right of the plot, for charts whose lines fill every corner.
    Outside,
}

/// A line chart: one line per series, its 95% band shaded, optional point markers.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    pub title: String,
    /// Axis labels, with units, e.g. "clients (count)", "completion time (ms)".
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    pub series: Vec<Series>,
    pub markers: bool,
    pub legend_at: LegendAt,
    pub width_px: u32,
    pub height_px: u32,
}

impl LineChart {
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        LineChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            series: Vec::new(),
            markers: true,
            legend_at: LegendAt::UpperLeft,
            width_px: 960,
            height_px: 600,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("chart {0:?} has no data")]
    Empty(String),
    #[error("chart {title:?}: log scale needs positive values, got {value}")]
    LogOfNonPositive { title: String, value: f64 },
    #[error("drawing chart {title:?}: {message}")]
    Draw { title: String, message: String },
    #[error("writing {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Writes `bytes` to `path` atomically (see [`crate::atomic::write_atomic`]), with a chart error.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), PlotError> {
    crate::atomic::write_atomic(path, bytes).map_err(|source| PlotError::Io {
        path: path.to_path_buf(),
        source,
    })
}
