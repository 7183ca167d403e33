// /overview's Knowledge view (issue 34 item 2): the org's Knowledge Core by domain, what an
// agent's retrieval returns for a query, a document and its chunks as stored, and documents a
// person writes, edits, retires, or seeds as KC-08 exemplars. Served by the chat function at
// /overview/kc.js (same origin); it calls only the chat function's /kc routes
// (colony.chat.kc_routes), as the page's signed-in person.
//
// Everything shown is the org's text (titles, chunks, tags): set as text, never as markup.
// A Notion document is read-only here and links to its page; the link is built by the server
// from the page id and opened as a plain link (rel=noopener), never as script.
"use strict";
window.ColonyKnowledge = (() => {
  const ANGLES = ["Signal", "Pain", "Referral", "PatternBreak", "Insight"];
  const TIERS = ["T1", "T2", "T3", "T4", "T5"];
  const ctx = { api: null, started: false, domain: "KC-01", contains: "", offset: 0, serial: 0 };
  const $ = (id) => document.getElementById(id);
  const el = window.ColonyViews.el;  // views.js loads first: an element with its text set as text
  const uid = (prefix) => prefix + "-" + (++ctx.serial);
  const say = (text) => { $("kc-status").textContent = text; };
  const query = (params) => new URLSearchParams(params).toString();
  const docPath = (d) => "/kc/document?" + query({ source: d.source, id: d.source_id });

  function button(text, onClick, className) {
    const b = el("button", className, text);
    b.type = "button";
    b.addEventListener("click", onClick);
    return b;
  }
  function detail(heading) {
    const node = $("kc-detail");
    node.textContent = "";
    const h = el("h3", null, heading);
    h.id = uid("kc-detail-h");
    h.tabIndex = -1;
    node.appendChild(h);
    return { node, focus: () => h.focus() };
  }
  function tagText(tags) {
    return Object.entries(tags || {}).map(([k, v]) => k + ": " + v).join(" · ");
  }

  // ---- The domains and a page of documents ----------------------------------------------
  async function loadDomains() {
    const body = await ctx.api("/kc");
    const select = $("kc-domain");
    select.textContent = "";
    for (const d of body.domains) {
      const option = el("option", null, `${d.domain} ${d.name} (${d.documents})`);
      option.value = d.domain;
      select.appendChild(option);
    }
    select.value = ctx.domain;
  }

  async function loadDocuments(append) {
    if (!append) ctx.offset = 0;
    const params = { offset: String(ctx.offset) };
    if (ctx.contains) params.contains = ctx.contains;
    let body;
    try { body = await ctx.api(`/kc/domains/${ctx.domain}/documents?` + query(params)); }
    catch (error) { say("Could not load the documents: " + error.message); return; }
    const rows = $("kc-docs-body");
    if (!append) rows.textContent = "";
    for (const d of body.documents) rows.appendChild(documentRow(d));
    if (!append && !body.documents.length) {
      const tr = el("tr"), td = el("td", null, ctx.contains ? "No document here holds that text." : "No documents in this domain yet.");
      td.colSpan = 4; tr.appendChild(td); rows.appendChild(tr);
    }
    ctx.offset = body.next_offset || ctx.offset;
    $("kc-more").hidden = body.next_offset === null;
    say(`${rows.querySelectorAll("tr[data-source]").length} documents shown in ${ctx.domain}`);
  }

  function documentRow(d) {
    const tr = el("tr");
    tr.dataset.source = d.source; tr.dataset.sourceId = d.source_id;
    const name = el("td");
    name.appendChild(button(d.title || "(untitled)", () => openDocument(d), "kc-open"));
    tr.appendChild(name);
    tr.appendChild(el("td", null, d.source + (d.editable ? "" : " (read-only)")));
    tr.appendChild(el("td", "num", d.chunks));
    tr.appendChild(el("td", null, new Date(d.updated_at).toLocaleString()));
    return tr;
  }

  // ---- One document and its chunks --------------------------------------------------------
  async function openDocument(ref) {
    let doc;
    try { doc = await ctx.api(docPath(ref)); }
    catch (error) { say("Could not open the document: " + error.message); return; }
    const view = detail(doc.title || "(untitled)");
    view.node.dataset.source = doc.source; view.node.dataset.sourceId = doc.source_id;
    const meta = el("p", "hint", `${doc.domain} · ${doc.source} · ${doc.chunks.length} chunk${doc.chunks.length === 1 ? "" : "s"}`
      + (Object.keys(doc.tags || {}).length ? " · " + tagText(doc.tags) : ""));
    view.node.appendChild(meta);
    if (doc.notion_url) {
      const p = el("p", null, "From Notion: read-only here, change it in its page. ");
      const a = el("a", null, "Open in Notion");
      a.href = doc.notion_url; a.rel = "noopener noreferrer"; a.target = "_blank";
      p.appendChild(a);
      view.node.appendChild(p);
    } else {
      const actions = el("div", "qactions");
      actions.appendChild(button("Edit", () => editForm(doc)));
      actions.appendChild(button("Retire", () => confirmRetire(doc, actions), "reject"));
      view.node.appendChild(actions);
    }
    const list = el("ol", "kc-chunks");
    list.setAttribute("aria-label", "Chunks as stored");
    for (const c of doc.chunks) {
      const li = el("li");
      li.appendChild(el("div", "qtext", c.content));
      li.appendChild(el("span", "qprov", `hash ${c.content_hash.slice(0, 12)} · embedded by ${c.embedding_model}`));
      list.appendChild(li);
    }
    view.node.appendChild(list);
    view.focus();
  }

  function confirmRetire(doc, actions) {
    actions.textContent = "";
    actions.appendChild(el("span", null, "Retire this document? Agents stop reading it at once."));
    const yes = button("Retire it", async () => {
      try {
        const done = await ctx.api(docPath(doc), { method: "DELETE" });
        $("kc-detail").textContent = "";
        await refresh();
        say(`Retired: ${done.deleted} chunk${done.deleted === 1 ? "" : "s"} removed`);
        $("kc-domain").focus();
      } catch (error) { say("Could not retire it: " + error.message); }
    }, "reject");
    actions.appendChild(yes);
    actions.appendChild(button("Keep it", () => openDocument(doc)));
    yes.focus();
  }

  // ---- Writing: a document, an edit, an exemplar ------------------------------------------
  function field(form, label, input) {
    const id = uid("kc-field");
    input.id = id;
    const l = el("label", null, label);
    l.htmlFor = id;
    form.appendChild(l); form.appendChild(input);
    return input;
  }
  function choice(values, value) {
    const s = el("select");
    for (const v of values) { const o = el("option", null, v); o.value = v; s.appendChild(o); }
    if (value) s.value = value;
    return s;
  }
  function parseTags(text) {
    const tags = {};
    for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
      const at = line.indexOf(":");
      if (at < 1) throw new Error(`a tag is "name: value" (${line})`);
      tags[line.slice(0, at).trim()] = line.slice(at + 1).trim();
    }
    return tags;
  }

  function editForm(doc) {
    const view = detail(doc ? "Edit: " + (doc.title || "(untitled)") : "New document in " + ctx.domain);
    const form = el("form", "qedit kc-form");
    const title = field(form, "Title", el("input"));
    title.type = "text"; title.required = true; title.maxLength = 200;
    const body = field(form, "Text", el("textarea"));
    body.required = true; body.rows = 10;
    const tags = field(form, "Tags (one \"name: value\" a line)", el("textarea"));
    tags.rows = 2;
    if (doc) {
      title.value = doc.title || "";
      body.value = doc.chunks.map((c) => c.content).join("\n\n");
      tags.value = Object.entries(doc.tags || {}).map(([k, v]) => `${k}: ${v}`).join("\n");
    }
    const domain = doc ? doc.domain : ctx.domain;
    submitRow(form, doc ? "Save changes" : "Add document", async () => {
      const payload = { domain, title: title.value, body: body.value, tags: parseTags(tags.value) };
      return doc ? ctx.api(docPath(doc), { method: "PUT", body: JSON.stringify(payload) })
                 : ctx.api("/kc/documents", { method: "POST", body: JSON.stringify(payload) });
    });
    view.node.appendChild(form);
    title.focus();
  }

  function exemplarForm() {
    const view = detail("Seed a KC-08 exemplar");
    const form = el("form", "qedit kc-form");
    const angle = field(form, "Angle", choice(ANGLES));
    const tier = field(form, "Tier", choice(TIERS));
    const step = field(form, "Step (blank for a first message)", el("input"));
    step.type = "number"; step.min = "1"; step.max = "10";
    const title = field(form, "Title", el("input"));
    title.type = "text"; title.required = true; title.maxLength = 200;
    const body = field(form, "The message", el("textarea"));
    body.required = true; body.rows = 8;
    submitRow(form, "Seed exemplar", () => {
      const payload = { angle: angle.value, tier: tier.value, title: title.value, body: body.value };
      if (step.value) payload.step = Number(step.value);
      return ctx.api("/kc/exemplars", { method: "POST", body: JSON.stringify(payload) });
    }, "KC-08");
    view.node.appendChild(form);
    angle.focus();
  }

  function submitRow(form, label, send, showDomain) {
    const problem = el("p", "bad kc-problem");
    problem.setAttribute("role", "alert");
    problem.hidden = true;
    const actions = el("div", "qactions");
    const save = el("button", "primary", label);
    save.type = "submit";
    actions.appendChild(save);
    actions.appendChild(button("Cancel", () => { $("kc-detail").textContent = ""; $("kc-domain").focus(); }));
    form.appendChild(problem); form.appendChild(actions);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      save.disabled = true; problem.hidden = true;
      try {
        const done = await send();
        if (showDomain) ctx.domain = showDomain;
        await refresh();
        await openDocument(done);
        say(`Saved: ${done.embedded} chunk${done.embedded === 1 ? "" : "s"} embedded, ${done.unchanged} unchanged, ${done.deleted} removed`);
      } catch (error) {
        problem.textContent = "Not saved: " + error.message;
        problem.hidden = false;
        save.disabled = false;
      }
    });
  }

  // ---- What an agent would get --------------------------------------------------------------
  async function search(text) {
    let body;
    try { body = await ctx.api(`/kc/domains/${ctx.domain}/search?` + query({ q: text, k: "5" })); }
    catch (error) { say("Could not search: " + error.message); return; }
    const view = detail(`What an agent reading ${body.domain} gets for “${text}”`);
    if (!body.results.length) view.node.appendChild(el("p", null, "Nothing: this domain has no documents yet."));
    const list = el("ol", "kc-results");
    for (const r of body.results) {
      const li = el("li");
      li.appendChild(button(r.title || "(untitled)", () => openDocument(r), "kc-open"));
      li.appendChild(el("span", "qprov", `similarity ${r.similarity.toFixed(3)} · ${r.source} · chunk ${r.chunk_index + 1}`));
      li.appendChild(el("div", "qtext", r.content));
      list.appendChild(li);
    }
    view.node.appendChild(list);
    say(`${body.results.length} chunks, as the agents' retrieval ranks them (${body.model})`);
    view.focus();
  }

  async function refresh() {
    await loadDomains();
    $("kc-domain").value = ctx.domain;
    await loadDocuments(false);
  }

  async function start(page) {
    ctx.api = page.api;
    if (!ctx.started) {
      ctx.started = true;
      $("kc-domain").addEventListener("change", () => { ctx.domain = $("kc-domain").value; loadDocuments(false); });
      $("kc-filter").addEventListener("submit", (e) => { e.preventDefault(); ctx.contains = $("kc-contains").value.trim(); loadDocuments(false); });
      $("kc-search").addEventListener("submit", (e) => {
        e.preventDefault();
        const text = $("kc-query").value.trim();
        if (text) search(text); else say("Say what to search for");
      });
      $("kc-more").addEventListener("click", () => loadDocuments(true));
      $("kc-new").addEventListener("click", () => editForm(null));
      $("kc-seed").addEventListener("click", exemplarForm);
    }
    try { await refresh(); } catch (error) { say("Could not load the Knowledge Core: " + error.message); }
  }

  return { start };
})();
