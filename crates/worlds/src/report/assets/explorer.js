// Shared by the HTML report and `retrylab explore`: a path's steps as a clickable list and a state as panels,
// with what changed since the previous state highlighted. Rows are matched by panel title and row label.
"use strict";

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function rowsByLabel(view) {
  const panels = new Map();
  for (const panel of (view ? view.panels : [])) {
    panels.set(panel.title, new Map(panel.rows.map((row) => [row.label, row.value])));
  }
  return panels;
}

// Draw `view` into `container`; with `previous`, mark new or changed rows and list removed ones struck out.
function renderPanels(container, view, previous) {
  container.replaceChildren();
  const before = previous ? rowsByLabel(previous) : null;
  for (const panel of view.panels) {
    const card = el("div", { class: "panel", "data-title": panel.title });
    card.appendChild(el("h3", {}, panel.title));
    const table = el("table");
    const old = before ? before.get(panel.title) || new Map() : null;
    for (const row of panel.rows) {
      const changed = old !== null && old.get(row.label) !== row.value;
      const tr = el("tr", { class: changed ? "row changed" : "row", "data-label": row.label });
      tr.appendChild(el("td", { class: "label" }, row.label));
      const bad = /VIOLATED|DUPLICATE|EXPIRED|LOST/.test(row.value);
      tr.appendChild(el("td", { class: bad ? "value bad" : "value" }, row.value));
      table.appendChild(tr);
    }
    if (old !== null) {
      const now = new Set(panel.rows.map((row) => row.label));
      for (const [label, value] of old) {
        if (now.has(label)) continue;
        const tr = el("tr", { class: "row removed", "data-label": label });
        tr.appendChild(el("td", { class: "label" }, label));
        tr.appendChild(el("td", { class: "value" }, value));
        table.appendChild(tr);
      }
    }
    if (table.children.length === 0) {
      const tr = el("tr", { class: "empty" });
      tr.appendChild(el("td", {}, "(none)"));
      table.appendChild(tr);
    }
    card.appendChild(table);
    container.appendChild(card);
  }
}

// The step list: "initial state", then each step; `onPick(n)` when one is clicked.
function renderSteps(list, steps, current, onPick) {
  list.replaceChildren();
  const items = [{ step: 0, text: "initial state", fault: false, violated: [] }].concat(steps);
  for (const step of items) {
    const li = el("li", { id: "step-" + step.step, "data-step": String(step.step) });
    if (step.step === current) li.classList.add("current");
    if (step.violated.length > 0) li.classList.add("violation");
    li.appendChild(el("span", { class: "n" }, step.step === 0 ? "" : step.step + "."));
    li.appendChild(document.createTextNode(step.text));
    if (step.fault) li.appendChild(el("span", { class: "badge" }, "fault"));
    for (const name of step.violated) li.appendChild(el("span", { class: "badge broke" }, name));
    li.addEventListener("click", () => onPick(step.step));
    list.appendChild(li);
  }
  // Scroll the list only (scrollIntoView, focus() or a "#step-N" address would scroll the whole page too). The
  // list is positioned, so an item's offsetTop is measured from the list's own top.
  const chosen = document.getElementById("step-" + current);
  if (chosen && (chosen.offsetTop < list.scrollTop || chosen.offsetTop + chosen.offsetHeight > list.scrollTop + list.clientHeight)) {
    list.scrollTop = Math.max(0, chosen.offsetTop - list.clientHeight / 2);
  }
}

// The heading over the panels: which state is shown.
function renderNow(heading, steps, current) {
  const step = current > 0 ? steps[current - 1] : null;
  heading.textContent = step ? "After step " + current + ": " + step.text : "Initial state";
  heading.classList.toggle("violation", step !== null && step.violated.length > 0);
  heading.setAttribute("data-step", String(current));
}

// Show state `current` of `path` ({steps, views}) in the page's shared elements.
function showState(path, current, onPick) {
  renderSteps(document.getElementById("steps"), path.steps, current, onPick);
  renderNow(document.getElementById("now"), path.steps, current);
  const previous = current > 0 ? path.views[current - 1] : null;
  renderPanels(document.getElementById("panels"), path.views[current], previous);
}
