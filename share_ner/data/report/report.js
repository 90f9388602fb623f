// share-ner report: draws the error lists and the notes from the embedded JSON, one page at a time.
// Note text only ever goes into text nodes (never innerHTML), and nothing is fetched.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("report-data").textContent);
  const KINDS = D.kinds.map(k => k[0]);
  const KIND_LABEL = Object.fromEntries(D.kinds);
  const PAGE = 100;
  const CTX = 40;
  const state = { view: "summary", sys: 0, kind: KINDS[0], detail: "", str: "", page: 0, errors: false, group: -1, q: "", note: null };
  const byId = new Map(D.notes.map((n, i) => [n.id, i]));

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }
  const $ = id => document.getElementById(id);

  // ---- mentions -------------------------------------------------------------------------------------------
  function spansOf(m) { const out = []; for (let i = 0; i < m[0].length; i += 2) out.push([m[0][i], m[0][i + 1]]); return out; }
  function mText(note, m) {
    if (note.t === null) return spansOf(m).map(s => s[0] + "-" + s[1]).join(";");
    return spansOf(m).map(s => note.t.slice(s[0], s[1])).join(" … ").replace(/\s+/g, " ");
  }
  function mWhere(m) { return spansOf(m).map(s => s[0] + "-" + s[1]).join(";"); }
  function mCui(m) { return m.length > 3 ? m[1] + " " + m[3] : m[1]; }
  function mAttrs(m) {
    if (m.length < 3 || m[2] === null) return "";
    const a = Object.entries(m[2]).map(([k, v]) => k + "=" + v);
    return a.length ? a.join(", ") : "default attributes";
  }
  function kindText(kind, detail) { return KIND_LABEL[kind] + (detail ? ": " + detail.replace(/_/g, " ") : ""); }
  // status of each gold and predicted mention of a note for system s: {kind, detail}
  function statuses(note, s) {
    const g = note.gold.map(() => null), p = note.pred[s].map(() => null);
    for (const [gi, pj] of note.ok[s]) { g[gi] = p[pj] = { kind: "correct", detail: "", other: null }; }
    for (const [k, gi, pj, detail] of note.err[s]) {
      const st = { kind: KINDS[k], detail: detail };
      if (gi >= 0) g[gi] = Object.assign({ other: pj >= 0 ? ["p", pj] : null }, st);
      if (pj >= 0) p[pj] = Object.assign({ other: gi >= 0 ? ["g", gi] : null }, st);
    }
    for (const [gi, pj] of note.ok[s]) { g[gi].other = ["p", pj]; p[pj].other = ["g", gi]; }
    return { g, p };
  }

  // ---- routing -----------------------------------------------------------------------------------------------
  function readHash() {
    const h = location.hash.slice(1);  // URLSearchParams decodes the query itself
    const [view, query] = h.split("?");
    const q = new URLSearchParams(query || "");
    state.view = ["summary", "errors", "notes", "note"].includes(view) ? view : "summary";
    if (q.has("sys")) state.sys = Math.min(D.systems.length - 1, Math.max(0, parseInt(q.get("sys"), 10) || 0));
    if (q.has("kind") && KINDS.includes(q.get("kind"))) state.kind = q.get("kind");
    state.page = parseInt(q.get("page") || "0", 10) || 0;
    if (state.view === "errors") { state.detail = q.get("detail") || ""; state.str = q.get("str") || ""; }
    if (state.view === "notes") {
      state.errors = q.get("errors") === "1";
      state.group = q.has("group") ? parseInt(q.get("group"), 10) : -1;
      state.q = q.get("q") || "";
    }
    if (state.view === "note") state.note = q.get("id");
  }
  function go(view, params) {
    const q = new URLSearchParams(Object.assign({ sys: state.sys }, params || {}));
    const h = "#" + view + "?" + q.toString();
    if (location.hash === h) render(); else location.hash = h;
  }
  function noteLink(id, label) {
    return el("a", { class: "note", href: "#note?" + new URLSearchParams({ id: id, sys: state.sys }).toString(), text: label || id });
  }

  // ---- system picker -------------------------------------------------------------------------------------
  function sysPicker() {
    const box = $("sys-pick");
    box.textContent = "";
    if (D.systems.length < 2) { box.append(el("span", { class: "small", text: "system: " + D.systems[0].name })); return; }
    box.append(el("span", { class: "small", text: "show system: " }));
    const tabs = el("span", { class: "tabs" });
    D.systems.forEach((s, i) => tabs.append(el("button", {
      class: i === state.sys ? "on" : null, "data-sys": i, text: (i ? "B: " : "A: ") + s.name,
      onclick: () => { state.sys = i; const q = new URLSearchParams(location.hash.split("?")[1] || ""); q.set("sys", i); location.hash = "#" + state.view + "?" + q; },
    })));
    box.append(tabs);
  }

  // ---- summary: frequent strings -----------------------------------------------------------------------
  function renderStrings() {
    const box = $("strings");
    box.textContent = "";
    const s = D.systems[state.sys];
    if (!D.has_text) { box.append(el("p", { class: "small", text: "Needs the note text (--text)." })); return; }
    const wrap = el("div", { class: "strings" });
    for (const kind of KINDS) {
      const rows = s.strings[kind] || [];
      if (!rows.length) continue;
      const t = el("table", { class: "list", "data-kind": kind },
        el("thead", {}, el("tr", {}, el("th", { text: KIND_LABEL[kind] + (kind === "false_positive" ? " (predicted words)" : " (gold words)") }), el("th", { text: "n" }))));
      const tb = el("tbody");
      for (const [str, n] of rows) {
        const link = el("a", { class: "note", href: "#errors?" + new URLSearchParams({ kind: kind, str: str, sys: state.sys }), text: str });
        tb.append(el("tr", {}, el("td", {}, link), el("td", { class: "n", text: n })));
      }
      t.append(tb);
      wrap.append(t);
    }
    box.append(wrap);
    if (D.systems.length > 1) box.prepend(el("p", { class: "small", text: "For " + s.name + " (pick the system at the top right)." }));
  }

  // ---- errors by kind ----------------------------------------------------------------------------------------
  const errCache = new Map();
  function errorsOf(s, kind) {
    const key = s + ":" + kind;
    if (!errCache.has(key)) {
      const k = KINDS.indexOf(kind), out = [];
      D.notes.forEach((n, ni) => { for (const e of n.err[s]) if (e[0] === k) out.push([ni, e]); });
      errCache.set(key, out);
    }
    return errCache.get(key);
  }
  // the text around an error: gold fragments on red, predicted ones underlined (dashed)
  function context(note, g, p) {
    if (note.t === null || (!g && !p)) return null;
    const frags = [];
    if (g) for (const sp of spansOf(g)) frags.push([sp[0], sp[1], "cg"]);
    if (p) for (const sp of spansOf(p)) frags.push([sp[0], sp[1], "cp"]);
    const a = Math.min(...frags.map(f => f[0])), b = Math.max(...frags.map(f => f[1]));
    const cuts = [...new Set([a, b, ...frags.flatMap(f => [f[0], f[1]])])].sort((x, y) => x - y);
    const flat = t => t.replace(/\s+/g, " ");
    const c = el("span", { class: "ctx" });
    c.append((a > CTX ? "…" : "") + flat(note.t.slice(Math.max(0, a - CTX), a)));
    for (let k = 0; k + 1 < cuts.length; k++) {
      const x = cuts[k], y = cuts[k + 1], cls = [...new Set(frags.filter(f => f[0] <= x && f[1] >= y).map(f => f[2]))];
      c.append(cls.length ? el("span", { class: cls.join(" "), text: flat(note.t.slice(x, y)) }) : flat(note.t.slice(x, y)));
    }
    c.append(flat(note.t.slice(b, b + CTX)) + (b + CTX < note.t.length ? "…" : ""));
    return c;
  }
  function mentionCell(note, m) {
    if (!m) return el("td", { text: "—" });
    const attrs = mAttrs(m);
    return el("td", {}, el("span", { text: mText(note, m) }), " ", el("span", { class: "small", text: "[" + mWhere(m) + "]" }), " ",
      el("span", { class: "cui", text: mCui(m) }), attrs ? el("div", { class: "small", text: attrs }) : null);
  }
  function pager(total, page, onpage) {
    const pages = Math.max(1, Math.ceil(total / PAGE));
    const p = el("div", { class: "pager" });
    if (pages > 1) {
      p.append(el("button", { text: "‹ previous", disabled: page <= 0, onclick: () => onpage(page - 1) }));
      p.append(el("span", { class: "small", text: " page " + (page + 1) + " of " + pages + " " }));
      p.append(el("button", { text: "next ›", disabled: page >= pages - 1, onclick: () => onpage(page + 1) }));
    }
    return p;
  }
  function renderErrors() {
    const s = D.systems[state.sys];
    const tabs = $("kind-tabs");
    tabs.textContent = "";
    const tb = el("div", { class: "tabs" });
    for (const kind of KINDS) {
      tb.append(el("button", { class: kind === state.kind ? "on" : null, "data-kind": kind, "data-count": s.kinds[kind],
        text: KIND_LABEL[kind] + " (" + s.kinds[kind] + ")", onclick: () => go("errors", { kind: kind }) }));
    }
    tabs.append(tb);
    const details = (s.details || {})[state.kind];
    if (details && Object.keys(details).length) {
      const db = el("div", { class: "tabs" }, el("span", { class: "small", text: "detail: " }));
      db.append(el("button", { class: state.detail ? null : "on", text: "all", onclick: () => go("errors", { kind: state.kind }) }));
      for (const [d, c] of Object.entries(details)) {
        db.append(el("button", { class: d === state.detail ? "on" : null, "data-detail": d, text: d.replace(/_/g, " ") + " (" + c + ")",
          onclick: () => go("errors", { kind: state.kind, detail: d }) }));
      }
      tabs.append(db);
    }
    const list = $("error-list");
    list.textContent = "";
    const sideOf = state.kind === "false_positive" ? 2 : 1;
    const all = errorsOf(state.sys, state.kind).filter(([ni, e]) => {
      if (state.detail && e[3] !== state.detail) return false;
      if (!state.str) return true;
      const n = D.notes[ni], m = sideOf === 2 ? n.pred[state.sys][e[2]] : n.gold[e[1]];
      return n.t !== null && mText(n, m).trim().toLowerCase() === state.str;
    });
    if (state.str) {
      tabs.append(el("p", { class: "small" }, "only errors whose " + (sideOf === 2 ? "predicted" : "gold") + " words are ",
        el("b", { text: state.str }), " ", el("a", { class: "note", href: "#errors?" + new URLSearchParams({ kind: state.kind, sys: state.sys }), text: "(show all)" })));
    }
    const page = Math.min(state.page, Math.max(0, Math.ceil(all.length / PAGE) - 1));
    list.append(el("p", { id: "error-count", "data-count": all.length, text: all.length + " error(s) of " + s.name + ": " + kindText(state.kind, state.detail) }));
    if (D.has_text) list.append(el("p", { class: "small" }, "context: ", el("span", { class: "ctx" }, el("span", { class: "cg", text: "gold" })), " and ",
      el("span", { class: "ctx" }, el("span", { class: "cp", text: "predicted" })), " fragments"));
    const keep = {};
    if (state.detail) keep.detail = state.detail;
    if (state.str) keep.str = state.str;
    const onpage = p => go("errors", Object.assign({ kind: state.kind, page: p }, keep));
    list.append(pager(all.length, page, onpage));
    const t = el("table", { class: "list" }, el("thead", {}, el("tr", {},
      el("th", { text: "note" }), el("th", { text: "detail" }), el("th", { text: "gold" }), el("th", { text: "predicted" }), el("th", { text: "context" }))));
    const body = el("tbody");
    for (const [ni, e] of all.slice(page * PAGE, (page + 1) * PAGE)) {
      const n = D.notes[ni], g = e[1] >= 0 ? n.gold[e[1]] : null, p = e[2] >= 0 ? n.pred[state.sys][e[2]] : null;
      body.append(el("tr", { class: "err" }, el("td", {}, noteLink(n.id)), el("td", { text: (e[3] || "").replace(/_/g, " ") }),
        mentionCell(n, g), mentionCell(n, p), el("td", {}, context(n, g, p))));
    }
    t.append(body);
    list.append(t, pager(all.length, page, onpage));
  }

  // ---- notes list --------------------------------------------------------------------------------------------
  function filteredNotes() {
    const q = state.q.toLowerCase(), s = state.sys;
    const out = [];
    D.notes.forEach((n, i) => {
      if (state.errors && !n.err[s].length) return;
      if (state.group >= 0 && n.g !== state.group) return;
      if (q && !n.id.toLowerCase().includes(q)) return;
      out.push(i);
    });
    return out;
  }
  function listParams(extra) {
    const p = { page: 0 };
    if (state.errors) p.errors = 1;
    if (state.group >= 0) p.group = state.group;
    if (state.q) p.q = state.q;
    return Object.assign(p, extra || {});
  }
  function renderNotes() {
    const ctl = $("note-controls");
    ctl.textContent = "";
    const box = el("div", { class: "ctl" });
    box.append(el("label", {}, el("input", { type: "checkbox", id: "only-errors", checked: state.errors,
      onchange: ev => { state.errors = ev.target.checked; go("notes", listParams()); } }), " only notes with errors"));
    if (D.groups.length > 1) {
      const sel = el("select", { id: "group", onchange: ev => { state.group = parseInt(ev.target.value, 10); go("notes", listParams()); } },
        el("option", { value: -1, text: "all groups" }));
      D.groups.forEach((g, i) => sel.append(el("option", { value: i, text: g, selected: i === state.group })));
      box.append(el("label", {}, "group ", sel));
    }
    const search = el("input", { type: "search", id: "q", placeholder: "note id contains…", value: state.q });
    search.addEventListener("change", ev => { state.q = ev.target.value; go("notes", listParams()); });
    box.append(el("label", {}, search));
    ctl.append(box);
    const ids = filteredNotes();
    const page = Math.min(state.page, Math.max(0, Math.ceil(ids.length / PAGE) - 1));
    const list = $("note-list");
    list.textContent = "";
    list.append(el("p", { id: "note-count", "data-count": ids.length, text: ids.length + " of " + D.notes.length + " notes" }));
    const onpage = p => go("notes", listParams({ page: p }));
    list.append(pager(ids.length, page, onpage));
    const t = el("table", { class: "list" }, el("thead", {}, el("tr", {},
      ...["note", "group", "gold", "predicted", "correct", "errors", "kinds"].map(h => el("th", { text: h })))));
    const body = el("tbody");
    for (const i of ids.slice(page * PAGE, (page + 1) * PAGE)) {
      const n = D.notes[i], s = state.sys, counts = {};
      for (const e of n.err[s]) counts[KINDS[e[0]]] = (counts[KINDS[e[0]]] || 0) + 1;
      body.append(el("tr", { class: "noterow", "data-id": n.id }, el("td", {}, noteLink(n.id)), el("td", { text: D.groups[n.g] }),
        el("td", { class: "n", text: n.gold.length }), el("td", { class: "n", text: n.pred[s].length }),
        el("td", { class: "n", text: n.ok[s].length }), el("td", { class: "n", text: n.err[s].length }),
        el("td", { class: "small", text: KINDS.filter(k => counts[k]).map(k => KIND_LABEL[k] + " " + counts[k]).join(", ") })));
    }
    t.append(body);
    list.append(t, pager(ids.length, page, onpage));
  }

  // ---- one note ----------------------------------------------------------------------------------------------
  let tip = null;
  function showTip(ev, lines) {
    if (!tip) { tip = el("div", { id: "tip" }); document.body.append(tip); }
    tip.textContent = lines.join("\n");
    tip.hidden = false;
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 470) + "px";
    tip.style.top = (ev.clientY + 16) + "px";
  }
  function hideTip() { if (tip) tip.hidden = true; }

  function renderNote() {
    const box = $("note-view");
    box.textContent = "";
    const ni = byId.get(state.note);
    if (ni === undefined) { box.append(el("p", { text: "No note " + state.note + " in this report." })); return; }
    const n = D.notes[ni], s = state.sys, st = statuses(n, s), pred = n.pred[s];
    const order = filteredNotes(), at = order.indexOf(ni);
    const head = el("div", { class: "notehead" }, el("h2", { id: "note-title", text: n.id }),
      el("span", { class: "small", text: "group " + D.groups[n.g] + " · " + n.gold.length + " gold · " + pred.length + " predicted · " +
        n.ok[s].length + " correct · " + n.err[s].length + " error(s) · " + D.systems[s].name }));
    const nav = el("span", {});
    if (at > 0) nav.append(noteLink(D.notes[order[at - 1]].id, "‹ previous"), " ");
    nav.append(el("a", { class: "note", href: "#notes?" + new URLSearchParams(Object.assign({ sys: s }, listParams())), text: "all notes" }));
    if (at >= 0 && at + 1 < order.length) nav.append(" ", noteLink(D.notes[order[at + 1]].id, "next ›"));
    head.append(nav);
    box.append(head);
    box.append(el("p", { class: "legend small" },
      el("span", {}, el("span", { class: "seg g", text: "gold" }), " / ", el("span", { class: "seg g gx", text: "gold in error" })),
      el("span", {}, el("span", { class: "seg p", text: "predicted" }), " / ", el("span", { class: "seg p px", text: "predicted in error" })),
      el("span", { text: "fragments of a discontiguous mention are joined by an arc (gold solid, below; predicted dashed, above); hover a mention for its CUI and attributes" })));
    if (n.t !== null) box.append(noteText(n, pred, st));
    box.append(mentionTable(n, pred, st));
  }

  function noteText(n, pred, st) {
    const frags = [];  // [start, end, key, fragment number]
    n.gold.forEach((m, i) => spansOf(m).forEach((sp, k) => frags.push([sp[0], sp[1], "g" + i, k])));
    pred.forEach((m, j) => spansOf(m).forEach((sp, k) => frags.push([sp[0], sp[1], "p" + j, k])));
    const cuts = new Set([0, n.t.length]);
    for (const f of frags) { cuts.add(f[0]); cuts.add(f[1]); }
    const pts = [...cuts].sort((a, b) => a - b);
    const div = el("div", { class: "notetext", id: "notetext" });
    const segsOf = new Map(), fragEls = new Map();
    for (let k = 0; k + 1 < pts.length; k++) {
      const a = pts[k], b = pts[k + 1];
      const cover = frags.filter(f => f[0] <= a && f[1] >= b);
      if (!cover.length) { div.append(n.t.slice(a, b)); continue; }
      const keys = cover.map(f => f[2]);
      const gs = keys.filter(x => x[0] === "g"), ps = keys.filter(x => x[0] === "p");
      const bad = x => (x[0] === "g" ? st.g : st.p)[+x.slice(1)].kind !== "correct";
      const cls = ["seg"];
      if (gs.length) cls.push("g"); if (gs.some(bad)) cls.push("gx");
      if (ps.length) cls.push("p"); if (ps.some(bad)) cls.push("px");
      const span = el("span", { class: cls.join(" "), "data-m": keys.join(" "), text: n.t.slice(a, b) });
      for (const f of cover) {
        if (!segsOf.has(f[2])) segsOf.set(f[2], []);
        segsOf.get(f[2]).push(span);
        const fk = f[2] + ":" + f[3];
        if (!fragEls.has(fk)) fragEls.set(fk, []);
        fragEls.get(fk).push(span);
      }
      div.append(span);
    }
    const describe = key => {
      const isG = key[0] === "g", i = +key.slice(1), m = isG ? n.gold[i] : pred[i], s = (isG ? st.g : st.p)[i];
      const attrs = mAttrs(m);
      return (isG ? "gold: " : "predicted: ") + mText(n, m) + "  [" + mWhere(m) + "]  " + mCui(m) +
        (attrs ? "  (" + attrs + ")" : "") + "\n   " + (s.kind === "correct" ? "correct" : kindText(s.kind, s.detail));
    };
    let lit = [];
    div.addEventListener("mouseover", ev => {
      const t = ev.target.closest(".seg");
      for (const e of lit) e.classList.remove("hl");
      lit = [];
      if (!t || !t.dataset.m) { hideTip(); return; }
      const keys = t.dataset.m.split(" ");
      for (const k of keys) for (const e of segsOf.get(k)) { e.classList.add("hl"); lit.push(e); }
      showTip(ev, keys.map(describe));
    });
    div.addEventListener("mouseleave", () => { for (const e of lit) e.classList.remove("hl"); lit = []; hideTip(); });
    const draw = () => drawArcs(div, n, pred, st, fragEls);
    requestAnimationFrame(draw);
    window.onresize = draw;
    // drawn at once as well, so the arcs exist for a page read without animation frames (a DOM dump)
    setTimeout(draw, 0);
    return div;
  }

  function drawArcs(div, n, pred, st, fragEls) {
    const old = div.querySelector("svg.arcs");
    if (old) old.remove();
    const box = div.getBoundingClientRect();
    const paths = [];
    const arc = (key, m, cls, below) => {
      const nf = m[0].length / 2;
      for (let k = 0; k + 1 < nf; k++) {
        const a = fragEls.get(key + ":" + k), b = fragEls.get(key + ":" + (k + 1));
        if (!a || !b) continue;
        const ra = a[a.length - 1].getClientRects(), rb = b[0].getClientRects();
        if (!ra.length || !rb.length) continue;
        const r1 = ra[ra.length - 1], r2 = rb[0];
        const x1 = r1.right - box.left, x2 = r2.left - box.left;
        const y1 = (below ? r1.bottom + 2 : r1.top - 1) - box.top, y2 = (below ? r2.bottom + 2 : r2.top - 1) - box.top;
        const lift = Math.min(18, Math.max(8, Math.abs(x2 - x1) / 10));
        const h = below ? lift : -lift;
        const d = `M${x1.toFixed(1)},${y1.toFixed(1)} C${(x1 + 6).toFixed(1)},${(y1 + h).toFixed(1)} ` +
          `${(x2 - 6).toFixed(1)},${(y2 + h).toFixed(1)} ${x2.toFixed(1)},${y2.toFixed(1)}`;
        paths.push(`<path class="${cls}" data-m="${key}" d="${d}"></path>`);
      }
    };
    n.gold.forEach((m, i) => arc("g" + i, m, st.g[i].kind === "correct" ? "ga" : "ga gax", true));
    pred.forEach((m, j) => arc("p" + j, m, "pa", false));
    // the HTML parser puts <svg> in the SVG namespace; the markup holds numbers and fixed names only, no note text
    const holder = document.createElement("div");
    holder.innerHTML = `<svg class="arcs" data-arcs="${paths.length}" width="${div.scrollWidth}" height="${div.scrollHeight}">` +
      paths.join("") + "</svg>";
    div.append(holder.firstChild);
  }

  function mentionTable(n, pred, st) {
    const rows = [];
    n.ok[state.sys].forEach(([gi, pj]) => rows.push(["correct", "", n.gold[gi], pred[pj]]));
    n.err[state.sys].forEach(([k, gi, pj, detail]) => rows.push([KINDS[k], detail, gi >= 0 ? n.gold[gi] : null, pj >= 0 ? pred[pj] : null]));
    const start = r => Math.min(r[2] ? r[2][0][0] : Infinity, r[3] ? r[3][0][0] : Infinity);
    rows.sort((a, b) => start(a) - start(b));
    const t = el("table", { class: "list", id: "mentions" }, el("thead", {}, el("tr", {},
      el("th", { text: "status" }), el("th", { text: "gold" }), el("th", { text: "predicted" }))));
    const body = el("tbody");
    for (const [kind, detail, g, p] of rows) {
      body.append(el("tr", { class: "mrow", "data-kind": kind },
        el("td", {}, el("span", { class: "kind" + (kind === "correct" ? " correct" : ""), text: kind === "correct" ? "correct" : kindText(kind, detail) })),
        mentionCell(n, g), mentionCell(n, p)));
    }
    t.append(body);
    return t;
  }

  // ---- views ---------------------------------------------------------------------------------------------------
  function render() {
    readHash();
    for (const v of ["summary", "errors", "notes", "note"]) $("view-" + v).hidden = v !== state.view;
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("on", a.dataset.view === state.view);
    sysPicker();
    hideTip();
    if (state.view === "summary") renderStrings();
    else if (state.view === "errors") renderErrors();
    else if (state.view === "notes") renderNotes();
    else renderNote();
    document.body.dataset.ready = state.view;
  }
  for (const a of document.querySelectorAll("nav a")) {
    a.addEventListener("click", ev => { ev.preventDefault(); go(a.dataset.view, a.dataset.view === "notes" ? listParams() : {}); });
  }
  window.addEventListener("hashchange", () => { render(); window.scrollTo(0, 0); });
  render();
})();
