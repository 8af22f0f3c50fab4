//! The service's processes as /proc shows them: everything its shell started, wherever it went. A process
//! group is not enough (a child may `setsid` into a session of its own) and neither is the parent chain (a
//! daemon's parent exits and it is re-parented to init), so each launch also carries a mark in its environment
//! ([`MARK_VAR`]), which every descendant inherits whatever it does with its group, session or parent. A process
//! that wipes its own environment *and* leaves the group after its parent exits escapes; none of the servers and
//! frameworks the probe is meant for do.

use std::collections::HashSet;
use std::time::{Duration, Instant};

/// The environment variable that marks the service's processes (its value is unique to one `Service`).
pub const MARK_VAR: &str = "RETRYLAB_SERVICE_MARK";
/// Between two looks at a tree being killed (a SIGKILLed process is gone when next scheduled).
const KILL_POLL: Duration = Duration::from_millis(10);

/// One line of /proc/PID/stat, the fields used here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    /// A zombie runs no code: it is as good as gone.
    pub zombie: bool,
}

/// Parse /proc/PID/stat (the command name, in parentheses, may hold spaces and parentheses: fields are counted
/// after the last `)`).
pub fn parse_stat(pid: i32, text: &str) -> Option<Stat> {
    let rest = text.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    Some(Stat {
        pid,
        ppid,
        pgid,
        zombie: state == "Z" || state == "X",
    })
}

fn stats() -> Vec<Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            parse_stat(
                pid,
                &std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?,
            )
        })
        .collect()
}

/// Whether the process's environment holds `MARK_VAR=mark` (unreadable: another user's, or gone).
fn carries(pid: i32, entry: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|environ| environ.split(|&b| b == 0).any(|var| var == entry))
}

/// The `MARK_VAR=mark` entry as it appears in /proc/PID/environ.
pub fn mark_entry(mark: &str) -> String {
    format!("{MARK_VAR}={mark}")
}

/// The live processes of the tree rooted at `root`: `root` itself, its process group, every process carrying
/// `mark`, and every descendant of those (by parent chains). Never the probe itself.
pub fn members(root: i32, mark: &str) -> Vec<i32> {
    let entry = mark_entry(mark);
    let own = std::process::id() as i32;
    let all: Vec<Stat> = stats()
        .into_iter()
        .filter(|s| s.pid != own && s.pid > 1)
        .collect();
    let mut tree: HashSet<i32> = all
        .iter()
        .filter(|s| s.pid == root || s.pgid == root || carries(s.pid, entry.as_bytes()))
        .map(|s| s.pid)
        .collect();
    // Parent chains: add children of members until nothing new comes (depth is small).
    loop {
        let before = tree.len();
        for stat in &all {
            if tree.contains(&stat.ppid) {
                tree.insert(stat.pid);
            }
        }
        if tree.len() == before {
            break;
        }
    }
    let mut live: Vec<i32> = all
        .iter()
        .filter(|s| tree.contains(&s.pid) && !s.zombie)
        .map(|s| s.pid)
        .collect();
    live.sort_unstable();
    live
}

/// SIGKILL the whole tree, again and again (a process may fork between the look and the kill), until none of
/// it is alive; the ones still alive after `bound` when not.
pub fn kill_tree(root: i32, mark: &str, bound: Duration) -> Result<(), Vec<i32>> {
    let started = Instant::now();
    loop {
        let live = members(root, mark);
        if live.is_empty() {
            return Ok(());
        }
        if started.elapsed() >= bound {
            return Err(live);
        }
        for pid in live {
            // SAFETY: kill(2) on a process id read from /proc just now; it touches no memory of ours.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(KILL_POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    #[test]
    fn a_stat_line_with_parentheses_in_the_name_parses() {
        let stat = parse_stat(7, "7 (a) b (c)) S 3 7 7 0 -1").unwrap();
        assert_eq!((stat.ppid, stat.pgid, stat.zombie), (3, 7, false));
        assert!(parse_stat(7, "7 (x) Z 1 7 7").unwrap().zombie);
        assert_eq!(parse_stat(7, "garbage"), None);
    }

    #[test]
    fn a_setsid_grandchild_is_found_by_its_mark_and_killed() {
        let mark = format!("test-{}-setsid", std::process::id());
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        // The grandchild leaves the group and session, and its parent shell exits: only the mark finds it.
        let mut shell = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "setsid sh -c 'echo $$ > {}; exec sleep 60' &",
                pid_file.display()
            ))
            .env(MARK_VAR, &mark)
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        shell.wait().unwrap();
        let grandchild: i32 = (0..500)
            .find_map(|_| {
                let pid = std::fs::read_to_string(&pid_file)
                    .ok()
                    .and_then(|text| text.trim().parse().ok());
                if pid.is_none() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                pid
            })
            .expect("the grandchild wrote its pid");
        assert!(members(shell.id() as i32, &mark).contains(&grandchild));
        kill_tree(shell.id() as i32, &mark, Duration::from_secs(5)).unwrap();
        assert!(members(shell.id() as i32, &mark).is_empty());
        assert!(!members(i32::MAX, "another-mark").contains(&grandchild));
    }
}
