//! Every link and every cited file in the documentation resolves. The README and the book in `docs/` point at
//! chapters, headings and repository files by path; files move (the workspace split moved most of `src/`), and a
//! dead link reads as a lie. So this test reads the files themselves, with no dependency on the library:
//! - in README.md and every `docs/**/*.md`, each relative Markdown link `](path)` or `](path#anchor)` names an
//!   existing file, and an anchor into a Markdown file names one of its headings (GitHub's slugs);
//! - each backticked repository path there (`src/...`, `crates/...`, `models/....toml`, `tests/....rs`, ...)
//!   exists; code blocks are examples, not citations, and are skipped, as are paths with a placeholder
//!   (`<model>`, `*`, `{csv,md}`, `$OUT`) and spans elided with `...`;
//! - every `docs/...` path cited in `models/*.toml`, `src/**/*.rs` and `crates/**/*.rs` exists;
//! - `docs/src/SUMMARY.md` lists every chapter in `docs/src/`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The folders a backticked path must start with to be taken as a citation of a repository file.
const CITED_ROOTS: [&str; 9] = [
    "src/",
    "crates/",
    "models/",
    "tests/",
    "examples/",
    "experiments/",
    "results/",
    "docs/",
    "benches/",
];

/// Characters that make a backticked path a pattern or a placeholder rather than one file.
const PLACEHOLDER_CHARS: [char; 6] = ['<', '*', '{', '$', '[', '|'];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_link_and_cited_path_in_the_docs_resolves() {
    let root = root();
    let mut problems = Vec::new();
    for file in markdown_files(&root) {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        problems.extend(
            check_markdown(&root, &file, &text)
                .into_iter()
                .map(|p| format!("{name}: {p}")),
        );
    }
    assert!(
        problems.is_empty(),
        "{} unresolved:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_docs_path_cited_in_models_and_sources_exists() {
    let root = root();
    let mut files = Vec::new();
    collect(&root.join("models"), "toml", &mut files);
    collect(&root.join("src"), "rs", &mut files);
    collect(&root.join("crates"), "rs", &mut files);
    assert!(
        files.len() > 30,
        "found the models and sources: {}",
        files.len()
    );
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for cited in docs_citations(&text) {
            if !root.join(&cited).exists() {
                problems.push(format!(
                    "{}: {cited}",
                    file.strip_prefix(&root).unwrap().display()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "missing docs paths:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_summary_lists_every_chapter() {
    let src = root().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary)
        .into_iter()
        .map(|(target, _)| target)
        .collect();
    let mut chapters = Vec::new();
    collect(&src, "md", &mut chapters);
    assert!(chapters.len() > 5, "the book has its chapters");
    for chapter in chapters {
        let name = chapter.strip_prefix(&src).unwrap().display().to_string();
        if name != "SUMMARY.md" {
            assert!(
                listed.contains(&name),
                "docs/src/SUMMARY.md does not list {name}"
            );
        }
    }
}

/// The twin: a sample with a dead link, a dead anchor and a dead backticked path reports each of them, and only
/// them.
#[test]
fn a_broken_link_anchor_or_path_in_a_sample_is_reported() {
    let root = root();
    let file = root.join("docs/src/sample.md");
    let good = "# Sample\n\n## A heading: `with code`\n\nSee [the guide](guide.md#install), \
                [here](#a-heading-with-code), `models/lease-fenced.toml`, `results/<model>.svg`.\n\n\
                ```sh\ncat `src/not-there.rs`\n```\n";
    assert_eq!(check_markdown(&root, &file, good), Vec::<String>::new());
    let broken =
        "# Sample\n\nSee [the guide](guide-gone.md), [install](guide.md#no-such-heading), \
                  [here](#nowhere) and `models/no-such-model.toml`.\n";
    let problems = check_markdown(&root, &file, broken);
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert!(problems[0].contains("guide-gone.md"), "{problems:#?}");
    assert!(
        problems[1].contains("guide.md#no-such-heading"),
        "{problems:#?}"
    );
    assert!(problems[2].contains("#nowhere"), "{problems:#?}");
    assert!(
        problems[3].contains("models/no-such-model.toml"),
        "{problems:#?}"
    );
    assert_eq!(
        docs_citations("see docs/src/domain.md section 5."),
        vec!["docs/src/domain.md"]
    );
}

#[test]
fn slugs_follow_github() {
    assert_eq!(
        slug("## 7. The AWS \"Exponential Backoff\" (Brooker, 2015)"),
        "7-the-aws-exponential-backoff-brooker-2015"
    );
    assert_eq!(
        slug("## Black-box: `retrylab probe URL`"),
        "black-box-retrylab-probe-url"
    );
    assert_eq!(
        slug("### The world's semantics, re-based"),
        "the-worlds-semantics-re-based"
    );
}

/// The problems of one Markdown file: dead links, dead anchors, missing backticked paths, in order of kind.
fn check_markdown(root: &Path, file: &Path, text: &str) -> Vec<String> {
    let prose = outside_fences(text);
    let folder = file.parent().unwrap();
    let mut problems = Vec::new();
    for (target, anchor) in links(&prose) {
        let link = match &anchor {
            Some(anchor) => format!("{target}#{anchor}"),
            None => target.clone(),
        };
        let (path, own_text) = if target.is_empty() {
            (file.to_path_buf(), Some(text.to_string()))
        } else {
            (folder.join(&target), None)
        };
        if !path.exists() && own_text.is_none() {
            problems.push(format!("link to a missing file: {link}"));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if path.extension().is_some_and(|e| e == "md") {
            let heading_text = own_text.unwrap_or_else(|| std::fs::read_to_string(&path).unwrap());
            if !anchors(&heading_text).contains(&anchor) {
                problems.push(format!("link to a missing heading: {link}"));
            }
        }
    }
    for cited in backticked_paths(&prose) {
        if !root.join(&cited).exists() {
            problems.push(format!("backticked path does not exist: {cited}"));
        }
    }
    problems
}

/// The text with fenced code blocks blanked out (examples, not citations); lines keep their places.
fn outside_fences(text: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// Relative link targets `](path#anchor)`, split into the path and the anchor; web and mail links are skipped.
fn links(text: &str) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        rest = &rest[end..];
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        match target.split_once('#') {
            Some((path, anchor)) => found.push((path.to_string(), Some(anchor.to_string()))),
            None => found.push((target.to_string(), None)),
        }
    }
    found
}

/// The GitHub anchors of a Markdown file's headings (fences skipped), with `-1`, `-2` for repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in outside_fences(text).lines() {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let base = slug(line);
            let mut anchor = base.clone();
            let mut repeat = 0;
            while seen.contains(&anchor) {
                repeat += 1;
                anchor = format!("{base}-{repeat}");
            }
            seen.insert(anchor);
        }
    }
    seen
}

/// GitHub's heading slug: lower case, letters, digits, `-` and `_` kept, spaces to `-`, the rest dropped.
fn slug(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Paths in inline code spans that start with a cited root and are not patterns. Spans are taken per
/// paragraph, so a stray backtick cannot shift every span after it.
fn backticked_paths(prose: &str) -> Vec<String> {
    let mut found = Vec::new();
    for paragraph in prose.split("\n\n") {
        for (index, span) in paragraph.split('`').enumerate() {
            // Even pieces are prose; a span with "..." is an elided example, not a citation.
            if index % 2 == 0 || span.contains("...") {
                continue;
            }
            for token in span.split_whitespace() {
                let token = token.trim_start_matches(['(', '"', '\'']);
                let token = token.trim_end_matches([',', ';', ':', '.', ')', '"', '\'']);
                let cited = CITED_ROOTS.iter().any(|root| token.starts_with(root));
                if cited && !token.contains(PLACEHOLDER_CHARS) {
                    found.push(token.to_string());
                }
            }
        }
    }
    found
}

/// `docs/...` paths cited in a source or model file (a trailing full stop is punctuation).
fn docs_citations(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find("docs/") {
        let start = from + at;
        from = start + 5;
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let len = text[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
            .unwrap_or(text.len() - start);
        found.push(text[start..start + len].trim_end_matches('.').to_string());
    }
    found
}

/// README.md and every Markdown file under `docs/`, in a fixed order.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    collect(&root.join("docs"), "md", &mut files);
    assert!(files.len() > 5, "found the book: {files:?}");
    files
}

/// Files below `folder` (absent: none) whose extension is `extension`, sorted.
fn collect(folder: &Path, extension: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.map(|entry| entry.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            collect(&path, extension, out);
        } else if path.extension().is_some_and(|e| e == extension) {
            out.push(path);
        }
    }
}
