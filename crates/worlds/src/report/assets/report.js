// The HTML report's page: a slider and a step list over the counterexample embedded in the page.
"use strict";

const data = JSON.parse(document.getElementById("data").textContent);
const slider = document.getElementById("slider");
const last = data.path.steps.length;
slider.max = String(last);

// The sequence diagram's steps (none when the model draws no diagram): the shown one highlighted, each a pick.
const diagramSteps = Array.from(document.querySelectorAll("section.diagram g.step"));
for (const group of diagramSteps) {
  group.addEventListener("click", () => show(Number(group.dataset.step)));
}

function show(n) {
  const current = Math.max(0, Math.min(last, n));
  slider.value = String(current);
  document.getElementById("position").textContent = "step " + current + " of " + last;
  showState(data.path, current, show);
  for (const group of diagramSteps) {
    group.classList.toggle("current", Number(group.dataset.step) === current);
  }
  // The step in the address, for a link to it; not "#step-N", which is a list item's id: a browser scrolls the
  // window to the element a fragment names when the page finishes loading, so the page opened scrolled down to
  // the last step instead of at its top with the controls in view.
  history.replaceState(null, "", "#at-step-" + current);
}

slider.addEventListener("input", () => show(Number(slider.value)));
document.getElementById("prev").addEventListener("click", () => show(Number(slider.value) - 1));
document.getElementById("next").addEventListener("click", () => show(Number(slider.value) + 1));
document.addEventListener("keydown", (event) => {
  if (event.target === slider) return; // the slider moves itself
  if (event.key === "ArrowLeft") show(Number(slider.value) - 1);
  if (event.key === "ArrowRight") show(Number(slider.value) + 1);
});
const fromHash = /^#(?:at-)?step-(\d+)$/.exec(location.hash);
show(fromHash ? Number(fromHash[1]) : last);
