// /overview's Prospects, Deals and Calls views (issue 34 item 1): the org's prospects as a list a person filters
// (paginated on the server: GET /prospects) and one prospect's page (GET /prospects/<id>):
// fields, ICP score and AGT-004's reasons, signals with their quotes and sources, sequences
// and the next step, every message sent with the replies under it, and the decisions on it.
//
// Names, quotes, messages and replies are the org's or the outside world's text: set as text,
// never as markup. A signal's source becomes a link only when it is an http(s) address.
"use strict";
window.ColonyRecords = (() => {
  const SIGNALS = ["expansion", "hiring", "leadership_change", "funding", "lease_expiry",
    "consolidation", "tech_adoption"];
  const ctx = { api: null, started: false, offset: 0, filters: {}, serial: 0 };
  const $ = (id) => document.getElementById(id);
  const el = window.ColonyViews.el;  // views.js loads first
  const uid = (prefix) => prefix + "-" + (++ctx.serial);
  const say = (text) => { $("prospects-status").textContent = text; };
  const when = (iso) => (iso ? new Date(iso).toLocaleString() : "—");

  function filters() {
    const read = (id) => $(id).value.trim();
    const f = { q: read("pf-q"), tier: read("pf-tier"), min_score: read("pf-min"),
      max_score: read("pf-max"), status: read("pf-status"), replied: read("pf-replied"),
      signal: read("pf-signal") };
    return Object.fromEntries(Object.entries(f).filter(([, v]) => v));
  }

  async function load(append) {
    if (!append) { ctx.offset = 0; ctx.filters = filters(); }
    const params = new URLSearchParams(Object.assign({ offset: String(ctx.offset) }, ctx.filters));
    let body;
    try { body = await ctx.api("/prospects?" + params.toString()); }
    catch (error) { say("Could not load prospects: " + error.message); return; }
    const rows = $("prospects-body");
    if (!append) rows.textContent = "";
    for (const p of body.prospects) rows.appendChild(row(p));
    if (!body.total) {
      const tr = el("tr"), td = el("td", null, "No prospect matches these filters.");
      td.colSpan = 6; tr.appendChild(td); rows.appendChild(tr);
    }
    ctx.offset = body.next_offset || ctx.offset;
    $("prospects-more").hidden = body.next_offset === null;
    say(`${rows.querySelectorAll("tr[data-id]").length} of ${body.total} prospects shown`);
  }

  function row(p) {
    const tr = el("tr");
    tr.dataset.id = p.id;
    const name = el("td");
    const open = el("button", "kc-open", p.name);
    open.type = "button";
    open.addEventListener("click", () => show(p.id));
    name.appendChild(open);
    if (p.title) name.appendChild(el("span", "qprov", p.title));
    tr.appendChild(name);
    tr.appendChild(el("td", null, p.company));
    tr.appendChild(el("td", "num", p.icp_score === null ? "—" : p.icp_score));
    tr.appendChild(el("td", null, p.tier || "—"));
    tr.appendChild(el("td", null, p.sequence_status + (p.replied ? " · replied" : "")));
    tr.appendChild(el("td", null, p.signal_types.join(", ") || "—"));
    return tr;
  }

  function section(parent, title) {
    const h = el("h4", null, title);
    h.id = uid("pr-h");
    const part = el("div", "pr-part");
    part.setAttribute("role", "group");
    part.setAttribute("aria-labelledby", h.id);
    part.appendChild(h);
    parent.appendChild(part);
    return part;
  }
  function facts(parent, pairs) {
    const dl = el("dl");
    for (const [term, value] of pairs) {
      if (value === null || value === undefined || value === "") continue;
      dl.appendChild(el("dt", null, term));
      dl.appendChild(el("dd", null, value));
    }
    parent.appendChild(dl);
  }
  function source(text) {
    if (/^https?:\/\//i.test(text)) {
      const a = el("a", null, text);
      a.href = text; a.rel = "noopener noreferrer nofollow"; a.target = "_blank";
      return a;
    }
    return el("span", null, text);
  }

  async function show(id) {
    let page;
    try { page = await ctx.api("/prospects/" + encodeURIComponent(id)); }
    catch (error) { say("Could not open the prospect: " + error.message); return; }
    const p = page.prospect, node = $("prospect");
    node.textContent = "";
    node.dataset.id = p.id;
    const h = el("h3", null, p.name);
    h.tabIndex = -1;
    node.appendChild(h);
    facts(node, [["Title", p.title], ["Company", p.company], ["Domain", p.company_domain],
      ["Email", p.email], ["LinkedIn", p.linkedin_url], ["Time zone", p.timezone]]);

    const icp = section(node, "ICP score");
    const dimensions = Object.entries(p.icp.dimension_scores || {}).map(([k, v]) => ["  " + k.replace(/_/g, " "), v]);
    facts(icp, [["Score", p.icp.score === null ? "not scored yet" : `${p.icp.score} / 100`],
      ...dimensions, ["Tier", p.icp.tier], ["Recommendation", p.icp.recommendation],
      ["Disqualifiers", (p.icp.disqualifiers || []).join(", ")], ["Why", p.icp.reasoning],
      ["Tier rule", p.icp.tier_rule], ["Scored", p.icp.scored_at && when(p.icp.scored_at)]]);

    const signals = section(node, `Signals (${page.signals.length})`);
    const sl = el("ul");
    for (const s of page.signals) {
      const li = el("li");
      li.appendChild(el("strong", null, s.type.replace(/_/g, " ") + ": "));
      li.appendChild(el("span", null, s.detail));
      li.appendChild(el("span", "qquote", "“" + s.quote + "”"));
      const prov = el("span", "qprov", `${s.observed_on || "undated"} · confidence ${s.confidence} · `);
      prov.appendChild(source(s.source));
      li.appendChild(prov);
      sl.appendChild(li);
    }
    if (!page.signals.length) sl.appendChild(el("li", null, "None found yet."));
    signals.appendChild(sl);

    const seq = section(node, "Sequences");
    const ql = el("ul");
    for (const s of page.sequences) {
      const next = s.next_step ? ` · next: step ${s.next_step} of ${s.steps}, due ${when(s.next_due_at)}` : "";
      ql.appendChild(el("li", null, `${s.campaign} (${s.angle} ${s.tier}): ${s.status}${s.stop_reason ? " — " + s.stop_reason : ""}${next}`));
    }
    if (!page.sequences.length) ql.appendChild(el("li", null, "Not in a sequence."));
    seq.appendChild(ql);

    const thread = section(node, `Messages (${page.messages.length})`);
    for (const m of page.messages) {
      const box = el("article", "pr-message");
      box.setAttribute("aria-label", `Step ${m.sequence_step}: ${m.subject}`);
      box.appendChild(el("p", "qmeta", `Step ${m.sequence_step} · ${m.status} · ${when(m.sent_at || m.created_at)}`));
      box.appendChild(el("p", null, m.subject));
      box.appendChild(el("div", "qtext", m.body));
      for (const r of m.replies) {
        const reply = el("div", "pr-reply");
        reply.appendChild(el("p", "qmeta", `Reply · ${r.sentiment} · ${when(r.received_at)}`));
        reply.appendChild(el("div", "qtext", r.body));
        box.appendChild(reply);
      }
      thread.appendChild(box);
    }
    if (!page.messages.length) thread.appendChild(el("p", null, "Nothing sent yet."));

    const trail = section(node, "Decisions");
    const tl = el("ul");
    for (const t of page.trail) {
      tl.appendChild(el("li", null, `${when(t.at)} · ${t.actor} · ${t.action}${t.reason ? " — " + t.reason : ""}`));
    }
    if (!page.trail.length) tl.appendChild(el("li", null, "None on record."));
    trail.appendChild(tl);
    h.focus();
  }

  // ---- Deals: by stage, and a deal's page --------------------------------------------------
  const money = (n) => Number(n || 0).toLocaleString("en-US", { style: "currency", currency: "USD", maximumFractionDigits: 0 });
  async function loadDeals() {
    let body;
    try { body = await ctx.api("/deals"); }
    catch (error) { $("deals-status").textContent = "Could not load deals: " + error.message; return; }
    const table = $("deals");
    for (const old of table.querySelectorAll("tbody")) old.remove();
    let shown = 0;
    for (const s of body.stages) {
      if (!s.count) continue;
      const group = el("tbody");
      const head = el("tr", "deal-stage");
      const th = el("th", null, `${s.stage.replace(/_/g, " ")}: ${s.count} · ${money(s.value)}`);
      th.scope = "rowgroup"; th.colSpan = 4;
      head.appendChild(th); group.appendChild(head);
      for (const d of s.deals) {
        const tr = el("tr");
        tr.dataset.id = d.id;
        const name = el("td");
        const open = el("button", "kc-open", d.name);
        open.type = "button";
        open.addEventListener("click", () => showDeal(d.id));
        name.appendChild(open);
        tr.appendChild(name);
        tr.appendChild(el("td", null, d.contact ? `${d.contact}, ${d.company}` : "—"));
        tr.appendChild(el("td", "num", d.value === null ? "—" : money(d.value)));
        tr.appendChild(el("td", null, d.next_action || "—"));
        group.appendChild(tr);
        shown += 1;
      }
      table.appendChild(group);
    }
    $("deals-status").textContent = shown ? `${shown} deals` + (body.truncated ? " (the first 1,000)" : "") : "No deals yet.";
  }

  function changes(item) {
    const payload = item.edited_payload || item.payload || {};
    const set = payload.changes || {};
    return Object.entries(set).map(([k, v]) => `${k.replace(/_/g, " ")} → ${v}`).join("; ");
  }

  async function showDeal(id) {
    let page;
    try { page = await ctx.api("/deals/" + encodeURIComponent(id)); }
    catch (error) { $("deals-status").textContent = "Could not open the deal: " + error.message; return; }
    const d = page.deal, node = $("deal");
    node.textContent = "";
    node.dataset.id = d.id;
    const h = el("h3", null, d.name);
    h.tabIndex = -1;
    node.appendChild(h);
    facts(node, [["Stage", d.stage.replace(/_/g, " ")], ["Value", d.value === null ? null : money(d.value)],
      ["Close date", d.close_date], ["Next action", d.next_action],
      ["Contact", d.contact && `${d.contact}${d.contact_title ? ", " + d.contact_title : ""} (${d.company})`],
      ["Email", d.contact_email], ["Changed", when(d.updated_at)]]);
    const calls = section(node, `Calls (${page.calls.length})`);
    const cl = el("ul");
    for (const c of page.calls) {
      const li = el("li");
      const open = el("button", "kc-open", c.title);
      open.type = "button";
      open.addEventListener("click", () => showCall(c.id));
      li.appendChild(open);
      li.appendChild(el("span", "qprov", `${when(c.created_at)} · ${c.status} · ${c.signals} signals`));
      cl.appendChild(li);
    }
    if (!page.calls.length) cl.appendChild(el("li", null, "No calls recorded."));
    calls.appendChild(cl);
    const recs = section(node, `Recommendations (${page.recommendations.length})`);
    const rl = el("ul");
    for (const r of page.recommendations) {
      const decided = r.decided_by ? ` by ${r.decided_by} ${when(r.decided_at)}` : "";
      const what = changes(r);
      rl.appendChild(el("li", null, `${r.kind.replace(/_/g, " ")} from ${r.source_agent}${what ? " (" + what + ")" : ""}: ${r.status}${decided}`));
    }
    if (!page.recommendations.length) rl.appendChild(el("li", null, "None."));
    recs.appendChild(rl);
    h.focus();
  }

  // ---- Calls: the transcript with its signals marked where they were said --------------------
  async function loadCalls(append) {
    if (!append) ctx.callOffset = 0;
    let body;
    try { body = await ctx.api("/calls?offset=" + (ctx.callOffset || 0)); }
    catch (error) { $("calls-status").textContent = "Could not load calls: " + error.message; return; }
    const rows = $("calls-body");
    if (!append) rows.textContent = "";
    for (const c of body.calls) {
      const tr = el("tr");
      tr.dataset.id = c.id;
      const name = el("td");
      const open = el("button", "kc-open", c.title);
      open.type = "button";
      open.addEventListener("click", () => showCall(c.id));
      name.appendChild(open);
      tr.appendChild(name);
      tr.appendChild(el("td", null, c.deal || "—"));
      tr.appendChild(el("td", null, c.status));
      tr.appendChild(el("td", "num", c.signals));
      tr.appendChild(el("td", null, when(c.created_at)));
      rows.appendChild(tr);
    }
    if (!append && !body.calls.length) {
      const tr = el("tr"), td = el("td", null, "No calls recorded yet.");
      td.colSpan = 5; tr.appendChild(td); rows.appendChild(tr);
    }
    ctx.callOffset = body.next_offset || ctx.callOffset;
    $("calls-more").hidden = body.next_offset === null;
    $("calls-status").textContent = `${rows.querySelectorAll("tr[data-id]").length} calls shown`;
  }

  function transcript(text, signals, marks) {
    const box = el("div", "qtext call-transcript");
    let at = 0;
    for (const m of marks) {
      if (m.start > at) box.appendChild(document.createTextNode(text.slice(at, m.start)));
      const s = signals[m.signal];
      const mark = el("mark", null, text.slice(m.start, m.end));
      mark.title = `${s.type || "signal"}${s.detail ? ": " + s.detail : ""}`;
      mark.dataset.signal = String(m.signal);
      box.appendChild(mark);
      at = m.end;
    }
    box.appendChild(document.createTextNode(text.slice(at)));
    return box;
  }

  async function showCall(id) {
    let page;
    try { page = await ctx.api("/calls/" + encodeURIComponent(id)); }
    catch (error) { $("calls-status").textContent = "Could not open the call: " + error.message; return; }
    const c = page.call, node = $("call");
    node.textContent = "";
    node.dataset.id = c.id;
    const h = el("h3", null, c.title);
    h.tabIndex = -1;
    node.appendChild(h);
    facts(node, [["Deal", c.deal && `${c.deal} (${c.deal_stage})`], ["Status", c.status],
      ["Problem", c.error], ["Recorded", when(c.created_at)], ["Analysed", c.processed_at && when(c.processed_at)]]);
    const summary = section(node, "Summary");
    summary.appendChild(el("p", null, c.summary || "Not summarised yet."));
    const signals = section(node, `Signals (${page.signals.length}), marked in the transcript`);
    const sl = el("ul");
    for (const s of page.signals) {
      const li = el("li");
      li.appendChild(el("strong", null, String(s.type || "signal").replace(/_/g, " ") + ": "));
      li.appendChild(el("span", null, s.detail || ""));
      li.appendChild(el("span", "qquote", "“" + s.quote + "”"));
      sl.appendChild(li);
    }
    signals.appendChild(sl);
    const recs = section(node, `Recommendations (${page.recommendations.length})`);
    const rl = el("ul");
    for (const r of page.recommendations) {
      const decided = r.decided_by ? ` by ${r.decided_by} ${when(r.decided_at)}` : "";
      rl.appendChild(el("li", null, `${r.kind.replace(/_/g, " ")} from ${r.source_agent}: ${r.status}${decided}`));
    }
    if (!page.recommendations.length) rl.appendChild(el("li", null, "None."));
    recs.appendChild(rl);
    const said = section(node, "Transcript");
    if (page.transcript === null) said.appendChild(el("p", null, "The transcript is not stored (erased, or never received)."));
    else said.appendChild(transcript(page.transcript, page.signals, page.marks));
    h.focus();
  }

  function start(page) {
    ctx.api = page.api;
    if (!ctx.started) {
      ctx.started = true;
      const signal = $("pf-signal");
      for (const s of SIGNALS) { const o = el("option", null, s.replace(/_/g, " ")); o.value = s; signal.appendChild(o); }
      $("prospect-filters").addEventListener("submit", (e) => { e.preventDefault(); load(false); });
      $("prospects-more").addEventListener("click", () => load(true));
      $("calls-more").addEventListener("click", () => loadCalls(true));
      $("deals-refresh").addEventListener("click", loadDeals);
    }
    load(false);
    loadDeals();
    loadCalls(false);
  }

  return { start, show, showDeal, showCall };
})();
