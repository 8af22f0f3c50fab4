//! A throwaway single-node Slurm cluster: `munged`, `slurmctld` and `slurmd` started in the foreground on a
//! temporary directory (the munge key and socket, the state and spool folders, a generated `slurm.conf`, the
//! daemons' logs) with free loopback ports, running as the current user. Debian's `slurm-wlm` and `munge`
//! packages start no service a test could use, and the cluster must not outlive the test: dropping it cancels
//! its jobs (their `slurmstepd` runs in its own session, outside the daemons' process group) and kills the
//! daemons, even when the test panicked.
//!
//! The node is named `localhost` and addressed as 127.0.0.1 (`slurmd -N localhost`), so nothing depends on the
//! machine's hostname resolving; `NoInAddrAny,NoCtldInAddrAny` keep both daemons bound to that address. No
//! cgroups (`proctrack/linuxproc`, `task/none`), so it runs without systemd; no accounting database, so a job's
//! end is read from `squeue`, which keeps finished jobs for `MinJobAge` (300 s by default).

use super::{free_loopback_port, missing, servers_required};
use std::collections::BTreeMap;
use std::fs::File;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long each daemon may take to be ready (the node to register idle included).
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long dropping the cluster waits for its cancelled jobs to end before killing the daemons.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(15);
const POLL: Duration = Duration::from_millis(100);
/// CPUs the node declares (`SlurmdParameters=config_overrides` lets it declare more than the machine has), so an
/// 8-task array runs at once even on 2 cores.
const NODE_CPUS: usize = 8;
const INSTALL: &str = "apt-get install -y slurm-wlm munge";

/// Daemons (usually in /usr/sbin, not on a user's PATH) and the client commands the cluster needs.
const PROGRAMS: [&str; 8] = [
    "mungekey",
    "munged",
    "slurmctld",
    "slurmd",
    "sbatch",
    "squeue",
    "scancel",
    "sinfo",
];

/// Job states after which a job never runs again (`squeue -o %T`).
const ENDED: [&str; 9] = [
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
];

pub struct TempSlurm {
    programs: BTreeMap<&'static str, PathBuf>,
    dir: tempfile::TempDir,
    /// Started daemons, in start order (stopped in reverse).
    daemons: Vec<(&'static str, Child)>,
    user: String,
    pub ctld_port: u16,
    pub slurmd_port: u16,
}

/// `name` on the PATH or in the system folders where Debian puts daemons.
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|bin| bin.is_file())
}

/// The current user's name (the daemons and the jobs run as this user).
fn user_name() -> Result<String, String> {
    let out = Command::new("id")
        .arg("-un")
        .output()
        .map_err(|error| format!("id -un: {error}"))?;
    let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !name.is_empty() {
        Ok(name)
    } else {
        Err("id -un names no user".to_string())
    }
}

impl TempSlurm {
    /// Start a cluster whose node is idle, or `None` when Slurm or munge is not installed (see
    /// `servers::missing`), or when they are installed but cannot run here: then one `skipped:` line quotes the
    /// daemon's own reason, and under `RETRYLAB_REQUIRE_SERVERS=1` that is a failure instead.
    pub fn start() -> Option<TempSlurm> {
        let mut programs = BTreeMap::new();
        for name in PROGRAMS {
            let Some(bin) = find_program(name) else {
                missing(&format!("Slurm ({name})"), INSTALL)?;
                unreachable!()
            };
            programs.insert(name, bin);
        }
        match Self::launch(programs) {
            Ok(cluster) => Some(cluster),
            Err(reason) => {
                assert!(
                    !servers_required(),
                    "Slurm is required (RETRYLAB_REQUIRE_SERVERS=1) but did not start: {reason}"
                );
                println!("skipped: Slurm did not start here: {reason}");
                None
            }
        }
    }

    /// The daemons one after the other, each ready before the next starts. On an error the partly started
    /// cluster is dropped, which stops what did start.
    fn launch(programs: BTreeMap<&'static str, PathBuf>) -> Result<TempSlurm, String> {
        let dir = tempfile::tempdir().map_err(|error| format!("a temporary directory: {error}"))?;
        let port = || free_loopback_port().map_err(|error| format!("a free port: {error}"));
        let ctld_port = port()?;
        // Two ports free at once: the second asked while the first is still free could be the same one.
        let slurmd_port = (0..16)
            .map(|_| port())
            .find(|found| found.as_ref().map_or(true, |&found| found != ctld_port))
            .unwrap_or_else(|| Err("a second free port".to_string()))?;
        let mut cluster = TempSlurm {
            programs,
            dir,
            daemons: Vec::new(),
            user: user_name()?,
            ctld_port,
            slurmd_port,
        };
        cluster.prepare_dirs()?;
        cluster.start_munge()?;
        std::fs::write(cluster.conf(), cluster.conf_text())
            .map_err(|error| format!("writing slurm.conf: {error}"))?;
        let conf = cluster.conf().display().to_string();
        cluster.spawn("slurmctld", &["-D", "-i", "-f", &conf])?;
        cluster.wait_listening("slurmctld", cluster.ctld_port)?;
        cluster.spawn("slurmd", &["-D", "-N", "localhost", "-f", &conf])?;
        cluster.wait_listening("slurmd", cluster.slurmd_port)?;
        cluster.wait_node_idle()?;
        Ok(cluster)
    }

    /// munged wants every folder above its socket searchable by all and its key private; a temporary directory
    /// is created 0700, so it is opened to 0755 (it holds nothing secret but the key, which stays 0600).
    fn prepare_dirs(&self) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let open = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(self.dir.path(), open.clone())
            .map_err(|error| format!("chmod {}: {error}", self.dir.path().display()))?;
        for sub in ["munge", "state", "spool"] {
            let path = self.dir.path().join(sub);
            std::fs::create_dir(&path)
                .and_then(|()| std::fs::set_permissions(&path, open.clone()))
                .map_err(|error| format!("{}: {error}", path.display()))?;
        }
        Ok(())
    }

    fn munge_path(&self, name: &str) -> PathBuf {
        self.dir.path().join("munge").join(name)
    }

    /// A fresh key, then `munged` in the foreground on a socket in the temporary directory.
    fn start_munge(&mut self) -> Result<(), String> {
        let key = self.munge_path("munge.key");
        let created = Command::new(&self.programs["mungekey"])
            .arg("--create")
            .arg(format!("--keyfile={}", key.display()))
            .output()
            .map_err(|error| format!("mungekey: {error}"))?;
        if !created.status.success() {
            return Err(format!(
                "mungekey: {}",
                String::from_utf8_lossy(&created.stderr).trim()
            ));
        }
        let arg =
            |option: &str, name: &str| format!("--{option}={}", self.munge_path(name).display());
        // `--force` makes munged's checks on the folders above its socket warnings: they guard a socket other
        // users share, and a TMPDIR inside a private (0700) folder would fail them; here every client is us.
        let args = [
            "--foreground".to_string(),
            "--force".to_string(),
            arg("socket", "socket"),
            arg("key-file", "munge.key"),
            arg("log-file", "munged.log"),
            arg("pid-file", "munged.pid"),
            arg("seed-file", "munged.seed"),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.spawn("munged", &args)?;
        let socket = self.munge_path("socket");
        self.wait_until("munged", || Ok(socket.exists()))
    }

    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    fn conf_text(&self) -> String {
        let dir = self.dir.path().display();
        let user = &self.user;
        let socket = self.munge_path("socket").display().to_string();
        format!(
            "# Generated by retrylab's servers::slurm for one test; removed with it.
ClusterName=retrylab-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs={NODE_CPUS} State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
",
            ctld_port = self.ctld_port,
            slurmd_port = self.slurmd_port,
        )
    }

    /// Start daemon `name` in the foreground, its output into `NAME.log` in the temporary directory.
    fn spawn(&mut self, name: &'static str, args: &[&str]) -> Result<(), String> {
        let log_path = self.log_path(name);
        let log =
            File::create(&log_path).map_err(|error| format!("{}: {error}", log_path.display()))?;
        let err = log
            .try_clone()
            .map_err(|error| format!("{name} log: {error}"))?;
        let child = Command::new(&self.programs[name])
            .args(args)
            .env("SLURM_CONF", self.conf())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|error| format!("{name}: {error}"))?;
        self.daemons.push((name, child));
        Ok(())
    }

    fn log_path(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}.log"))
    }

    /// The daemon's last `fatal` line (its own reason for stopping), else its last line. Not its last `error`
    /// line: Debian's build logs harmless ones at every start (no PMIx library, for one).
    pub fn log_reason(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.log_path(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let reason = lines
            .iter()
            .rev()
            .find(|line| line.to_ascii_lowercase().contains("fatal"))
            .or(lines.last());
        let reason = reason.map_or("(no output)", |line| line.trim());
        if reason.starts_with(name) {
            reason.to_string()
        } else {
            format!("{name}: {reason}")
        }
    }

    /// Poll `ready` until it says yes, failing with the daemon's reason when it exits or the time is up.
    fn wait_until(
        &mut self,
        name: &str,
        mut ready: impl FnMut() -> Result<bool, String>,
    ) -> Result<(), String> {
        let started = Instant::now();
        loop {
            if ready()? {
                return Ok(());
            }
            let exited = self
                .daemons
                .iter_mut()
                .find(|(daemon, _)| *daemon == name)
                .and_then(|(_, child)| child.try_wait().ok().flatten());
            if let Some(status) = exited {
                return Err(format!("{} ({status})", self.log_reason(name)));
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(format!(
                    "not ready within {START_TIMEOUT:?}; {}",
                    self.log_reason(name)
                ));
            }
            std::thread::sleep(POLL);
        }
    }

    fn wait_listening(&mut self, name: &str, port: u16) -> Result<(), String> {
        self.wait_until(name, || Ok(TcpStream::connect(("127.0.0.1", port)).is_ok()))
    }

    /// The node registered and idle (`sinfo`); a node Slurm drained is an error with Slurm's reason.
    fn wait_node_idle(&mut self) -> Result<(), String> {
        let mut sinfo = self.command("sinfo");
        sinfo.args(["-h", "-N", "-o", "%T|%E"]);
        self.wait_until("slurmd", move || {
            let out = sinfo.output().map_err(|error| format!("sinfo: {error}"))?;
            let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let (state, reason) = text.split_once('|').unwrap_or((&text, ""));
            // Slurm drains a node it finds unfit (its configuration, its resources) and says why.
            if state.starts_with("drain") {
                return Err(format!("the node is {state}: {reason}"));
            }
            Ok(state == "idle")
        })
    }

    /// A client command (`sbatch`, `squeue`, `scancel`, `sinfo`) talking to this cluster only.
    pub fn command(&self, program: &str) -> Command {
        let bin = self
            .programs
            .get(program)
            .cloned()
            .unwrap_or_else(|| program.into());
        let mut command = Command::new(bin);
        command.env("SLURM_CONF", self.conf());
        command
    }

    /// Each task's state (`JOBID_TASK` -> `COMPLETED`, ...) once every task of `job` has ended; an error with
    /// the states seen last when `timeout` passes first.
    pub fn wait_for_job(
        &self,
        job: &str,
        timeout: Duration,
    ) -> Result<BTreeMap<String, String>, String> {
        let started = Instant::now();
        loop {
            let states = self.job_states(job)?;
            let ended = states.values().all(|state| ENDED.contains(&state.as_str()));
            if !states.is_empty() && ended {
                return Ok(states);
            }
            if started.elapsed() > timeout {
                return Err(format!(
                    "job {job} not ended within {timeout:?}: {states:?}"
                ));
            }
            std::thread::sleep(POLL);
        }
    }

    fn job_states(&self, job: &str) -> Result<BTreeMap<String, String>, String> {
        let out = self
            .command("squeue")
            .args(["-h", "-t", "all", "-o", "%i %T", "-j", job])
            .output()
            .map_err(|error| format!("squeue: {error}"))?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| line.split_once(' '))
            .map(|(task, state)| (task.to_string(), state.trim().to_string()))
            .collect())
    }

    /// The daemons' process ids (to check they are gone once the cluster is dropped).
    pub fn pids(&self) -> Vec<u32> {
        self.daemons.iter().map(|(_, child)| child.id()).collect()
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Cancel every job of this cluster and wait (bounded) until none is left running: a batch step's
    /// `slurmstepd` is in its own session and would outlive the daemons.
    fn cancel_jobs(&self) {
        let running = || {
            self.command("squeue")
                .args(["-h", "-o", "%i"])
                .output()
                .is_ok_and(|out| out.status.success() && !out.stdout.is_empty())
        };
        if !self.daemons.iter().any(|(name, _)| *name == "slurmd") || !running() {
            return;
        }
        let _ = self
            .command("scancel")
            .arg(format!("--user={}", self.user))
            .output();
        let started = Instant::now();
        while running() && started.elapsed() < CANCEL_TIMEOUT {
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for TempSlurm {
    fn drop(&mut self) {
        self.cancel_jobs();
        while let Some((_, mut child)) = self.daemons.pop() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
