//! state-space: how the state space of the article's model grows with clients, attempts and
//! faults, with and without symmetry reduction. Unique-state counts are exact (or marked
//! incomplete past the state bound), so the output is the same on every machine; times are not
//! written. Not a seeded experiment: every search is exhaustive.

use serde::Serialize;

use crate::builtin::{Faults, World, WorldBuilder};
use crate::check::Model as _;
use crate::output::Output;
use crate::plot::{BandPoint, LineChart, Scale, Series};
use crate::table::{Align, Markdown};

/// One search: a dimension's value, with or without symmetry reduction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub dimension: &'static str,
    pub value: u32,
    pub symmetry: bool,
    pub states: u64,
    pub transitions: u64,
    pub complete: bool,
}

/// The fault budgets in the order they are switched on: crash, lost response, duplicated request, early timeout.
pub fn faults_up_to(count: u32) -> Faults {
    let mut faults = Faults::default();
    if count >= 1 {
        faults.crashes = 1;
    }
    if count >= 2 {
        faults.drop_responses = 1;
    }
    if count >= 3 {
        faults.duplicate_requests = 1;
    }
    if count >= 4 {
        faults.early_timeouts = 1;
    }
    faults
}

/// Every variant of `base` searched with and without symmetry, each stopped past `states_max`.
/// `on_search` hears each row as it is done (progress on stderr).
pub fn search(base: &World, states_max: u64, on_search: &dyn Fn(&Row)) -> Vec<Row> {
    let vary = |change: &dyn Fn(WorldBuilder) -> WorldBuilder| -> World {
        change(base.to_builder())
            .build()
            .expect("a variant of a valid model is valid")
    };
    let mut worlds: Vec<(&'static str, u32, World)> = Vec::new();
    for clients in 1..=3u8 {
        worlds.push((
            "clients",
            u32::from(clients),
            vary(&|b| b.client_count(clients)),
        ));
    }
    for attempts in 1..=4u8 {
        worlds.push((
            "max-attempts",
            u32::from(attempts),
            vary(&|b| b.attempts_max(attempts)),
        ));
    }
    for faults in 0..=4u32 {
        worlds.push(("faults", faults, vary(&|b| b.faults(faults_up_to(faults)))));
    }
    let mut rows = Vec::new();
    for (dimension, value, world) in &worlds {
        for symmetry in [false, true] {
            let report = world
                .checker()
                .states_max(states_max)
                .symmetry(symmetry)
                .bfs();
            let row = Row {
                dimension,
                value: *value,
                symmetry,
                states: report.states,
                transitions: report.transitions,
                complete: report.complete,
            };
            on_search(&row);
            rows.push(row);
        }
    }
    rows
}

/// The dimensions varied: (name in `summary.csv`, chart x label, chart file stem).
const DIMENSIONS: [(&str, &str, &str); 3] = [
    ("clients", "clients (count)", "clients"),
    (
        "max-attempts",
        "max attempts per operation (count)",
        "attempts",
    ),
    (
        "faults",
        "fault kinds switched on (count: crash, lost response, duplicate, early timeout)",
        "faults",
    ),
];

/// `summary.csv`, a chart per dimension and the README.
pub fn report(rows: &[Row]) -> Result<Output, String> {
    let mut output = Output::default();
    output.table("summary.csv", rows)?;
    let mut readme = String::from(
        "# State-space growth\n\nUnique states of the article's model (`models/article-sqlite.toml`: 2 clients, 2 server \
         processes, 3 attempts, one crash, one lost response, one duplicated request, one early timeout), varying \
         one dimension at a time, explored exhaustively with and without symmetry reduction (clients and server \
         processes relabelled into a canonical order). Regenerate with `cargo run --release --bin state-space`.\n\n",
    );
    let mut table = Markdown::new(
        [
            "dimension",
            "value",
            "states",
            "states with symmetry",
            "saving",
        ]
        .map(|title| (title, Align::Text)),
    );
    for (dimension, x_label, stem) in DIMENSIONS {
        output.chart(stem, chart(rows, dimension, x_label));
        saving_rows(rows, dimension, &mut table);
    }
    readme += &table.finish();
    readme.push_str(
        "\nCharts: `clients.svg`/`.png`, `attempts.svg`/`.png`, `faults.svg`/`.png`. A count marked incomplete hit \
         the `--max-states` bound and is a lower bound. The saving grows with the number of interchangeable \
         clients (up to N! for N clients) and processes.\n\n\
         Time to verdict as the lease-fenced design grows (the `scale` example, stateright side by side): \
         `scale.md`.\n",
    );
    output.text("README.md", readme);
    Ok(output)
}

/// Unique states against one dimension, without and with symmetry reduction.
fn chart(rows: &[Row], dimension: &str, x_label: &str) -> LineChart {
    let mut chart = LineChart::new(
        format!("Unique states against {dimension}"),
        x_label,
        "unique states (count, log scale)",
    );
    chart.y_scale = Scale::Log;
    for (index, symmetry) in [false, true].into_iter().enumerate() {
        let points = rows
            .iter()
            .filter(|row| row.dimension == dimension && row.symmetry == symmetry)
            .map(|row| BandPoint::exact(f64::from(row.value), row.states.max(1) as f64))
            .collect();
        let label = if symmetry {
            "with symmetry reduction"
        } else {
            "without reduction"
        };
        chart.series.push(Series::new(label, index, points));
    }
    chart
}

/// A row per value of `dimension`: the states without and with reduction, and the saving.
fn saving_rows(rows: &[Row], dimension: &str, table: &mut Markdown) {
    let states = |row: &Row| {
        let mark = if row.complete {
            ""
        } else {
            " (incomplete: at least)"
        };
        format!("{}{mark}", row.states)
    };
    for plain in rows
        .iter()
        .filter(|row| row.dimension == dimension && !row.symmetry)
    {
        let reduced = rows
            .iter()
            .find(|row| row.dimension == dimension && row.symmetry && row.value == plain.value)
            .expect("both runs exist");
        table.row([
            dimension.to_string(),
            plain.value.to_string(),
            states(plain),
            states(reduced),
            format!("{:.1}x", plain.states as f64 / reduced.states.max(1) as f64),
        ]);
    }
}
