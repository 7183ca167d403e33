// The /overview views people look at rather than read (issue 20 item 2): the pipeline as a
// chart, each recent campaign as a funnel that moves live, the daily brief in its five
// sections, tool results in the conversation as tables, and what the org spends on model
// calls this month, with its budget's banner (issue 38). Served by the chat function at
// /overview/views.js (same origin, so the page's CSP admits it) and drawn here, by hand, as
// inline SVG: no library, no request anywhere but the chat function.
//
// Everything shown is the org's own data or a model's (deal and campaign names, the brief's
// text, tool results): it is set as text (textContent, SVG text nodes), never as markup.
//
// The page hands over how it calls the API and reads its event streams
// (``ColonyViews.start({ api, headers, readEvents })``), so a refreshed sign-in reaches these
// views without them knowing how tokens work, and one SSE reader serves the whole page.
"use strict";
window.ColonyViews = (() => {
  // A namespace name, not an address: nothing is fetched from it.
  const SVG_NS = "http://www.w3.org/2000/svg";
  const STAGE_ORDER = ["discovery", "demo", "proposal", "negotiation", "closed_won", "closed_lost"];
  const FUNNEL_NAMES = { contacts: "Contacts", qualified: "Qualified", drafted: "Drafted",
    approved: "Approved", sent: "Sent", replied: "Replied" };
  const MAX_ROWS = 25, MAX_COLUMNS = 8, MAX_DEPTH = 3, COMPACT_CHARS = 160;
  const ctx = { api: null, headers: null, serial: 0, started: false, kick: null };

  const $ = (id) => document.getElementById(id);
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }
  const human = (key) => String(key).replace(/_/g, " ");
  const number = (n) => Number(n).toLocaleString("en-US", { maximumFractionDigits: 2 });
  const compact = (n) => Number(n).toLocaleString("en-US", { notation: "compact", maximumFractionDigits: 1 });
  const plural = (n, word) => number(n) + " " + word + (n === 1 ? "" : "s");
  const uid = (prefix) => prefix + "-" + (++ctx.serial);
  const clip = (text, most) => (text.length > most ? text.slice(0, most - 1) + "…" : text);  // a chart's label

  // ---- The pipeline: deals and value by stage -------------------------------------------
  function stageRank(stage) {
    const known = STAGE_ORDER.indexOf(stage);
    return known < 0 ? STAGE_ORDER.length : known;
  }

  // A horizontal bar per stage, its length the stage's value; the count and value beside it.
  // The chart is a picture of the table that follows it (which screen readers read).
  function pipelineChart(stages, label) {
    const rowH = 30, labelW = 150, barW = 300, width = 600;
    const most = Math.max(0, ...stages.map((s) => s.value));
    const titleId = uid("pipeline-title");
    const chart = svg("svg", { viewBox: `0 0 ${width} ${Math.max(1, stages.length) * rowH + 6}`,
      role: "img", class: "chart", "aria-labelledby": titleId });
    chart.appendChild(svg("title", { id: titleId }, label));
    stages.forEach((s, n) => {
      const y = n * rowH + 3, w = most > 0 ? Math.max(s.value > 0 ? 3 : 0, (s.value / most) * barW) : 0;
      const fill = s.stage === "closed_won" ? "#1d7a46" : s.stage === "closed_lost" ? "#8792a2" : "#1f5fbf";
      const row = svg("g", { "data-stage": s.stage });
      row.appendChild(svg("text", { x: labelW - 8, y: y + 19, "text-anchor": "end", class: "chart-label" }, clip(human(s.stage), 20)));
      row.appendChild(svg("rect", { x: labelW, y: y + 4, width: w.toFixed(1), height: rowH - 10, rx: 3, fill }));
      row.appendChild(svg("text", { x: labelW + w + 8, y: y + 19, class: "chart-value" },
        plural(s.deals, "deal") + " · " + compact(s.value)));
      chart.appendChild(row);
    });
    return chart;
  }

  function pipelineTable(stages, withTop) {
    const table = el("table", "view-table");
    table.appendChild(el("caption", "hint", "Deals and their value by stage"));
    const head = el("tr");
    for (const name of ["Stage", "Deals", "Value"].concat(withTop ? ["Largest deals"] : [])) {
      const th = el("th", null, name); th.scope = "col"; head.appendChild(th);
    }
    table.appendChild(el("thead")).appendChild(head);
    const body = table.appendChild(el("tbody"));
    for (const s of stages) {
      const tr = el("tr"); tr.dataset.stage = s.stage;
      const th = el("th", null, human(s.stage)); th.scope = "row";
      tr.append(th, el("td", "num deals", number(s.deals)), el("td", "num value", number(s.value)));
      if (withTop) tr.appendChild(el("td", "top", (s.top || []).map((d) => d.name + " (" + compact(d.value) + ")").join(" · ")));
      body.appendChild(tr);
    }
    return table;
  }

  function renderPipeline(data) {
    const box = $("pipeline");
    box.textContent = "";
    if (!data.stages.length) { box.appendChild(el("p", "hint", "No deals yet.")); return; }
    const label = "Pipeline: " + plural(data.deals, "deal") + " worth " + number(data.value) + " in "
      + plural(data.stages.length, "stage");
    box.append(el("p", "view-total", label), pipelineChart(data.stages, label), pipelineTable(data.stages, true));
  }

  async function loadPipeline() {
    const box = $("pipeline");
    try { renderPipeline(await ctx.api("/pipeline")); }
    catch (error) { box.textContent = "Could not load the pipeline: " + error.message; }
  }

  // ---- Campaign funnels, live ------------------------------------------------------------
  function funnelChart(stages, counts, label) {
    const rowH = 24, width = 600, labelW = 110, countW = 70, room = width - labelW - countW;
    const top = Math.max(1, counts[stages[0]] || 0);
    const chart = svg("svg", { viewBox: `0 0 ${width} ${stages.length * rowH + 4}`, class: "chart funnel-chart",
      "aria-hidden": "true", focusable: "false" });
    chart.appendChild(svg("title", {}, label));
    stages.forEach((stage, n) => {
      const count = counts[stage] || 0, y = n * rowH + 2;
      const w = count > 0 ? Math.min(room, Math.max(4, (count / top) * room)) : 0;
      chart.appendChild(svg("text", { x: labelW - 8, y: y + 16, "text-anchor": "end", class: "chart-label" }, FUNNEL_NAMES[stage] || human(stage)));
      chart.appendChild(svg("rect", { x: (labelW + (room - w) / 2).toFixed(1), y: y + 3, width: w.toFixed(1),
        height: rowH - 6, rx: 3, fill: n < 2 ? "#1f5fbf" : n < 4 ? "#3d7bd6" : "#1d7a46" }));
      chart.appendChild(svg("text", { x: width - 4, y: y + 16, "text-anchor": "end", class: "chart-value" }, number(count)));
    });
    return chart;
  }

  function funnel(campaign, stages) {
    const box = el("article", "funnel");
    box.dataset.campaign = campaign.id;
    const heading = el("h3", null, campaign.name);
    heading.id = uid("funnel");
    box.setAttribute("aria-labelledby", heading.id);
    const run = campaign.progress;
    const meta = [campaign.angle, campaign.tier, campaign.status].filter(Boolean).join(" · ")
      + (run ? " · running now: " + number(run.done) + " of " + plural(run.total, "contact") + " done" : "");
    box.append(heading, el("p", "qmeta", meta));
    if (run && run.total > 0) {
      const bar = el("progress", "run-progress");
      bar.max = run.total; bar.value = Math.min(run.done, run.total);
      bar.setAttribute("aria-label", "Run progress of " + campaign.name);
      box.appendChild(bar);
    }
    const label = stages.map((s) => (FUNNEL_NAMES[s] || human(s)) + " " + (campaign.counts[s] || 0)).join(", ");
    box.appendChild(funnelChart(stages, campaign.counts, label));
    const list = el("ol", "funnel-counts");
    list.setAttribute("aria-label", "Funnel of " + campaign.name);
    for (const stage of stages) {
      const li = el("li"); li.dataset.stage = stage;
      li.append(el("span", "n", number(campaign.counts[stage] || 0)), document.createTextNode(" " + (FUNNEL_NAMES[stage] || human(stage)).toLowerCase()));
      list.appendChild(li);
    }
    box.appendChild(list);
    return box;
  }

  function renderFunnels(data) {
    const box = $("funnels");
    box.textContent = "";
    if (!data.campaigns.length) { box.appendChild(el("p", "hint", "No campaigns yet.")); return; }
    for (const c of data.campaigns) box.appendChild(funnel(c, data.stages));
    box.dataset.updates = String(Number(box.dataset.updates || 0) + 1);
  }

  // The server pushes the counts on connect and after every change; nothing here asks again
  // unless the stream drops, and then it reconnects (backing off, up to 30 s) and is sent the
  // current counts first, so nothing missed while away stays missed.
  async function followFunnels() {
    let wait = 2000;
    for (;;) {
      try {
        const response = await fetch("/campaigns/events", { headers: ctx.headers() });
        if (!response.ok) throw new Error(response.status === 401 ? "sign in again to see live progress" : response.statusText);
        $("funnels-status").textContent = "Live";
        wait = 2000;
        await ctx.readEvents(response, (type, _id, data) => { if (type === "funnels") renderFunnels(data); });
        $("funnels-status").textContent = "Reconnecting…";
      } catch (error) {
        $("funnels-status").textContent = "Not live: " + error.message + " (retrying)";
        wait = Math.min(30000, wait * 2);
      }
      await new Promise((resolve) => { ctx.kick = resolve; setTimeout(resolve, wait); });
      ctx.kick = null;
    }
  }

  // ---- What the org spends: this month's cost, its budget, and the banner ------------------
  const usd = (n) => "$" + Number(n).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: n > 0 && n < 0.01 ? 6 : 2 });
  const BANNERS = {
    alert: (b) => "Spend alert: " + usd(b.spent_usd) + " of this month's " + usd(b.monthly_usd) + " budget spent (" + Math.round(b.share * 100) + "%).",
    over: (b) => "Over budget: " + usd(b.spent_usd) + " of " + usd(b.monthly_usd) + " spent this month. There is no hard cap: campaign work goes on.",
    capped: (b) => "Budget reached: " + b.reason + (b.held ? " (" + plural(b.held, "campaign step") + " waiting)" : "") + ".",
  };

  function banner(budget) {
    const node = $("budget-banner");
    const say = budget && BANNERS[budget.state];
    node.hidden = !say;
    node.dataset.state = budget ? budget.state : "none";
    node.textContent = say ? say(budget) : "";
  }

  // A slot per day of the month, its bar as tall as the day's cost; the tables that follow
  // say the same in words (the chart is hidden from screen readers).
  function dayChart(month, days) {
    const [year, mon] = month.split("-").map(Number), count = new Date(Date.UTC(year, mon, 0)).getUTCDate();
    const width = 600, height = 70, step = width / count, most = Math.max(0, ...days.map((d) => d.cost_usd));
    const chart = svg("svg", { viewBox: `0 0 ${width} ${height + 16}`, class: "chart", "aria-hidden": "true", focusable: "false" });
    chart.appendChild(svg("line", { x1: 0, y1: height + 0.5, x2: width, y2: height + 0.5, stroke: "#d9dee5" }));
    for (const d of days) {
      const slot = Number(d.day.slice(8, 10)) - 1;
      const h = most > 0 ? Math.max(d.cost_usd > 0 ? 2 : 0, (d.cost_usd / most) * height) : 0;
      chart.appendChild(svg("rect", { x: (slot * step + 1).toFixed(1), y: (height - h).toFixed(1), width: Math.max(1, step - 2).toFixed(1),
        height: h.toFixed(1), fill: "#1f5fbf", "data-day": d.day }));
    }
    chart.appendChild(svg("text", { x: 0, y: height + 14, class: "chart-label" }, month + "-01"));
    chart.appendChild(svg("text", { x: width, y: height + 14, "text-anchor": "end", class: "chart-label" }, month + "-" + String(count).padStart(2, "0")));
    return chart;
  }

  function spendTable(caption, rows, name, extra) {
    const box = el("table", "view-table");
    box.appendChild(el("caption", "hint", caption));
    const head = el("tr");
    for (const title of [name, "Calls", "Tokens in (cached)", "Tokens out", "Cost"].concat(extra ? [extra.title] : [])) {
      const th = el("th", null, title); th.scope = "col"; head.appendChild(th);
    }
    box.appendChild(el("thead")).appendChild(head);
    const body = box.appendChild(el("tbody"));
    for (const r of rows) {
      const tr = el("tr");
      const th = el("th", null, r.label); th.scope = "row"; tr.appendChild(th);
      tr.append(el("td", "num", number(r.calls) + (r.unpriced_calls ? " (" + number(r.unpriced_calls) + " unpriced)" : "")),
        el("td", "num", number(r.tokens_in) + " (" + number(r.tokens_cached) + ")"), el("td", "num", number(r.tokens_out)),
        el("td", "num cost", usd(r.cost_usd)));
      if (extra) tr.appendChild(el("td", "num", extra.value(r)));
      body.appendChild(tr);
    }
    return box;
  }

  function renderUsage(data) {
    const box = $("usage");
    box.textContent = "";
    banner(data.budget);
    const total = data.total, b = data.budget;
    box.appendChild(el("p", "view-total", data.month + " (UTC): " + usd(total.cost_usd) + " on " + plural(total.calls, "model call")));
    if (b && b.monthly_usd !== null) {
      const bar = el("progress", "run-progress");
      bar.max = b.monthly_usd; bar.value = Math.min(b.spent_usd, b.monthly_usd);
      bar.setAttribute("aria-label", "Share of the monthly budget spent");
      box.append(bar, el("p", "qmeta", Math.round(b.share * 100) + "% of the " + usd(b.monthly_usd) + " monthly budget · alert at "
        + Math.round(b.alert_share * 100) + "% · " + (b.hard_cap ? "hard cap: campaign work waits when it is spent" : "no hard cap")));
    } else if (b) box.appendChild(el("p", "qmeta", "No monthly budget is set."));
    if (total.unpriced_calls) {
      box.appendChild(el("p", "gap", plural(total.unpriced_calls, "call") + " of models without a price (" + data.unpriced.map((u) => u.model).join(", ")
        + "): their cost is unknown and not in the total."));
    }
    if (!total.calls) { box.appendChild(el("p", "hint", "No model calls this month yet.")); return; }
    box.appendChild(dayChart(data.month, data.days));
    box.appendChild(spendTable("By agent", data.by_agent.map((a) => Object.assign({ label: a.agent_id + (a.agent ? " " + a.agent : "") }, a)), "Agent"));
    box.appendChild(spendTable("By campaign", data.by_campaign.map((c) => Object.assign({ label: c.name || "No campaign (chat, brief, recordings…)" }, c)), "Campaign",
      { title: "Waiting", value: (r) => number(r.held || 0) }));
  }

  async function loadUsage() {
    try { renderUsage(await ctx.api("/usage")); }
    catch (error) { $("usage").textContent = "Could not load this month's spend: " + error.message; }
  }

  // ---- The daily brief, section by section -----------------------------------------------
  function brief(node, data) {
    node.textContent = "";
    if (!data) { node.appendChild(el("p", null, "No brief has been written today yet.")); return; }
    if (!data.sections) { node.appendChild(el("p", null, data.content)); return; }
    for (const s of data.sections) {
      const part = el("div", "brief-section");
      part.dataset.section = s.key;
      const heading = el("h3", null, s.title);
      heading.id = uid("brief");
      part.setAttribute("role", "group");
      part.setAttribute("aria-labelledby", heading.id);
      part.appendChild(heading);
      const lines = String(s.text || "").split("\n").map((l) => l.replace(/^\s*[-•*]\s+/, "").trim()).filter(Boolean);
      if (lines.length > 1) {
        const ul = el("ul");
        for (const line of lines) ul.appendChild(el("li", null, line));
        part.appendChild(ul);
      } else part.appendChild(el("p", null, lines[0] || "—"));
      node.appendChild(part);
    }
  }

  // ---- Tool results as tables and cards ---------------------------------------------------
  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const isScalar = (v) => v === null || v === undefined || typeof v !== "object";
  function scalar(v) {
    if (v === null || v === undefined || v === "") return "—";
    if (typeof v === "number") return number(v);
    if (typeof v === "boolean") return v ? "yes" : "no";
    return String(v);
  }
  function short(v) {
    const text = JSON.stringify(v);
    return text.length > COMPACT_CHARS ? text.slice(0, COMPACT_CHARS - 1) + "…" : text;
  }

  // Rows of objects: one column per key (the first MAX_COLUMNS seen), the first MAX_ROWS rows.
  function table(rows, depth, keyed, columns) {
    const keys = columns || [];
    if (!columns) for (const r of rows) for (const k of Object.keys(r[1])) if (!keys.includes(k) && keys.length < MAX_COLUMNS) keys.push(k);
    const box = el("table", "view-table");
    const head = el("tr");
    for (const name of (keyed ? [keyed] : []).concat(keys.map(human))) { const th = el("th", null, name); th.scope = "col"; head.appendChild(th); }
    box.appendChild(el("thead")).appendChild(head);
    const body = box.appendChild(el("tbody"));
    for (const [key, row] of rows.slice(0, MAX_ROWS)) {
      const tr = el("tr");
      if (keyed) { const th = el("th", null, human(key)); th.scope = "row"; tr.appendChild(th); }
      for (const k of keys) {
        const v = row[k], td = el("td", typeof v === "number" ? "num" : null);
        if (isScalar(v)) td.textContent = scalar(v);
        else td.appendChild(value(v, depth + 1));  // deep enough, it is one line of JSON text
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    if (rows.length > MAX_ROWS) {
      const tr = el("tr"), td = el("td", "hint", "… and " + (rows.length - MAX_ROWS) + " more");
      td.colSpan = keys.length + (keyed ? 1 : 0); tr.appendChild(td); body.appendChild(tr);
    }
    return box;
  }

  // Any JSON value: arrays of objects as tables, objects of like objects as keyed tables,
  // other objects as definition lists, deep nesting as one line of compact JSON text.
  function value(v, depth) {
    if (isScalar(v)) return el("span", null, scalar(v));
    if (depth >= MAX_DEPTH) return el("code", null, short(v));
    if (Array.isArray(v)) {
      if (!v.length) return el("span", "hint", "none");
      if (v.every(isScalar)) return el("span", null, v.map(scalar).join(", "));
      if (v.every(isObject)) return table(v.map((r, n) => [n, r]), depth, null);
      const ul = el("ul");
      for (const item of v.slice(0, MAX_ROWS)) ul.appendChild(el("li")).appendChild(value(item, depth + 1));
      return ul;
    }
    const keys = Object.keys(v);
    if (!keys.length) return el("span", "hint", "none");
    if (keys.length > 1 && keys.every((k) => isObject(v[k]) && Object.values(v[k]).every(isScalar))) {
      return table(keys.map((k) => [k, v[k]]), depth, "name");
    }
    const dl = el("dl");
    for (const k of keys) {
      dl.appendChild(el("dt", null, human(k)));
      dl.appendChild(el("dd")).appendChild(value(v[k], depth + 1));
    }
    return dl;
  }

  // The tools people meet most, shown for what they are; every other one, generically.
  const SPECIFIC = {
    pipeline_snapshot(result) {
      const byStage = result.deals_by_stage || {};
      const stages = Object.keys(byStage).map((stage) => ({ stage, deals: Number(byStage[stage].deals) || 0, value: Number(byStage[stage].value) || 0 }))
        .sort((a, b) => stageRank(a.stage) - stageRank(b.stage) || a.stage.localeCompare(b.stage));
      const box = el("div");
      if (stages.length) {
        box.appendChild(pipelineChart(stages, "Deals and value by stage"));
        box.appendChild(pipelineTable(stages, false));
      }
      const rest = Object.assign({}, result); delete rest.deals_by_stage;
      box.appendChild(value(rest, 1));
      return box;
    },
    list_approvals(result) {
      const items = result.items || [];
      const box = el("div");
      box.appendChild(el("p", null, plural(items.length, "item") + " shown" + (result.pending_total !== undefined ? " of " + number(result.pending_total) + " pending" : "")));
      if (items.length) box.appendChild(table(items.map((r, n) => [n, r]), 1, null, ["kind", "summary", "source_agent"]));
      return box;
    },
  };

  function toolResult(data) {
    const node = el("div", "tool tool-result");
    node.dataset.tool = data.name;
    const head = el("div", "tool-head", "← " + data.name + (data.ok ? " ok" : " failed: " + ((data.error && data.error.message) || "unknown error")));
    node.appendChild(head);
    if (data.ok) {
      let shown;
      try { shown = (SPECIFIC[data.name] || ((r) => value(r, 0)))(data.result); }
      catch (error) { shown = el("code", null, short(data.result)); }  // an unexpected shape: still text
      node.appendChild(shown);
    }
    return node;
  }

  // Called each time the page shows the app (again after a new sign-in): one stream only,
  // and one that is waiting to reconnect tries at once with the new sign-in.
  function start(page) {
    ctx.api = page.api; ctx.headers = page.headers; ctx.readEvents = page.readEvents;
    loadPipeline(); loadUsage();
    if (ctx.started) { if (ctx.kick) ctx.kick(); return; }
    ctx.started = true;
    $("pipeline-refresh").addEventListener("click", loadPipeline);
    $("usage-refresh").addEventListener("click", loadUsage);
    followFunnels();
  }

  return { start, brief, toolResult, value, el };  // el: kc.js builds its view with it too
})();
