//! Names for the files a run writes per model (traces, report rows, anchors and SVGs). A model file's stem is
//! its name, as it always was, unless another model of the same run has the same stem: then both names come from
//! their paths relative to the common folder of all the run's models (`a/model.toml`, `b/model.toml` -> `a+model`,
//! `b+model`), so two models never write to one file.

use std::collections::BTreeSet;
use std::path::{Component, Path};

/// Between the folders of a path in a name: not a path separator, safe in file names, URLs and shells.
const SEPARATOR: char = '+';

/// How one model of a run is named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelName {
    /// For file names: `<stem>.<property>.json`, `<stem>.<property>.svg`.
    pub stem: String,
    /// For people: the file name, or the relative path when the file name is not unique.
    pub shown: String,
}

/// One name per path, in order; no two alike, even ignoring case and punctuation (case-insensitive file systems,
/// Markdown anchors).
pub fn unique_names(paths: &[&str]) -> Vec<ModelName> {
    let stems: Vec<String> = paths.iter().map(|path| file_stem(path)).collect();
    let root = common_folder(paths);
    let mut names: Vec<ModelName> = paths
        .iter()
        .zip(&stems)
        .map(|(path, stem)| {
            let collides = stems.iter().filter(|other| key(other) == key(stem)).count() > 1;
            if !collides {
                let shown = Path::new(path)
                    .file_name()
                    .map_or(path.to_string(), |name| name.to_string_lossy().to_string());
                return ModelName {
                    stem: stem.clone(),
                    shown,
                };
            }
            let folders: Vec<String> = folders(path).into_iter().skip(root).collect();
            let mut stem_parts = folders.clone();
            stem_parts.push(safe(stem));
            let mut shown = folders;
            shown.push(file_name(path));
            ModelName {
                stem: stem_parts.join(&SEPARATOR.to_string()),
                shown: shown.join("/"),
            }
        })
        .collect();
    // Punctuation can still make two relative paths alike (`a-b/m` and `a/b-m`): number the later ones.
    let mut taken = BTreeSet::new();
    for name in &mut names {
        let base = name.stem.clone();
        let mut number = 1;
        while !taken.insert(key(&name.stem)) {
            number += 1;
            name.stem = format!("{base}{SEPARATOR}{number}");
        }
        if number > 1 {
            name.shown = format!("{} ({number})", name.shown);
        }
    }
    names
}

/// What makes two names the same file or the same anchor.
fn key(stem: &str) -> String {
    stem.chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() {
                character.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

fn file_stem(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .map_or("model".to_string(), |stem| {
            stem.to_string_lossy().to_string()
        })
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or("model".to_string(), |name| safe(&name.to_string_lossy()))
}

/// A path's folders, as name parts (the root and `.` left out, `..` kept).
fn folders(path: &str) -> Vec<String> {
    let parent = Path::new(path).parent().unwrap_or(Path::new(""));
    parent
        .components()
        .filter_map(|component| match component {
            Component::Normal(part) => Some(safe(&part.to_string_lossy())),
            Component::ParentDir => Some("..".to_string()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// How many leading folders every path shares.
fn common_folder(paths: &[&str]) -> usize {
    let all: Vec<Vec<String>> = paths.iter().map(|path| folders(path)).collect();
    let Some(first) = all.first() else { return 0 };
    (0..first.len())
        .take_while(|&index| all.iter().all(|other| other.get(index) == first.get(index)))
        .count()
}

/// Only characters every file system, URL and shell takes as they are.
fn safe(part: &str) -> String {
    part.chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() || "-_.".contains(character) {
                character
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stems(paths: &[&str]) -> Vec<String> {
        unique_names(paths)
            .into_iter()
            .map(|name| name.stem)
            .collect()
    }

    #[test]
    fn unique_stems_keep_their_names() {
        assert_eq!(
            stems(&["models/a.toml", "models/sub/b.toml", "/abs/c.toml"]),
            ["a", "b", "c"]
        );
        assert_eq!(unique_names(&["models/a.toml"])[0].shown, "a.toml");
    }

    #[test]
    fn colliding_stems_are_named_by_their_path_from_the_common_folder() {
        let names = unique_names(&["x/a/model.toml", "x/b/model.toml", "x/b/other.toml"]);
        let found: Vec<&str> = names.iter().map(|name| name.stem.as_str()).collect();
        assert_eq!(found, ["a+model", "b+model", "other"]);
        assert_eq!(names[0].shown, "a/model.toml");
        assert_eq!(
            stems(&["model.toml", "../up/Model.toml"]),
            ["model", "..+up+Model"]
        );
    }

    #[test]
    fn names_alike_but_for_punctuation_are_numbered() {
        assert_eq!(
            stems(&[
                "a-b/m.toml",
                "a/b-m.toml",
                "a_b/m.toml",
                "q/m.toml",
                "q/b-m.toml"
            ]),
            ["a-b+m", "a+b-m+2", "a_b+m+3", "q+m", "q+b-m"]
        );
    }
}
