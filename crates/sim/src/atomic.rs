//! Atomic file output: write a temporary file beside the target, then rename it over the target, so a reader
//! (or a crash) never sees a half-written result.
//!
//! The temporary files being written are listed, so that a command stopped by Ctrl-C or SIGTERM can remove them
//! before it exits ([`abandon_in_flight`]) instead of leaving `.tmpXXXXXX` files beside a report.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The temporary files created and not yet renamed or removed.
static IN_FLIGHT: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn in_flight() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    // A panic elsewhere while holding the list leaves it usable: it is a plain set of paths.
    IN_FLIGHT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(folder)?;
    // Created and listed under the lock, so a signal's cleanup cannot fall between the two.
    let mut file = {
        let mut listed = in_flight();
        let file = output_file_builder().tempfile_in(folder)?;
        listed.insert(file.path().to_path_buf());
        file
    };
    let written = file
        .write_all(bytes)
        .and_then(|()| file.as_file().sync_all());
    // Renamed (or, on error, removed by the drop) and unlisted under the lock: a cleanup either finds the file
    // listed and not yet renamed, or not listed at all.
    let mut listed = in_flight();
    listed.remove(file.path());
    written?;
    file.persist(path).map_err(|error| error.error)?;
    Ok(())
}

/// Remove every temporary output file being written, and keep the list locked, so that no write can rename or
/// start one, until the guard is dropped: for a signal handler that exits the process while holding it.
pub fn abandon_in_flight() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    let mut listed = in_flight();
    remove_all(&mut listed);
    listed
}

fn remove_all(listed: &mut BTreeSet<PathBuf>) {
    for path in listed.iter() {
        let _ = std::fs::remove_file(path);
    }
    listed.clear();
}

/// Make sure `folder` exists and takes files, before a long computation whose results go there: an experiment
/// should refuse an unwritable `--out` at once (exit 2), not after its sweep. The probe file is removed.
pub fn ensure_writable_folder(folder: &Path) -> Result<(), String> {
    let refused =
        |error: std::io::Error| format!("--out {}: cannot write there: {error}", folder.display());
    // Probe the folder, or the nearest one above it that exists, without creating anything: bad input must
    // leave nothing behind, and the run creates the folder itself once every flag is known good.
    let mut existing = folder;
    while !existing.exists() {
        existing = match existing.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
    }
    if !existing.is_dir() {
        return Err(format!(
            "--out {}: cannot write there: {} is not a folder",
            folder.display(),
            existing.display()
        ));
    }
    output_file_builder()
        .prefix(".write-probe-")
        .tempfile_in(existing)
        .map_err(refused)?;
    Ok(())
}

/// A builder of temporary files that become outputs (traces, reports, CSV, charts): those are for others to
/// read, so they get mode 0644 under the umask, not tempfile's private 0600 (which the rename would keep).
pub fn output_file_builder() -> tempfile::Builder<'static, 'static> {
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    builder
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A temporary file listed as in flight is removed by the cleanup; the twin: a finished write is not
    /// listed, and its output stays.
    #[test]
    fn a_stopped_write_leaves_no_temporary_file() {
        let folder = tempfile::tempdir().unwrap();
        let done = folder.path().join("report.md");
        write_atomic(&done, b"done").unwrap();
        let (stray, stray_path) = output_file_builder()
            .tempfile_in(folder.path())
            .unwrap()
            .keep()
            .unwrap();
        drop(stray);
        assert!(
            !in_flight()
                .iter()
                .any(|listed| listed.starts_with(folder.path())),
            "a finished write is no longer listed"
        );
        // The process-wide list is not emptied here: other tests may be writing at the same time.
        let mut listed = BTreeSet::from([stray_path.clone()]);
        remove_all(&mut listed);
        assert!(!stray_path.exists(), "the write in flight is removed");
        assert_eq!(
            std::fs::read(&done).unwrap(),
            b"done",
            "the finished one stays"
        );
        let left: Vec<_> = std::fs::read_dir(folder.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }

    #[test]
    fn outputs_are_readable_by_others() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("out.txt");
        write_atomic(&path, b"one").unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        // A plain `fs::write` gets 0666 under the umask: the same bits, less write for group and others.
        let plain = folder.path().join("plain.txt");
        std::fs::write(&plain, b"one").unwrap();
        assert_eq!(mode(&path), mode(&plain) & 0o644, "{:o}", mode(&path));
    }
}
