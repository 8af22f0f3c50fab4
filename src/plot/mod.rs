//! Chart helpers on plotters: line charts with 95% bands, written as SVG and PNG.
//!
//! Text is rendered with a bundled DejaVu Sans (assets/fonts), registered with plotters' ab_glyph
//! support, so charts need no fontconfig and look the same on every machine. Files are written
//! atomically: into a temporary file in the target folder, then renamed over the final name.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

/// The bundled font; its license is in assets/fonts/LICENSE-DejaVu.txt.
static FONT_TTF: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Registers the bundled font under the generic family names plotters asks for.
/// Idempotent; every drawing function here calls it first.
pub fn ensure_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        for family in ["sans-serif", "serif", "monospace"] {
            if register_font(family, FontStyle::Normal, FONT_TTF).is_err() {
                panic!("the bundled DejaVu Sans font failed to parse");
            }
        }
    });
}

/// Colour-blind-friendly qualitative palette (Okabe-Ito, then greys), by series index.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(230, 159, 0),
    RGBColor(0, 0, 0),
    RGBColor(120, 120, 120),
];

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
    /// Index into [`PALETTE`] (wraps), so related series can share a colour.
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

/// Width of the legend column of `LegendAt::Outside`.
const LEGEND_COLUMN_PX: u32 = 250;

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

/// Draws `chart` to `<dir>/<stem>.svg` and `<dir>/<stem>.png`.
pub fn write_line_chart(chart: &LineChart, dir: &Path, stem: &str) -> Result<(), PlotError> {
    ensure_font();
    let size = (chart.width_px, chart.height_px);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw_chart(&root, chart)?;
        root.present().map_err(|e| draw_err(chart, e))?;
    }
    write_atomic(&dir.join(format!("{stem}.svg")), svg.as_bytes())?;

    // The bitmap backend picks its encoder from the extension and writes the file itself, so
    // it writes a temporary `.png` in the same folder, which is then renamed.
    let png_path = dir.join(format!("{stem}.png"));
    let io_err = |source| PlotError::Io {
        path: png_path.clone(),
        source,
    };
    let temp = crate::atomic::output_file_builder()
        .prefix(&format!(".{stem}-"))
        .suffix(".png")
        .tempfile_in(dir)
        .map_err(io_err)?;
    {
        let root = BitMapBackend::new(temp.path(), size).into_drawing_area();
        draw_chart(&root, chart)?;
        root.present().map_err(|e| draw_err(chart, e))?;
    }
    temp.persist(&png_path).map_err(|e| io_err(e.error))?;
    Ok(())
}

fn draw_err(chart: &LineChart, e: impl std::fmt::Display) -> PlotError {
    PlotError::Draw {
        title: chart.title.clone(),
        message: e.to_string(),
    }
}

/// Axis extent over every point and band, padded; log axes start at the smallest positive value.
fn extent(
    chart: &LineChart,
    scale: Scale,
    values: impl Iterator<Item = f64>,
) -> Result<(f64, f64), PlotError> {
    let mut low = f64::INFINITY;
    let mut high = f64::NEG_INFINITY;
    for v in values.filter(|v| v.is_finite()) {
        if scale == Scale::Log && v <= 0.0 {
            continue;
        }
        low = low.min(v);
        high = high.max(v);
    }
    if !low.is_finite() {
        return Err(PlotError::Empty(chart.title.clone()));
    }
    Ok(match scale {
        Scale::Linear => {
            let low = low.min(0.0);
            let span = (high - low).max(f64::EPSILON);
            (low, high + 0.05 * span)
        }
        Scale::Log => (low / 1.3, high * 1.3),
    })
}

fn draw_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &LineChart,
) -> Result<(), PlotError> {
    if chart.series.iter().all(|s| s.points.is_empty()) {
        return Err(PlotError::Empty(chart.title.clone()));
    }
    let points = || chart.series.iter().flat_map(|s| s.points.iter());
    if chart.x_scale == Scale::Log {
        if let Some(p) = points().find(|p| p.x <= 0.0) {
            return Err(PlotError::LogOfNonPositive {
                title: chart.title.clone(),
                value: p.x,
            });
        }
    }
    if chart.y_scale == Scale::Log {
        if let Some(p) = points().find(|p| p.y <= 0.0) {
            return Err(PlotError::LogOfNonPositive {
                title: chart.title.clone(),
                value: p.y,
            });
        }
    }
    let (x_low, x_high) = extent(chart, chart.x_scale, points().map(|p| p.x))?;
    // The x axis of a linear chart starts at the data, not at 0 (client counts start at 10).
    let x_low = if chart.x_scale == Scale::Linear {
        points().map(|p| p.x).fold(f64::INFINITY, f64::min)
    } else {
        x_low
    };
    let x_high = if chart.x_scale == Scale::Linear {
        points().map(|p| p.x).fold(f64::NEG_INFINITY, f64::max)
    } else {
        x_high
    };
    let (y_low, y_high) = extent(
        chart,
        chart.y_scale,
        points().flat_map(|p| [p.y, p.low, p.high]),
    )?;
    root.fill(&WHITE).map_err(|e| draw_err(chart, e))?;
    let plot_area = if chart.legend_at == LegendAt::Outside {
        let width_px = root.dim_in_pixel().0;
        let (plot_area, legend_area) =
            root.split_horizontally(width_px.saturating_sub(LEGEND_COLUMN_PX));
        draw_legend_column(&legend_area, chart)?;
        plot_area
    } else {
        root.clone()
    };
    let root = &plot_area;
    match (chart.x_scale, chart.y_scale) {
        (Scale::Linear, Scale::Linear) => draw_in(root, chart, x_low..x_high, y_low..y_high),
        (Scale::Linear, Scale::Log) => {
            draw_in(root, chart, x_low..x_high, (y_low..y_high).log_scale())
        }
        (Scale::Log, Scale::Linear) => {
            draw_in(root, chart, (x_low..x_high).log_scale(), y_low..y_high)
        }
        (Scale::Log, Scale::Log) => draw_in(
            root,
            chart,
            (x_low..x_high).log_scale(),
            (y_low..y_high).log_scale(),
        ),
    }
}

/// The legend as a column of (line sample, label) rows, vertically centred.
fn draw_legend_column<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &LineChart,
) -> Result<(), PlotError> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| draw_err(chart, e);
    let row_px = 24i32;
    let height_px = area.dim_in_pixel().1 as i32;
    let top_px = ((height_px - row_px * chart.series.len() as i32) / 2).max(8);
    let font = ("sans-serif", 15).into_font().color(&BLACK);
    for (i, series) in chart.series.iter().enumerate() {
        let colour = PALETTE[series.colour_index % PALETTE.len()];
        let y = top_px + row_px * i as i32 + row_px / 2;
        let style = colour.stroke_width(3);
        match series.line {
            LineStyle::Solid => area
                .draw(&PathElement::new(vec![(4, y), (34, y)], style))
                .map_err(err)?,
            LineStyle::Dashed => {
                for x in [4, 16, 28] {
                    area.draw(&PathElement::new(vec![(x, y), (x + 7, y)], style))
                        .map_err(err)?;
                }
            }
        }
        area.draw(&Text::new(series.label.clone(), (44, y - 8), font.clone()))
            .map_err(err)?;
    }
    Ok(())
}

/// Tick labels without float noise: integers when large, a few decimals otherwise.
fn tick_label(v: &f64) -> String {
    let magnitude = v.abs();
    if magnitude >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if magnitude >= 10.0 || *v == 0.0 {
        format!("{v:.0}")
    } else if magnitude >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn draw_in<DB, X, Y>(
    root: &DrawingArea<DB, Shift>,
    chart: &LineChart,
    x_range: X,
    y_range: Y,
) -> Result<(), PlotError>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| draw_err(chart, e);
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range, y_range)
        .map_err(err)?;
    ctx.configure_mesh()
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 15))
        .x_label_formatter(&tick_label)
        .y_label_formatter(&tick_label)
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()
        .map_err(err)?;

    // Bands first, so every line is drawn over every band.
    for series in &chart.series {
        let colour = PALETTE[series.colour_index % PALETTE.len()];
        let has_band = series.points.iter().any(|p| p.high > p.low);
        if has_band && series.points.len() > 1 {
            let outline: Vec<(f64, f64)> = series
                .points
                .iter()
                .map(|p| (p.x, p.high))
                .chain(series.points.iter().rev().map(|p| (p.x, p.low)))
                .collect();
            ctx.draw_series(std::iter::once(Polygon::new(
                outline,
                colour.mix(0.18).filled(),
            )))
            .map_err(err)?;
        }
    }
    for series in &chart.series {
        let colour = PALETTE[series.colour_index % PALETTE.len()];
        let style = colour.stroke_width(2);
        let line: Vec<(f64, f64)> = series.points.iter().map(|p| (p.x, p.y)).collect();
        let drawn = match series.line {
            LineStyle::Solid => ctx
                .draw_series(LineSeries::new(line.clone(), style))
                .map_err(err)?,
            LineStyle::Dashed => ctx
                .draw_series(DashedLineSeries::new(line.clone(), 8, 5, style))
                .map_err(err)?,
        };
        let dashed = series.line == LineStyle::Dashed;
        drawn.label(&series.label).legend(move |(x, y)| {
            let end = if dashed { x + 8 } else { x + 22 };
            PathElement::new(vec![(x, y), (end, y)], colour.stroke_width(3))
        });
        if chart.markers {
            ctx.draw_series(line.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                .map_err(err)?;
        }
    }
    let position = match chart.legend_at {
        LegendAt::UpperLeft => SeriesLabelPosition::UpperLeft,
        LegendAt::UpperRight => SeriesLabelPosition::UpperRight,
        LegendAt::LowerRight => SeriesLabelPosition::LowerRight,
        LegendAt::Outside => return Ok(()),
    };
    ctx.configure_series_labels()
        .position(position)
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .margin(12)
        .draw()
        .map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_chart(y_scale: Scale) -> LineChart {
        let mut chart = LineChart::new("test", "x (count)", "y (ms)");
        chart.y_scale = y_scale;
        chart.width_px = 320;
        chart.height_px = 200;
        for (i, factor) in [1.0, 3.0].into_iter().enumerate() {
            let points = (1..=5)
                .map(|x| {
                    let y = factor * f64::from(x * x);
                    BandPoint {
                        x: f64::from(x),
                        y,
                        low: y * 0.9,
                        high: y * 1.1,
                    }
                })
                .collect();
            chart.series.push(Series::new(format!("s{i}"), i, points));
        }
        chart
    }

    #[test]
    fn writes_svg_and_png_with_text() {
        let dir = tempfile::tempdir().unwrap();
        for (stem, scale) in [("lin", Scale::Linear), ("log", Scale::Log)] {
            write_line_chart(&sample_chart(scale), dir.path(), stem).unwrap();
            let svg = std::fs::read_to_string(dir.path().join(format!("{stem}.svg"))).unwrap();
            assert!(svg.contains("y (ms)") && svg.contains("s1"));
            let png = std::fs::read(dir.path().join(format!("{stem}.png"))).unwrap();
            assert_eq!(&png[1..4], b"PNG");
        }
        // Only the four final files: no temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 4);
    }

    #[test]
    fn log_scale_refuses_non_positive_values() {
        let mut chart = sample_chart(Scale::Log);
        chart.series[0].points[0].y = 0.0;
        let dir = tempfile::tempdir().unwrap();
        let result = write_line_chart(&chart, dir.path(), "bad");
        assert!(matches!(result, Err(PlotError::LogOfNonPositive { .. })));
    }

    #[test]
    fn atomic_write_replaces_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
    }
}
