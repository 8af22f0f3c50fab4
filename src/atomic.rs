//! Atomic file output: write a temporary file beside the target, then rename it over the target, so a reader
//! (or a crash) never sees a half-written result.

use std::io::Write;
use std::path::Path;

pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(folder)?;
    let mut file = output_file_builder().tempfile_in(folder)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|error| error.error)?;
    Ok(())
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
