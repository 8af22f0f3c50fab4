//! Self-contained HTML pages of the trace explorer: a counterexample with a step slider and the state after each
//! step as panels (`retrylab check ... --report FILE.html`, one page per violation beside an index), and the
//! page `retrylab explore` serves. Styles and scripts are inlined (`assets/`), so a page opens from disk with no
//! network; the path's data is embedded as JSON that the inlined script draws.

use super::explored::{explore_path, ExploredPath};
use super::svg::escape;
use crate::check::Model;
use serde::Serialize;

const CSS: &str = include_str!("assets/explorer.css");
const SHARED_JS: &str = include_str!("assets/explorer.js");
const REPORT_JS: &str = include_str!("assets/report.js");
const EXPLORE_JS: &str = include_str!("assets/explore.js");

/// What a counterexample page says above its explorer.
pub struct PageText<'a> {
    pub title: &'a str,
    /// One line under the title (the model's description, the property and what it means).
    pub subtitle: &'a str,
    /// The sequence diagram, inline SVG, if the model draws one.
    pub svg: Option<&'a str>,
    /// The command that replays it, shown for people who want the terminal.
    pub replay_command: Option<&'a str>,
}

#[derive(Serialize)]
struct PageData<'a> {
    title: &'a str,
    path: &'a ExploredPath,
}

/// The page of one path of any model (a counterexample), or `Err(step)` when step `step` is not enabled.
pub fn trace_page<M: Model>(
    model: &M,
    actions: &[M::Action],
    cycle_from: Option<usize>,
    text: &PageText,
) -> Result<String, usize> {
    let path = explore_path(model, actions, cycle_from)?;
    let data = PageData {
        title: text.title,
        path: &path,
    };
    let diagram = text.svg.map_or(String::new(), |svg| {
        format!("<section class=\"diagram\"><h4>Sequence diagram</h4>{svg}</section>")
    });
    let replay = text.replay_command.map_or(String::new(), |command| {
        format!(
            "<p class=\"note\">Replay in a terminal: <code>{}</code></p>",
            escape(command)
        )
    });
    let body = format!(
        "<main>\n<div>\n<div class=\"controls\"><button id=\"prev\">&larr;</button>\
         <input type=\"range\" id=\"slider\" min=\"0\" value=\"0\" aria-label=\"step\">\
         <button id=\"next\">&rarr;</button><span id=\"position\" class=\"note\"></span></div>\n\
         <ol class=\"steps\" id=\"steps\"></ol>\n{replay}</div>\n\
         <div><h2 class=\"now\" id=\"now\"></h2><div id=\"panels\"></div></div>\n{diagram}\n</main>\n\
         <script type=\"application/json\" id=\"data\">{}</script>\n<script>{SHARED_JS}\n{REPORT_JS}</script>\n",
        json_for_script(&data)
    );
    Ok(page(text.title, text.subtitle, &body))
}

/// The page `retrylab explore` serves: the explorer with the enabled actions, back, restart, save and open.
/// `properties` are the names a saved trace may decide (the first the path violates unless one is chosen);
/// `None`: the server keeps no traces, and the save and open controls are hidden.
/// `token`: the run's write token, which the page's script sends with a save (`explore_server::Guard`).
pub fn explore_page(
    title: &str,
    subtitle: &str,
    properties: Option<&[String]>,
    token: &str,
) -> String {
    let options: String = properties
        .unwrap_or_default()
        .iter()
        .map(|name| format!("<option value=\"{0}\">{0}</option>", escape(name)))
        .collect();
    let hidden = if properties.is_some() { "" } else { " hidden" };
    let token = json_for_script(&token);
    let body = format!(
        "<main>\n<div>\n<div class=\"controls\"><button id=\"back\">Back</button>\
         <button id=\"restart\">Restart</button><span id=\"position\" class=\"note\"></span></div>\n\
         <ol class=\"steps\" id=\"steps\"></ol>\n<h4>Enabled actions (click one to take it)</h4>\
         <div id=\"actions\"></div>\n<div id=\"traces\"{hidden}><h4>Save or open a trace</h4><div class=\"controls\">\
         <select id=\"property\" aria-label=\"property\"><option value=\"\">the first property the path \
         violates</option>{options}</select><button id=\"save\">Save trace</button></div>\
         <p class=\"note\" id=\"saved\"></p><p class=\"note\"><a id=\"download\"></a></p>\
         <p class=\"note\">Open a saved trace of this model and continue it: \
         <input type=\"file\" id=\"open\" accept=\".json,application/json\"></p></div>\
         <p class=\"error\" id=\"error\"></p>\n</div>\n\
         <div><h2 class=\"now\" id=\"now\"></h2><div id=\"panels\"></div></div>\n</main>\n\
         <script>const WRITE_TOKEN = {token};\n{SHARED_JS}\n{EXPLORE_JS}</script>\n"
    );
    page(title, subtitle, &body)
}

/// A page of plain sections (a handler world's report, `HandlerWorld::report`): `body` is HTML the caller built,
/// its text escaped with [`escape_html`]; the explorer's styles, no script.
pub fn plain_page(title: &str, subtitle: &str, body: &str) -> String {
    page(title, subtitle, body)
}

/// Text made safe to put in HTML.
pub fn escape_html(text: &str) -> String {
    escape(text)
}

fn page(title: &str, subtitle: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n\
         <style>{CSS}</style>\n</head>\n<body>\n<header><h1>{title}</h1><p>{subtitle}</p></header>\n{body}</body>\n</html>\n",
        title = escape(title),
        subtitle = escape(subtitle),
    )
}

/// JSON that is safe inside `<script>`: no `<` at all (so no `</script>` or `<!--`), written as `\u003c`.
fn json_for_script<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value)
        .expect("page data always serialises")
        .replace('<', "\\u003c")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_json_cannot_close_its_script() {
        let text = json_for_script(&"</script><!--");
        assert!(!text.contains('<'));
        let back: String = serde_json::from_str(&text).unwrap();
        assert_eq!(back, "</script><!--");
    }

    #[test]
    fn pages_need_no_network() {
        let page = explore_page("t <x>", "s", Some(&["p".to_string()]), "abc");
        assert!(page.contains("<title>t &lt;x&gt;</title>"));
        assert!(page.contains("<div id=\"traces\">"));
        assert!(explore_page("t", "s", None, "abc").contains("<div id=\"traces\" hidden>"));
        for remote in ["http://", "https://", "src=\"//"] {
            assert!(!page.contains(remote), "{remote} in the explore page");
        }
    }
}
