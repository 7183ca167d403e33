// /overview's Setup view (issue 34 item 4): the org's ICP and anti-ICP rules, its sequence
// library and its settings, edited in forms by the org's admins. Served by the chat function
// at /overview/setup.js (same origin); it calls only the chat function's /setup routes
// (colony.chat.setup_routes), which check the admin role and use the admin API's contracts
// and flows: the rules are the server's, this page only shows where each one failed.
//
// A refused save answers error.fields, [{field, message}] with the field as a dotted path
// ("anti_icp_rules.1.value"); every control carries its path in data-field, and a message
// goes beside the control it names (or the nearest group that holds it), the first such
// control takes focus, and a summary says how many there are. Values are set as text.
"use strict";
window.ColonySetup = (() => {
  const ANGLES = ["Signal", "Pain", "Referral", "PatternBreak", "Insight"];
  const TIERS = ["T1", "T2", "T3", "T4", "T5"];
  const CHANNELS = ["email", "linkedin", "call"];
  const OPS = ["eq", "neq", "lt", "lte", "gt", "gte", "in", "not_in", "contains", "missing"];
  const ctx = { api: null, org: null, serial: 0, started: false };
  const $ = (id) => document.getElementById(id);
  const el = window.ColonyViews.el;  // views.js loads first: an element with its text set as text
  const uid = () => "setup-" + (++ctx.serial);
  const say = (text) => { $("setup-status").textContent = text; };

  function button(text, onClick, className) {
    const b = el("button", className, text);
    b.type = "button";
    b.addEventListener("click", onClick);
    return b;
  }
  // A group of controls (a fieldset with its legend) that can carry a message of its own.
  function group(parent, legend) {
    const set = el("fieldset", "sf-group");
    set.appendChild(el("legend", null, legend));
    const err = el("p", "sf-error bad");
    err.id = uid(); err.hidden = true;
    set.dataset.err = err.id;
    set.appendChild(err);
    parent.appendChild(set);
    return set;
  }
  // A labelled control, its message beside it (and read with it: aria-describedby).
  function control(parent, label, input, value) {
    const wrap = el("div", "sf-field");
    input.id = uid();
    const l = el("label", null, label);
    l.htmlFor = input.id;
    const err = el("span", "sf-error bad");
    err.id = input.id + "-err"; err.hidden = true;
    input.dataset.err = err.id;
    input.setAttribute("aria-describedby", err.id);
    if (input.type === "checkbox") input.checked = Boolean(value);
    else if (value !== undefined && value !== null) input.value = String(value);
    wrap.appendChild(l); wrap.appendChild(input); wrap.appendChild(err);
    parent.appendChild(wrap);
    return input;
  }
  function text(max) { const i = el("input"); i.type = "text"; if (max) i.maxLength = max; return i; }
  function number(min, max, step) {
    const i = el("input"); i.type = "number"; i.min = String(min);
    if (max !== undefined) i.max = String(max);
    i.step = step || "1";
    return i;
  }
  function area(rows) { const t = el("textarea"); t.rows = rows; return t; }
  function checkbox() { const i = el("input"); i.type = "checkbox"; return i; }
  function choice(values, blank) {
    const s = el("select");
    for (const v of (blank === undefined ? [] : [blank]).concat(values)) {
      const o = el("option", null, v || "(default)"); o.value = v; s.appendChild(o);
    }
    return s;
  }
  const bind = (node, path) => { node.dataset.field = path; };
  const num = (input) => (input.value.trim() === "" ? null : Number(input.value));

  // ---- Errors beside their fields --------------------------------------------------------
  function clearErrors(form) {
    form.querySelectorAll(".sf-error").forEach((e) => { e.textContent = ""; e.hidden = true; });
    form.querySelectorAll("[aria-invalid]").forEach((e) => e.removeAttribute("aria-invalid"));
  }
  function target(form, field) {
    let path = field;
    while (path) {
      const found = form.querySelector(`[data-field="${CSS.escape(path)}"]`);
      if (found) return found;
      path = path.includes(".") ? path.slice(0, path.lastIndexOf(".")) : "";
    }
    return null;
  }
  function showErrors(form, summary, error) {
    const fields = (error.body && error.body.fields) || [];
    const loose = [];
    let first = null;
    for (const f of fields) {
      const node = target(form, f.field);
      if (!node) { loose.push(f.message); continue; }
      const err = $(node.dataset.err);
      err.textContent = err.textContent ? err.textContent + " " + f.message : f.message;
      err.hidden = false;
      if (node.tagName !== "FIELDSET") node.setAttribute("aria-invalid", "true");
      first = first || node;
    }
    const count = fields.length - loose.length;
    summary.textContent = "Not saved: " + (count
      ? `${count} field${count === 1 ? "" : "s"} to correct, each marked beside it.` : error.message)
      + (count && loose.length ? " " + loose.join(" ") : "");
    summary.hidden = false;
    const focus = first && first.tagName === "FIELDSET" ? first.querySelector("input, select, textarea, button") : first;
    (focus || summary).focus();
  }

  // One form: a heading, its controls (drawn by draw(body, holder) from what the server
  // holds, returning a collect() that builds the body and binds each control's path), a
  // save button, and a summary the screen reader hears.
  async function section(what, heading, draw) {
    const box = $("setup-" + what);
    let held, failed = null;
    try { held = await ctx.api(`/setup/${encodeURIComponent(ctx.org)}/${what}`); }
    catch (error) { failed = error; }
    // Replaced only once the server has answered: the form never vanishes while it asks.
    box.textContent = "";
    box.appendChild(el("h3", null, heading));
    if (failed) { box.appendChild(el("p", "bad", "Could not load it: " + failed.message)); return; }
    const form = el("form", "sf-form");
    form.noValidate = true;  // the server's rules decide, and its messages go beside the fields
    form.setAttribute("aria-label", heading);
    box.appendChild(form);
    const body = el("div");
    form.appendChild(body);
    const collect = draw(body, held);
    collect();  // every control carries its path from the start (collecting binds them)
    form.addEventListener("sf-rows", () => collect());
    const summary = el("p", "bad sf-summary");
    summary.setAttribute("role", "alert"); summary.tabIndex = -1; summary.hidden = true;
    const save = el("button", "primary", "Save " + heading.toLowerCase());
    save.type = "submit";
    const actions = el("div", "qactions");
    actions.appendChild(save);
    form.appendChild(summary); form.appendChild(actions);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearErrors(form); summary.hidden = true; save.disabled = true;
      try {
        await ctx.api(`/setup/${encodeURIComponent(ctx.org)}/${what}`,
          { method: "PUT", body: JSON.stringify(collect()) });
        await section(what, heading, draw);  // drawn again from what the server now holds
        say(`${heading} saved`);
        const again = $("setup-" + what).querySelector("button[type=submit]");
        if (again) again.focus();
      } catch (error) {
        save.disabled = false;
        showErrors(form, summary, error);
      }
    });
  }

  // A list of rows, each a fieldset with a Remove button, and an Add button after them.
  function rows(parent, label, items, drawRow, fresh) {
    const list = [];
    const holder = el("div", "sf-rows");
    parent.appendChild(holder);
    // Rows moved: the form binds every control's path again (section's "sf-rows" listener).
    const moved = () => holder.dispatchEvent(new Event("sf-rows", { bubbles: true }));
    const add = (item) => {
      const set = group(holder, `${label} ${list.length + 1}`);
      const row = { set, get: drawRow(set, item) };
      set.appendChild(button("Remove " + label.toLowerCase(), () => {
        list.splice(list.indexOf(row), 1); set.remove();
        list.forEach((r, i) => { r.set.querySelector("legend").textContent = `${label} ${i + 1}`; });
        moved();
        adder.focus();
      }));
      list.push(row);
      return set;
    };
    for (const item of items) add(item);
    const adder = button("Add " + label.toLowerCase(), () => {
      const set = add(fresh());
      moved();
      set.querySelector("input, select, textarea").focus();
    });
    parent.appendChild(adder);
    return (path) => list.map((r, i) => r.get(`${path}.${i}`));
  }

  // ---- The ICP and its anti-ICP rules -------------------------------------------------------
  function ruleValue(op, raw) {
    const t = raw.trim();
    if (op === "missing") return null;
    if (op === "in" || op === "not_in") return t ? t.split(",").map((s) => s.trim()).filter(Boolean) : [];
    if (["lt", "lte", "gt", "gte", "eq", "neq"].includes(op) && /^-?\d+(\.\d+)?$/.test(t)) return Number(t);
    return t;
  }
  function drawIcp(body, held) {
    const icp = held.icp || { description: "", rubric: {}, anti_icp_rules: [], tiers: [] };
    body.appendChild(el("p", "hint", held.version ? `Version ${held.version}; saving writes version ${held.version + 1}.` : "No ICP yet; saving writes version 1."));
    const description = control(body, "Description", area(4), icp.description);
    const rubric = group(body, "Rubric (weights add up to 100)");
    const dims = rows(rubric, "Dimension", Object.entries(icp.rubric).map(([name, d]) => ({ name, d })), (set, item) => {
      const { weight, criteria, ...extra } = item.d;  // scoring details kept as they are
      const name = control(set, "Name", text(120), item.name);
      const w = control(set, "Weight", number(0, 100), weight);
      const c = control(set, "Criteria", area(2), criteria);
      return (path) => {
        const key = name.value.trim();
        bind(set, `rubric.${key}`); bind(name, `rubric.${key}`);
        bind(w, `rubric.${key}.weight`); bind(c, `rubric.${key}.criteria`);
        return [key, Object.assign({}, extra, { weight: num(w), criteria: c.value })];
      };
    }, () => ({ name: "", d: { weight: 0, criteria: "" } }));
    bind(rubric, "rubric");
    const tiers = group(body, "Tiers (score bands, highest first)");
    bind(tiers, "tiers");
    const bands = rows(tiers, "Band", icp.tiers, (set, t) => {
      const tier = control(set, "Tier", choice(TIERS), t.tier);
      const min = control(set, "From score", number(0, 100), t.min_score);
      const outcome = control(set, "Outcome", choice(["qualify", "hold", "disqualify"], ""), t.outcome || "");
      return (path) => {
        bind(set, path); bind(tier, path + ".tier"); bind(min, path + ".min_score"); bind(outcome, path + ".outcome");
        const band = { tier: tier.value, min_score: num(min) };
        if (outcome.value) band.outcome = outcome.value;
        return band;
      };
    }, () => ({ tier: "T5", min_score: 0 }));
    const anti = group(body, "Anti-ICP rules (a match disqualifies)");
    bind(anti, "anti_icp_rules");
    anti.appendChild(el("p", "hint", "Value: a number for lt, lte, gt, gte; a comma-separated list for in and not_in; nothing for missing."));
    const rules = rows(anti, "Rule", icp.anti_icp_rules, (set, r) => {
      const id = control(set, "Id", text(120), r.id);
      const field = control(set, "Field (a dotted path, e.g. enrichment.vertical)", text(120), r.field);
      const op = control(set, "Operator", choice(OPS), r.op);
      const shown = Array.isArray(r.value) ? r.value.join(", ") : r.value;
      const value = control(set, "Value", text(2000), shown);
      const reason = control(set, "Reason", text(4000), r.reason);
      return (path) => {
        bind(set, path);
        for (const [node, key] of [[id, "id"], [field, "field"], [op, "op"], [value, "value"], [reason, "reason"]]) bind(node, `${path}.${key}`);
        const rule = { id: id.value, field: field.value, op: op.value, reason: reason.value };
        const v = ruleValue(op.value, value.value);
        if (v !== null) rule.value = v;
        return rule;
      };
    }, () => ({ id: "", field: "", op: "eq", value: "", reason: "" }));
    return () => {
      bind(description, "description");
      return { description: description.value, rubric: Object.fromEntries(dims("rubric")),
               tiers: bands("tiers"), anti_icp_rules: rules("anti_icp_rules") };
    };
  }

  // ---- The sequence library -------------------------------------------------------------
  function drawSequences(body, held) {
    body.appendChild(el("p", "hint", "One sequence per angle and tier; saving replaces the whole library."));
    const all = group(body, "Sequences");
    bind(all, "sequences");
    const library = rows(all, "Sequence", held.sequences, (set, s) => {
      const name = control(set, "Name", text(120), s.name);
      const angle = control(set, "Angle", choice(ANGLES), s.angle);
      const tier = control(set, "Tier", choice(TIERS), s.tier);
      const stepsBox = group(set, "Steps");
      const steps = rows(stepsBox, "Step", s.steps, (step, st) => {
        const channel = control(step, "Channel", choice(CHANNELS), st.channel);
        const delay = control(step, "Days after the step before", number(0, 365), st.delay_days);
        const guidance = control(step, "Guidance (what to say)", area(2), st.guidance);
        guidance.maxLength = 300;
        return (path) => {
          bind(step, path); bind(channel, path + ".channel"); bind(delay, path + ".delay_days"); bind(guidance, path + ".guidance");
          return { channel: channel.value, delay_days: num(delay), guidance: guidance.value };
        };
      }, () => ({ channel: "email", delay_days: 3, guidance: "" }));
      return (path) => {
        bind(set, path); bind(name, path + ".name"); bind(angle, path + ".angle"); bind(tier, path + ".tier"); bind(stepsBox, path + ".steps");
        return { name: name.value, angle: angle.value, tier: tier.value, steps: steps(path + ".steps") };
      };
    }, () => ({ name: "", angle: "Signal", tier: "T1", steps: [{ channel: "email", delay_days: 0, guidance: "" }] }));
    return () => ({ sequences: library("sequences") });
  }

  // ---- The org's settings ------------------------------------------------------------------
  function drawSettings(body, held) {
    const competitors = control(body, "Competitors, never named in outbound (one a line)", area(3), held.competitors.join("\n"));
    bind(competitors, "competitors");
    const sending = group(body, "Sending");
    bind(sending, "sending");
    const s = held.sending;
    const daily = control(sending, "Messages a day, the whole org", number(0, 100000), s.daily_cap);
    const hourly = control(sending, "Per recipient domain, an hour", number(0, 100000), s.per_domain_hourly);
    const approval = control(sending, "Later steps approved", choice(["each_step", "once"]), s.sequence_approval);
    const from = control(sending, "From (Name <name@your-domain>; blank: the deployment's)", text(320), s.mail_from || "");
    bind(daily, "sending.daily_cap"); bind(hourly, "sending.per_domain_hourly");
    bind(approval, "sending.sequence_approval"); bind(from, "sending.mail_from");
    const research = group(body, "Research");
    const enabled = control(research, "Research prospects' companies on the web", checkbox(), held.research.enabled);
    bind(research, "research"); bind(enabled, "research.enabled");
    const spend = group(body, "Monthly model budget (USD)");
    const b = held.budget;
    const monthly = control(spend, "Budget (blank: none)", number(0, 10000000, "0.01"), b.monthly_usd);
    const share = control(spend, "Alert at this share of it (0 to 1)", number(0, 1, "0.05"), b.alert_share);
    const cap = control(spend, "Stop new campaign work once it is spent", checkbox(), b.hard_cap);
    bind(spend, "budget"); bind(monthly, "budget.monthly_usd"); bind(share, "budget.alert_share"); bind(cap, "budget.hard_cap");
    return () => {
      const sendingBody = { daily_cap: num(daily), per_domain_hourly: num(hourly), sequence_approval: approval.value };
      if (from.value.trim()) sendingBody.mail_from = from.value.trim();
      return {
        competitors: competitors.value.split("\n").map((c) => c.trim()).filter(Boolean),
        sending: sendingBody,
        research: { enabled: enabled.checked },
        budget: { monthly_usd: num(monthly), alert_share: num(share), hard_cap: cap.checked },
      };
    };
  }

  async function start(page) {
    ctx.api = page.api;
    let who;
    try { who = await ctx.api("/setup"); }
    catch (error) { say("Could not load setup: " + error.message); return; }
    ctx.org = who.org_id;
    $("setup-view").hidden = false;
    if (!who.admin) {  // the API refuses a member; the page only says so
      $("setup-forms").hidden = true;
      $("setup-note").hidden = false;
      return;
    }
    $("setup-note").hidden = true;
    $("setup-forms").hidden = false;
    ctx.started = true;
    await section("icp", "ICP", drawIcp);
    await section("sequences", "Sequences", drawSequences);
    await section("settings", "Settings", drawSettings);
  }

  return { start };
})();
