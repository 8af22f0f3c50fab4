//! The trace explorer in a real browser: headless Chromium driven through chromedriver (WebDriver, via
//! fantoccini) against `retrylab explore` on loopback and against an HTML report opened from disk. It takes
//! the actions of the known counterexample of `models/lease-no-fencing.toml` (no-duplicate-effect, 11 steps)
//! by clicking them, checks that the duplicate is shown at step 11 and not before, saves the path and replays
//! the saved trace with the CLI, opens it again and continues it; then it drags the report's slider and reads
//! the panels of chosen steps.
//!
//! Without Chromium it prints one "skipped" line; under `RETRYLAB_REQUIRE_SERVERS=1` a missing browser fails.
//! The same page serves a handler design through the library (`report::explore_server`): its shortest duplicate
//! is clicked through the same way.
//!
//! `RETRYLAB_SCREENSHOTS=DIR` also writes the pages' screenshots there (how `results/verdicts/*.png` are made).

use crate::explore_support;

use fantoccini::{Client, ClientBuilder, Locator};
use retrylab::check::Model as _;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const MODEL: &str = "models/lease-no-fencing.toml";
/// How long a page may take to show what a click asked for.
const WAIT_MS_MAX: u64 = 15_000;

/// A child process of this test, killed (by its handle) when the test ends however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn retrylab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_retrylab"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("retrylab runs")
}

fn browser_installed() -> bool {
    if Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists() {
        return true;
    }
    let required = std::env::var("RETRYLAB_REQUIRE_SERVERS").is_ok_and(|value| value == "1");
    assert!(
        !required,
        "RETRYLAB_REQUIRE_SERVERS=1 but {CHROMIUM} or {CHROMEDRIVER} is missing: apt-get install -y chromium chromium-driver"
    );
    println!(
        "skipped: chromium not installed, install with apt-get install chromium chromium-driver"
    );
    false
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

/// chromedriver on a free loopback port, once it accepts connections.
fn start_chromedriver() -> (Killed, u16) {
    let port = free_port();
    let child = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .arg("--allowed-ips=127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let guard = Killed(child);
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_millis(WAIT_MS_MAX),
            "chromedriver never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (guard, port)
}

/// `retrylab explore MODEL --listen 127.0.0.1:0`, and the URL its first line gives.
fn start_explore(traces: &Path) -> (Killed, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_retrylab"))
        .args(["explore", MODEL, "--listen", "127.0.0.1:0", "--traces"])
        .arg(traces)
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("retrylab explore starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let guard = Killed(child);
    let mut first = String::new();
    let mut reader = BufReader::new(stdout);
    reader.read_line(&mut first).expect("a first line");
    // Keep the pipe open and drained for as long as the server runs.
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("first line names the address: {first:?}"))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    (guard, url)
}

async fn connect(port: u16) -> Client {
    let capabilities = json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1500,1150"]
        }
    });
    let Value::Object(capabilities) = capabilities else {
        unreachable!()
    };
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a WebDriver session")
}

/// Click the element with this id.
async fn click(client: &Client, id: &str) {
    let element = client.find(Locator::Id(id)).await.unwrap();
    element.click().await.unwrap();
}

/// Type `keys` into the element with this id.
async fn send_keys(client: &Client, id: &str, keys: &str) {
    let element = client.find(Locator::Id(id)).await.unwrap();
    element.send_keys(keys).await.unwrap();
}

async fn eval(client: &Client, script: &str, args: Vec<Value>) -> Value {
    client.execute(script, args).await.expect("the script runs")
}

/// Wait until the panels show state `step` (the heading says which).
async fn wait_step(client: &Client, step: usize) {
    let started = Instant::now();
    loop {
        let now = eval(
            client,
            "const h = document.getElementById('now'); return h ? h.dataset.step : null;",
            vec![],
        )
        .await;
        if now == json!(step.to_string()) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_millis(WAIT_MS_MAX),
            "the page never showed step {step} (shows {now})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A row of a panel as the page draws it: its value and whether it is highlighted as changed.
async fn row(client: &Client, panel: &str, label: &str) -> Option<(String, bool)> {
    let script = "const p = [...document.querySelectorAll('#panels .panel')].find((p) => p.dataset.title === arguments[0]);\
        if (!p) return null; const r = [...p.querySelectorAll('tr.row')].find((r) => r.dataset.label === arguments[1]);\
        return r ? [r.querySelector('td.value').textContent, r.classList.contains('changed')] : null;";
    let found = eval(client, script, vec![json!(panel), json!(label)]).await;
    let pair = found.as_array()?;
    Some((pair[0].as_str()?.to_string(), pair[1].as_bool()?))
}

async fn value(client: &Client, panel: &str, label: &str) -> String {
    row(client, panel, label)
        .await
        .unwrap_or_else(|| panic!("no row {label} in panel {panel}"))
        .0
}

async fn screenshot(client: &Client, name: &str) {
    let Ok(folder) = std::env::var("RETRYLAB_SCREENSHOTS") else {
        return;
    };
    // Clicks scroll the page to what they clicked: show the page from its top, as a reader opens it.
    eval(client, "window.scrollTo(0, 0); return null;", vec![]).await;
    let png = client.screenshot().await.expect("a screenshot");
    std::fs::write(Path::new(&folder).join(name), png).expect("the screenshot is written");
}

/// The shortest counterexample as `retrylab check` saves it, and the HTML report of the same run.
fn counterexample(scratch: &Path) -> (Vec<String>, PathBuf) {
    let traces = scratch.join("check");
    let report = scratch.join("report.html");
    // `--por off`: the shortest counterexample in BFS order, the one the library's unreduced search finds.
    let output = retrylab(&[
        "check",
        MODEL,
        "--por",
        "off",
        "--traces",
        traces.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text =
        std::fs::read_to_string(traces.join("lease-no-fencing.no-duplicate-effect.json")).unwrap();
    let trace: Value = serde_json::from_str(&text).unwrap();
    let texts = trace["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["text"].as_str().unwrap().to_string())
        .collect();
    (texts, report)
}

/// Which steps of the counterexample are faults, by the library's own judgement.
fn faults_along(texts: &[String]) -> Vec<bool> {
    let model = retrylab::spec::load_model(&root().join(MODEL)).unwrap();
    let report = model.world.checker().bfs();
    let path = report.counterexample("no-duplicate-effect").unwrap();
    let run = retrylab::check::timeline(&model.world, path).unwrap();
    assert_eq!(
        run.steps
            .iter()
            .map(|step| step.text.clone())
            .collect::<Vec<_>>(),
        texts
    );
    run.steps
        .iter()
        .enumerate()
        .map(|(index, step)| model.world.is_fault(&run.states[index], &step.action))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn the_explorer_shows_the_duplicate_at_its_step_in_a_real_browser() {
    if !browser_installed() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let (texts, report) = counterexample(scratch.path());
    assert_eq!(texts.len(), 11, "the known 11-step counterexample");
    let faults = faults_along(&texts);
    let (_driver, port) = start_chromedriver();
    let (_server, url) = start_explore(&scratch.path().join("by-hand"));
    let client = connect(port).await;
    let saved = walk_by_hand(&client, &url, &texts, &faults).await;
    replay_and_continue(&client, &saved).await;
    read_the_report(&client, &report).await;
    client.close().await.expect("the session closes");
}

/// Take the counterexample's actions by clicking them; the duplicate shows at step 11 and not at step 10.
async fn walk_by_hand(client: &Client, url: &str, texts: &[String], faults: &[bool]) -> String {
    client.goto(url).await.unwrap();
    wait_step(client, 0).await;
    let find = "return [...document.querySelectorAll('#actions button')].findIndex((b) => b.dataset.text === arguments[0]);";
    for (index, text) in texts.iter().enumerate() {
        let offered = eval(client, find, vec![json!(text)])
            .await
            .as_i64()
            .unwrap();
        assert!(offered >= 0, "step {} is offered: {text}", index + 1);
        let button = client
            .find(Locator::Id(&format!("action-{offered}")))
            .await
            .unwrap();
        let class = button.attr("class").await.unwrap().unwrap_or_default();
        assert_eq!(
            class.contains("fault"),
            faults[index],
            "step {} marked as a fault or not: {text}",
            index + 1
        );
        button.click().await.unwrap();
        wait_step(client, index + 1).await;
        let duplicate = value(client, "Properties", "no-duplicate-effect").await;
        let expected = if index + 1 < 11 {
            "not violated so far"
        } else {
            "VIOLATED at step 11"
        };
        assert_eq!(duplicate, expected, "after step {}", index + 1);
    }
    check_duplicate_panels(client).await;
    // Back undoes step 11; taking it again shows the duplicate again.
    click(client, "back").await;
    wait_step(client, 10).await;
    assert!(value(client, "Ghost ledger (per operation)", "C1.op1")
        .await
        .starts_with("1 payment(s)"));
    let offered = eval(client, find, vec![json!(texts[10])])
        .await
        .as_i64()
        .unwrap();
    click(client, &format!("action-{offered}")).await;
    wait_step(client, 11).await;
    screenshot(client, "explorer-explore.png").await;
    click(client, "save").await;
    let started = Instant::now();
    loop {
        let path = eval(
            client,
            "return document.getElementById('saved').dataset.path || null;",
            vec![],
        )
        .await;
        if let Some(path) = path.as_str() {
            return path.to_string();
        }
        assert!(
            started.elapsed() < Duration::from_millis(WAIT_MS_MAX),
            "the trace was never saved"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// At step 11: two payments for one operation, the store's record, and the slow owner's lost claim.
async fn check_duplicate_panels(client: &Client) {
    let ledger = value(client, "Ghost ledger (per operation)", "C1.op1").await;
    assert!(ledger.starts_with("2 payment(s) (DUPLICATE)"), "{ledger}");
    let first = row(client, "Payments and provider charges", "payment C1.op1 #1")
        .await
        .unwrap();
    let second = row(client, "Payments and provider charges", "payment C1.op1 #2")
        .await
        .unwrap();
    assert_eq!(
        (first.0.as_str(), first.1),
        ("committed, for C1.op1", false),
        "payment C1.op1 #1 is older"
    );
    assert_eq!(
        (second.0.as_str(), second.1),
        ("committed, for C1.op1", true),
        "payment C1.op1 #2 is this step's"
    );
    let record = value(client, "Store", "key k1 of C1").await;
    assert!(
        record.starts_with("completed, stored response 201 payment C1.op1 #2"),
        "{record}"
    );
    let slow_owner = value(client, "Processes", "P1").await;
    assert!(
        slow_owner.contains("claim token 1")
            && slow_owner.contains("LOST (P2 took the key over with token 2)"),
        "{slow_owner}"
    );
    let heading = client
        .find(Locator::Id("now"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(heading.contains("DUPLICATE EFFECT"), "{heading}");
}

/// The saved trace replays with the CLI; opened again in the page, it continues past its end.
async fn replay_and_continue(client: &Client, saved: &str) {
    let output = retrylab(&["replay", saved]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("reproduced: no-duplicate-effect violated at step 11"),
        "{stdout}"
    );
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(saved).unwrap()).unwrap();
    assert_eq!(trace["found_by"], "by-hand");
    click(client, "restart").await;
    wait_step(client, 0).await;
    send_keys(client, "open", saved).await;
    wait_step(client, 11).await;
    click(client, "action-0").await;
    wait_step(client, 12).await;
    let steps = eval(
        client,
        "return document.querySelectorAll('#steps li').length;",
        vec![],
    )
    .await;
    assert_eq!(steps, json!(13), "the initial state and twelve steps");
}

/// The report page, opened from disk: a step chosen in the list, then the slider moved with the keyboard.
async fn read_the_report(client: &Client, index: &Path) {
    let page = index
        .with_extension("")
        .join("lease-no-fencing.no-duplicate-effect.html");
    client
        .goto(&format!("file://{}", page.display()))
        .await
        .unwrap();
    wait_step(client, 11).await; // it opens at the violation
    assert_eq!(diagram_current(client).await, json!(["11"]));
    opens_at_the_top(client).await;
    click(client, "step-7").await;
    wait_step(client, 7).await;
    // The sequence diagram follows the list: step 7 highlighted there now, and only it.
    assert_eq!(diagram_current(client).await, json!(["7"]));
    let (record, changed) = row(client, "Store", "key k1 of C1").await.unwrap();
    assert!(
        record.starts_with("in_progress, token 1, lease EXPIRED"),
        "{record}"
    );
    assert!(changed, "the expiry is step 7's change");
    assert_eq!(
        value(client, "Fault budgets left", "pauses").await,
        "0 of 1 left"
    );
    // A step picked in the diagram with a real click (the driver clicks the group's centre, where a reader's
    // pointer may meet only the step's band): the panels and the list follow it.
    let step_11 = client
        .find(Locator::Css("section.diagram g.step[data-step=\"11\"]"))
        .await
        .unwrap();
    step_11
        .click()
        .await
        .expect("the diagram's step takes a click");
    wait_step(client, 11).await;
    assert_eq!(diagram_current(client).await, json!(["11"]));
    check_duplicate_panels(client).await;
    screenshot(client, "explorer-report.png").await;
    // The slider, moved one step back with the keyboard: the duplicate is not there yet.
    send_keys(client, "slider", "\u{E012}").await;
    wait_step(client, 10).await;
    assert_eq!(
        value(client, "Properties", "no-duplicate-effect").await,
        "not violated so far"
    );
    assert!(
        row(client, "Payments and provider charges", "payment C1.op1 #2")
            .await
            .is_none()
    );
}

/// Once loaded, the page is at its top with the slider in view, though the last step is the one selected: the
/// address names the step in a form no element has as its id (a browser scrolls to the element a fragment names
/// when loading ends: with "#step-11" the page opened scrolled down to the list's last item).
async fn opens_at_the_top(client: &Client) {
    let loaded = "return document.readyState;";
    for _ in 0..200 {
        if eval(client, loaded, vec![]).await == json!("complete") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // Scrolling to a fragment follows the load event: give it a moment to happen, if it were going to.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let at = "const slider = document.getElementById('slider').getBoundingClientRect();\
              return [window.scrollY, slider.top >= 0 && slider.bottom <= window.innerHeight, location.hash];";
    assert_eq!(
        eval(client, at, vec![]).await,
        json!([0, true, "#at-step-11"]),
        "scrollY, slider in view, address"
    );
    let clients = value(client, "Clients", "C1").await;
    assert!(
        clients.contains("attempts used") && !clients.contains("charged"),
        "{clients}"
    );
}

/// The steps the page's sequence diagram highlights, by number.
async fn diagram_current(client: &Client) -> Value {
    eval(
        client,
        "return Array.from(document.querySelectorAll('section.diagram g.step.current'))\
         .map((group) => group.dataset.step);",
        vec![],
    )
    .await
}

/// Without a browser: the panels the pages draw, straight from the library, at the step of the duplicate and
/// the step before it (the twin: nothing is flagged there).
#[test]
fn the_views_show_the_duplicate_at_step_11_and_not_at_step_10() {
    let model = retrylab::spec::load_model(&root().join(MODEL)).unwrap();
    let report = model.world.checker().bfs();
    let path = report.counterexample("no-duplicate-effect").unwrap();
    let explored = retrylab::report::explore_path(&model.world, path, None).unwrap();
    assert_eq!(
        explored.views.len(),
        12,
        "the initial state and eleven steps"
    );
    let cell = |after: usize, panel: &str, label: &str| {
        let panel = explored.views[after]
            .panels
            .iter()
            .find(|found| found.title == panel)
            .unwrap();
        panel
            .rows
            .iter()
            .find(|row| row.label == label)
            .map(|row| row.value.clone())
    };
    let ledger = "Ghost ledger (per operation)";
    assert!(cell(11, ledger, "C1.op1")
        .unwrap()
        .starts_with("2 payment(s) (DUPLICATE)"));
    assert!(cell(10, ledger, "C1.op1")
        .unwrap()
        .starts_with("1 payment(s), "));
    assert_eq!(
        cell(11, "Properties", "no-duplicate-effect").unwrap(),
        "VIOLATED at step 11"
    );
    assert_eq!(
        cell(10, "Properties", "no-duplicate-effect").unwrap(),
        "not violated so far"
    );
    assert_eq!(explored.steps[10].violated, vec!["no-duplicate-effect"]);
    assert!(explored.steps[..10]
        .iter()
        .all(|step| step.violated.is_empty()));
    assert!(cell(7, "Store", "key k1 of C1")
        .unwrap()
        .contains("lease EXPIRED"));
    assert!(!cell(6, "Store", "key k1 of C1")
        .unwrap()
        .contains("EXPIRED"));
    let faults: Vec<usize> = explored
        .steps
        .iter()
        .filter(|step| step.fault)
        .map(|step| step.step)
        .collect();
    assert_eq!(faults, vec![2, 7], "the early timeout and the pause");
}

#[test]
fn explore_refuses_addresses_other_than_loopback() {
    for address in ["0.0.0.0:0", "192.168.0.1:8080", "[::]:0", "nowhere"] {
        let output = retrylab(&["explore", MODEL, "--listen", address]);
        assert_eq!(output.status.code(), Some(2), "{address}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("error: --listen {address}: ")),
            "{stderr}"
        );
        assert!(output.stdout.is_empty());
    }
    let output = retrylab(&[
        "explore",
        "models/no-such-model.toml",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_eq!(output.status.code(), Some(2));
}

/// The pages open with no network: nothing is loaded from anywhere (the only URL is the SVG namespace), and a
/// violation that is gone takes its page with it.
#[test]
fn the_html_report_is_self_contained_and_drops_stale_pages() {
    let scratch = tempfile::tempdir().unwrap();
    let folder = scratch.path().join("report");
    std::fs::create_dir_all(&folder).unwrap();
    let stale = folder.join("gone.no-duplicate-effect.html");
    std::fs::write(&stale, "old").unwrap();
    let (_, index) = counterexample(scratch.path());
    assert!(!stale.exists(), "the stale page is removed");
    let pages: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    let mut sorted = pages.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec![
            "lease-no-fencing.consistent-replay.html",
            "lease-no-fencing.no-duplicate-effect.html"
        ]
    );
    let index_text = std::fs::read_to_string(&index).unwrap();
    assert!(index_text.contains("href=\"report/lease-no-fencing.no-duplicate-effect.html\""));
    // Each violation says whether the model file declared it; the properties that hold are listed, and so are
    // the scenarios reached. The model declares no-duplicate-effect violated and says nothing of
    // consistent-replay.
    assert!(
        index_text.contains(
            "no-duplicate-effect</a> (11 steps) <span>declared violated (expected)</span>"
        ),
        "{index_text}"
    );
    assert!(
        index_text.contains("<span>not declared</span>"),
        "consistent-replay"
    );
    assert!(!index_text.contains("MISMATCH"));
    assert!(index_text.contains("<td><b>holds</b></td>") && index_text.contains("no-stuck-key"));
    assert!(index_text.contains("reached: ") && index_text.contains("slow-owner"));
    for page in pages {
        let text = std::fs::read_to_string(folder.join(&page)).unwrap();
        let without_namespace = text.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        for remote in ["http://", "https://", "<script src", "<link"] {
            assert!(!without_namespace.contains(remote), "{page} loads {remote}");
        }
        assert!(
            text.contains("<script type=\"application/json\" id=\"data\">")
                && text.contains("<svg ")
        );
    }
}

/// A handler design in the same page, served by the library (`report::explore_server`; the handler world's
/// actions are not serialisable, so the page sends each step as an index): select-then-insert's shortest duplicate,
/// clicked step by step, shows no-duplicate-effect violated at its last step and not before, and the page hides
/// save and open (served without a trace store).
#[tokio::test(flavor = "current_thread")]
async fn a_handler_design_is_walked_by_hand_in_a_real_browser() {
    use retrylab::handler::designs::select_then_insert::SelectThenInsert;
    use retrylab::handler::{HandlerFaults, HandlerWorld};
    use retrylab::report::explore_server::{choices_of, Explorer};
    if !browser_installed() {
        return;
    }
    let faults = HandlerFaults {
        early_timeouts: 1,
        ..HandlerFaults::default()
    };
    let world = HandlerWorld::new(SelectThenInsert, 1, "{\"amount\":500,\"currency\":\"RUB\"}")
        .processes(2)
        .faults(faults);
    let report = world.checker().bfs();
    let path = report.counterexample("no-duplicate-effect").expect("found");
    let choices = choices_of(&world, path).expect("a found path runs");
    let title = "retrylab handlers: select-then-insert";
    let host = explore_support::start(Explorer::new(world, title, "walked by hand"));
    let (_driver, port) = start_chromedriver();
    let client = connect(port).await;
    client.goto(&format!("http://{host}/")).await.unwrap();
    wait_step(&client, 0).await;
    let hidden = "return document.getElementById('traces').hidden;";
    assert_eq!(eval(&client, hidden, vec![]).await, json!(true));
    let last = choices.len();
    for (index, choice) in choices.iter().enumerate() {
        click(&client, &format!("action-{choice}")).await;
        wait_step(&client, index + 1).await;
        let duplicate = value(&client, "Properties", "no-duplicate-effect").await;
        let expected = match index + 1 == last {
            true => format!("VIOLATED at step {last}"),
            false => "not violated so far".to_string(),
        };
        assert_eq!(duplicate, expected, "after step {}", index + 1);
    }
    screenshot(&client, "explorer-handler.png").await;
    client.close().await.expect("the session closes");
}
