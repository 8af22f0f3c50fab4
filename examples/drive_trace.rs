//! Drive a saved model trace against real code (the library's article handler with the model's knobs):
//! `cargo run --release --example drive_trace -- TRACE.json [--store sqlite|memory]`.
//!
//! Prints what every step called on the real store and where the real store's first duplicate payment appeared,
//! next to the model's. Exit codes: 0 real code and model agreed, 1 they diverged, 2 bad input.

use retrylab::builtin::Action;
use retrylab::real::drive::{DriveError, DriveReport, Driver};
use retrylab::real::{MemoryBackend, StdLock, Tables};
use retrylab::runner::lockstep::SqliteBackend;
use retrylab::spec;
use std::process::ExitCode;

const USAGE: &str = "usage: drive_trace TRACE.json [--store sqlite|memory]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, store) = match args.as_slice() {
        [path] => (path.clone(), "sqlite".to_string()),
        [path, flag, store] if flag == "--store" && (store == "sqlite" || store == "memory") => {
            (path.clone(), store.clone())
        }
        _ => return bad_input(USAGE),
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) => return bad_input(&format!("drive_trace: cannot read {path}: {error}")),
    };
    let trace = match spec::parse_trace(&path, &text) {
        Ok(trace) => trace,
        Err(error) => return bad_input(&format!("drive_trace: {error}")),
    };
    let model = match spec::parse_model(&trace.model, &trace.model_source) {
        Ok(model) => model,
        Err(error) => return bad_input(&format!("drive_trace: {error}")),
    };
    let actions: Vec<Action> = trace.steps.iter().map(|step| step.action).collect();
    if let Some(reason) = retrylab::real::drive::unsupported(&model.world) {
        return bad_input(&format!(
            "drive_trace: the article's handler lacks {reason}"
        ));
    }
    let world = model
        .world
        .http()
        .expect("an HTTP world: unsupported() said so");
    let result = if store == "memory" {
        let memory = MemoryBackend::<StdLock<Tables>>::new();
        Driver::new(world, &memory).and_then(|driver| driver.drive_all(&actions))
    } else {
        drive_sqlite(world, &actions)
    };
    println!(
        "{} ({}), {} steps against {store}:",
        trace.model,
        trace.property,
        actions.len()
    );
    match result {
        Ok(report) => {
            report.log.iter().for_each(|line| println!("  {line}"));
            println!(
                "model duplicate at step {:?}; real duplicate at step {:?}; real payments per operation {:?}",
                report.model_duplicate_at, report.real_duplicate_at, report.real_payments_per_op
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            println!("  {error}");
            ExitCode::from(1)
        }
    }
}

fn drive_sqlite(
    world: &retrylab::builtin::HttpWorld,
    actions: &[Action],
) -> Result<DriveReport, DriveError> {
    let store_error = |error| DriveError::Store { step: 0, error };
    let folder = tempfile::tempdir()
        .map_err(|e| store_error(retrylab::handler::StoreError::Refused(e.to_string())))?;
    let backend = SqliteBackend::create(&folder.path().join("idem.db")).map_err(store_error)?;
    Driver::new(world, &backend)?.drive_all(actions)
}

fn bad_input(message: &str) -> ExitCode {
    eprintln!("{message}");
    ExitCode::from(2)
}
