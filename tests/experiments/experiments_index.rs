//! The committed results index (results/README.md) is what the committed experiment folders make
//! today: re-rendered from their `claims.csv` files and the verdict matrix, and compared. When this
//! fails, rerun any experiment binary into `results/` (each rewrites the index), e.g.
//! `cargo run --release --bin retry-layers`, and commit.

use std::path::Path;

use retrylab::experiments::index::{self, ENTRIES, INDEX_FILE};

fn results() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("results")
}

#[test]
fn the_committed_index_matches_the_committed_folders() {
    let fresh = index::render(&results()).unwrap();
    let committed = std::fs::read_to_string(results().join(INDEX_FILE))
        .expect("results/README.md exists: rerun an experiment binary into results/");
    if committed != fresh {
        let line = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .map_or("(length)".to_string(), |line| format!("line {}", line + 1));
        panic!(
            "results/README.md is stale (first difference at {line}): rerun an experiment binary into results/, \
             e.g. `cargo run --release --bin retry-layers`"
        );
    }
    for entry in ENTRIES {
        assert!(fresh.contains(entry.command), "{}", entry.folder);
    }
}

#[test]
fn every_entry_has_its_folder_its_chart_and_its_command() {
    for entry in ENTRIES {
        let folder = results().join(entry.folder);
        assert!(
            folder.join(entry.headline).exists(),
            "{}/{}",
            entry.folder,
            entry.headline
        );
        let readme = std::fs::read_to_string(folder.join("README.md")).unwrap();
        assert!(
            readme.contains(entry.command),
            "{}/README.md was not made by `{}`",
            entry.folder,
            entry.command
        );
        // Every seeded experiment has claims; state-space's counts are exact.
        let claims = index::read_claims(&folder).unwrap();
        assert_eq!(
            claims.is_empty(),
            entry.folder == "state-space",
            "{}",
            entry.folder
        );
    }
}

#[test]
fn a_changed_claim_or_matrix_makes_the_index_differ() {
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join("results");
    for entry in ENTRIES {
        let folder = copy.join(entry.folder);
        std::fs::create_dir_all(&folder).unwrap();
        let claims = results().join(entry.folder).join("claims.csv");
        if claims.exists() {
            std::fs::copy(&claims, folder.join("claims.csv")).unwrap();
        }
    }
    let matrix = std::fs::read_to_string(results().join("verdicts.md")).unwrap();
    std::fs::write(copy.join("verdicts.md"), &matrix).unwrap();
    let same = index::render(&copy).unwrap();
    assert_eq!(same, index::render(&results()).unwrap());

    let claims_path = copy.join("retry-layers/claims.csv");
    let claims = std::fs::read_to_string(&claims_path).unwrap();
    assert!(claims.contains(",reproduced,"));
    std::fs::write(
        &claims_path,
        claims.replacen(",reproduced,", ",not-reproduced,", 1),
    )
    .unwrap();
    assert_ne!(index::render(&copy).unwrap(), same);
    std::fs::write(&claims_path, claims).unwrap();

    // "38 models; ..." becomes "389 models; ...".
    let changed = matrix.replacen(" models; ", "9 models; ", 1);
    std::fs::write(copy.join("verdicts.md"), changed).unwrap();
    assert_ne!(index::render(&copy).unwrap(), same);
}

// Inodes: Unix only.
#[cfg(unix)]
#[test]
fn the_index_is_written_only_when_its_text_changes() {
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join("results");
    std::fs::create_dir_all(&copy).unwrap();
    let matrix = std::fs::read_to_string(results().join("verdicts.md")).unwrap();
    std::fs::write(copy.join("verdicts.md"), &matrix).unwrap();
    let out = copy.join("aws-jitter");
    let index_path = copy.join(INDEX_FILE);
    // An atomic write renames a new file into place: a new inode means the index was written.
    let inode = || std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&index_path).unwrap());
    // No index yet: written. The same inputs again: left alone, the very file kept.
    assert!(index::refresh_for(&out).unwrap());
    let first = std::fs::read_to_string(&index_path).unwrap();
    let first_inode = inode();
    assert!(!index::refresh_for(&out).unwrap());
    assert_eq!(inode(), first_inode, "an unchanged index was written again");
    // A hand-edited (stale) index is rewritten to the rendered text, as a new file.
    std::fs::write(&index_path, "stale\n").unwrap();
    let stale_inode = inode();
    assert!(index::refresh_for(&out).unwrap());
    assert_eq!(std::fs::read_to_string(&index_path).unwrap(), first);
    assert_ne!(inode(), stale_inode, "the stale index was not replaced");
    // Outside a results folder with a verdict matrix nothing is written.
    assert!(!index::refresh_for(&scratch.path().join("elsewhere/x")).unwrap());
}
