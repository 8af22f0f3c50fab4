//! `--chart DIR`: the family's time to verdict against the size of its state space, one line per checker
//! (log-log), with the table as `scale.csv`, all written atomically into DIR (`results/state-space/`).

use crate::family::{csv_text, Member, Outcome};
use retrylab::check::Verdict;
use retrylab::plot::{
    write_atomic, write_line_chart, BandPoint, LegendAt, LineChart, Scale, Series,
};
use std::path::Path;

/// A member's size: the unreduced states of the plain search (retrylab's, else stateright's: the same
/// transition relation), or `None` when neither completed.
fn size(rows: &[(Member, &str, Outcome)], member: Member) -> Option<u64> {
    ["retrylab", "stateright"].iter().find_map(|checker| {
        rows.iter()
            .find(|row| {
                row.0 == member && row.1 == *checker && row.2.verdict != Verdict::Incomplete
            })
            .and_then(|row| row.2.states)
    })
}

pub fn write(dir: &Path, checkers: &[&str], rows: &[(Member, &str, Outcome)], threads: usize) {
    let mut chart = LineChart::new(
        format!("Time to verdict, lease-fenced family ({threads} threads)"),
        "states of the unreduced state space (millions)",
        "time to verdict (s)",
    );
    chart.x_scale = Scale::Log;
    chart.y_scale = Scale::Log;
    chart.legend_at = LegendAt::UpperLeft;
    for (index, checker) in checkers.iter().enumerate() {
        let mut points: Vec<BandPoint> = rows
            .iter()
            .filter(|row| row.1 == *checker && row.2.verdict != Verdict::Incomplete)
            .filter_map(|row| {
                let states = size(rows, row.0)?;
                // A run too quick to time is drawn at a millisecond (the log scale needs a positive value).
                Some(BandPoint::exact(
                    states as f64 / 1e6,
                    row.2.seconds.max(0.001),
                ))
            })
            .collect();
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        if !points.is_empty() {
            chart.series.push(Series::new(*checker, index, points));
        }
    }
    let fail = |what: String| -> ! {
        eprintln!("error: {what}");
        std::process::exit(2)
    };
    if let Err(error) = std::fs::create_dir_all(dir) {
        fail(format!("cannot create {}: {error}", dir.display()));
    }
    if let Err(error) = write_atomic(&dir.join("scale.csv"), csv_text(rows).as_bytes()) {
        fail(error.to_string());
    }
    if let Err(error) = write_line_chart(&chart, dir, "scale") {
        fail(error.to_string());
    }
}

/// The rows of a `scale.csv` written before (`--redraw FILE`), for drawing the chart again without the runs;
/// checker names are matched against `checkers`. A malformed row stops with its line number and exit 2.
pub fn read_csv<'a>(path: &str, checkers: &[&'a str]) -> Vec<(Member, &'a str, Outcome)> {
    let fail = |what: String| -> ! {
        eprintln!("error: {path}: {what}");
        std::process::exit(2)
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| fail(error.to_string()));
    let mut rows = Vec::new();
    for (index, line) in text.lines().enumerate().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let bad = || -> ! {
            fail(format!(
                "line {}: expected {}",
                index + 1,
                "clients,processes,crashes,checker,states,seconds,verdict"
            ))
        };
        if fields.len() != 7 {
            bad();
        }
        let size = |field: &str| field.parse::<u8>().unwrap_or_else(|_| bad());
        let member = Member {
            clients: size(fields[0]),
            processes: size(fields[1]),
            crashes: size(fields[2]),
        };
        let checker = *checkers
            .iter()
            .find(|name| **name == fields[3])
            .unwrap_or_else(|| bad());
        let verdict = match fields[6] {
            "holds" => Verdict::Holds,
            "violated" => Verdict::Violated,
            "incomplete" => Verdict::Incomplete,
            _ => bad(),
        };
        let outcome = Outcome {
            states: fields[4].parse().ok(),
            seconds: fields[5].parse().unwrap_or_else(|_| bad()),
            verdict,
        };
        rows.push((member, checker, outcome));
    }
    rows
}
