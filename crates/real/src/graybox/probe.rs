//! `retrylab probe URL --exec CMD`: the gray-box checks from start to end. Builds the bench (gates, service,
//! effect counter), runs each check asked for, saves each failure's schedule with its replay command, or runs
//! one saved schedule again (`--replay`). The bench is dropped on every way out, which kills the service's
//! process group and closes the gates.

use super::checks::{run_check, CheckOptions};
use super::effects::{CountBy, Effects, ResetBy};
use super::lab::{Lab, LabConfig, LabError};
use super::replay::{replay, Replayed};
use super::report::{GrayCheck, GrayResult};
use super::schedule::{shell_quote, Schedule};
use std::path::PathBuf;

/// Everything the gray-box probe runs from, checked.
#[derive(Clone, Debug)]
pub struct GrayConfig {
    pub lab: LabConfig,
    pub count: CountBy,
    pub reset: Option<ResetBy>,
    pub checks: Vec<GrayCheck>,
    pub options: CheckOptions,
    pub schedule_dir: PathBuf,
    /// The probe's command line without `--replay` (the replay command is it plus `--replay FILE`).
    pub command_line: String,
}

async fn bench(config: &GrayConfig) -> Result<Lab, LabError> {
    let effects = Effects::new(
        config.lab.postgres.clone(),
        config.count.clone(),
        config.reset.clone(),
        config.lab.request_timeout,
    );
    // Reset and counter must work before the service runs: a wrong --count-sql is bad input, not a failed
    // check (and the reset may create what the count reads).
    effects.reset().await.map_err(LabError::Store)?;
    effects.count().await.map_err(LabError::Store)?;
    Lab::start(config.lab.clone(), effects).await
}

/// Run the checks asked for (in `GrayCheck::ALL` order).
pub async fn run_checks(config: &GrayConfig) -> Result<Vec<GrayResult>, LabError> {
    let mut lab = bench(config).await?;
    let mut results = Vec::new();
    for check in GrayCheck::ALL {
        if !config.checks.contains(&check) {
            continue;
        }
        let finding = run_check(&mut lab, check, &config.options).await?;
        let (schedule, reproduce) = match &finding.schedule {
            Some(saved) => {
                let path = saved.save(&config.schedule_dir).map_err(LabError::Store)?;
                let path = path.display().to_string();
                let reproduce = format!("{} --replay {}", config.command_line, shell_quote(&path));
                (Some(path), reproduce)
            }
            None => (
                None,
                format!("{} --check {}", config.command_line, check.name()),
            ),
        };
        results.push(GrayResult {
            check: check.name().into(),
            result: finding.verdict,
            evidence: finding.evidence,
            reproduce,
            schedule,
        });
    }
    Ok(results)
}

/// Run one saved schedule again.
pub async fn run_replay(config: &GrayConfig, saved: &Schedule) -> Result<Replayed, LabError> {
    let mut lab = bench(config).await?;
    replay(&mut lab, saved, &config.options).await
}
