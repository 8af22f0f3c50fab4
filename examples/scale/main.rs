//! Time to verdict as the lease-fenced design grows: clients 2..4, server processes 2..3, crashes 1..2, each
//! member explored by retrylab (plain, with symmetry, with partial-order reduction, with both) and by stateright 0.30.2 (plain, with its symmetry, fed the
//! same canonical form), on all cores. Every run is a process of its own (this program, with `--run`), killed at
//! `--limit-s` seconds; a checker cut short on a member is not run on the members at least as large. The last
//! line is `ratio: X`: stateright's best time to verdict over retrylab's, on the largest member stateright
//! completes (largest by its symmetry quotient's state count, the one size every member's symmetric runs agree
//! on: `family::ratio`).
//!
//! `cargo run --release --example scale [-- --limit-s 60 --max-states 200000000 --threads N --csv FILE --chart DIR]`; `--chart results/state-space`
//! draws time to verdict against size; `--redraw FILE` reads a table written before and says its ratio again
//! (and, with `--chart DIR`, draws it again)

mod chart;
mod family;
mod stateright_twin;

use family::{member_text, Flags, Member, Outcome};
use retrylab::check::{Model as _, Por, Verdict};
use retrylab::spec::parse_model;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BASE: &str = include_str!("../../models/lease-fenced.toml");
const PROPERTY: &str = "no-duplicate-effect";

/// The explorers of one member, in the order of the table's rows.
const CHECKERS: [&str; 6] = [
    "retrylab",
    "retrylab+symmetry",
    "retrylab+por",
    "retrylab+por+symmetry",
    "stateright",
    "stateright+symmetry",
];

/// One run, in this process: what `--run CHECKER C P K` prints.
fn run_here(checker: &str, member: Member, flags: &Flags) -> Outcome {
    let model = parse_model("lease-fenced (scaled)", &member_text(BASE, member))
        .expect("a valid family member");
    let world = &model.world;
    let symmetry = checker.ends_with("+symmetry");
    let por = if checker.contains("+por") {
        Por::On
    } else {
        Por::Off
    };
    if checker.starts_with("stateright") {
        return stateright_twin::check(world, symmetry, flags);
    }
    let started = Instant::now();
    let report = world
        .checker()
        .threads(flags.threads)
        .states_max(flags.states_max)
        .symmetry(symmetry)
        .por(por)
        .bfs();
    Outcome {
        states: Some(report.states),
        seconds: started.elapsed().as_secs_f64(),
        verdict: report.verdict(PROPERTY),
    }
}

/// One run in a child process, killed at the time limit.
fn run_child(checker: &str, member: Member, flags: &Flags) -> Outcome {
    let exe = std::env::current_exe().expect("this program's path");
    let mut child = Command::new(exe)
        .args(["--threads", &flags.threads.to_string()])
        .args(["--max-states", &flags.states_max.to_string()])
        .args(["--run", checker])
        .args([member.clients, member.processes, member.crashes].map(|n| n.to_string()))
        .stdout(Stdio::piped())
        .spawn()
        .expect("a child process");
    let started = Instant::now();
    let limit = Duration::from_secs(flags.limit_s);
    loop {
        if child.try_wait().expect("waiting").is_some() {
            let output = child.wait_with_output().expect("its output");
            return family::parse_outcome(&String::from_utf8_lossy(&output.stdout));
        }
        if started.elapsed() >= limit {
            let _ = child.kill();
            let _ = child.wait();
            return Outcome {
                states: None,
                seconds: started.elapsed().as_secs_f64(),
                verdict: Verdict::Incomplete,
            };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn main() {
    let flags = family::flags();
    if let Some((checker, member)) = &flags.run {
        let outcome = run_here(checker, *member, &flags);
        println!("{}", family::format_outcome(&outcome));
        return;
    }
    if let Some(csv) = &flags.redraw {
        // A table measured before: its chart drawn again (with `--chart`) and its ratio said again.
        let rows = chart::read_csv(csv, &CHECKERS);
        if let Some(dir) = &flags.chart {
            chart::write(std::path::Path::new(dir), &CHECKERS, &rows, flags.threads);
        }
        print_ratio(&rows);
        return;
    }
    println!(
        "lease-fenced family, {} threads, limit {} s or {} states per run",
        flags.threads, flags.limit_s, flags.states_max
    );
    println!(
        "{:<22} {:<20} {:>12} {:>9}  verdict of {PROPERTY}",
        "member", "checker", "states", "seconds"
    );
    let mut cut: Vec<(&str, Member)> = Vec::new();
    let mut rows = Vec::new();
    for member in family::members() {
        for checker in CHECKERS {
            if cut
                .iter()
                .any(|(c, small)| *c == checker && small.le(member))
            {
                continue;
            }
            let outcome = run_child(checker, member, &flags);
            println!(
                "{:<22} {:<20} {:>12} {:>9.3}  {}",
                member.to_string(),
                checker,
                outcome.states.map_or("-".to_string(), |n| n.to_string()),
                outcome.seconds,
                outcome.verdict.name()
            );
            if outcome.verdict == Verdict::Incomplete {
                cut.push((checker, member));
            }
            rows.push((member, checker, outcome));
        }
    }
    if let Some(path) = &flags.csv {
        family::write_csv(path, &rows);
    }
    if let Some(dir) = &flags.chart {
        chart::write(std::path::Path::new(dir), &CHECKERS, &rows, flags.threads);
    }
    print_ratio(&rows);
}

fn print_ratio(rows: &[(Member, &str, Outcome)]) {
    match family::ratio(rows) {
        Some((member, ratio)) => {
            println!("largest member stateright completes: {member}");
            println!("ratio: {ratio:.2}");
        }
        None => println!("ratio: none (stateright completed no member)"),
    }
}
