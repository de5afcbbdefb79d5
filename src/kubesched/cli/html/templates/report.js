"use strict";
// The heat map, drawn here from the JSON above: one resource at a time, a cell per
// node, nodes grouped by zone (collapsible) and the fullest first, so that 5,000
// nodes stay one screen. Row layout: [name, zone index, pods, [[percent, text], ...]].
(function () {
  const source = document.getElementById("heat-data");
  if (!source) { return; }
  const heat = JSON.parse(source.textContent);
  const tabs = document.getElementById("heat-resources");
  const zonesBox = document.getElementById("heat-zones");
  const detail = document.getElementById("node-detail");
  const dense = heat.nodes.length > 1000;

  function bucket(percent) {
    if (percent < 0) { return "na"; }
    return "h" + Math.min(10, Math.floor(percent / 10));
  }

  function showNode(row) {
    detail.replaceChildren();
    const title = document.createElement("b");
    title.textContent = row[0] + " (" + heat.zones[row[1]] + ", " + row[2] + " pods)";
    detail.appendChild(title);
    const table = document.createElement("table");
    heat.resources.forEach(function (resource, i) {
      const tr = table.insertRow();
      tr.insertCell().textContent = resource;
      tr.insertCell().textContent = row[3][i][1];
      tr.insertCell().textContent = row[3][i][0] < 0 ? "-" : row[3][i][0] + "%";
    });
    detail.appendChild(table);
    detail.hidden = false;
  }

  function draw(index) {
    Array.from(tabs.children).forEach(function (b, i) {
      b.setAttribute("aria-selected", String(i === index));
    });
    const open = new Set(Array.from(zonesBox.querySelectorAll("details.zone:not([open])"))
      .map(function (d) { return d.dataset.zone; }));
    zonesBox.replaceChildren();
    heat.zones.forEach(function (zone, z) {
      const rows = heat.nodes.filter(function (row) { return row[1] === z; });
      rows.sort(function (a, b) { return b[3][index][0] - a[3][index][0] || (a[0] < b[0] ? -1 : 1); });
      const offered = rows.filter(function (row) { return row[3][index][0] >= 0; });
      const mean = offered.length
        ? Math.round(offered.reduce(function (s, row) { return s + row[3][index][0]; }, 0) / offered.length)
        : 0;
      const box = document.createElement("details");
      box.className = "zone";
      box.dataset.zone = zone;
      box.open = !open.has(zone);
      const summary = document.createElement("summary");
      summary.textContent = zone + " — " + rows.length + " node(s)" +
        (offered.length ? ", mean " + mean + "% " + heat.resources[index] : ", none offer " + heat.resources[index]);
      box.appendChild(summary);
      const cells = document.createElement("div");
      cells.className = dense ? "cells dense" : "cells";
      const fragment = document.createDocumentFragment();
      rows.forEach(function (row) {
        const cell = document.createElement("span");
        const value = row[3][index];
        cell.className = "cell " + bucket(value[0]);
        cell.title = row[0] + ": " + value[1] + (value[0] < 0 ? "" : " (" + value[0] + "%)");
        cell.addEventListener("click", function () { showNode(row); });
        fragment.appendChild(cell);
      });
      cells.appendChild(fragment);
      box.appendChild(cells);
      zonesBox.appendChild(box);
    });
  }

  heat.resources.forEach(function (resource, i) {
    const button = document.createElement("button");
    button.type = "button";
    button.setAttribute("role", "tab");
    button.dataset.resource = resource;
    button.textContent = resource;
    button.addEventListener("click", function () { draw(i); });
    tabs.appendChild(button);
  });
  if (heat.resources.length) { draw(0); }
}());

// The drill-down: a "why?" link opens that pod's explanation and brings it into view.
(function () {
  function reveal(id) {
    const target = document.getElementById(id);
    if (!target || target.tagName !== "DETAILS") { return; }
    target.open = true;
    target.scrollIntoView({ block: "start" });
  }
  document.addEventListener("click", function (event) {
    const link = event.target.closest ? event.target.closest("a.why") : null;
    if (!link) { return; }
    event.preventDefault();
    history.replaceState(null, "", "#" + link.dataset.target);
    reveal(link.dataset.target);
  });
  if (location.hash.length > 1) { reveal(decodeURIComponent(location.hash.slice(1))); }
}());
