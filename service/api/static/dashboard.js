// bgix dashboard: vanilla JS over the /v1 HTTP API. No frameworks, nothing fetched from outside this service.
"use strict";

const TOKEN_KEY = "bgixToken";
const JOB_POLL_MS = 700;
const IDLE_POLL_MS = 5000;
const SUGGEST_DEBOUNCE_MS = 150;
const TOP_VALUES = 15;

const state = { tables: [], brokenTables: [], explore: null, activeJobs: new Set(), knownJobs: new Map(), tokenWaiters: [] };
const $ = (id) => document.getElementById(id);

// ---- API access: one place for the token, the error envelope and 401 handling ----------------------
class ApiError extends Error {
  constructor(status, code, message, details) {
    super(code ? `${code}: ${message}` : message);
    this.status = status; this.code = code; this.details = details || {};
  }
}

function token() { return sessionStorage.getItem(TOKEN_KEY); }

function askForToken() {
  // Ask once: every request that hits 401 waits for the same form submission.
  $("token-panel").hidden = false;
  $("token-input").focus();
  return new Promise((resolve) => state.tokenWaiters.push(resolve));
}

// Integers past 2^53 (BIGINT keys, sums) keep every digit as BigInts: JSON.parse alone rounds them to the nearest
// double, and a facet click or a value's filter would then name another key (a silent wrong answer). BigInts go back
// out of JSON.stringify as the same digits (JSON.rawJSON), so request bodies and shown JSON stay exact too.
function exactJSON(text) {
  return JSON.parse(text, (_, value, context) =>
    typeof value === "number" && !Number.isSafeInteger(value) && context && /^-?\d+$/.test(context.source)
      ? BigInt(context.source) : value);
}
if (JSON.rawJSON) BigInt.prototype.toJSON = function () { return JSON.rawJSON(this.toString()); };
else BigInt.prototype.toJSON = function () { return this.toString(); };   // older browsers: digits as text

async function api(method, path, body, retried) {
  const text = await request(method, path, body, retried, "application/json");
  if (!text) return null;
  try { return exactJSON(text); } catch (_) { return null; }
}

// A text/plain resource (a job's log) through the same token and error handling.
function apiText(path) { return request("GET", path, undefined, false, "text/plain"); }

async function request(method, path, body, retried, accept) {
  const headers = { "Accept": accept };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const t = token();
  if (t) headers["Authorization"] = `Bearer ${t}`;
  let resp;
  try {
    resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    throw new ApiError(0, "network", `cannot reach the service (${e.message})`);
  }
  if (resp.status === 401 && !retried) {
    // Sent before a token was entered (two loads raced the prompt): send it again with the new one, do not ask twice.
    const now = token();
    if (now && now !== t) return request(method, path, body, false, accept);
    if (t) sessionStorage.removeItem(TOKEN_KEY);  // a wrong token must not be replayed forever
    await askForToken();
    return request(method, path, body, true, accept);
  }
  const text = await resp.text();
  let data = null;
  if (!resp.ok && text) { try { data = JSON.parse(text); } catch (_) { data = null; } }
  if (!resp.ok) {
    // Show the API's own words (error envelope); fall back to the raw body for proxies etc.
    const err = data && data.error;
    if (err) throw new ApiError(resp.status, err.code, err.message, err.details);
    throw new ApiError(resp.status, `http_${resp.status}`, text.slice(0, 300) || resp.statusText);
  }
  return text;
}

const enc = encodeURIComponent;

// ---- formatting ----------------------------------------------------------------------------------
function fmtInt(n) { return n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US"); }
function fmtBytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let v = Number(n), i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}
function fmtDuration(sec) {
  if (sec === null || sec === undefined || !Number.isFinite(sec)) return "—";
  if (sec < 60) return `${sec.toFixed(1)} s`;
  if (sec < 3600) return `${Math.floor(sec / 60)} min ${Math.round(sec % 60)} s`;
  return `${Math.floor(sec / 3600)} h ${Math.round((sec % 3600) / 60)} min`;
}
function fmtValue(v) { return v === null ? "NULL" : (typeof v === "string" ? v : JSON.stringify(v)); }
// Row ranges in the catalog are inclusive [start, end] (spec §5.1).
function rangeRows(ranges) { return (ranges || []).reduce((s, r) => s + (r[1] - r[0] + 1), 0); }

// What a query's count means, from the answer's own `exact` and `coverage`: "exact"; "superset" (a part the
// indexes declined was dropped under an AND); "declined" (the indexes answered nothing: not "0 rows");
// "incomplete" (exact over the indexed rows, but rows no index covers were not evaluated).
function answerKind(ans) {
  if (ans.exact === false) return ans.count ? "superset" : "declined";
  return ans.coverage && ans.coverage.complete === false ? "incomplete" : "exact";
}

function uncoveredText(ans) {
  const cov = ans.coverage || {};
  return cov.complete === false ? `${fmtInt(rangeRows(cov.uncovered_ranges))} rows not covered by an index (not evaluated)` : "";
}

// A count in words that never passes an inexact answer off as exact.
function countText(ans) {
  const kind = answerKind(ans), missing = uncoveredText(ans);
  const main = kind === "declined" ? "not answered: the indexes declined this predicate"
    : kind === "superset" ? `at most ${fmtInt(ans.count)} rows of the indexed ones (a superset)`
    : `${fmtInt(ans.count)} rows`;
  return missing ? `${main}, and ${missing}` : main;
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

// ---- index families (index_format/families.py): one column may have an index of each --------------
// name → description, served by GET /v1/index-families from index_format/families.py (loadFamilies)
let FAMILIES = {};
// name → the key types its columns must have (absent: any scalar), from the same answer
let FAMILY_KEY_TYPES = {};

async function loadFamilies() {
  const data = await api("GET", "/v1/index-families");
  const families = (data && data.families) || [];
  FAMILIES = Object.fromEntries(families.map((f) => [f.name, `${f.name}: ${f.description}`]));
  FAMILY_KEY_TYPES = Object.fromEntries(families.filter((f) => f.key_types).map((f) => [f.name, f.key_types]));
  const sel = $("build-type");
  const prev = sel.value;
  const built = families.filter((f) => f.builds);
  if (built.length) {
    sel.replaceChildren(...built.map((f) => el("option", { value: f.name }, f.name)));
    if (built.some((f) => f.name === prev)) sel.value = prev;
  }
  // the tables may have been drawn first (the loads run together): give their badges and the hint the text
  document.querySelectorAll(".badge.family").forEach((b) => { b.title = FAMILIES[b.dataset.family] || b.title; });
  $("build-type-hint").textContent = FAMILIES[sel.value] || "";
}

function familyOf(ix) { return (ix && ix.index_type) || "bitmap"; }
// An index is one (column, family): two families on one column are two rows, never one overwriting the other.
function indexKey(column, family) { return `${column}\u0000${family || "bitmap"}`; }

function familyTag(family) {
  // A build of several columns names one family per column ("btree,multivalue"): one badge each.
  return String(family || "bitmap").split(",").map((f) => f.trim()).map((f) =>
    el("span", { class: `badge family family-${f}`, "data-family": f, title: FAMILIES[f] || `${f} index` }, f));
}

// A multivalue index's keys are the array's elements; its Type cell names the column's type.
function keyTypeText(family, keyType) { return family === "multivalue" ? `array<${keyType}>` : keyType; }

function bar(fraction, cls) {
  const pct = Math.max(0, Math.min(1, Number(fraction) || 0)) * 100;
  return el("div", { class: `bar ${cls || ""}`, role: "progressbar", "aria-valuenow": pct.toFixed(1),
                     "aria-valuemin": "0", "aria-valuemax": "100" },
            el("span", { style: `width:${pct}%` }));
}

function showError(box, err) {
  const node = typeof box === "string" ? $(box) : box;
  if (!err) { node.hidden = true; node.textContent = ""; return; }
  node.textContent = err.message || String(err);
  node.hidden = false;
}

// ---- tables and indexes --------------------------------------------------------------------------
async function loadTables() {
  const data = await api("GET", "/v1/tables");
  const tables = (data && data.tables) || [];
  const details = await Promise.all(tables.map(async (t) => {
    // A Paimon table's own description (snapshot, fields, every writer's indexes) is only in GET /v1/tables/{name}.
    const [idx, files, shown] = await Promise.all([
      api("GET", `/v1/tables/${enc(t.name)}/indexes`).catch((e) => ({ error: e, indexes: [] })),
      api("GET", `/v1/tables/${enc(t.name)}/files`).catch(() => null),
      t.format === "paimon" ? api("GET", `/v1/tables/${enc(t.name)}`).catch(() => null) : null,
    ]);
    return { table: t, indexes: idx.indexes || [], indexErrors: idx.errors || [], indexError: idx.error, files,
             paimon: shown && shown.paimon };
  }));
  state.tables = details;
  state.brokenTables = (data && data.errors) || [];   // registered, but their table.json does not read
  renderTables();
  fillTableSelects();
}

function renderTables() {
  const root = $("tables");
  root.replaceChildren();
  for (const b of state.brokenTables) root.append(brokenTableCard(b));
  if (!state.tables.length) {
    if (!state.brokenTables.length) {
      root.append(el("p", { class: "muted" }, "No tables registered yet. Register one with PUT /v1/tables/{name}."));
    }
    return;
  }
  for (const d of state.tables) root.append(tableCard(d));
}

// A broken catalog document or data file is named where the operator looks, not only in the server log.
function brokenTableCard(b) {
  return el("div", { class: "table-card broken", "data-table": b.name },
    el("div", { class: "table-head" }, el("span", { class: "name" }, b.name), el("span", { class: "badge bad" }, "unreadable")),
    el("div", { class: "error-box" }, `${b.error.code}: ${b.error.message} — DELETE /v1/tables/${b.name} removes it.`));
}

function problemBoxes(d) {
  const out = [];
  for (const e of (d.files && d.files.errors) || []) {
    out.push(el("div", { class: "error-box file-error", "data-path": e.path }, `data file ${e.path} has no row ids: ${e.reason}`));
  }
  for (const e of d.indexErrors || []) {
    // a column whose snapshot does not read, or one index file of a family that does not (its row stays, without
    // statistics; queries that need the file fail naming it)
    const family = e.index_type ? ` (${e.index_type})` : "";
    out.push(el("div", { class: "error-box index-error", "data-column": e.column, "data-family": e.index_type || "" },
                `index on ${e.column}${family}: ${e.error.message}`));
  }
  return out;
}

function tableCard(d) {
  if (d.table.format === "paimon") return paimonCard(d);
  const t = d.table;
  // total_rows is the end of the row-id space (coverage is measured in it); a rewritten file gets new ids
  // at the end, so the table's actual row count is the sum over its live files.
  const totalRows = d.files ? d.files.total_rows : null;
  const liveRows = d.files ? d.files.files.reduce((s, f) => s + Number(f.row_count || 0), 0) : null;
  const head = el("div", { class: "table-head" },
    el("span", { class: "name" }, t.name),
    el("span", { class: "badge" }, t.format),
    el("span", { class: "muted mono" }, t.location),
    el("span", { class: "muted" }, d.files ? `${fmtInt(liveRows)} rows · ${fmtInt(d.files.files.length)} data files` : ""),
    // The indexes endpoint judges staleness against the persisted row-id map; a rescan of the location
    // (a write: needs the token) is what notices changed or new files, so the stale badge can appear.
    el("button", { type: "button", class: "ghost rescan-btn", title: "rescan the table location for changed or new files",
                   onclick: () => rescanTable(t.name, card) }, "Rescan files"));
  const card = el("div", { class: "table-card", "data-table": t.name }, head, problemBoxes(d));
  if (d.indexError) { const box = el("div", { class: "error-box" }); showError(box, d.indexError); card.append(box); }
  if (!d.indexes.length) { card.append(el("p", { class: "muted" }, "No indexes yet.")); return card; }
  const rows = d.indexes.map((ix) => indexRow(t.name, ix, totalRows));
  card.append(el("div", { class: "table-scroll" }, el("table", { class: "grid indexes" },
    el("thead", {}, el("tr", {},
      ["Column", "Type", "Rows", "Files", "Size", "Distinct", "Nulls", "Coverage", "Snapshot", "Built", ""].map(
        (h, i) => el("th", { class: i >= 2 && i <= 6 ? "num" : null }, h)))),
    el("tbody", {}, rows))));
  return card;
}

// ---- Paimon tables: the table's own snapshot, and every global index in it (any family), whoever wrote it --
const ORIGIN_TITLES = {
  bgix: "committed by a bgix build (snapshot property bgix.job-id)",
  paimon: "DEIX source_meta: written by Paimon Java (or another DEIX writer)",
  pypaimon: "no source_meta: written by pypaimon's or pypaimon-rust's create_global_index",
  unknown: "source_meta of an unknown writer",
};

function paimonCard(d) {
  const t = d.table, p = d.paimon;
  // Paimon versions the table itself (the service polls its snapshot id), so there is nothing to rescan.
  const head = el("div", { class: "table-head" },
    el("span", { class: "name" }, t.name),
    el("span", { class: "badge paimon" }, t.format),
    p ? el("span", { class: "paimon-snapshot", "data-snapshot": p.snapshot_id === null ? "" : String(p.snapshot_id),
                     title: "the Paimon snapshot served" },
           p.snapshot_id === null ? "no snapshot yet" : `snapshot #${p.snapshot_id}`) : null,
    el("span", { class: "muted mono" }, t.location),
    p ? el("span", { class: "muted paimon-rows" },
           `${fmtInt(p.row_count - p.deleted_rows)} rows · ${fmtInt(p.deleted_rows)} deleted`
           + (p.partition_keys.length ? ` · partitioned by ${p.partition_keys.join(", ")}` : " · unpartitioned")) : null);
  const card = el("div", { class: "table-card", "data-table": t.name, "data-format": "paimon" }, head, problemBoxes(d));
  if (d.indexError) { const box = el("div", { class: "error-box" }); showError(box, d.indexError); card.append(box); }
  if (!p) { card.append(el("p", { class: "muted" }, "The Paimon snapshot could not be read.")); return card; }
  if (!p.indexes.length) { card.append(el("p", { class: "muted" }, "No global index in this snapshot yet.")); return card; }
  const served = new Map(d.indexes.map((ix) => [indexKey(ix.column, familyOf(ix)), ix]));
  const liveRows = p.row_count - p.deleted_rows;
  card.append(el("div", { class: "table-scroll" }, el("table", { class: "grid indexes" },
    el("thead", {}, el("tr", {},
      ["Column", "Type", "_ROW_IDs", "Files", "Size", "Distinct", "Nulls", "Coverage", "Origin", "Row ranges", ""].map(
        (h, i) => el("th", { class: i >= 2 && i <= 6 ? "num" : null }, h)))),
    el("tbody", {}, p.indexes.map((pix) => paimonIndexRow(t.name, pix, served.get(indexKey(pix.column, familyOf(pix))), liveRows))))));
  return card;
}

function paimonIndexRow(table, pix, ix, liveRows) {
  if (pix.served === false) return unservedIndexRow(pix);
  // `ix` (from /indexes) is absent when bgix cannot read the column's keys; the manifest figures still show.
  const uncovered = ix ? rangeRows(ix.uncovered_ranges) : null;
  const covered = ix ? rangeRows(ix.covered_ranges) : rangeRows(pix.row_ranges);
  const total = ix ? covered + uncovered : liveRows;
  const frac = total ? Math.min(1, covered / total) : 0;
  const family = familyOf(pix);
  const keyType = ix ? ix.key_type : pix.key_type;
  const type = keyType ? keyTypeText(family, keyType) : "not readable by bgix";
  // A Paimon index is stale when a data-evolution update changed the column after some files were built: their
  // rows are served as uncovered until an incremental build refreshes them.
  const stale = pix.stale || (ix && ix.stale);
  const staleTitle = (pix.stale_files || []).map((f) => `${f.index_file} (rows ${f.row_range[0]}–${f.row_range[1]}): `
    + `${f.reason} by ${f.data_file} in snapshot #${f.sequence}`).join("\n") || "updated since the build";
  const badge = stale ? el("span", { class: "badge stale", title: staleTitle }, "stale")
                      : el("span", { class: "badge fresh" }, "fresh");
  return el("tr", { "data-column": pix.column, "data-family": family },
    el("td", {}, el("code", {}, pix.column), " ", badge),
    el("td", { class: "index-type" }, familyTag(family), ` · ${type}`, ix ? keyOrderTag(ix) : null),
    el("td", { class: "num" }, fmtInt(covered)),
    el("td", { class: "num" }, fmtInt(pix.files)),
    el("td", { class: "num" }, fmtBytes(pix.bytes)),
    el("td", { class: "num" }, ix ? fmtInt(ix.distinct_values) : "—"),
    el("td", { class: "num" }, ix ? fmtInt(ix.null_rows) : "—"),
    el("td", {}, bar(frac, frac >= 1 ? "done" : ""),
       el("div", { class: "bar-label" }, `${(100 * frac).toFixed(1)}%` + (uncovered ? ` · ${fmtInt(uncovered)} rows uncovered` : ""))),
    el("td", { class: "origins" }, (pix.origins || []).map(originTag)),
    el("td", { class: "mono ranges" }, fmtRanges(pix.row_ranges)),
    el("td", {}, ix ? el("button", { type: "button", class: "ghost explore-btn", onclick: () => openExplore(table, pix.column, family) }, "Explore") : null));
}

// An index of a type bgix lists but does not read (full-text, vector, ...): what the manifest says, and why no
// query uses it (predicates on its column go to the scan step).
function unservedIndexRow(pix) {
  const family = familyOf(pix);
  return el("tr", { "data-column": pix.column, "data-family": family, "data-served": "false" },
    el("td", {}, el("code", {}, pix.column), " ", el("span", { class: "badge unserved", title: pix.reason }, "not served")),
    el("td", { class: "index-type" }, el("span", { class: "badge family", "data-family": family, title: pix.reason }, family)),
    el("td", { class: "num" }, fmtInt(rangeRows(pix.row_ranges))),
    el("td", { class: "num" }, fmtInt(pix.files)),
    el("td", { class: "num" }, fmtBytes(pix.bytes)),
    el("td", { class: "num" }, "—"),
    el("td", { class: "num" }, "—"),
    el("td", { class: "unserved-reason muted" }, pix.reason || "not served by bgix"),
    el("td", {}),
    el("td", { class: "mono ranges" }, fmtRanges(pix.row_ranges)),
    el("td", {}));
}

function originTag(o) {
  // Job ids are long: the first 8 characters identify one in the jobs list; the full id is in the title.
  const job = o.job_id ? ` · job ${o.job_id.slice(0, 8)}` : "";
  const title = `${ORIGIN_TITLES[o.origin] || o.origin}${o.job_id ? ` (job ${o.job_id})` : ""}`
    + `${o.snapshot_id != null ? ` in snapshot #${o.snapshot_id}` : ""}`
    + ` — ${fmtInt(o.files)} file(s), ${fmtInt(o.rows)} rows, ${fmtRanges(o.row_ranges)}`;
  return el("div", { class: "origin", "data-origin": o.origin, "data-job": o.job_id || null, title },
            el("span", { class: `badge origin-${o.origin}` }, o.origin),
            el("span", { class: "muted" }, `${fmtInt(o.files)} file${o.files === 1 ? "" : "s"}${job}`));
}

// Inclusive [first, last] ranges, the first few of them (a table with many commits has many ranges).
function fmtRanges(ranges, max = 3) {
  const rs = ranges || [];
  if (!rs.length) return "—";
  const shown = rs.slice(0, max).map((r) => (r[0] === r[1] ? `${r[0]}` : `${r[0]}–${r[1]}`)).join(", ");
  return rs.length > max ? `${shown}, … (${rs.length} ranges)` : shown;
}

async function rescanTable(name, card) {
  const box = card.querySelector(".rescan-error") || card.insertBefore(el("div", { class: "error-box rescan-error", hidden: true }), card.children[1] || null);
  try {
    await api("GET", `/v1/tables/${enc(name)}/files?refresh=true`);
    showError(box, null);
    await loadTables();
  } catch (e) {
    showError(box, e);
  }
}

// Key order of numeric/date/time keys (spec §2.7): recorded with a bgix build's options, read from the files for
// Paimon tables (whose writers record none); strings and booleans are the same in both orders, so nothing is shown.
const KEY_ORDER_READERS = { logical: "Paimon Java (current) and bgix", bytes: "pypaimon 2.1 and bgix" };

function keyOrderTag(ix) {
  // key_order: recorded at a bgix build or read from a Paimon table's files; older services only had options.
  const order = ix.key_order || (ix.options || {})["bgix.key-order"];
  if (!order || /^(string|varchar|char|boolean)/.test(ix.key_type)) return null;
  return el("span", { class: "muted key-order", "data-order": order,
                      title: `${order} key order: searchable by ${KEY_ORDER_READERS[order] || "bgix"}` },
            ` · ${order} order`);
}

function indexRow(table, ix, totalRows) {
  const covered = rangeRows(ix.covered_ranges);
  const uncovered = rangeRows(ix.uncovered_ranges);
  // Covered + uncovered ranges span the live files' ids. The id space (total_rows) can be larger: a
  // rewritten or removed file leaves a hole, and dividing by it would show a complete index as partial.
  const total = covered + uncovered || totalRows;
  const frac = total ? covered / total : 0;
  const badge = ix.stale ? el("span", { class: "badge stale", title: "source files changed since the build" }, "stale")
                         : el("span", { class: "badge fresh" }, "fresh");
  const family = familyOf(ix);
  return el("tr", { "data-column": ix.column, "data-family": family },
    el("td", {}, el("code", {}, ix.column), " ", badge),
    el("td", { class: "index-type" }, familyTag(family), ` · ${keyTypeText(family, ix.key_type)}`, keyOrderTag(ix)),
    el("td", { class: "num" }, fmtInt(covered)),
    el("td", { class: "num" }, fmtInt(ix.files)),
    el("td", { class: "num" }, fmtBytes(ix.bytes)),
    el("td", { class: "num" }, fmtInt(ix.distinct_values)),
    el("td", { class: "num" }, fmtInt(ix.null_rows)),
    el("td", {}, bar(frac, frac >= 1 ? "done" : ""),
       el("div", { class: "bar-label" }, `${(100 * frac).toFixed(1)}%` + (uncovered ? ` · ${fmtInt(uncovered)} rows uncovered` : ""))),
    el("td", {}, `#${ix.snapshot_id}`),
    el("td", { class: "muted nowrap" }, ix.built_at ? ix.built_at.replace("T", " ").slice(0, 19) : "—"),
    el("td", {}, el("button", { type: "button", class: "ghost explore-btn", onclick: () => openExplore(table, ix.column, family) }, "Explore")));
}

function fillTableSelects() {
  for (const id of ["query-table", "build-table"]) {
    const sel = $(id), prev = sel.value;
    sel.replaceChildren(...state.tables.map((d) => el("option", { value: d.table.name }, d.table.name)));
    if (prev && state.tables.some((d) => d.table.name === prev)) sel.value = prev;
  }
  fillColumnList();
  facetsOnTables();   // facets.js: the columns one can facet on
}

function fillColumnList() {
  const d = state.tables.find((x) => x.table.name === $("build-table").value);
  const family = $("build-type").value;
  $("build-type-hint").textContent = FAMILIES[family] || "";
  // A Paimon table names its fields: offer those the chosen family can index (partition keys excepted): ARRAY
  // fields for multivalue, fields with a scalar key type for bitmap and btree, STRING fields for fm (its
  // key_types).
  const allowed = FAMILY_KEY_TYPES[family];
  const fits = (f) => (family === "multivalue" ? /^ARRAY\b/i.test(f.type)
    : Boolean(f.key_type) && (!allowed || allowed.includes(f.key_type)));
  const cols = !d ? [] : d.paimon
    ? d.paimon.fields.filter((f) => fits(f) && !d.paimon.partition_keys.includes(f.name)).map((f) => f.name)
    : [...new Set(d.indexes.map((ix) => ix.column))];
  $("build-columns").replaceChildren(...cols.map((c) => el("option", { value: c })));
}

// ---- explore one index: prefix autocomplete + top values chart (+ a range form for btree) ----------
function openExplore(table, column, family) {
  const d = state.tables.find((x) => x.table.name === table);
  const fam = family || "bitmap";
  const ix = d && (d.indexes.find((x) => x.column === column && familyOf(x) === fam)
                   || d.indexes.find((x) => x.column === column));
  // Prefix autocomplete needs a string index; other types get an exact look-up of the typed value.
  const keyType = ix ? String(ix.key_type) : "string";
  const isString = /^(string|varchar|char)/.test(keyType);
  // A multivalue index's keys are the array's elements: its values are the top elements, a look-up is
  // array_contains (the column's value is an array, never equal to one element).
  const multi = fam === "multivalue";
  const distinct = ix ? ix.distinct_values : null;   // for the note on a column whose values are all distinct
  state.explore = { table, column, family: fam, seq: 0, rangeSeq: 0, keyType, isString, multi, distinct };
  $("value-input").placeholder = isString ? "type a prefix…" : `type a ${keyType} ${multi ? "element" : "value"}…`;
  $("explore-section").hidden = false;
  $("explore-section").dataset.family = fam;
  $("explore-title").textContent = `${table}.${column}`;
  $("explore-family").replaceChildren(...familyTag(fam));
  $("lookup-title").textContent = multi ? "Element look-up (array_contains)" : "Value look-up";
  $("top-title").textContent = multi ? `Top ${column} (array elements) by rows` : "Top values by rows";
  $("value-input").value = "";
  $("value-result").textContent = "";
  $("suggestions").hidden = true;
  // Ranges are what a btree seeks best; the form is offered for btree indexes.
  $("range-box").hidden = fam !== "btree";
  $("range-low").value = ""; $("range-high").value = "";
  $("range-result").className = "muted"; $("range-result").textContent = ""; delete $("range-result").dataset.count;
  loadTopValues();
  $("explore-section").scrollIntoView({ block: "nearest" });
  $("value-input").focus();
}

function closeExplore() {
  if ($("explore-section").hidden) return;
  $("explore-section").hidden = true;
  $("suggestions").hidden = true;
  state.explore = null;   // late answers of its look-ups are dropped (they check state.explore)
}

function valuesUrl(params) {
  const { table, column } = state.explore;
  const qs = new URLSearchParams(params).toString();
  return `/v1/tables/${enc(table)}/indexes/${enc(column)}/values?${qs}`;
}

async function loadTopValues() {
  const chart = $("top-chart");
  chart.replaceChildren(el("p", { class: "muted" }, "loading…"));
  try {
    const ex = state.explore;
    const data = await api("GET", valuesUrl({ order: "count", limit: TOP_VALUES }));
    if (ex !== state.explore) return;
    const values = data.values || [];
    // order=count puts the largest first: when it holds one row, every value does, and the chart would be a
    // wall of equal bars. Say so instead.
    if (values.length && values[0].rows === 1) { chart.replaceChildren(distinctNote(ex, data.null_rows)); return; }
    chart.replaceChildren(topValuesSvg(withNulls(values, data.null_rows)));
  } catch (e) {
    const box = el("div", { class: "error-box" }); showError(box, e); chart.replaceChildren(box);
  }
}

function distinctNote(ex, nullRows) {
  const what = ex.multi ? "elements" : "values";
  const each = ex.multi ? "each in 1 row" : "1 row each";
  const text = (ex.distinct === null || ex.distinct === undefined)
    ? `every ${ex.multi ? "element" : "value"} is distinct (${each})`
    : `all ${fmtInt(ex.distinct)} ${what} are distinct (${each})`;
  const nulls = nullRows ? `; ${fmtInt(nullRows)} ${nullRows === 1 ? "row is" : "rows are"} NULL` : "";
  return el("p", { class: "muted distinct-note", "data-distinct": String(ex.distinct ?? ""),
                   "data-null-rows": String(nullRows || 0) }, `${text}${nulls}: no top values to chart.`);
}

// NULL is no key of an index, so the API gives its rows apart (null_rows): rank it with the values.
function withNulls(values, nullRows) {
  if (!nullRows) return values;
  const out = [...values, { value: null, rows: nullRows }];
  out.sort((a, b) => b.rows - a.rows);   // stable: NULL comes after values of the same count
  return out.slice(0, TOP_VALUES);
}

function topValuesSvg(values) {
  return barChartSvg(values, state.explore && state.explore.multi ? "top array elements by row count"
                                                                  : "top values by row count");
}

// A horizontal bar chart of {value, rows}; with `onPick`, each bar is a button (click or Enter) that picks its value.
// NULL is a labelled bar of its own (class null-bar).
function barChartSvg(values, ariaLabel, onPick, barClass) {
  const NS = "http://www.w3.org/2000/svg";
  const maxChars = 30;
  const shorten = (t) => (t.length > maxChars ? t.slice(0, maxChars - 1) + "…" : t);
  const longest = Math.max(4, ...values.map((v) => shorten(fmtValue(v.value)).length));
  // Wide enough for the longest (shortened) label at ~7.2 px per character, so nothing is clipped.
  const rowH = 22, labelW = Math.min(240, Math.round(longest * 7.2) + 14), valueW = 90, width = 640;
  const plotW = width - labelW - valueW;
  const max = Math.max(1, ...values.map((v) => v.rows));
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${Math.max(1, values.length) * rowH + 4}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", ariaLabel);
  const mk = (tag, attrs, text) => {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    return n;
  };
  values.forEach((v, i) => {
    const y = i * rowH + 2, w = Math.max(1, (v.rows / max) * plotW);
    const cls = ["chart-row", v.value === null ? "null-bar" : "", onPick ? "pickable" : "", barClass || ""];
    const g = mk("g", { class: cls.filter(Boolean).join(" "), "data-value": fmtValue(v.value),
                        "data-rows": String(v.rows) });
    if (v.value === null) g.setAttribute("data-null", "true");
    const label = fmtValue(v.value);
    // An empty string would leave its bar unlabelled.
    g.append(mk("text", { x: labelW - 8, y: y + 15, "text-anchor": "end" }, label === "" ? '""' : shorten(label)));
    g.append(mk("rect", { class: "barrect", x: labelW, y: y + 3, width: w.toFixed(1), height: rowH - 6, rx: 3 }));
    g.append(mk("text", { class: "val", x: labelW + w + 6, y: y + 15 }, fmtInt(v.rows)));
    g.append(mk("title", {}, `${label}: ${fmtInt(v.rows)} rows` + (onPick ? " (click: add to the filter)" : "")));
    if (onPick) {
      g.setAttribute("tabindex", "0");
      g.setAttribute("role", "button");
      g.addEventListener("click", () => onPick(v.value));
      g.addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); onPick(v.value); } });
    }
    svg.append(g);
  });
  if (!values.length) svg.append(mk("text", { x: 10, y: 16 }, "no values"));
  return svg;
}

let suggestTimer = null;
function onValueInput() {
  clearTimeout(suggestTimer);
  suggestTimer = setTimeout(fetchSuggestions, SUGGEST_DEBOUNCE_MS);
}

async function fetchSuggestions() {
  if (!state.explore) return;
  if (!state.explore.isString) return exactLookup();
  const prefix = $("value-input").value;
  const ex = state.explore, seq = ++ex.seq;
  const stale = () => ex !== state.explore || seq !== ex.seq;   // a newer keystroke asked, or the panel closed
  const list = $("suggestions");
  try {
    const data = await api("GET", valuesUrl({ prefix, order: "value", limit: 10 }));
    if (stale()) return;
    const values = data.values || [];
    list.replaceChildren(...values.map((v) => el("li", { role: "option", "data-value": fmtValue(v.value),
        onmousedown: (ev) => { ev.preventDefault(); pickValue(v); } },
      el("span", {}, fmtValue(v.value) || '""'), el("span", { class: "rows" }, `${fmtInt(v.rows)} rows`))));
    if (!values.length) list.append(el("li", { class: "muted" }, "no value starts with this prefix"));
    list.hidden = false;
    showError($("value-result"), null); $("value-result").hidden = false;
  } catch (e) {
    if (stale()) return;
    list.hidden = true;
    const box = $("value-result"); box.className = "error-box"; box.textContent = e.message; box.hidden = false;
  }
}

async function exactLookup() {
  const ex = state.explore, { table, column } = ex;
  const text = $("value-input").value.trim();
  const seq = ++ex.seq;
  const stale = () => ex !== state.explore || seq !== ex.seq;
  const box = $("value-result");
  $("suggestions").hidden = true;
  if (!text) { box.className = "muted"; box.textContent = ""; return; }
  try {
    // The query endpoint converts the literal to the column type (JSON form: strings allowed for dates etc.).
    const op = ex.multi ? "array_contains" : "eq";
    const data = await api("POST", `/v1/tables/${enc(table)}/query`,
      { predicate: { op, column, value: literalFromText(text) }, result: "count" });
    if (stale()) return;
    pickValue({ value: literalFromText(text), rows: data.count, answer: data });
  } catch (e) {
    if (stale()) return;
    box.className = "error-box"; box.textContent = e.message; box.hidden = false;
  }
}

function literalFromText(text) {
  // Numbers and booleans as JSON scalars; everything else (dates, timestamps, decimals, NaN) as text. A number
  // JSON cannot carry (1e999 is Infinity in JS, and JSON.stringify makes it null) goes as its text: the
  // service then says what is wrong with it instead of answering for NULL.
  if (/^-?\d+$/.test(text)) return Number.isSafeInteger(Number(text)) ? Number(text) : text;
  if (/^-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?$/.test(text) && /float|double/.test(state.explore.keyType)) {
    return Number.isFinite(Number(text)) ? Number(text) : text;
  }
  if (text === "true" || text === "false") return text === "true";
  return text;
}

function onValueKey(ev) {
  // Arrow keys move through the suggestions, Enter picks, Escape closes (no mouse needed).
  const items = [...$("suggestions").querySelectorAll("li[data-value]")];
  if ($("suggestions").hidden || !items.length) return;   // Escape then reaches the document: closes the panel
  let i = items.findIndex((li) => li.classList.contains("active"));
  if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
    ev.preventDefault();
    if (i >= 0) items[i].classList.remove("active");
    i = ev.key === "ArrowDown" ? (i + 1) % items.length : (i <= 0 ? items.length - 1 : i - 1);
    items[i].classList.add("active");
    items[i].scrollIntoView({ block: "nearest" });
  } else if (ev.key === "Enter" && i >= 0) {
    ev.preventDefault();
    items[i].dispatchEvent(new MouseEvent("mousedown"));
  } else if (ev.key === "Escape") {
    ev.stopPropagation();   // the first Escape closes the suggestions, the next one the panel
    clearTimeout(suggestTimer);
    if (state.explore) state.explore.seq++;   // a look-up still under way must not open them again
    $("suggestions").hidden = true;
  }
}

function pickValue(v) {
  // a look-up still under way (a suggestion list for an earlier keystroke) must not clear or cover the pick
  clearTimeout(suggestTimer);
  if (state.explore) state.explore.seq++;
  $("value-input").value = fmtValue(v.value);
  $("suggestions").hidden = true;
  const box = $("value-result");
  box.className = "";
  const where = valueWhere(state.explore, v.value);
  // a look-up's answer says how sure it is; a suggestion's count is the index's own count of the value
  const count = v.answer && answerKind(v.answer) !== "exact" ? countText(v.answer) : `${fmtInt(v.rows)} rows`;
  box.replaceChildren(el("strong", {}, fmtValue(v.value)),
    ` — ${count}${state.explore.multi ? " whose array holds it" : ""}. `,
    el("a", { href: "#query-section", class: "prefill", "data-where": where, onclick: () => prefillQuery(where) },
       "query these rows"));
}

function sqlLiteral(v) {
  if (v === null) return "NULL";
  if (typeof v === "number" || typeof v === "bigint" || typeof v === "boolean") return String(v);
  return `'${String(v).replace(/'/g, "''")}'`;
}

function sqlColumn(column) { return /^[A-Za-z_][A-Za-z0-9_]*$/.test(column) ? column : `"${column.replace(/"/g, '""')}"`; }

// The SQL of one value's rows: `col = v`, or `array_contains(col, v)` for a multivalue index's element.
function valueWhere(explore, value) {
  const col = sqlColumn(explore.column);
  return explore.multi ? `array_contains(${col}, ${sqlLiteral(value)})` : `${col} = ${sqlLiteral(value)}`;
}

// A btree range: both bounds → BETWEEN, one bound → >= or <= (bounds inclusive, as BETWEEN's).
function rangeWhere(column, lowText, highText) {
  const col = sqlColumn(column);
  const lit = (t) => sqlLiteral(literalFromText(t));
  if (lowText && highText) return `${col} BETWEEN ${lit(lowText)} AND ${lit(highText)}`;
  if (lowText) return `${col} >= ${lit(lowText)}`;
  if (highText) return `${col} <= ${lit(highText)}`;
  return null;
}

async function runRange(ev) {
  ev.preventDefault();
  if (!state.explore) return;
  const { table, column } = state.explore;
  const box = $("range-result");
  const where = rangeWhere(column, $("range-low").value.trim(), $("range-high").value.trim());
  if (!where) {
    delete box.dataset.count;
    box.className = "error-box"; box.textContent = "give a low bound, a high bound or both"; return;
  }
  const ex = state.explore, seq = ++ex.rangeSeq;
  $("range-run").disabled = true;
  try {
    const data = await api("POST", `/v1/tables/${enc(table)}/query`, { where, result: "count" });
    if (ex !== state.explore || seq !== ex.rangeSeq) return;  // another index or a newer range was asked
    box.className = "";
    box.dataset.count = String(data.count);
    box.dataset.answer = answerKind(data);
    box.replaceChildren(el("code", {}, where), ` — ${countText(data)}. `,
      el("a", { href: "#query-section", class: "prefill", "data-where": where, onclick: () => prefillQuery(where) },
         "query these rows"));
  } catch (e) {
    if (ex !== state.explore || seq !== ex.rangeSeq) return;
    delete box.dataset.count;
    box.className = "error-box"; box.textContent = e.message;
  } finally {
    $("range-run").disabled = false;
  }
}

function prefillQuery(where) {
  $("query-table").value = state.explore.table;
  $("query-where").value = where;
}

// ---- query ----------------------------------------------------------------------------------------
async function runQuery(ev) {
  if (ev) ev.preventDefault();
  const table = $("query-table").value, where = $("query-where").value.trim();
  const limit = Math.max(1, Math.min(1000, Number($("query-limit").value) || 20));
  showError("query-error", null);
  $("query-run").disabled = true;
  const t0 = performance.now();
  try {
    const ans = await api("POST", `/v1/tables/${enc(table)}/query`, { where, result: "row_ids", limit, explain: true });
    $("query-time").textContent = `answered in ${(performance.now() - t0).toFixed(0)} ms (round trip)`;
    renderQuery(ans);
    facetsOnQuery(table, where);   // facets.js: the facets and top groups follow the answered query
  } catch (e) {
    $("query-result").hidden = true;
    $("query-time").textContent = "";
    showError("query-error", e);
  } finally {
    $("query-run").disabled = false;
  }
}

function renderQuery(ans) {
  $("query-result").hidden = false;
  const kind = answerKind(ans), count = $("query-count");
  count.textContent = kind === "declined" ? "not answered"
    : kind === "superset" ? `≤ ${fmtInt(ans.count)}`
    : kind === "incomplete" ? `${fmtInt(ans.count)} + ?` : fmtInt(ans.count);
  count.dataset.count = String(ans.count);
  count.dataset.answer = kind;
  count.title = countText(ans);
  $("query-exact").textContent = {
    exact: "yes", superset: "no: a superset (a part the indexes declined was dropped)",
    declined: "no: the indexes declined this predicate", incomplete: "no: rows no index covers were not evaluated",
  }[kind];
  const cov = ans.coverage || {};
  $("query-coverage").textContent = cov.complete ? "complete" : uncoveredText(ans);
  const ids = ans.row_ids || [];
  $("query-rowids").textContent = ids.length
    ? ids.join(", ") + (ans.count > ids.length ? `, … (${fmtInt(ans.count - ids.length)} more)` : "")
    : kind === "declined" ? "(none answered: the indexes declined this predicate)" : "(none)";
  $("query-explain").replaceChildren(explainView(ans.explain, ans.snapshots));
}

function explainView(explain, snapshots) {
  // Scalars become a figures table; nested parts (per-column, per-file detail) are shown as JSON.
  const wrap = el("div");
  const scalars = [], nested = {};
  for (const [k, v] of Object.entries(explain || {})) {
    if (v !== null && typeof v === "object") nested[k] = v; else scalars.push([k, v]);
  }
  if (snapshots && Object.keys(snapshots).length) {
    scalars.push(["snapshots", Object.entries(snapshots).map(([c, s]) => `${c}#${s}`).join(", ")]);
  }
  if (scalars.length) {
    wrap.append(el("table", { class: "grid kv" }, el("tbody", {},
      scalars.map(([k, v]) => el("tr", { "data-key": k }, el("td", {}, k),
                                  el("td", { class: "mono" }, typeof v === "number" ? fmtInt(v) : String(v)))))));
  }
  if (Object.keys(nested).length) {
    wrap.append(el("details", { class: "explain-detail" },
      el("summary", {}, `details: ${Object.keys(nested).join(", ")}`),
      el("pre", { class: "json" }, JSON.stringify(nested, null, 2))));
  }
  if (explain && explain.from_cache) {
    // files_read then counts readers the service already had open, and bytes_read 0 is why: say so first.
    wrap.prepend(el("p", { class: "from-cache" },
      `Answered from the service's cache: all ${fmtInt(explain.files_read)} index files were already open and `
      + "no byte was read from storage."));
  }
  if (!wrap.childNodes.length) wrap.append(el("p", { class: "muted" }, "no explain figures returned"));
  return wrap;
}

// ---- builds and jobs ------------------------------------------------------------------------------
function parseOptions(text) {
  const out = {};
  for (const part of text.split(/[,\n]/)) {
    const p = part.trim();
    if (!p) continue;
    const i = p.indexOf("=");
    if (i <= 0) throw new ApiError(0, "invalid_option", `option '${p}' is not key=value`);
    out[p.slice(0, i).trim()] = p.slice(i + 1).trim();
  }
  return out;
}

async function startBuild(ev) {
  ev.preventDefault();
  showError("build-error", null);
  $("build-msg").textContent = "";
  try {
    const body = { table: $("build-table").value, index_column: $("build-column").value.trim(),
                   index_type: $("build-type").value, options: parseOptions($("build-options").value) };
    const partitions = $("build-partitions").value.trim();
    if (partitions) body.partitions = partitions;
    $("build-start").disabled = true;
    const created = await api("POST", "/v1/create_global_index", body);
    $("build-msg").textContent = `job ${created.job_id} started`;
    state.activeJobs.add(created.job_id);
    await loadJobs();
    schedulePoll(0);
  } catch (e) {
    showError("build-error", e);
  } finally {
    $("build-start").disabled = false;
  }
}

async function loadJobs() {
  const data = await api("GET", "/v1/jobs");
  const jobs = (data && data.jobs) || [];
  for (const j of jobs) {
    state.knownJobs.set(j.id, j);
    if (j.state === "queued" || j.state === "running") state.activeJobs.add(j.id);
  }
  renderJobs();
}

function renderJobs() {
  const root = $("jobs");
  const jobs = [...state.knownJobs.values()].sort((a, b) => String(b.created_at || "").localeCompare(String(a.created_at || "")));
  if (!jobs.length) { root.replaceChildren(el("p", { class: "muted" }, "No build jobs yet.")); return; }
  root.replaceChildren(el("div", { class: "table-scroll" }, el("table", { class: "grid jobs" },
    el("thead", {}, el("tr", {}, ["Job", "Index", "State", "Progress", "Rows indexed", "Ranges", "Duration", "Created", ""].map(
      (h, i) => el("th", { class: [4, 5, 6].includes(i) ? "num" : null }, h)))),
    el("tbody", {}, jobs.map(jobRow)))));
}

// Seconds a job ran: the API's duration_s when it has one, else from its timestamps (still running: so far).
function jobSeconds(j) {
  if (typeof j.duration_s === "number") return j.duration_s;
  const start = Date.parse(j.started_at || "");
  if (Number.isNaN(start)) return null;
  const end = j.finished_at ? Date.parse(j.finished_at) : Date.now();
  return Number.isNaN(end) ? null : Math.max(0, (end - start) / 1000);
}

// rows_indexed counts every indexed column's rows: a 3-column build of 2M rows indexes 6M. Say so.
function rowsIndexedCell(j, rows) {
  const columns = String(j.index_column || "").split(",").filter((c) => c.trim()).length;
  const per = columns > 1 ? el("div", { class: "bar-label rows-per-column" },
    `${fmtInt(Math.floor(rows / columns))} rows × ${columns} columns`) : null;
  return el("td", { class: "num rows-indexed", title: "rows indexed, counted once per indexed column" },
            fmtInt(rows), per);
}

const JOB_COLUMNS = 9;

function jobRow(j) {
  const p = j.progress || {};
  const frac = j.state === "succeeded" ? 1 : (p.fraction || 0);
  const active = j.state === "queued" || j.state === "running";
  const seconds = jobSeconds(j);
  const rows = [el("tr", { "data-job": j.id, "data-state": j.state, class: j.message ? "has-message" : null },
    // the first 8 characters identify a job (as in the origins column); the full id is the title
    el("td", { class: "mono job-id", title: j.id }, j.id.slice(0, 8)),
    el("td", {}, el("code", {}, `${j.table}.${j.index_column}`), " ", familyTag(j.index_type)),
    el("td", {}, el("span", { class: `badge ${j.state}` }, j.state)),
    el("td", {}, bar(frac, j.state === "succeeded" ? "done" : (j.state === "failed" ? "failed" : "")),
       el("div", { class: "bar-label job-pct" }, `${(100 * frac).toFixed(1)}%`)),
    rowsIndexedCell(j, Number(p.rows_indexed || 0)),
    el("td", { class: "num" }, `${p.ranges_done || 0}/${p.ranges_total || 0}`),
    el("td", { class: "num job-duration", "data-seconds": seconds === null ? null : seconds.toFixed(3),
               title: active ? "running so far" : "from start to finish" }, fmtDuration(seconds) + (active && seconds !== null ? "…" : "")),
    el("td", { class: "muted nowrap" }, j.created_at ? j.created_at.replace("T", " ").slice(0, 19) : "—"),
    el("td", { class: "job-actions" },
       // the build's driver log (text); fetched with the token and shown below the list
       el("a", { class: "job-log", href: `/v1/jobs/${enc(j.id)}/log`, target: "_blank", rel: "noopener",
                 onclick: (ev) => { ev.preventDefault(); showJobLog(j.id); } }, "log"),
       active ? el("button", { type: "button", class: "ghost", onclick: () => cancelJob(j.id) }, "Cancel") : null))];
  if (j.message) {
    rows.push(el("tr", { class: "job-message", "data-message-of": j.id },
      el("td", { colspan: String(JOB_COLUMNS), class: "muted" }, j.message)));
  }
  if (j.error) rows.push(el("tr", { class: "job-error" }, el("td", { colspan: String(JOB_COLUMNS) }, el("div", { class: "error-box" }, j.error))));
  return rows;
}

async function showJobLog(id) {
  const box = $("job-log");
  box.hidden = false;
  box.dataset.job = id;
  $("job-log-title").textContent = `log of job ${id}`;
  const body = $("job-log-body");
  body.className = "json"; body.textContent = "loading…";
  try {
    const text = await apiText(`/v1/jobs/${enc(id)}/log`);
    if (box.dataset.job !== id) return;
    body.textContent = text || "(the log is empty)";
  } catch (e) {
    if (box.dataset.job !== id) return;
    body.className = "error-box"; body.textContent = e.message;
  }
}

async function cancelJob(id) {
  try { await api("POST", `/v1/jobs/${enc(id)}/cancel`); schedulePoll(0); }
  catch (e) { showError("build-error", e); }
}

let pollTimer = null;
function schedulePoll(ms) {
  clearTimeout(pollTimer);
  pollTimer = setTimeout(pollJobs, ms);
}

async function pollJobs() {
  // Poll each active job's own endpoint for a live bar; when one finishes, the indexes changed.
  let finished = false;
  try {
    for (const id of [...state.activeJobs]) {
      const j = await api("GET", `/v1/jobs/${enc(id)}`);
      state.knownJobs.set(j.id, j);
      if (j.state !== "queued" && j.state !== "running") { state.activeJobs.delete(id); finished = true; }
    }
    renderJobs();
    if (finished) await loadTables();
    if (!state.activeJobs.size) await loadJobs();
    setConnected(true);
  } catch (e) {
    setConnected(false, e);
  }
  schedulePoll(state.activeJobs.size ? JOB_POLL_MS : IDLE_POLL_MS);
}

// ---- wiring ---------------------------------------------------------------------------------------
function setConnected(ok, err) {
  $("conn-status").textContent = ok ? "connected" : "disconnected";
  showError("global-error", ok ? null : err);
}

async function refreshAll() {
  try {
    // all three at once: with a token required, each meets its 401 before the token is asked for once
    await Promise.all([Object.keys(FAMILIES).length ? null : loadFamilies(), loadTables(), loadJobs()]);
    setConnected(true);
  } catch (e) {
    setConnected(false, e);
  }
  $("token-clear").hidden = !token();
}

function init() {
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const v = $("token-input").value.trim();
    if (!v) return;
    sessionStorage.setItem(TOKEN_KEY, v);
    $("token-input").value = "";
    $("token-panel").hidden = true;
    $("token-clear").hidden = false;
    const waiters = state.tokenWaiters.splice(0);
    waiters.forEach((resolve) => resolve());
  });
  $("token-clear").addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); $("token-clear").hidden = true; });
  $("refresh-btn").addEventListener("click", refreshAll);
  $("query-form").addEventListener("submit", runQuery);
  initFacets();
  $("build-form").addEventListener("submit", startBuild);
  $("build-table").addEventListener("change", fillColumnList);
  $("build-type").addEventListener("change", fillColumnList);
  $("range-form").addEventListener("submit", runRange);
  $("explore-close").addEventListener("click", closeExplore);
  $("job-log-close").addEventListener("click", () => { $("job-log").hidden = true; delete $("job-log").dataset.job; });
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") closeExplore(); });
  $("value-input").addEventListener("input", onValueInput);
  $("value-input").addEventListener("keydown", onValueKey);
  $("value-input").addEventListener("focus", onValueInput);
  $("value-input").addEventListener("blur", () => setTimeout(() => { $("suggestions").hidden = true; }, 150));
  refreshAll().then(() => schedulePoll(state.activeJobs.size ? JOB_POLL_MS : IDLE_POLL_MS));
}

document.addEventListener("DOMContentLoaded", init);
