// `retrylab explore`: walk the model by hand. The path lives here, in the page; the server is stateless and
// answers each path with its steps, its states' views and the actions enabled at its end.
"use strict";

let path = [];
let reply = null;
let viewing = null; // null: the end of the path

function setError(text) {
  document.getElementById("error").textContent = text || "";
}

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    // WRITE_TOKEN is written into the page by the server: a save without it is refused (explore_server::Guard).
    headers: { "content-type": "application/json", "x-retrylab-token": WRITE_TOKEN },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let json = null;
  try { json = JSON.parse(text); } catch (_) { json = { error: text }; }
  if (!response.ok) throw new Error(json.error || text);
  return json;
}

async function refresh() {
  try {
    reply = await post("api/path", { actions: path });
    setError("");
  } catch (error) {
    setError(error.message);
    return;
  }
  viewing = null;
  render();
}

function render() {
  const steps = reply.path.steps;
  const current = viewing === null ? steps.length : viewing;
  showState(reply.path, current, (n) => { viewing = n === steps.length ? null : n; render(); });
  const at = document.getElementById("position");
  at.textContent = steps.length + " step(s) taken" + (viewing === null ? "" : ", viewing step " + viewing);
  const actions = document.getElementById("actions");
  actions.replaceChildren();
  if (reply.enabled.length === 0) actions.appendChild(el("p", { class: "note" }, "Nothing is enabled: the run has ended."));
  reply.enabled.forEach((choice, index) => {
    const button = el("button", { id: "action-" + index, "data-text": choice.text, class: choice.fault ? "fault" : "" });
    button.textContent = choice.text;
    if (choice.fault) button.appendChild(el("span", { class: "badge" }, "fault"));
    button.addEventListener("click", () => { path.push(choice.action); refresh(); });
    actions.appendChild(button);
  });
  document.getElementById("back").disabled = path.length === 0;
}

document.getElementById("back").addEventListener("click", () => { path.pop(); refresh(); });
document.getElementById("restart").addEventListener("click", () => { path = []; refresh(); });

document.getElementById("save").addEventListener("click", async () => {
  try {
    const saved = await post("api/save", { actions: path, property: document.getElementById("property").value });
    const link = document.getElementById("download");
    link.href = URL.createObjectURL(new Blob([saved.trace], { type: "application/json" }));
    link.download = saved.file_name;
    link.textContent = "download " + saved.file_name;
    document.getElementById("saved").textContent =
      "Saved (" + saved.property + ") to " + saved.path + ": retrylab replay " + saved.path;
    document.getElementById("saved").setAttribute("data-path", saved.path);
    setError("");
  } catch (error) {
    setError(error.message);
  }
});

document.getElementById("open").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  if (!file) return;
  try {
    const opened = await post("api/open", { text: await file.text() });
    path = opened.actions;
    await refresh();
  } catch (error) {
    setError(file.name + ": " + error.message);
  }
  event.target.value = "";
});

refresh();
