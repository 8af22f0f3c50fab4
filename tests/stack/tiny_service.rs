//! What the tests of the gray-box probe on the tiny service (tests/graybox_tiny/service.py) share: the binary,
//! Debian's Python, the service's files, and PostgreSQL with psycopg2 or one `skipped:` line (a failure under
//! RETRYLAB_REQUIRE_SERVERS=1).

use retrylab::servers::postgres::TempPostgres;
use std::path::Path;
use std::process::Command;

pub const BIN: &str = env!("CARGO_BIN_EXE_retrylab");
/// Debian's interpreter: the one python3-psycopg2 installs into (not a pyenv shim earlier on the PATH).
pub const PYTHON: &str = "/usr/bin/python3";

/// A file of the tiny service.
pub fn tiny(file: &str) -> String {
    format!("{}/tests/graybox_tiny/{file}", env!("CARGO_MANIFEST_DIR"))
}

/// PostgreSQL and the service's Python, or None after one `skipped:` line.
pub fn servers() -> Option<TempPostgres> {
    let python = Command::new(PYTHON)
        .args(["-c", "import psycopg2"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !python {
        retrylab::servers::missing("python3-psycopg2", "apt-get install -y python3-psycopg2")?;
    }
    TempPostgres::start()
}

/// `retrylab probe` of the service `exec` over `pg`: the tiny service's count and reset, JSON lines, schedules in
/// `dir`.
pub fn probe_exec(pg: &TempPostgres, exec: &str, dir: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["probe", "http://127.0.0.1:0/payments", "--exec", exec])
        .arg("--postgres")
        .arg(format!(
            "postgres://postgres@127.0.0.1:{}/postgres",
            pg.port
        ))
        .args([
            "--count-sql",
            "SELECT count(*) FROM payments",
            "--reset-sql",
        ])
        .arg(tiny("reset.sql"))
        .arg("--schedule-dir")
        .arg(dir)
        .arg("--json");
    command
}

/// `probe_exec` of the tiny service in `design`.
pub fn probe(pg: &TempPostgres, design: &str, dir: &Path) -> Command {
    probe_exec(
        pg,
        &format!("{PYTHON} {} {design}", tiny("service.py")),
        dir,
    )
}
