//! What the measuring examples (`vs_stateright`, `scaling`) share: their flags and loading the model.

use retrylab::spec::{load_model, ModelFile};

/// `[MODEL] [--threads N] [--runs N]`, and for the examples that take them (`reductions`), `--por on|off` and
/// `--symmetry`.
pub struct Args {
    pub model_path: String,
    pub threads: usize,
    pub runs: usize,
    pub model: ModelFile,
    pub por: bool,
    pub symmetry: bool,
}

/// Parse the flags (defaults: `default_model`, all cores, `default_runs`) and load the model; a bad flag or
/// model file prints one line and exits with code 2.
pub fn args(default_model: &str, default_runs: usize, reductions: bool) -> Args {
    parse(default_model, default_runs, reductions).unwrap_or_else(|error| {
        eprintln!("error: {error}");
        std::process::exit(2);
    })
}

fn parse(default_model: &str, default_runs: usize, reductions: bool) -> Result<Args, String> {
    let mut model_path = default_model.to_string();
    let (mut por, mut symmetry) = (false, false);
    let mut threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut runs = default_runs;
    let mut given = std::env::args().skip(1);
    while let Some(arg) = given.next() {
        let mut number = |flag: &str| -> Result<usize, String> {
            given
                .next()
                .and_then(|value| value.parse().ok())
                .filter(|value| *value > 0)
                .ok_or(format!("{flag} needs a positive number"))
        };
        match arg.as_str() {
            "--threads" => threads = number("--threads")?,
            "--runs" => runs = number("--runs")?,
            "--por" if reductions => {
                por = match given.next().as_deref() {
                    Some("on") => true,
                    Some("off") => false,
                    _ => return Err("--por needs on or off".into()),
                }
            }
            "--symmetry" if reductions => symmetry = true,
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}")),
            path => model_path = path.to_string(),
        }
    }
    let model = load_model(std::path::Path::new(&model_path)).map_err(|error| error.to_string())?;
    Ok(Args {
        model_path,
        threads,
        runs,
        model,
        por,
        symmetry,
    })
}
