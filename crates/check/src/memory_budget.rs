//! The default `--max-memory`: a fraction of the memory this process may really use, so that a search under a
//! container's limit stops as incomplete instead of being killed (a fixed 8192 MiB aborted under a 6 GB limit).
//! What may be used is the smallest of the cgroup limits above this process (v2 `memory.max`, v1
//! `memory.limit_in_bytes`, every ancestor too) and the kernel's `MemAvailable`. Every figure is read below a
//! root folder, `/` on a machine and a fixture folder in the tests, so the computation is tested on known
//! contents rather than on whatever machine runs the tests.

use std::path::{Path, PathBuf};

/// The share of the available memory the search's accounting may reach: its structures are not all the
/// process holds (allocator slack, the rest of the program), so half is left for what it does not count.
pub const AVAILABLE_SHARE_DIVISOR: u64 = 2;
/// The most the default gives (the old fixed default): larger searches ask for it with `--max-memory`.
pub const DEFAULT_MIB_MAX: u64 = 8192;
/// The least the default gives: below it, a search could not start, and the limits read were likely wrong.
pub const DEFAULT_MIB_MIN: u64 = 64;
/// A v1 limit at or above this means "no limit" (the kernel writes 2^63 rounded down to a page).
const UNLIMITED_BYTES_MIN: u64 = 1 << 60;

/// The default `--max-memory` in MiB for a machine whose `/proc` and `/sys` are below `root`.
pub fn default_memory_mib_max(root: &Path) -> u64 {
    match available_bytes(root) {
        Some(bytes) => {
            ((bytes / AVAILABLE_SHARE_DIVISOR) >> 20).clamp(DEFAULT_MIB_MIN, DEFAULT_MIB_MAX)
        }
        None => DEFAULT_MIB_MAX,
    }
}

/// The memory this process may use: the smallest cgroup limit, address-space limit (`RLIMIT_AS`, `ulimit -v`)
/// and `MemAvailable`; `None` when none is known.
pub fn available_bytes(root: &Path) -> Option<u64> {
    [
        cgroup_limit_bytes(root),
        address_space_limit_bytes(root),
        mem_available_bytes(root),
    ]
    .into_iter()
    .flatten()
    .min()
}

/// The soft `RLIMIT_AS` of `/proc/self/limits` ("Max address space  6442450944  unlimited  bytes"): an
/// allocation past it fails, and the process aborts (a model aborted at 5.6 GB under a 6 GB limit).
fn address_space_limit_bytes(root: &Path) -> Option<u64> {
    let limits = std::fs::read_to_string(root.join("proc/self/limits")).ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft = line["Max address space".len()..]
        .split_whitespace()
        .next()?;
    soft.parse().ok() // "unlimited": no limit
}

/// `MemAvailable` of `/proc/meminfo` (in kB there).
fn mem_available_bytes(root: &Path) -> Option<u64> {
    let meminfo = std::fs::read_to_string(root.join("proc/meminfo")).ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kibibytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kibibytes.saturating_mul(1024))
}

/// The smallest memory limit of this process's cgroups, v2 and v1, from its own folder up to the hierarchy's
/// root; `None` when no limit is set.
fn cgroup_limit_bytes(root: &Path) -> Option<u64> {
    let membership = std::fs::read_to_string(root.join("proc/self/cgroup")).ok()?;
    let cgroup = root.join("sys/fs/cgroup");
    let mut files = Vec::new();
    for line in membership.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            files.extend(with_ancestors(&cgroup, path, "memory.max"));
        } else if controllers.split(',').any(|c| c == "memory") {
            files.extend(with_ancestors(
                &cgroup.join("memory"),
                path,
                "memory.limit_in_bytes",
            ));
        }
    }
    files
        .iter()
        .filter_map(|file| std::fs::read_to_string(file).ok())
        .filter_map(|text| text.trim().parse::<u64>().ok()) // "max": no limit
        .filter(|&bytes| bytes < UNLIMITED_BYTES_MIN)
        .min()
}

/// `mount/path/name` and the same name in each folder above it up to `mount`. In a container the path listed
/// may not exist below the mount (the container sees its own cgroup as the root): the mount's own file covers it.
fn with_ancestors(mount: &Path, path: &str, name: &str) -> Vec<PathBuf> {
    let mut folder = mount.to_path_buf();
    let mut files = vec![folder.join(name)];
    for part in path
        .split('/')
        .filter(|part| !part.is_empty() && *part != "..")
    {
        folder.push(part);
        files.push(folder.join(name));
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixture root with these files (path below the root, contents).
    fn root(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    const MEMINFO_24_GIB: &str = "MemTotal:       25165824 kB\nMemAvailable:   25165824 kB\n";
    const GIB: u64 = 1 << 30;

    #[test]
    fn a_cgroup_v2_limit_of_6_gib_gives_3_gib_not_8() {
        let fixture = root(&[
            ("proc/meminfo", MEMINFO_24_GIB),
            ("proc/self/cgroup", "0::/jobs/run7\n"),
            ("sys/fs/cgroup/memory.max", "max\n"),
            ("sys/fs/cgroup/jobs/memory.max", "6442450944\n"),
            ("sys/fs/cgroup/jobs/run7/memory.max", "max\n"),
        ]);
        assert_eq!(available_bytes(fixture.path()), Some(6 * GIB));
        // The old default, 8192 MiB, is above the limit: the search was killed before it could stop.
        assert_eq!(default_memory_mib_max(fixture.path()), 3072);
    }

    #[test]
    fn a_cgroup_v1_limit_counts_and_its_unlimited_value_does_not() {
        let limited = root(&[
            ("proc/meminfo", MEMINFO_24_GIB),
            ("proc/self/cgroup", "4:memory:/box/a\n0::/\n"),
            (
                "sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            (
                "sys/fs/cgroup/memory/box/a/memory.limit_in_bytes",
                "2147483648\n",
            ),
        ]);
        assert_eq!(default_memory_mib_max(limited.path()), 1024);
        let unlimited = root(&[
            ("proc/meminfo", "MemAvailable:    4194304 kB\n"),
            ("proc/self/cgroup", "4:cpu,memory:/box\n"),
            (
                "sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ]);
        assert_eq!(available_bytes(unlimited.path()), Some(4 * GIB));
        assert_eq!(default_memory_mib_max(unlimited.path()), 2048);
    }

    #[test]
    fn an_address_space_limit_counts_and_unlimited_does_not() {
        let limits = |soft: &str| {
            format!(
                "Limit                     Soft Limit           Hard Limit           Units\n\
                 Max stack size            8388608              unlimited            bytes\n\
                 Max address space         {soft:<20} unlimited            bytes\n"
            )
        };
        let limited = root(&[
            ("proc/meminfo", MEMINFO_24_GIB),
            ("proc/self/limits", &limits("6442450944")),
        ]);
        assert_eq!(available_bytes(limited.path()), Some(6 * GIB));
        assert_eq!(default_memory_mib_max(limited.path()), 3072);
        let unlimited = root(&[
            ("proc/meminfo", MEMINFO_24_GIB),
            ("proc/self/limits", &limits("unlimited")),
        ]);
        assert_eq!(default_memory_mib_max(unlimited.path()), DEFAULT_MIB_MAX);
    }

    #[test]
    fn without_a_cgroup_limit_mem_available_decides_within_bounds() {
        let plenty = root(&[("proc/meminfo", "MemAvailable:  268435456 kB\n")]);
        assert_eq!(default_memory_mib_max(plenty.path()), DEFAULT_MIB_MAX);
        let scarce = root(&[("proc/meminfo", "MemAvailable:      1024 kB\n")]);
        assert_eq!(default_memory_mib_max(scarce.path()), DEFAULT_MIB_MIN);
        let nothing = root(&[]);
        assert_eq!(available_bytes(nothing.path()), None);
        assert_eq!(default_memory_mib_max(nothing.path()), DEFAULT_MIB_MAX);
    }
}
