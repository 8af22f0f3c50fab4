//! A throwaway PostgreSQL server: `initdb` into a temporary directory and `pg_ctl start` on a free loopback port.
//! `initdb` refuses to run as root, so as root both run as the `postgres` user (`runuser`) on a directory it owns.

use super::{free_loopback_port, missing};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where Debian installs the server binaries.
const BIN_GLOB_PARENT: &str = "/usr/lib/postgresql";

pub struct TempPostgres {
    bin: PathBuf,
    data: tempfile::TempDir,
    pub port: u16,
    as_postgres_user: bool,
}

fn server_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir(BIN_GLOB_PARENT)
        .ok()?
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

impl TempPostgres {
    /// Start a server, or `None` when PostgreSQL is not installed (see `servers::missing`). Panics when it is
    /// installed but does not start (that is a real failure).
    pub fn start() -> Option<TempPostgres> {
        if server_bin().is_none() {
            missing("PostgreSQL", "apt-get install -y postgresql")?;
        }
        Some(TempPostgres::launch().unwrap_or_else(|error| panic!("{error}")))
    }

    /// Start a server (`retrylab probe --postgres auto`): an error naming the package when PostgreSQL is not
    /// installed, or why it did not start.
    pub fn launch() -> Result<TempPostgres, String> {
        let bin = server_bin().ok_or_else(|| {
            format!("PostgreSQL is not installed (no {BIN_GLOB_PARENT}/*/bin/initdb): install with apt-get install -y postgresql")
        })?;
        let as_postgres_user = is_root();
        let data = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
        if as_postgres_user {
            let chown = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(data.path())
                .output()
                .map_err(|e| format!("chown: {e}"))?;
            if !chown.status.success() {
                return Err(format!("chown: {}", text(&chown)));
            }
        }
        let port = free_loopback_port().map_err(|e| format!("a free loopback port: {e}"))?;
        let server = TempPostgres {
            bin,
            data,
            port,
            as_postgres_user,
        };
        server.init_and_start()?;
        Ok(server)
    }

    fn init_and_start(&self) -> Result<(), String> {
        let cluster = self.data.path().join("cluster");
        let init = self.run("initdb", &["-A", "trust", "-U", "postgres", "-D"], &cluster)?;
        if !init.status.success() {
            return Err(format!("initdb: {}", text(&init)));
        }
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.data.path().display()
        );
        let log = self.data.path().join("server.log").display().to_string();
        let args = ["-w", "-l", &log, "-o", &options, "start", "-D"];
        let start = self.run("pg_ctl", &args, &cluster)?;
        if !start.status.success() {
            return Err(format!("pg_ctl start: {}", text(&start)));
        }
        Ok(())
    }

    /// `postgresql://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Connection parameters for the `postgres` crate.
    pub fn params(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }

    fn run(&self, program: &str, args: &[&str], dir: &Path) -> Result<Output, String> {
        let binary = self.bin.join(program);
        let mut command = if self.as_postgres_user {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(&binary);
            command
        } else {
            Command::new(&binary)
        };
        command
            .args(args)
            .arg(dir)
            .current_dir(self.data.path())
            .output()
            .map_err(|error| format!("{}: {error}", binary.display()))
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        let cluster = self.data.path().join("cluster");
        let _ = self.run("pg_ctl", &["-m", "immediate", "stop", "-D"], &cluster);
    }
}
