//! How responses read in a check's evidence: one line each, whatever the API sent. An HTML error page (a proxy's
//! 502, a framework's debug page) is shown by its `<title>` or its first text, a long body is cut, and a request
//! that got no response is "no answer", never a status.

use crate::stack::http::{HttpError, HttpResponse};

/// The longest body shown, in characters.
pub const BODY_CHARS_MAX: usize = 160;

/// A response or the reason there was none, for evidence.
pub fn shown(response: &Result<HttpResponse, HttpError>) -> String {
    match response {
        Ok(r) => format!("{} {}", r.status, one_line(&r.body)),
        Err(error) => format!("no answer ({error})"),
    }
}

/// A status, or "no answer", for a tally.
pub fn status_or_no_answer(response: &Result<HttpResponse, HttpError>) -> String {
    response
        .as_ref()
        .map_or("no answer".to_string(), |r| r.status.to_string())
}

/// Statuses with how often each came, in status order ("201 x1, 409 x19", "no answer" last).
pub fn tally(statuses: &[String]) -> String {
    let mut sorted = statuses.to_vec();
    sorted.sort();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let same = sorted[i..].iter().take_while(|s| **s == sorted[i]).count();
        parts.push(format!("{} x{same}", sorted[i]));
        i += same;
    }
    parts.join(", ")
}

/// A body on one line: an HTML page as `[HTML: its title]`, anything else with its whitespace runs made one
/// space; at most `BODY_CHARS_MAX` characters either way.
pub fn one_line(body: &str) -> String {
    let trimmed = body.trim();
    let text = if looks_like_html(trimmed) {
        format!("[HTML: {}]", cut(&html_gist(trimmed)))
    } else {
        collapse(trimmed)
    };
    cut(&text)
}

fn looks_like_html(body: &str) -> bool {
    let head: String = body
        .chars()
        .take(64)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html") || head.contains("<head")
}

/// The page's `<title>`, or else its first text outside tags.
fn html_gist(page: &str) -> String {
    let lower = page.to_ascii_lowercase();
    if let (Some(open), Some(close)) = (lower.find("<title"), lower.find("</title>")) {
        if let Some(end_of_tag) = lower[open..].find('>').map(|at| open + at + 1) {
            if end_of_tag <= close {
                let title = collapse(&page[end_of_tag..close]);
                if !title.is_empty() {
                    return title;
                }
            }
        }
    }
    collapse(&strip_tags(page))
}

/// The text between tags (scripts and styles included: a gist, not a renderer).
fn strip_tags(page: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for c in page.chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' => in_tag = false,
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cut(text: &str) -> String {
    if text.chars().count() <= BODY_CHARS_MAX {
        return text.to_string();
    }
    let kept: String = text.chars().take(BODY_CHARS_MAX).collect();
    format!("{kept}...")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_html_error_page_is_one_line() {
        let page = "<!DOCTYPE html>\n<html>\n<head>\n  <title>502 Bad\n Gateway</title>\n</head>\n<body>\n\
                    <h1>Bad Gateway</h1>\n<p>The upstream\nwent away.</p>\n</body>\n</html>\n";
        assert_eq!(one_line(page), "[HTML: 502 Bad Gateway]");
        let untitled = "<html><body>\n<h1>Internal   Server Error</h1><p>x</p></body></html>";
        assert_eq!(one_line(untitled), "[HTML: Internal Server Error x]");
        // The twin: JSON is kept as sent, on one line.
        assert_eq!(one_line("{\"payment\":\n  1}\n"), "{\"payment\": 1}");
        assert_eq!(
            one_line(&"x".repeat(500)).chars().count(),
            BODY_CHARS_MAX + 3
        );
    }

    #[test]
    fn tallies_count_no_answers_apart() {
        let statuses = ["409", "201", "no answer", "409"].map(String::from);
        assert_eq!(tally(&statuses), "201 x1, 409 x2, no answer x1");
        assert_eq!(
            shown(&Err(HttpError::Closed)),
            "no answer (the connection closed before a whole response)"
        );
    }
}
