//! A throwaway nats-server with JetStream: a free loopback port, its store in a temporary directory, killed when
//! dropped. The server is started with `-a 127.0.0.1`, so it listens on loopback only (its monitoring and cluster
//! ports stay off: nothing asks for them).

use super::{free_loopback_port, missing};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian's package installs the server (often not on a non-root PATH).
const DEBIAN_BINARY: &str = "/usr/sbin/nats-server";

/// How long a starting server may take to accept connections before the start is a failure.
const START_TIMEOUT: Duration = Duration::from_secs(10);

pub struct TempNats {
    child: Child,
    dir: tempfile::TempDir,
    pub port: u16,
}

fn server_binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("nats-server"))
            .find(|candidate| candidate.is_file())
    });
    on_path.or_else(|| {
        let debian = PathBuf::from(DEBIAN_BINARY);
        debian.is_file().then_some(debian)
    })
}

impl TempNats {
    /// Start a server, or `None` when nats-server is not installed (see `servers::missing`). Panics when it is
    /// installed but does not start (that is a real failure).
    pub fn start() -> Option<TempNats> {
        let Some(binary) = server_binary() else {
            missing("nats-server", "apt-get install -y nats-server")?;
            unreachable!()
        };
        let dir = tempfile::tempdir().expect("a temporary directory");
        let port = free_loopback_port().expect("a free loopback port");
        let log = std::fs::File::create(dir.path().join("server.log")).expect("a log file");
        let child = Command::new(&binary)
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(dir.path().join("store"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|error| panic!("{}: {error}", binary.display()));
        let mut server = TempNats { child, dir, port };
        server.wait_ready();
        Some(server)
    }

    /// The client URL.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The server's log so far (for a failure message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    fn wait_ready(&mut self) {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("nats-server exited with {status}: {}", self.log());
            }
            // JetStream is up before the client port opens ("Server is ready" follows it).
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            assert!(
                started.elapsed() < START_TIMEOUT,
                "nats-server did not listen on 127.0.0.1:{} within {START_TIMEOUT:?}: {}",
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for TempNats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
