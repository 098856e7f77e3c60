// geobench results site: sortable tables and row filters, no dependencies, works from file://
"use strict";

function sortValue(cell) {
  const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
  const number = parseFloat(raw);
  return raw !== "" && !isNaN(number) && isFinite(raw) ? number : raw.toLowerCase();
}

function sortBy(table, index, header) {
  const body = table.tBodies[0];
  const ascending = header.getAttribute("aria-sort") !== "ascending";
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = sortValue(a.cells[index]), y = sortValue(b.cells[index]);
    if (x === y) return 0;
    if (x === "") return 1;
    if (y === "") return -1;
    const order = typeof x === typeof y ? (x < y ? -1 : 1) : (typeof x === "number" ? -1 : 1);
    return ascending ? order : -order;
  });
  table.querySelectorAll("th").forEach((th) => th.removeAttribute("aria-sort"));
  header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  rows.forEach((row) => body.appendChild(row));
}

function applyFilters(target) {
  const chosen = Array.from(document.querySelectorAll(`select[data-filter][data-target="${target}"]`))
    .filter((s) => s.value !== "");
  let shown = 0, total = 0;
  document.querySelectorAll(target).forEach((table) => {
    let here = 0;
    Array.from(table.tBodies[0].rows).forEach((row) => {
      row.hidden = !chosen.every((s) => row.dataset[s.dataset.filter] === s.value);
      if (!row.hidden) here += 1;
      total += 1;
    });
    shown += here;
    const section = table.closest("section");
    if (section) section.hidden = here === 0;
  });
  document.querySelectorAll(`[data-count="${target}"]`).forEach((el) => {
    el.textContent = `${shown} of ${total} rows shown`;
  });
}

document.querySelectorAll("table.sortable").forEach((table) => {
  table.querySelectorAll("thead th").forEach((th, i) => {
    th.addEventListener("click", () => sortBy(table, i, th));
  });
});
const targets = new Set();
document.querySelectorAll("select[data-filter]").forEach((select) => {
  targets.add(select.dataset.target);
  select.addEventListener("change", () => applyFilters(select.dataset.target));
});
targets.forEach(applyFilters);
