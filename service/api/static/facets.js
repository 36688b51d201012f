// bgix dashboard, facets: for the answered query, the rows per value of chosen indexed columns (bar charts whose
// bars add their value to the filter) and a top-groups table, from POST /v1/tables/{t}/aggregate.
// Loaded after dashboard.js, whose helpers (api, el, $, enc, fmtInt, fmtValue, sqlColumn, sqlLiteral, familyTag,
// familyOf, barChartSvg, rangeRows, runQuery, state) it uses.
"use strict";

const FACET_MAX_COLUMNS = 4;
const FACET_PAGE = 20;
const NUMERIC_KEY = /^(tinyint|smallint|int|bigint|float|double|decimal)/;

// scope: the query the facets describe ({table, where}: the last answered one, or every row of the chosen table);
// picked: the columns shown, in the order picked; seq: bumped on every change, so late answers are dropped.
const facets = { scope: null, picked: [], seq: 0, topnSeq: 0, topnShown: false };

// The table's indexed columns, one per column (a column with two families is faceted once: the aggregate picks
// its index); a multivalue column's groups are its array's elements.
function facetColumnsOf(table) {
  const d = state.tables.find((x) => x.table.name === table);
  const out = new Map();
  for (const ix of (d && d.indexes) || []) {
    const fam = familyOf(ix), seen = out.get(ix.column);
    if (seen && seen.family !== "fm") continue;   // an fm index is a substring index: prefer another family's keys
    out.set(ix.column, { column: ix.column, family: fam, keyType: String(ix.key_type || ""),
                         multi: fam === "multivalue" });
  }
  return [...out.values()];
}

function facetColumn(column) {
  return facetColumnsOf(facets.scope.table).find((c) => c.column === column)
    || { column, family: "bitmap", keyType: "", multi: false };
}

// ---- the SQL a bar adds: what the query box accepts (docs/predicates.md) ------------------------------
function facetLiteral(value, keyType) {
  const kt = keyType.toLowerCase();
  if (/^date/.test(kt)) return `DATE ${sqlLiteral(String(value))}`;
  if (/^timestamp/.test(kt) && !/ltz/.test(kt)) {
    // the API's ISO text with nanoseconds; the grammar's TIMESTAMP 'YYYY-MM-DD HH:MM:SS[.ffffff]'
    return `TIMESTAMP ${sqlLiteral(String(value).replace("T", " ").replace(/(\.\d{6})0{3}$/, "$1"))}`;
  }
  if (/^decimal/.test(kt) && /^-?\d+(\.\d+)?$/.test(String(value))) return String(value);
  return sqlLiteral(value);
}

function facetPredicate(col, value) {
  const c = sqlColumn(col.column);
  if (col.multi) return `array_contains(${c}, ${facetLiteral(value, col.keyType)})`;
  return value === null ? `${c} IS NULL` : `${c} = ${facetLiteral(value, col.keyType)}`;
}

// `where AND pred`; a where holding OR is bracketed first (AND binds tighter than OR).
function andWhere(where, pred) {
  const w = (where || "").trim();
  if (!w) return pred;
  return /\bor\b/i.test(w) ? `(${w}) AND ${pred}` : `${w} AND ${pred}`;
}

function addFacetFilter(col, value) {
  const scope = facets.scope;
  if (!scope) return;
  $("query-table").value = scope.table;
  $("query-where").value = andWhere(scope.where, facetPredicate(col, value));
  runQuery();   // on its answer, facetsOnQuery re-runs the facets and the top groups under the new filter
}

// ---- exactness: an inexact aggregate never looks exact (the kinds of dashboard.js's answerKind) ----------
function aggregateKind(ans) {
  if (ans.exact === false && !(ans.coverage && ans.coverage.complete === false)) return ans.rows ? "superset" : "declined";
  return ans.coverage && ans.coverage.complete === false ? "incomplete" : "exact";
}

function aggregateExactText(ans) {
  const kind = aggregateKind(ans);
  if (kind === "exact") return "exact";
  if (kind === "declined") return "not answered: the indexes declined this filter (no rows counted)";
  if (kind === "superset") return "not exact: the indexes answered a wider filter (counts may be too high)";
  return `not exact: ${fmtInt(rangeRows(ans.coverage.uncovered_ranges))} rows no index covers are not counted`;
}

function exactTag(ans) {
  const kind = aggregateKind(ans);
  return el("span", { class: `badge ${kind === "exact" ? "fresh" : "stale"} agg-exact`, "data-exact": String(kind === "exact"),
                      "data-answer": kind }, aggregateExactText(ans));
}

function aggregateBody(scope, extra) {
  const body = { ...extra };
  if (scope.where) body.where = scope.where;
  return body;
}

// ---- scope and picker ------------------------------------------------------------------------------------
function setFacetScope(table, where) {
  const changedTable = !facets.scope || facets.scope.table !== table;
  facets.scope = { table, where };
  facets.seq++;
  if (changedTable) {
    facets.picked = [];
    facets.topnShown = false;
    $("topn-result").replaceChildren();
    showError("topn-error", null);
  }
  $("facets-scope").textContent = where ? `of ${table} where ${where}` : `of every row of ${table}`;
  renderFacetPicker();
  renderTopnForm(changedTable);
  for (const column of facets.picked) loadFacet(column, facets.seq);
  if (!facets.picked.length) renderFacetHint();
  if (facets.topnShown) runTopn();
}

function facetsOnQuery(table, where) { setFacetScope(table, where); }

function facetsOnTables() {
  if (!state.tables.length) return;
  if (!facets.scope || !state.tables.some((d) => d.table.name === facets.scope.table)) {
    setFacetScope($("query-table").value, "");
    return;
  }
  const known = new Set(facetColumnsOf(facets.scope.table).map((c) => c.column));
  facets.picked = facets.picked.filter((c) => known.has(c));
  renderFacetPicker();
  renderTopnForm(false);
}

function renderFacetPicker() {
  const cols = facetColumnsOf(facets.scope.table);
  const full = facets.picked.length >= FACET_MAX_COLUMNS;
  $("facet-columns").replaceChildren(...cols.map((c) => {
    const on = facets.picked.includes(c.column);
    const box = el("input", { type: "checkbox", value: c.column, checked: on, disabled: !on && full,
                              onchange: (ev) => toggleFacet(c.column, ev.target.checked) });
    return el("label", { class: "facet-pick", "data-column": c.column, title: c.multi ? "array elements" : null },
              box, el("code", {}, c.column), " ", familyTag(c.family));
  }));
  if (!cols.length) $("facet-columns").append(el("span", { class: "muted" }, "no indexed column"));
}

function renderFacetHint() {
  $("facets").replaceChildren(el("p", { class: "muted facet-hint" }, "Pick columns above: each gets a chart of its rows per "
    + "value under the query; a click on a bar adds that value to the filter."));
}

function toggleFacet(column, on) {
  facets.picked = facets.picked.filter((c) => c !== column);
  if (on) facets.picked.push(column);
  renderFacetPicker();
  const grid = $("facets");
  if (!facets.picked.length) { renderFacetHint(); return; }
  const hint = grid.querySelector(".facet-hint");
  if (hint) hint.remove();
  if (on) { loadFacet(column, facets.seq); return; }
  const card = grid.querySelector(`.facet[data-column="${CSS.escape(column)}"]`);
  if (card) card.remove();
}

// ---- one facet: a chart of its first page of groups, "more" pages on -------------------------------------
function facetCard(column) {
  const grid = $("facets");
  let card = grid.querySelector(`.facet[data-column="${CSS.escape(column)}"]`);
  if (!card) {
    card = el("div", { class: "facet", "data-column": column });
    // keep the cards in the order the columns were picked
    const after = facets.picked.slice(facets.picked.indexOf(column) + 1)
      .map((c) => grid.querySelector(`.facet[data-column="${CSS.escape(c)}"]`)).find(Boolean);
    grid.insertBefore(card, after || null);
  }
  return card;
}

async function loadFacet(column, seq, more) {
  const scope = facets.scope, col = facetColumn(column), card = facetCard(column);
  const stale = () => seq !== facets.seq || !facets.picked.includes(column) || !card.isConnected;
  if (!more) {
    card.dataset.state = "loading";
    card.replaceChildren(facetHead(col, null), el("p", { class: "muted" }, "counting…"));
  }
  const body = aggregateBody(scope, { group_by: [column], metrics: [{ op: "count" }],
                                      order_by: [{ by: "count", direction: "desc" }], limit: FACET_PAGE });
  if (more) body.cursor = more.cursor;
  try {
    const ans = await api("POST", `/v1/tables/${enc(scope.table)}/aggregate`, body);
    if (stale()) return;
    const groups = (more ? more.groups : []).concat(ans.groups.map((g) => ({ value: g.key[column], rows: g.metrics.count })));
    renderFacet(card, col, ans, groups);
  } catch (e) {
    if (stale()) return;
    card.dataset.state = "error";
    card.replaceChildren(facetHead(col, null), el("div", { class: "error-box facet-error" }, e.message));
  }
}

function facetHead(col, ans) {
  return el("div", { class: "facet-head" },
    el("code", {}, col.column), " ", familyTag(col.family), col.multi ? el("span", { class: "muted" }, " elements") : null,
    ans ? exactTag(ans) : null);
}

function renderFacet(card, col, ans, groups) {
  const kind = aggregateKind(ans);
  card.dataset.state = "done";
  card.dataset.exact = String(kind === "exact");
  card.dataset.totalGroups = String(ans.total_groups);
  const parts = [facetHead(col, ans)];
  const max = Math.max(0, ...groups.map((g) => g.rows));
  if (max === 1 && ans.total_groups > 1) {
    // a unique-valued column (an id): a wall of bars of 1 says nothing
    card.dataset.unique = "true";
    parts.push(el("p", { class: "facet-note" }, `Every value occurs once under this filter: `
      + `${fmtInt(ans.total_groups)} distinct values, one row each. No chart.`));
  } else {
    delete card.dataset.unique;
    const label = col.multi ? `rows per ${col.column} element` : `rows per ${col.column} value`;
    parts.push(el("div", { class: "chart facet-chart" },
      barChartSvg(groups, label, (value) => addFacetFilter(col, value), kind === "exact" ? null : "inexact")));
  }
  const foot = el("div", { class: "facet-foot muted" });
  const hidden = ans.total_groups - groups.length;
  if (!groups.length) foot.append("no rows");
  else if (card.dataset.unique !== "true") {
    foot.append(hidden > 0 ? `${fmtInt(groups.length)} of ${fmtInt(ans.total_groups)} values shown; `
      + `${fmtInt(hidden)} more not shown`
      : ans.total_groups === 1 ? "the only value" : `all ${fmtInt(ans.total_groups)} values`);
  }
  if (hidden > 0 && ans.next_cursor && card.dataset.unique !== "true") {
    const seq = facets.seq;
    foot.append(" ", el("button", { type: "button", class: "ghost facet-more",
      onclick: (ev) => { ev.target.disabled = true; loadFacet(col.column, seq, { cursor: ans.next_cursor, groups }); } },
      `more (next ${fmtInt(Math.min(FACET_PAGE, hidden))})`));
  }
  parts.push(foot);
  card.replaceChildren(...parts);
}

// ---- top groups: group by one or two columns, count and a sum/avg of a numeric column ---------------------
function renderTopnForm(reset) {
  const cols = facetColumnsOf(facets.scope.table);
  const keep = (id) => (reset ? "" : $(id).value);
  const c1 = keep("topn-col1"), c2 = keep("topn-col2"), m = keep("topn-metric");
  $("topn-col1").replaceChildren(...cols.map((c) => el("option", { value: c.column }, c.column)));
  $("topn-col2").replaceChildren(el("option", { value: "" }, "—"), ...cols.map((c) => el("option", { value: c.column }, c.column)));
  const numeric = cols.filter((c) => !c.multi && NUMERIC_KEY.test(c.keyType.toLowerCase()));
  $("topn-metric").replaceChildren(el("option", { value: "count" }, "rows (count)"),
    ...numeric.flatMap((c) => ["sum", "avg"].map((op) =>
      el("option", { value: `${op}:${c.column}` }, `${op} of ${c.column}`))));
  if (cols.some((c) => c.column === c1)) $("topn-col1").value = c1;
  if (cols.some((c) => c.column === c2)) $("topn-col2").value = c2;
  if ([...$("topn-metric").options].some((o) => o.value === m)) $("topn-metric").value = m;
  $("topn-run").disabled = !cols.length;
}

function topnAsk() {
  const group = [$("topn-col1").value, $("topn-col2").value].filter((c, i, a) => c && a.indexOf(c) === i);
  const metric = $("topn-metric").value;
  const metrics = [{ op: "count" }];
  let by = "count", label = null;
  if (metric !== "count") {
    const [op, column] = [metric.slice(0, metric.indexOf(":")), metric.slice(metric.indexOf(":") + 1)];
    by = `${op}_${column}`;
    label = `${op} of ${column}`;
    metrics.push({ op, column, name: by });
  }
  const limit = Math.max(1, Math.min(1000, Number($("topn-limit").value) || 10));
  return { group, metrics, by, label, limit, direction: $("topn-order").value };
}

async function runTopn(ev) {
  if (ev) ev.preventDefault();
  const scope = facets.scope;
  if (!scope) return;
  const ask = topnAsk();
  if (!ask.group.length) return;
  const seq = ++facets.topnSeq;
  facets.topnShown = true;
  showError("topn-error", null);
  $("topn-run").disabled = true;
  const body = aggregateBody(scope, { group_by: ask.group, metrics: ask.metrics, limit: ask.limit,
                                      order_by: [{ by: ask.by, direction: ask.direction }] });
  try {
    const ans = await api("POST", `/v1/tables/${enc(scope.table)}/aggregate`, body);
    if (seq !== facets.topnSeq) return;
    $("topn-result").replaceChildren(topnTable(ans, ask));
  } catch (e) {
    if (seq !== facets.topnSeq) return;
    $("topn-result").replaceChildren();
    showError("topn-error", e);
  } finally {
    if (seq === facets.topnSeq) $("topn-run").disabled = false;
  }
}

function fmtMetric(v) {
  if (v === null || v === undefined) return "NULL";
  if (typeof v === "number" && !Number.isInteger(v)) return v.toLocaleString("en-US", { maximumFractionDigits: 4 });
  return typeof v === "number" ? fmtInt(v) : String(v);
}

function topnTable(ans, ask) {
  const head = [...ask.group, "rows", ...(ask.label ? [ask.label] : [])];
  const rows = ans.groups.map((g) => el("tr", { "data-key": JSON.stringify(ask.group.map((c) => g.key[c])) },
    ask.group.map((c) => el("td", { class: g.key[c] === null ? "null-key" : null }, fmtValue(g.key[c]))),
    el("td", { class: "num", "data-metric": "count", "data-value": String(g.metrics.count) }, fmtInt(g.metrics.count)),
    ask.label ? el("td", { class: "num", "data-metric": ask.by, "data-value": JSON.stringify(g.metrics[ask.by]) },
                   fmtMetric(g.metrics[ask.by])) : null));
  const shown = ans.groups.length;
  return el("div", { class: "topn", "data-exact": String(aggregateKind(ans) === "exact") },
    el("div", { class: "topn-head" }, exactTag(ans),
       el("span", { class: "muted" }, ` ${fmtInt(shown)} of ${fmtInt(ans.total_groups)} groups · ${fmtInt(ans.rows)} rows`)),
    el("div", { class: "table-scroll" }, el("table", { class: "grid topn-table" },
      el("thead", {}, el("tr", {}, head.map((h, i) => el("th", { class: i >= ask.group.length ? "num" : null }, h)))),
      el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: String(head.length), class: "muted" }, "no rows"))))));
}

function initFacets() {
  renderFacetHint();
  $("topn-form").addEventListener("submit", runTopn);
  $("query-table").addEventListener("change", () => {
    if (!facets.scope || facets.scope.table !== $("query-table").value) setFacetScope($("query-table").value, "");
  });
}
