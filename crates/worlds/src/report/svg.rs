//! A diagram as a standalone SVG, for viewers that do not render Mermaid: lanes as vertical lines under their
//! headers, one arrow or note per step with its (wrapped) text, violations in red. Integer layout only, so the
//! output is byte-identical run after run.

use super::diagram::{wrap, Diagram, Item, Lane, Shape};
use std::fmt::Write;

const FONT: &str = "DejaVu Sans Mono, Menlo, Consolas, monospace";
const FONT_PX: i64 = 11;
/// Advance of one monospace character at `FONT_PX`, in tenths of a pixel (0.6 em).
const CHAR_TENTHS_PX: i64 = 66;
const LINE_PX: i64 = 14;
const WRAP_CHARS: usize = 56;
/// Left gutter holding the step numbers.
const GUTTER_PX: i64 = 40;
const LANE_GAP_PX: i64 = 150;
const HEADER_TOP_PX: i64 = 34;
const HEADER_HEIGHT_PX: i64 = 26;
const FIRST_ROW_PX: i64 = HEADER_TOP_PX + HEADER_HEIGHT_PX + 20;
const ROW_GAP_PX: i64 = 12;
const MARGIN_PX: i64 = 10;

fn text_width_px(lines: &[String]) -> i64 {
    let chars = lines
        .iter()
        .map(|line| line.chars().count())
        .max()
        .unwrap_or(0);
    (chars as i64 * CHAR_TENTHS_PX + 9) / 10
}

/// Text for XML (and HTML) content and attribute values.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

struct Layout {
    lanes: Vec<Lane>,
    width_px: i64,
}

impl Layout {
    fn new(lanes: &[Lane]) -> Layout {
        let text_px = (WRAP_CHARS as i64 * CHAR_TENTHS_PX) / 10 + 2 * MARGIN_PX;
        let lanes_px = GUTTER_PX + lanes.len() as i64 * LANE_GAP_PX;
        Layout {
            lanes: lanes.to_vec(),
            width_px: lanes_px.max(GUTTER_PX + text_px + 2 * MARGIN_PX),
        }
    }

    fn x(&self, lane: Lane) -> i64 {
        let index = self
            .lanes
            .iter()
            .position(|seen| *seen == lane)
            .unwrap_or(0) as i64;
        GUTTER_PX + LANE_GAP_PX / 2 + index * LANE_GAP_PX
    }

    /// Left edge for a block `width_px` wide that wants to start at `x`, kept inside the canvas.
    fn fit(&self, x: i64, width_px: i64) -> i64 {
        x.min(self.width_px - MARGIN_PX - width_px).max(GUTTER_PX)
    }
}

fn text_block(out: &mut String, x: i64, top: i64, lines: &[String], style: &str) {
    let _ = write!(out, "<text x=\"{x}\" y=\"{}\" {style}>", top + LINE_PX - 3);
    for (index, line) in lines.iter().enumerate() {
        let dy = if index == 0 { 0 } else { LINE_PX };
        let _ = write!(out, "<tspan x=\"{x}\" dy=\"{dy}\">{}</tspan>", escape(line));
    }
    out.push_str("</text>\n");
}

/// A note: a box around wrapped text, centred on `x` where it fits. Returns its height.
fn note(out: &mut String, layout: &Layout, x: i64, top: i64, lines: &[String], alarm: bool) -> i64 {
    let width = text_width_px(lines) + 12;
    let height = lines.len() as i64 * LINE_PX + 8;
    let left = layout.fit(x - width / 2, width);
    let (fill, stroke, text_style) = if alarm {
        (
            "#ffe1e1",
            "#c00000",
            "fill=\"#900000\" font-weight=\"bold\"",
        )
    } else {
        ("#fff8d6", "#b59a2a", "fill=\"#222\"")
    };
    let _ = writeln!(
        out,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{width}\" height=\"{height}\" rx=\"3\" fill=\"{fill}\" stroke=\"{stroke}\"/>"
    );
    text_block(out, left + 6, top + 4, lines, text_style);
    height
}

/// Draw one step (its number, arrow or note, and violation notes) from `y` down; returns where it ends.
fn draw_item(body: &mut String, layout: &Layout, item: &Item, mut y: i64) -> i64 {
    let lines = wrap(&item.text, WRAP_CHARS);
    let _ = writeln!(
        body,
        "<text x=\"{}\" y=\"{}\" fill=\"#666\" text-anchor=\"end\">{}.</text>",
        GUTTER_PX - 6,
        y + LINE_PX - 3,
        item.step
    );
    // The x a violation note centres on: the middle of the step's arrow, or its note's lane.
    let anchor_x = match item.shape {
        Shape::Arrow { from, to } if from != to => {
            let (x_from, x_to) = (layout.x(from), layout.x(to));
            let left = layout.fit(x_from.min(x_to) + 6, text_width_px(&lines));
            text_block(
                body,
                left,
                y,
                &lines,
                "fill=\"#111\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\"",
            );
            y += lines.len() as i64 * LINE_PX + 4;
            let _ = writeln!(
                body,
                "<line x1=\"{x_from}\" y1=\"{y}\" x2=\"{x_to}\" y2=\"{y}\" stroke=\"#333\" stroke-width=\"1.5\" marker-end=\"url(#arrow)\"/>"
            );
            y += 6;
            (x_from + x_to) / 2
        }
        Shape::Arrow { to: over, .. } | Shape::Note { over } => {
            y += note(body, layout, layout.x(over), y, &lines, false);
            layout.x(over)
        }
    };
    for violation in &item.violations {
        y += 4;
        let lines = wrap(&format!("VIOLATION {violation}"), WRAP_CHARS);
        y += note(body, layout, anchor_x, y, &lines, true);
    }
    y
}

/// The SVG document for `diagram`, titled `title`.
pub fn render(diagram: &Diagram, title: &str) -> String {
    let layout = Layout::new(&diagram.lanes);
    let mut body = String::new();
    let mut y = FIRST_ROW_PX;
    for item in &diagram.items {
        // Each step is a group with a band behind it, invisible here: the trace explorer's page highlights the
        // band of the step it shows and takes a click on the group as a pick (`data-step`).
        let top = y;
        let mut drawn = String::new();
        y = draw_item(&mut drawn, &layout, item, y);
        let _ = writeln!(
            body,
            "<g class=\"step\" data-step=\"{}\"><rect class=\"band\" x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\"/>",
            item.step,
            top - ROW_GAP_PX / 2,
            layout.width_px,
            y - top + ROW_GAP_PX
        );
        body.push_str(&drawn);
        body.push_str("</g>\n");
        y += ROW_GAP_PX;
    }
    let height = y + MARGIN_PX;

    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{height}\" viewBox=\"0 0 {w} {height}\" font-family=\"{FONT}\" font-size=\"{FONT_PX}\">",
        w = layout.width_px
    );
    out.push_str(
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#333\"/></marker></defs>\n",
    );
    let _ = writeln!(
        out,
        "<rect width=\"{}\" height=\"{height}\" fill=\"#ffffff\"/>",
        layout.width_px
    );
    let _ = writeln!(
        out,
        "<text x=\"{MARGIN_PX}\" y=\"20\" font-size=\"13\" font-weight=\"bold\" fill=\"#111\">{}</text>",
        escape(title)
    );
    for lane in &diagram.lanes {
        let x = layout.x(*lane);
        let _ = writeln!(
            out,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#aaa\" stroke-dasharray=\"4 3\"/>",
            HEADER_TOP_PX + HEADER_HEIGHT_PX,
            height - MARGIN_PX
        );
        let _ = writeln!(
            out,
            "<rect x=\"{}\" y=\"{HEADER_TOP_PX}\" width=\"110\" height=\"{HEADER_HEIGHT_PX}\" rx=\"4\" fill=\"#e8eefc\" stroke=\"#4a5f9c\"/>",
            x - 55
        );
        let _ = writeln!(
            out,
            "<text x=\"{x}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\" fill=\"#1d2c5c\">{}</text>",
            HEADER_TOP_PX + 17,
            lane.label()
        );
    }
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Diagram {
        Diagram {
            lanes: vec![Lane::Client(0), Lane::Network, Lane::Proc(0)],
            items: vec![
                Item {
                    step: 1,
                    shape: Shape::Arrow {
                        from: Lane::Client(0),
                        to: Lane::Network,
                    },
                    text: "C1 sends <body> & a very long text that needs to wrap over more than one line here"
                        .to_string(),
                    violations: vec![],
                },
                Item {
                    step: 2,
                    shape: Shape::Note { over: Lane::Proc(0) },
                    text: "P1 CRASHES".to_string(),
                    violations: vec!["DUPLICATE EFFECT: two payments".to_string()],
                },
            ],
        }
    }

    #[test]
    fn every_lane_step_and_violation_is_drawn_escaped_and_wrapped() {
        let svg = render(&sample(), "m: p");
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
        for label in [">C1<", ">Network<", ">P1<", ">1.<", ">2.<"] {
            assert!(svg.contains(label), "{label}");
        }
        assert!(svg.contains("&lt;body&gt; &amp;"));
        assert!(!svg.contains("<body>"));
        // The long arrow text wrapped onto a second line.
        assert_eq!(svg.matches("<tspan").count(), 2 + 1 + 1);
        assert!(svg.contains("VIOLATION DUPLICATE EFFECT"));
        assert_eq!(svg.matches("marker-end").count(), 1);
        // One group per step, in order, each with its band (which the explorer's page highlights).
        let groups: Vec<&str> = svg
            .match_indices("<g class=\"step\" data-step=\"")
            .map(|(at, _)| &svg[at..])
            .collect();
        assert_eq!(groups.len(), 2);
        for (index, group) in groups.iter().enumerate() {
            let head = format!(
                "<g class=\"step\" data-step=\"{}\"><rect class=\"band\" ",
                index + 1
            );
            assert!(group.starts_with(&head), "{group}");
        }
        assert!(
            groups[0].find("</g>") < groups[0].find(">2.<"),
            "step 1's group closes before step 2"
        );
        assert_eq!(render(&sample(), "m: p"), svg, "deterministic");
    }
}
