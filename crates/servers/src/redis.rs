//! A throwaway Redis server: `redis-server` on a free loopback port (Redis's `--port 0` turns TCP off, so the
//! port is chosen first), nothing persisted (`--save "" --appendonly no`), its directory a temporary one.

use super::{free_loopback_port, missing};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to get the server.
const INSTALL: &str = "install with apt-get install -y redis-server";

/// How long a starting server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(10);

pub struct TempRedis {
    child: Child,
    _dir: tempfile::TempDir,
    pub port: u16,
}

/// `redis-server` on the PATH (Debian installs it in /usr/bin).
fn server_bin() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("redis-server"))
        .find(|bin| bin.is_file())
}

impl TempRedis {
    /// Start a server, or `None` when Redis is not installed (see `servers::missing`). Panics when it is
    /// installed but does not start.
    pub fn start() -> Option<TempRedis> {
        if server_bin().is_none() {
            missing("Redis", "apt-get install -y redis-server")?;
        }
        Some(TempRedis::launch().unwrap_or_else(|error| panic!("{error}")))
    }

    /// Start a server (`retrylab probe --redis auto`): an error naming the package when Redis is not installed,
    /// or why it did not start.
    pub fn launch() -> Result<TempRedis, String> {
        let bin =
            server_bin().ok_or_else(|| format!("redis-server is not installed: {INSTALL}"))?;
        let dir = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
        let port = free_loopback_port().map_err(|e| format!("a free loopback port: {e}"))?;
        let log = std::fs::File::create(dir.path().join("redis.log"))
            .map_err(|e| format!("redis.log: {e}"))?;
        let child = Command::new(&bin)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|error| format!("{}: {error}", bin.display()))?;
        let server = TempRedis {
            child,
            _dir: dir,
            port,
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if started.elapsed() >= START_TIMEOUT {
                return Err(format!(
                    "redis-server did not listen on 127.0.0.1:{port} within {START_TIMEOUT:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for TempRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
