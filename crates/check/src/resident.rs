//! The process's resident memory (VmRSS of /proc/self/status, Linux), sampled by the search after each round
//! and reported beside its own accounting (`peak_bytes`), so the two can be compared. It never decides
//! anything: the memory bound is judged on the accounting, which is the same on every run and thread count.

/// Resident bytes of this process now; `None` where /proc is not there.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kibibytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kibibytes * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_a_plausible_figure_on_linux() {
        if cfg!(target_os = "linux") {
            let bytes = super::resident_bytes().expect("VmRSS on Linux");
            assert!(bytes > 1 << 20 && bytes < 1 << 40, "{bytes}");
        }
    }
}
