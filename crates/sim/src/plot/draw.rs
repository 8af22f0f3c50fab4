//! Drawing a [`LineChart`] on plotters, SVG and PNG, with the bundled font.

use std::path::Path;
use std::sync::Once;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use super::{write_atomic, LegendAt, LineChart, LineStyle, PlotError, Scale};
#[cfg(test)]
use super::{BandPoint, Series};

/// Width of the legend column of `LegendAt::Outside`.
const LEGEND_COLUMN_PX: u32 = 250;

/// On a log axis a band reaches at most this many decades below the lowest point. A band whose
/// lower end is near 0 (a mean minus a wide interval of few runs) would otherwise stretch the
/// axis over hundreds of decades, and plotters lays out the mesh of every one of them (it hung).
const LOG_BAND_DECADES_BELOW: i32 = 1;

/// The bundled font; its license is in crates/sim/assets/fonts/LICENSE-DejaVu.txt.
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

    let mut pixels = vec![0u8; size.0 as usize * size.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
        draw_chart(&root, chart)?;
        root.present().map_err(|e| draw_err(chart, e))?;
    }
    let png_path = dir.join(format!("{stem}.png"));
    let png = encode_png(&pixels, size).map_err(|e| PlotError::Io {
        path: png_path.clone(),
        source: std::io::Error::other(e),
    })?;
    write_atomic(&png_path, &png)?;
    Ok(())
}

/// RGB pixels as a PNG: fast deflate, each row's filter chosen adaptively (what the image crate's
/// encoder did when plotters wrote the file itself; a fixed filter saved about 1 ms of 2.5 per
/// chart and made the files 1.2-3x larger).
fn encode_png(pixels: &[u8], (width, height): (u32, u32)) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::with_capacity(pixels.len() / 16);
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Fast);
    encoder.set_filter(png::FilterType::Sub);
    encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(out)
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
    let band_floor = match chart.y_scale {
        Scale::Log => {
            points().map(|p| p.y).fold(f64::INFINITY, f64::min) / 10f64.powi(LOG_BAND_DECADES_BELOW)
        }
        Scale::Linear => f64::NEG_INFINITY,
    };
    let (y_low, y_high) = extent(
        chart,
        chart.y_scale,
        points().flat_map(|p| [p.y, p.low.max(band_floor), p.high]),
    )?;
    let bounds = Bounds {
        x: (x_low, x_high),
        y: (y_low, y_high),
    };
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
        (Scale::Linear, Scale::Linear) => {
            draw_in(root, chart, bounds, x_low..x_high, y_low..y_high)
        }
        (Scale::Linear, Scale::Log) => draw_in(
            root,
            chart,
            bounds,
            x_low..x_high,
            (y_low..y_high).log_scale(),
        ),
        (Scale::Log, Scale::Linear) => draw_in(
            root,
            chart,
            bounds,
            (x_low..x_high).log_scale(),
            y_low..y_high,
        ),
        (Scale::Log, Scale::Log) => draw_in(
            root,
            chart,
            bounds,
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

/// The extent of both axes.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    x: (f64, f64),
    y: (f64, f64),
}

/// Tick labels of one axis without float noise. A linear axis gives every label the same
/// decimals, enough for its tick step (about a tenth of the span), so it never mixes `1.0` and
/// `0.50`; a log axis, whose ticks span decades, writes each with the digits it needs (`0.5`, `1`,
/// `20`). Thousands are written `12k`: on a linear axis every label once the axis reaches 10,000,
/// on a log axis each label from 10,000 up.
fn tick_formatter((low, high): (f64, f64), scale: Scale) -> impl Fn(&f64) -> String {
    let thousands = low.abs().max(high.abs()) >= 10_000.0;
    let step = (high - low) / 10.0;
    let linear_decimals = if step >= 1.0 || step <= 0.0 || !step.is_finite() {
        0
    } else {
        ((-step.log10()).ceil() as usize).min(6)
    };
    move |v: &f64| {
        let magnitude = v.abs();
        match scale {
            Scale::Linear if thousands && *v != 0.0 => format!("{:.0}k", v / 1000.0),
            Scale::Linear if thousands => "0".to_string(),
            Scale::Linear => format!("{v:.linear_decimals$}"),
            Scale::Log if magnitude >= 10_000.0 => format!("{:.0}k", v / 1000.0),
            Scale::Log => {
                // Two significant digits, trailing zeros dropped.
                let decimals = if magnitude >= 10.0 || magnitude == 0.0 {
                    0
                } else {
                    ((2.0 - magnitude.log10()).floor() as usize).min(6)
                };
                let text = format!("{v:.decimals$}");
                if text.contains('.') {
                    text.trim_end_matches('0').trim_end_matches('.').to_string()
                } else {
                    text
                }
            }
        }
    }
}

fn draw_in<DB, X, Y>(
    root: &DrawingArea<DB, Shift>,
    chart: &LineChart,
    bounds: Bounds,
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
        .x_label_formatter(&tick_formatter(bounds.x, chart.x_scale))
        .y_label_formatter(&tick_formatter(bounds.y, chart.y_scale))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()
        .map_err(err)?;

    // Bands first, so every line is drawn over every band.
    for series in &chart.series {
        let colour = PALETTE[series.colour_index % PALETTE.len()];
        let has_band = series.points.iter().any(|p| p.high > p.low);
        if has_band && series.points.len() > 1 {
            // Clamped into the axis: a band beyond it (or below 0 on a log axis) is drawn to its edge.
            let (y_low, y_high) = bounds.y;
            let outline: Vec<(f64, f64)> = series
                .points
                .iter()
                .map(|p| (p.x, p.high.clamp(y_low, y_high)))
                .chain(
                    series
                        .points
                        .iter()
                        .rev()
                        .map(|p| (p.x, p.low.clamp(y_low, y_high))),
                )
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
    fn a_log_axis_with_a_band_down_to_zero_draws_promptly() {
        // A mean of 100 with a band from 1e-300 (or below 0) used to make plotters lay out ~300
        // decades of mesh; the band is now floored a decade below the lowest point.
        let mut chart = sample_chart(Scale::Log);
        chart.series[0].points[0].low = 1e-300;
        chart.series[1].points[1].low = -50.0;
        let dir = tempfile::tempdir().unwrap();
        write_line_chart(&chart, dir.path(), "band").unwrap();
        let svg = std::fs::read_to_string(dir.path().join("band.svg")).unwrap();
        // The axis starts a decade below the lowest mean (1), not at 1e-300: its lowest tick is
        // 0.1 and there is none below.
        assert!(svg.contains("\n0.1\n"), "{svg}");
        assert!(!svg.contains("\n0.01\n"), "{svg}");
    }

    #[test]
    fn tick_labels_of_a_linear_axis_share_their_decimals() {
        let label = tick_formatter((0.0, 1.05), Scale::Linear);
        assert_eq!([0.0, 0.5, 1.0].map(|v| label(&v)), ["0.0", "0.5", "1.0"]);
        let label = tick_formatter((0.0, 0.3), Scale::Linear);
        assert_eq!([0.05, 0.1].map(|v| label(&v)), ["0.05", "0.10"]);
        let label = tick_formatter((10.0, 190.0), Scale::Linear);
        assert_eq!([10.0, 100.0].map(|v| label(&v)), ["10", "100"]);
        let label = tick_formatter((0.0, 30_000.0), Scale::Linear);
        assert_eq!([0.0, 20_000.0].map(|v| label(&v)), ["0", "20k"]);
        let label = tick_formatter((0.05, 20_000.0), Scale::Log);
        assert_eq!(
            [0.05, 0.25, 0.5, 1.0, 2.0, 20.0, 20_000.0].map(|v| label(&v)),
            ["0.05", "0.25", "0.5", "1", "2", "20", "20k"]
        );
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
