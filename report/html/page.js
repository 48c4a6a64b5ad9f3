// dtpa report page: renders the report and timeline embedded as JSON in
// this file; served by dtpa view (dtpa-live names the window URL), it
// fetches the detail of each timeline window shown from its server. Every string from the traces (function names, paths, warnings)
// goes into the page as text (textContent, setAttribute), never as markup.
"use strict";
(function () {
  const rep = JSON.parse(document.getElementById("dtpa-report").textContent);
  const tl = JSON.parse(document.getElementById("dtpa-timeline").textContent);
  const live = JSON.parse((document.getElementById("dtpa-live") || { textContent: "null" }).textContent) || {};
  // Where crashed processes crashed: per crash, in the order of
  // rep.crashes, its headline, then a line per frame (report.Crash.Lines).
  const crashLines = JSON.parse((document.getElementById("dtpa-crashes") || { textContent: "null" }).textContent) || [];
  // Absent lists (a report written by other tools) read as empty.
  rep.warnings = rep.warnings || [];
  rep.intervals = rep.intervals || [];
  for (const iv of rep.intervals) {
    iv.path = iv.path || []; iv.ranks = iv.ranks || []; iv.src = iv.src || [];
    for (const p of iv.src) { p.stack = p.stack || []; p.ranks = p.ranks || []; }
  }

  // el builds an element: attrs are set with setAttribute, children are
  // elements or strings (text nodes).
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    for (const c of kids) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
    return e;
  }
  const sec = (v) => v.toFixed(6);
  const pct = (v, of) => (of > 0 ? (100 * v / of).toFixed(2) + "%" : "");
  function dur(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(3) + " µs";
    return ns + " ns";
  }
  const base = (p) => (p || "").split("/").pop();
  function ivName(iv) {
    if (iv.level === 0) return "whole program";
    return "interval " + iv.path.join("/");
  }
  const ivId = (i) => "iv-" + i;
  const srcId = (i, id) => "src-" + i + "-" + id;
  // site is the innermost frame with a file: where the user's code called.
  function site(p) {
    for (const f of p.stack || []) if (f.file) return f;
    return null;
  }
  const siteText = (f) => (f ? base(f.file) + ":" + f.line : "?");

  // The SRC points of the whole program by id, for the timeline.
  const srcById = new Map();
  if (rep.intervals.length) for (const p of rep.intervals[0].src) srcById.set(p.id, p);

  document.title = "dtpa: " + rep.task;
  document.getElementById("title").textContent = "dtpa report: " + rep.task;
  document.getElementById("meta").textContent =
    rep.processors + " processors, " + rep.intervals.length + " intervals" +
    (rep.warnings.length ? ", " + rep.warnings.length + " warnings" : "");
  if (rep.run) {
    const r = rep.run, facts = [];
    if (r.command && r.command.length) facts.push(r.command.join(" "));
    if (rep.programs) facts.push("MPMD: " + rep.programs.map((p) => p.program.split("/").pop() + " (ranks " + rankSpans(p.ranks) + ")").join(", "));
    if (r.mpi) facts.push(r.mpi);
    if (r.start) facts.push("started " + r.start);
    if (r.batch_job) facts.push("job " + r.batch_job);
    if (r.clock) facts.push("clock " + r.clock + (r.sync_error ? " (sync error ≤ " + (r.sync_error * 1e6).toFixed(2) + " µs)" : ""));
    if (facts.length) document.getElementById("meta").append(el("div", { id: "run" }, facts.join(" · ")));
  }

  // rankSpans writes sorted ranks compactly: "0-3, 6".
  function rankSpans(rs) {
    const out = [];
    for (let i = 0; i < rs.length; ) {
      let j = i;
      while (j + 1 < rs.length && rs[j + 1] === rs[j] + 1) j++;
      out.push(i === j ? String(rs[i]) : rs[i] + "-" + rs[j]);
      i = j + 1;
    }
    return out.join(", ");
  }

  // ---- Interval tree ----
  (function tree() {
    const nav = document.getElementById("tree");
    const root = el("ul");
    const byKey = new Map();
    rep.intervals.forEach((iv, i) => {
      const li = el("li", {}, el("a", { href: "#" + ivId(i) }, iv.level === 0 ? "Whole program" : "Interval " + iv.number),
        el("span", { class: "note" }, " ", (100 * iv.main.efficiency).toFixed(1) + "%"));
      const kids = el("ul");
      li.append(kids);
      byKey.set(iv.path.join("/"), kids);
      const parent = byKey.get(iv.path.slice(0, -1).join("/"));
      (iv.level === 0 || !parent ? root : parent).append(li);
    });
    nav.append(el("div", {}, el("a", { href: "#summary" }, "Findings")),
      el("div", {}, el("a", { href: "#timeline-section" }, "Timeline")), el("h3", {}, "Intervals"), root);
  })();

  // ---- Findings: the verdict and the largest losses (report.FindingsOf) ----
  (function findings() {
    const fd = rep.findings;
    const ol = document.getElementById("losses");
    const verdict = document.getElementById("verdict");
    if (!fd) {
      verdict.textContent = "No findings: the report has no interval with time.";
    } else {
      const fpath = (fd.interval || []).join("/");
      let fi = rep.intervals.findIndex((iv) => iv.path.join("/") === fpath);
      if (fi < 0) fi = 0;
      const iv = rep.intervals[fi];
      verdict.textContent = fd.verdict;
      verdict.setAttribute("data-interval", fpath);
      const kinds = { real_sync: "Real sync", potential_sync: "Potential sync", communication: "Communication",
        idle: "Idle time", insufficient_parallelism: "Insufficient parallelism" };
      (fd.losses || []).forEach((l, k) => {
        const where = l.src ? srcId(fi, l.src) : "exec-" + fi;
        const li = el("li", { "data-rank-order": k + 1, "data-kind": l.kind, "data-rank": l.rank, "data-interval": fpath,
          "data-seconds": l.seconds },
          el("span", { class: "v" }, sec(l.seconds) + " s"), " ", kinds[l.kind] || l.kind,
          " (", (100 * l.share).toFixed(1) + "%", " of ", iv ? ivName(iv) : "the interval", "'s total time) on ", el("b", {}, "rank " + l.rank));
        if (l.function) {
          li.setAttribute("data-function", l.function);
          li.append(" in ", el("code", {}, l.function));
        }
        if (l.file) {
          li.setAttribute("data-file", l.file);
          li.setAttribute("data-line", l.line);
          li.append(" at ", el("code", {}, base(l.file) + ":" + l.line));
        } else if (l.caller) {
          li.setAttribute("data-caller", l.caller);
          li.append(" from ", el("code", {}, l.caller));
        } else if (l.src) {
          li.append(" at a call site without source line");
        }
        if (l.late_rank >= 0) {
          li.setAttribute("data-late-rank", l.late_rank);
          li.append(", waiting for rank " + l.late_rank);
        }
        li.append(" ", el("a", { href: "#" + where }, "→ show"));
        ol.append(li);
      });
    }
    if (!ol.children.length) ol.append(el("li", {}, "No time lost."));
    const cv = rep.clock_violations;
    // The calls in progress when the processes ended, grouped by the page's
    // writer (report.UnfinishedGroups), each line with its calls.
    const unf = JSON.parse((document.getElementById("dtpa-unfinished") || { textContent: "null" }).textContent) || [];
    // unfWindow is the timeline window (ns, as #t= gives it) that shows the
    // calls of line g, from the first entry to the last end (an open call's
    // end: the run's), a tenth wider on each side; null when the timeline
    // holds none of them.
    function unfWindow(g) {
      let lo = Infinity, hi = -Infinity;
      for (const l of (tl && tl.lanes) || []) {
        const u = l.unfinished;
        if (!u) continue;
        for (let k = 0; k < u.start.length; k++) {
          if (!g.calls.some(([r, th]) => r === l.rank && th === u.thread[k])) continue;
          lo = Math.min(lo, u.start[k]);
          hi = Math.max(hi, u.dur[k] >= 0 ? u.start[k] + u.dur[k] : Math.max(tl.end, u.start[k]));
        }
      }
      if (lo === Infinity) return null;
      const pad = Math.max(hi - lo, 1000) / 10;
      return [Math.max(0, lo - pad), hi + pad];
    }
    if (rep.warnings.length || cv || unf.length || crashLines.length) {
      const w = document.getElementById("warnings");
      w.append(el("h2", {}, "Warnings"));
      for (const lines of crashLines) {
        const d = el("div", { class: "crash" }, el("p", { class: "warn" }, lines[0]));
        const frames = el("ol", { class: "crash-stack" });
        for (const l of lines.slice(1)) frames.append(el("li", {}, l));
        d.append(frames);
        w.append(d);
      }
      if (cv) {
        // Repaired and not repaired apart: the figures near the latter are less exact (docs/report-format.md).
        const parts = [cv.count + " repaired" + (cv.count ? " (worst " + secs(cv.worst) + " on processor " + cv.worst_rank + ", " +
          cv.amortized + " amortized backward)" : "")];
        const un = cv.unrepaired || 0;
        if (un) {
          parts.push(un + " not repaired (synchronous sends " + (cv.unrepaired_sync_sends || 0) + ", nonblocking collectives " +
            (cv.unrepaired_nonblocking || 0) + ", threaded collectives " + (cv.unrepaired_threaded || 0) + "; worst " +
            secs(cv.unrepaired_worst) + " on processor " + cv.unrepaired_worst_rank + ")");
        }
        w.append(el("p", { id: "clock-violations", "data-repaired": cv.count, "data-unrepaired": un },
          "Clock-condition violations: " + parts.join("; ") + "."));
      }
      const ul = el("ul");
      for (const s of rep.warnings) ul.append(el("li", { class: "warn" }, s));
      w.append(ul);
      if (unf.length) {
        w.append(el("p", {}, "MPI calls in progress when the processes ended (not in the figures):"));
        const ul2 = el("ul", { id: "unfinished" });
        for (const g of unf) {
          const li = el("li", { class: "warn" }, g.line), win = unfWindow(g);
          if (win) li.append(" ", el("a", { class: "tl-link", href: "#t=" + (win[0] / 1e9).toFixed(9) + "," + (win[1] / 1e9).toFixed(9) }, "show in the timeline"));
          ul2.append(li);
        }
        w.append(ul2);
        // Where the other ranks were (report.ElsewhereLines).
        const els = JSON.parse((document.getElementById("dtpa-elsewhere") || { textContent: "null" }).textContent) || [];
        if (els.length) {
          w.append(el("p", {}, "In no MPI call then:"));
          const ul3 = el("ul", { id: "elsewhere" });
          for (const l of els) ul3.append(el("li", {}, l));
          w.append(ul3);
        }
      }
    }
  })();

  // ---- Charts ----
  const parts = [
    ["Productive", "productive_time", "var(--prod)"], ["SendRecv", "sendrecv_time", "var(--p2p)"],
    ["Collective", "collective_time", "var(--coll)"], ["System", "system_time", "var(--sys)"],
    ["Idle", "idle_time", "var(--idle)"], ["Insufficient parallelism", "insufficient_parallelism", "var(--insuf)"]];
  function legend(list) {
    const d = el("div", { class: "legend" });
    for (const [label, , color] of list) {
      const i = el("i");
      i.style.background = color;
      d.append(el("span", {}, i, label));
    }
    return d;
  }
  // Charts are drawn by Chart.js (embedded before this script) once their
  // canvas is in the page; CSS variables do not reach a canvas, hence hex.
  const hex = { "var(--prod)": "#8cd17d", "var(--p2p)": "#4e79a7", "var(--coll)": "#59a14f", "var(--sys)": "#9d7660",
    "var(--idle)": "#bab0ac", "var(--insuf)": "#b07aa1" };
  const pendingCharts = [];
  function chart(canvas, cfg) {
    pendingCharts.push(() => {
      cfg.options = Object.assign({ responsive: false, animation: false, plugins: {} }, cfg.options);
      new Chart(canvas, cfg);
      canvas.setAttribute("data-drawn", "1");
    });
    return canvas;
  }
  const tipSec = (label) => ({ callbacks: { label: (c) => c.dataset.label + ": " + sec(c.raw) + " s" + (label ? label(c) : "") } });
  // hbar: one horizontal bar of the parts of total (Main characteristics).
  function hbar(m) {
    const c = el("canvas", { width: 700, height: 60, role: "img", "data-chart": "main", "aria-label": "Main characteristics" });
    return chart(c, {
      type: "bar",
      data: { labels: ["total"], datasets: parts.map(([label, key, color]) => ({ label, data: [m[key]], backgroundColor: hex[color] })) },
      options: { indexAxis: "y", scales: { x: { stacked: true, max: m.total_time || undefined, ticks: { callback: (v) => +v.toFixed(3) + " s" } }, y: { stacked: true, display: false } },
        plugins: { legend: { display: false }, tooltip: tipSec((c) => " (" + pct(c.raw, m.total_time) + ")") } } });
  }
  // vbars: one stacked bar per rank (Execution characteristics).
  function vbars(iv, i) {
    const n = iv.ranks.length, W = Math.min(900, Math.max(260, 60 + n * 24));
    const c = el("canvas", { width: W, height: 220, role: "img", id: "exec-chart-" + i, "data-chart": "execution", "data-bars": n,
      "aria-label": "Execution characteristics per processor" });
    return chart(c, {
      type: "bar",
      data: { labels: iv.ranks.map((r) => String(r.rank)), datasets: parts.map(([label, key, color]) => ({ label, data: iv.ranks.map((r) => r[key]), backgroundColor: hex[color] })) },
      options: { scales: { x: { stacked: true, title: { display: true, text: "rank" } }, y: { stacked: true, title: { display: true, text: "s" } } },
        plugins: { legend: { display: false }, tooltip: tipSec() } } });
  }

  function table(head, rows, attrs) {
    const t = el("table", attrs || {});
    const tr = el("tr");
    for (const h of head) tr.append(el("th", {}, h));
    t.append(el("thead", {}, tr));
    const tb = el("tbody");
    for (const r of rows) tb.append(r);
    t.append(tb);
    return t;
  }
  const row = (...cells) => el("tr", {}, ...cells.map((c) => (c instanceof Node && c.tagName === "TD" ? c : el("td", {}, c))));

  function mainTable(m) {
    const T = m.total_time;
    const rows = [
      ["Parallelization efficiency", m.efficiency.toFixed(4), ""], ["Execution time", sec(m.execution_time), ""],
      ["Processors", m.processors, ""], ["Total time", sec(T), ""], ["Productive time", sec(m.productive_time), pct(m.productive_time, T)],
      ["Lost time", sec(m.lost_time), pct(m.lost_time, T)], ["  Insufficient parallelism", sec(m.insufficient_parallelism), pct(m.insufficient_parallelism, T)],
      ["  Communications", sec(m.communications), pct(m.communications, T)],
      ["    SendRecv time", sec(m.sendrecv_time), pct(m.sendrecv_time, T)], ["      Real sync", sec(m.real_sync), pct(m.real_sync, T)],
      ["    Collective time", sec(m.collective_time), pct(m.collective_time, T)], ["    System time", sec(m.system_time), pct(m.system_time, T)],
      ["  Idle time", sec(m.idle_time), pct(m.idle_time, T)], ["Load imbalance", sec(m.load_imbalance), pct(m.load_imbalance, T)],
      ["Potential sync", sec(m.potential_sync), pct(m.potential_sync, T)], ["Time variation", sec(m.time_variation), pct(m.time_variation, T)],
      ["Overlap", sec(m.overlap), pct(m.overlap, T)],
      ["Send / Receive / Wait number", m.send_number + " / " + m.receive_number + " / " + m.wait_number, ""],
      ["Collective / System number", m.collective_number + " / " + m.system_number, ""]];
    return table(["Characteristic", "Value", "% of total"], rows.map((r) => row(el("td", { class: "l" }, r[0].replace(/^ +/, (s) => "\u00a0".repeat(s.length * 2))), r[1], r[2])));
  }

  const compChars = [["Execution time", "execution_time"], ["Productive time", "productive_time"], ["Lost time", "lost_time"],
    ["Idle time", "idle_time"], ["Communications", "communications"], ["Insufficient parallelism", "insufficient_parallelism"],
    ["Real sync", "real_sync"], ["Load imbalance", "load_imbalance"], ["Potential sync", "potential_sync"],
    ["Time variation", "time_variation"], ["Overlap", "overlap"]];
  function compTable(c) {
    return table(["Characteristic", "Tmin", "proc", "Tmax", "proc", "Tmid"],
      compChars.map(([label, key]) => row(label, sec(c[key].min), c[key].min_proc, sec(c[key].max), c[key].max_proc, sec(c[key].mean))));
  }
  const rankChars = [["Execution", "execution_time"], ["Productive", "productive_time"], ["Lost", "lost_time"],
    ["Communications", "communications"], ["Real sync", "real_sync"], ["Load imbalance", "load_imbalance"],
    ["Potential sync", "potential_sync"], ["Time variation", "time_variation"], ["Idle", "idle_time"], ["Overlap", "overlap"]];
  function execTable(iv) {
    return table(["Rank", ...rankChars.map((c) => c[0]), "Sends", "Receives", "Collectives"],
      iv.ranks.map((r) => row(r.rank, ...rankChars.map((c) => sec(r[c[1]])), r.send_number, r.receive_number, r.collective_number)));
  }

  // sortable makes a table's columns sort on click; numbers numerically.
  function sortable(t, body) {
    const ths = t.querySelectorAll("th");
    ths.forEach((th, col) => {
      th.classList.add("sort");
      th.tabIndex = 0;
      let asc = false;
      const sortBy = () => {
        asc = !asc;
        const rows = [...body.children].filter((r) => !r.classList.contains("srcdetail"));
        const key = (r) => r.children[col].getAttribute("data-v") ?? r.children[col].textContent;
        rows.sort((a, b) => {
          const x = key(a), y = key(b), nx = parseFloat(x), ny = parseFloat(y);
          const c = !isNaN(nx) && !isNaN(ny) ? nx - ny : String(x).localeCompare(String(y));
          return asc ? c : -c;
        });
        for (const r of rows) {
          body.append(r);
          if (r._detail) body.append(r._detail);
        }
      };
      th.addEventListener("click", sortBy);
      th.addEventListener("keydown", (e) => { if (e.key === "Enter") sortBy(); });
    });
  }
  function srcTable(iv, i) {
    const head = ["ID", "Function", "Call site", "Calls", "Comm", "% of comm", "Real sync", "Potential sync", "Time variation", "Overlap"];
    const tb = el("tbody");
    const comm = iv.main.communications;
    const list = [...iv.src].sort((a, b) => b.comm - a.comm);
    for (const p of list) {
      const f = site(p), calls = p.ranks.reduce((s, r) => s + r.exe_count, 0);
      const num = (v) => el("td", { "data-v": v }, sec(v));
      const tr = el("tr", { id: srcId(i, p.id), class: "srcrow" }, el("td", { "data-v": p.id }, p.id), el("td", { class: "l" }, p.function),
        el("td", { class: "l" }, f ? siteText(f) : "?"), el("td", { "data-v": calls }, calls), num(p.comm),
        el("td", { "data-v": p.comm }, pct(p.comm, comm)), num(p.real_sync), num(p.potential_sync), num(p.time_variation), num(p.overlap));
      const det = el("details");
      det.append(el("summary", {}, "stack and processors"));
      const st = el("div", { class: "stack" });
      (p.stack.length ? p.stack : [{ function: "(no stack)", file: "", line: 0 }]).forEach((fr, k) =>
        st.append(el("div", {}, "#" + k + "  " + fr.function + "  " + fr.file + (fr.line ? ":" + fr.line : ""))));
      det.append(st, table(["Rank", "Calls", "Time", "Real sync", "Potential sync", "Time variation", "Overlap"],
        p.ranks.map((r) => row(r.rank, r.exe_count, sec(r.exe_time), sec(r.real_sync), sec(r.potential_sync), sec(r.time_variation), sec(r.overlap)))));
      const dr = el("tr", { class: "srcdetail" }, el("td", { colspan: head.length, class: "l" }, det));
      tr._detail = dr;
      tb.append(tr, dr);
    }
    const t = table(head, [], { class: "src" });
    t.replaceChild(tb, t.querySelector("tbody"));
    sortable(t, tb);
    return t;
  }

  // ---- Profile views of an interval ----
  const matrices = JSON.parse((document.getElementById("dtpa-matrices") || { textContent: "null" }).textContent) || [];
  // secs formats seconds in the unit that suits them.
  function secs(v) {
    const a = Math.abs(v);
    if (a >= 1) return v.toFixed(3) + " s";
    if (a >= 1e-3) return (v * 1e3).toFixed(3) + " ms";
    if (a >= 1e-6) return (v * 1e6).toFixed(3) + " µs";
    return Math.round(v * 1e9) + " ns";
  }
  function bytes(n) {
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let k = 0, v = n;
    while (Math.abs(v) >= 1024 && k < u.length - 1) { v /= 1024; k++; }
    return (k ? (Number.isInteger(v) ? v : v.toFixed(1)) : v) + " " + u[k];
  }
  // rate formats bytes per second in decimal units, three digits.
  function rate(v) {
    const u = ["B/s", "kB/s", "MB/s", "GB/s", "TB/s"];
    let k = 0;
    while (v >= 1000 && k < u.length - 1) { v /= 1000; k++; }
    return (k ? v.toPrecision(3) : Math.round(v)) + " " + u[k];
  }
  const numCell = (v, text) => el("td", { "data-v": v }, text === undefined ? v : text);
  const palette = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"];

  // functionsTable: mpiP's aggregate view, sortable.
  function functionsTable(iv) {
    const fs = iv.functions || [];
    const total = fs.reduce((a, f) => a + f.time, 0);
    const tb = el("tbody");
    const head = ["Function", "Calls", "Time", "% of MPI time", "Bytes", "Mean", "Min", "Max", "Processors"];
    for (const f of fs) {
      const fr = f.ranks || [];
      const tr = el("tr", { class: "fnrow", "data-function": f.function }, el("td", { class: "l" }, f.function), numCell(f.calls),
        numCell(f.time, secs(f.time)), numCell(f.time, pct(f.time, total)), numCell(f.bytes, bytes(f.bytes)),
        numCell(f.calls ? f.time / f.calls : 0, secs(f.calls ? f.time / f.calls : 0)), numCell(f.min, secs(f.min)), numCell(f.max, secs(f.max)),
        numCell(fr.length));
      tb.append(tr);
      if (!fr.length) continue;
      // Per processor, the longest first; a long list is cut.
      const det = el("details"), most = [...fr].sort((a, b) => b.time - a.time).slice(0, 64);
      det.append(el("summary", {}, "per processor" + (fr.length > most.length ? " (the " + most.length + " with the most time of " + fr.length + ")" : "")),
        table(["Rank", "Calls", "Time", "Bytes"], most.map((r) => row(r.rank, r.calls, secs(r.time), bytes(r.bytes)))));
      tr._detail = el("tr", { class: "srcdetail" }, el("td", { colspan: head.length, class: "l" }, det));
      tb.append(tr._detail);
    }
    const t = table(head, [], { class: "functions" });
    t.replaceChild(tb, t.querySelector("tbody"));
    sortable(t, tb);
    return t;
  }

  // matrixView draws an interval's communication matrices as a heat map,
  // [sender][receiver], one communicator (or all) and one measure at a time.
  function matrixView(i) {
    const views = matrices[i] || [];
    const box = el("div", { class: "matrix" });
    if (!views.length) return box;
    const pick = el("select", { "aria-label": "communicator" });
    views.forEach((v, k) => pick.append(el("option", { value: k }, v.comm + (v.inter ? " (intercommunicator)" : "") + ": " + v.total_messages + " messages")));
    const what = el("select", { "aria-label": "measure" }, el("option", { value: "messages" }, "messages"), el("option", { value: "bytes" }, "bytes"));
    const note = el("div", { class: "note" });
    const canvas = el("canvas", { id: "matrix-" + i, role: "img", "aria-label": "Communication matrix, sender by row, receiver by column" });
    const tip = el("div", { class: "mtip" });
    const wrap = el("div", { class: "mwrap" }, canvas, tip);
    box.append(el("div", {}, "Communicator ", pick, " colour by ", what), note, wrap);
    const left = 64, top = 40;
    let geo = null;
    function draw() {
      const v = views[+pick.value], key = what.value, m = v[key], n = v.labels.length;
      const cell = Math.max(6, Math.min(28, Math.floor(448 / Math.max(1, n))));
      canvas.width = Math.max(360, left + n * cell + 8); canvas.height = top + n * cell + 28;
      for (const [a, x] of [["data-comm", v.comm], ["data-ranks", v.ranks], ["data-block", v.block], ["data-cells", n],
        ["data-messages", v.total_messages], ["data-bytes", v.total_bytes], ["data-measure", key]]) canvas.setAttribute(a, String(x));
      note.textContent = "Row: sender, column: receiver (" + (v.comm === "all communicators" ? "world ranks" : "world ranks of the communicator's processes") +
        "); " + v.total_messages + " messages, " + bytes(v.total_bytes) + " sent in the interval." +
        (v.block > 1 ? " " + v.ranks + " processors are too many to draw one by one: each cell sums a block of " + v.block + " consecutive processors." : "");
      let max = 0;
      for (const r of m) for (const x of r) max = Math.max(max, x);
      const ctx = canvas.getContext("2d");
      ctx.clearRect(0, 0, canvas.width, canvas.height);
      ctx.font = "10px system-ui, sans-serif";
      ctx.fillStyle = "#444";
      ctx.fillText("receiver →", left, 10);
      ctx.save(); ctx.translate(10, top + 60); ctx.rotate(-Math.PI / 2); ctx.fillText("sender →", 0, 0); ctx.restore();
      const every = Math.ceil(12 / cell);
      for (let k = 0; k < n; k += every) {
        ctx.fillStyle = "#444";
        ctx.fillText(v.labels[k], 16, top + k * cell + Math.min(cell, 12) - 1, left - 20);
        ctx.save(); ctx.translate(left + k * cell + Math.min(cell, 12) - 2, top - 4); ctx.rotate(-Math.PI / 4);
        ctx.fillText(v.labels[k], 0, 0, 40); ctx.restore();
      }
      for (let s = 0; s < n; s++) for (let r = 0; r < n; r++) {
        const x = m[s][r];
        if (x === 0) ctx.fillStyle = "#f3f3f3";
        else {
          // sqrt scale from light to dark blue.
          const f = Math.sqrt(x / max), c = (a, b) => Math.round(a + (b - a) * f);
          ctx.fillStyle = "rgb(" + c(222, 8) + "," + c(235, 48) + "," + c(247, 107) + ")";
        }
        ctx.fillRect(left + r * cell, top + s * cell, cell - (cell > 8 ? 1 : 0), cell - (cell > 8 ? 1 : 0));
      }
      ctx.fillStyle = "#444";
      ctx.fillText("light: few, dark: " + (key === "bytes" ? bytes(max) : max + " messages") + " per cell; grey: none", left, top + n * cell + 16);
      geo = { v, n, cell };
    }
    canvas.addEventListener("mousemove", (e) => {
      const rc = canvas.getBoundingClientRect(), x = e.clientX - rc.left, y = e.clientY - rc.top;
      const r = Math.floor((x - left) / geo.cell), s = Math.floor((y - top) / geo.cell);
      if (r < 0 || s < 0 || r >= geo.n || s >= geo.n) { tip.style.display = "none"; return; }
      tip.textContent = "rank " + geo.v.labels[s] + " → rank " + geo.v.labels[r] + "\n" + geo.v.messages[s][r] + " messages, " + bytes(geo.v.bytes[s][r]);
      tip.style.display = "block"; tip.style.left = (x + 12) + "px"; tip.style.top = (y + 12) + "px";
    });
    canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
    pick.addEventListener("change", draw);
    what.addEventListener("change", draw);
    draw();
    return box;
  }

  // sizesView: messages and bytes per power-of-two class, with latency and
  // throughput in the table and the tooltip.
  function sizesView(iv, i) {
    const bins = iv.message_sizes || [];
    const label = (b) => (b.max_bytes === 0 ? "0 B" : bytes(b.min_bytes) + " to " + bytes(b.max_bytes + 1) + " (excl.)");
    const c = el("canvas", { width: Math.min(900, Math.max(320, 80 + bins.length * 48)), height: 200, role: "img", id: "sizes-chart-" + i,
      "data-chart": "sizes", "data-bars": bins.length, "data-messages": bins.reduce((a, b) => a + b.messages, 0), "aria-label": "Messages by size" });
    const extra = (k) => "; mean latency " + secs(bins[k].latency) + ", " + rate(bins[k].throughput);
    chart(c, {
      type: "bar",
      data: { labels: bins.map((b) => (b.max_bytes === 0 ? "0 B" : "≥" + bytes(b.min_bytes))), datasets: [
        { label: "messages", data: bins.map((b) => b.messages), backgroundColor: "#4e79a7", yAxisID: "y" },
        { label: "bytes", data: bins.map((b) => b.bytes), backgroundColor: "#f28e2b", yAxisID: "y1" }] },
      options: { scales: { x: { title: { display: true, text: "message size class" } }, y: { position: "left", title: { display: true, text: "messages" } },
        y1: { position: "right", grid: { drawOnChartArea: false }, title: { display: true, text: "bytes" } } },
        plugins: { tooltip: { callbacks: { label: (t) => t.dataset.label + ": " + (t.datasetIndex ? bytes(t.raw) : t.raw) + extra(t.dataIndex) } } } } });
    const t = table(["Size", "Messages", "Bytes", "Mean latency", "Throughput"], bins.map((b) =>
      row(el("td", { class: "l" }, label(b)), b.messages, bytes(b.bytes), secs(b.latency), rate(b.throughput))), { class: "sizes" });
    return el("div", {}, c, t);
  }

  function trafficView(iv) {
    const tr = iv.traffic;
    const all = tr.intra_node.messages + tr.inter_node.messages, allB = tr.intra_node.bytes + tr.inter_node.bytes;
    const hs = rep.hosts || [];
    const ranksText = (rs) => (rs.length > 6 ? rs.slice(0, 6).join(", ") + ", … (" + rs.length + ")" : rs.join(", "));
    return el("div", { class: "traffic", "data-intra-messages": tr.intra_node.messages, "data-inter-messages": tr.inter_node.messages },
      table(["", "Messages", "% of messages", "Bytes", "% of bytes"], [
        row(el("td", { class: "l" }, "inside a node"), tr.intra_node.messages, pct(tr.intra_node.messages, all), bytes(tr.intra_node.bytes), pct(tr.intra_node.bytes, allB)),
        row(el("td", { class: "l" }, "between nodes"), tr.inter_node.messages, pct(tr.inter_node.messages, all), bytes(tr.inter_node.bytes), pct(tr.inter_node.bytes, allB))]),
      hs.length ? el("div", { class: "note" }, hs.length + " host(s): " + hs.slice(0, 12).map((h) => h.host + " (ranks " + ranksText(h.ranks || []) + ")").join("; ") +
        (hs.length > 12 ? "; …" : "")) : null);
  }

  // mixView: per processor, a stacked bar of its MPI time by function (the
  // interval's eight costliest functions, the rest as "other") and a table
  // with its grain (the gaps between consecutive MPI calls).
  function mixView(iv, i) {
    const top = (iv.functions || []).slice(0, 8).map((f) => f.function);
    const topSet = new Set(top);
    const rs = iv.ranks;
    const of = (r, fn) => (r.call_mix || []).filter((c) => (fn === null ? !topSet.has(c.function) : c.function === fn));
    const datasets = top.map((fn, k) => ({ label: fn, backgroundColor: palette[k % palette.length],
      data: rs.map((r) => of(r, fn).reduce((a, c) => a + c.time, 0)), calls: rs.map((r) => of(r, fn).reduce((a, c) => a + c.calls, 0)) }));
    if (rs.some((r) => of(r, null).length))
      datasets.push({ label: "other", backgroundColor: "#bab0ac", data: rs.map((r) => of(r, null).reduce((a, c) => a + c.time, 0)),
        calls: rs.map((r) => of(r, null).reduce((a, c) => a + c.calls, 0)) });
    const mpiTime = rs.map((r) => (r.call_mix || []).reduce((a, c) => a + c.time, 0));
    const n = rs.length, W = Math.min(900, Math.max(480, 60 + n * 24));
    const c = el("canvas", { width: W, height: 260, role: "img", id: "mix-chart-" + i, "data-chart": "callmix", "data-bars": n,
      "data-datasets": datasets.length, "aria-label": "MPI time per function and processor" });
    chart(c, {
      type: "bar",
      data: { labels: rs.map((r) => String(r.rank)), datasets },
      options: { scales: { x: { stacked: true, title: { display: true, text: "rank" } }, y: { stacked: true, title: { display: true, text: "s in MPI" } } },
        plugins: { legend: { position: "top" }, tooltip: { callbacks: { label: (t) => t.dataset.label + ": " + secs(t.raw) + " (" +
          pct(t.raw, mpiTime[t.dataIndex]) + " of the rank's MPI time), " + t.dataset.calls[t.dataIndex] + " calls" } } } } });
    const tb = el("tbody");
    rs.forEach((r, k) => {
      const calls = (r.call_mix || []).reduce((a, x) => a + x.calls, 0), m = (r.call_mix || [])[0];
      tb.append(el("tr", { class: "mixrow", "data-rank": r.rank, "data-gap-mean": r.gap_mean || 0, "data-gap-median": r.gap_median || 0 },
        numCell(r.rank), numCell(calls), numCell(mpiTime[k], secs(mpiTime[k])), numCell(r.gaps || 0),
        numCell(r.gap_mean || 0, secs(r.gap_mean || 0)), numCell(r.gap_median || 0, secs(r.gap_median || 0)),
        el("td", { class: "l" }, m ? m.function + " (" + (100 * m.time_share).toFixed(1) + "% of time, " + (100 * m.call_share).toFixed(1) + "% of calls)" : "")));
    });
    const t = table(["Rank", "MPI calls", "MPI time", "Gaps", "Gap mean", "Gap median", "Costliest function"], [], { class: "mix" });
    t.replaceChild(tb, t.querySelector("tbody"));
    sortable(t, tb);
    return el("div", {}, c, t);
  }

  // profile appends an interval's profile views that its report holds.
  function profile(s, iv, i) {
    if ((iv.functions || []).length)
      s.append(el("h3", { id: "fn-" + i }, "MPI functions"), el("div", { class: "note" }, "Summed over the processors; click a column to sort."), functionsTable(iv));
    if ((matrices[i] || []).length)
      s.append(el("h3", { id: "matrix-h-" + i }, "Communication matrix"), matrixView(i));
    if ((iv.message_sizes || []).length)
      s.append(el("h3", { id: "sizes-" + i }, "Message sizes"), el("div", { class: "note" },
        "Point-to-point messages received in the interval by size; latency: from the send's start to the end of the call that received it (global clock)."), sizesView(iv, i));
    if (iv.traffic) s.append(el("h3", { id: "traffic-" + i }, "Node traffic"), trafficView(iv));
    if (iv.ranks.some((r) => (r.call_mix || []).length || r.gaps))
      s.append(el("h3", { id: "mix-" + i }, "Call mix and grain (per processor)"), el("div", { class: "note" },
        "Grain: the gaps between the end of one MPI call and the start of the next on the processor's own clock."), mixView(iv, i));
  }

  (function intervals() {
    const box = document.getElementById("intervals");
    rep.intervals.forEach((iv, i) => {
      const s = el("section", { id: ivId(i) });
      const title = iv.level === 0 ? "Whole program" : "Interval " + iv.path.join("/") + " (level " + iv.level + ", number " + iv.number + ")";
      s.append(el("h2", {}, title));
      s.append(el("div", { class: "note" }, "Source ", iv.source_file + (iv.line ? ":" + iv.line : ""), ", entered ", iv.exe_count, " time(s), ",
        iv.main.processors, " processors, efficiency ", (100 * iv.main.efficiency).toFixed(2) + "%"));
      s.append(el("h3", {}, "Main characteristics"), legend(parts), hbar(iv.main), mainTable(iv.main));
      s.append(el("h3", { id: "exec-" + i }, "Execution characteristics (per processor)"), vbars(iv, i), execTable(iv));
      s.append(el("h3", {}, "Comparative characteristics"), compTable(iv.comparative));
      s.append(el("h3", {}, "Call sites (SRC)"), el("div", { class: "note" }, "Click a column to sort; open a row for its stack and processors."));
      // Stacks without a single file and line: say why and what to do,
      // which the frames (function+0x… or module+0x…) do not.
      if ((iv.src || []).length && !iv.src.some(p => (p.stack || []).some(fr => fr.file))) {
        s.append(el("div", { class: "note", id: "no-lines-" + i }, "No call site has a source file and line: the program and its libraries " +
          "have no debug information here. Build with -g, or install the programs' -dbgsym packages (read from /usr/lib/debug/.build-id)."));
      }
      s.append(srcTable(iv, i));
      profile(s, iv, i);
      box.append(s);
    });
    for (const f of pendingCharts) f();
  })();

  // ---- Timeline ----
  (function timeline() {
    const host = document.getElementById("timeline");
    const info = document.getElementById("timeline-info");
    if (!tl || !tl.lanes.length) {
      host.setAttribute("data-ranks", "0");
      host.setAttribute("data-messages", "0");
      info.textContent = "No timeline in this report.";
      return;
    }
    // D is what is drawn in detail: from the page's own data, or, served
    // by dtpa view (live.window), the last window the server answered.
    // Lanes of D are in the order of tl.lanes.
    const lanes = tl.lanes, n = lanes.length;
    const emptySpans = { start: [], dur: [], interval: [], level: [] };
    const spansOf = (l) => l.spans || emptySpans;
    // Collective instances, from the calls that joined them (l.coll, and
    // the ties that are not completions: MPI_Startall of several
    // persistent collectives): the rows they span and their latest entry
    // (of a nonblocking collective, its latest start).
    function collInsts(ls) {
      const inst = new Map();
      const add = (c, j, t) => {
        let e = inst.get(c);
        if (!e) inst.set(c, (e = { lo: j, hi: j, t }));
        e.lo = Math.min(e.lo, j); e.hi = Math.max(e.hi, j); e.t = Math.max(e.t, t);
      };
      ls.forEach((l, j) => l.coll.forEach((c, k) => {
        if (c >= 0) add(c, j, l.start[k]);
        const ts = l.tie && l.tie[k];
        if (Array.isArray(ts)) for (const [x, done] of ts) if (!done) add(x, j, l.start[k]);
      }));
      return [...inst.values()].sort((a, b) => a.t - b.t);
    }
    // tieColumn makes a lane's ties (l.ties, by tie) a column by call:
    // null, or the call's [instance, done] pairs.
    function tieColumn(l) {
      const col = new Array(l.start.length).fill(null);
      l.ties.call.forEach((i, k) => (col[i] = col[i] || []).push([l.ties.coll[k], l.ties.done[k]]));
      return col;
    }
    // collLinks ties, in each row, the start of a nonblocking or
    // persistent collective (MPI_Ibarrier, MPI_Start …) to the call that
    // completed its request: from the start's end (a) to that call's
    // start (b).
    function collLinks(ls) {
      const out = [];
      ls.forEach((l, j) => {
        if (!l.tie) return;
        const started = new Map();
        for (let k = 0; k < l.start.length; k++) {
          const ts = l.tie[k];
          if (l.coll[k] >= 0) started.set(l.coll[k], l.start[k] + l.dur[k]);
          if (!Array.isArray(ts)) continue;
          for (const [x, done] of ts) {
            if (!done) started.set(x, l.start[k] + l.dur[k]);
            else if (started.has(x)) { out.push({ j, a: started.get(x), b: l.start[k] }); started.delete(x); }
          }
        }
      });
      return out;
    }
    // Rows drawn: one per rank, or one per thread of a rank whose calls
    // come from several threads (its threads overlap in time). blocks[j]
    // is lane j's rows: the first, how many, and the row of each thread.
    const rows = [], blocks = [];
    lanes.forEach((l, j) => {
      const ths = [...new Set([...(l.threads || []), ...(l.thread || [])])].sort((a, b) => a - b);
      const b = { top: rows.length, count: Math.max(1, ths.length), row: new Map() };
      if (ths.length > 1) ths.forEach((th, k) => { b.row.set(th, rows.length); rows.push({ j, rank: l.rank, thread: th, k }); });
      else rows.push({ j, rank: l.rank, thread: -1, k: 0 });
      blocks.push(b);
    });
    const nr = rows.length;
    const cols = ["start", "dur", "lost", "func", "site", "bytes", "peer", "coll", "tie"];
    // split gives each row its calls (in time order) from the lanes ls
    // (in the order of tl.lanes), and each multi-threaded rank a lookup of
    // the row of a call by its start (a message's send) and by its end (the
    // call that completed a receive).
    function split(ls) {
      const out = [], at = [];
      blocks.forEach((b, j) => {
        const l = ls[j] || { rank: lanes[j].rank, start: [], dur: [], lost: [], func: [], site: [], bytes: [], peer: [], coll: [] };
        if (b.count === 1) { out.push(l); at.push(null); return; }
        const parts = [];
        for (let k = 0; k < b.count; k++) {
          const p = { rank: lanes[j].rank };
          for (const c of cols) p[c] = [];
          parts.push(p);
        }
        const starts = new Map(), ends = new Map();
        for (let i = 0; i < l.start.length; i++) {
          const th = l.thread ? l.thread[i] : 0, r = b.row.has(th) ? b.row.get(th) : b.top, p = parts[r - b.top];
          for (const c of cols) p[c].push(l[c] ? l[c][i] : -1);
          if (!starts.has(l.start[i])) starts.set(l.start[i], r);
          if (!ends.has(l.start[i] + l.dur[i])) ends.set(l.start[i] + l.dur[i], r);
        }
        for (const p of parts) {
          let sorted = true;
          for (let i = 1; i < p.start.length && sorted; i++) sorted = p.start[i - 1] <= p.start[i];
          if (!sorted) {
            const ix = p.start.map((_, i) => i).sort((a, c) => p.start[a] - p.start[c]);
            for (const c of cols) p[c] = ix.map((i) => p[c][i]);
          }
          out.push(p);
        }
        at.push({ starts, ends });
        for (let k = 1; k < b.count; k++) at.push(null);
      });
      return { rows: out, at };
    }
    // view makes D from per-rank lanes.
    function view(ls, M, from, to, detail, bins) {
      ls = ls.map((l) => l.ties ? Object.assign({}, l, { tie: tieColumn(l) }) : l);
      const sp = split(ls);
      const links = collLinks(sp.rows);
      host.setAttribute("data-coll-links", String(links.length));
      return { lanes: ls, rows: sp.rows, at: sp.at, M, from, to, detail, bins, insts: collInsts(sp.rows), links };
    }
    const noMsgs = { from: [], to: [], send: [], recv: [] };
    let D = live.window ? view([], noMsgs, 0, 0, false, 0) : view(lanes, tl.messages, 0, tl.end, true, tl.bins);
    host.setAttribute("data-ranks", String(n));
    host.setAttribute("data-lanes", String(nr));
    host.setAttribute("data-messages", String(tl.message_count));
    host.setAttribute("data-arrows", String(D.M.from.length));
    host.setAttribute("data-live", live.window ? "1" : "0");
    // Interval executions drawn behind the calls, and the hosts.
    host.setAttribute("data-spans", String(lanes.reduce((a, l) => a + spansOf(l).start.length, 0)));
    const hosts = [...new Set(lanes.map((l) => l.host || ""))];
    host.setAttribute("data-hosts", String(hosts.filter((h) => h).length));
    const oneHost = hosts.length === 1;
    const label = (l) => "rank " + l.rank + (oneHost || !l.host ? "" : " " + l.host);
    const kinds = tl.funcs.map((f) => f.kind);
    const colors = { p2p: "#4e79a7", coll: "#59a14f", wait: "#f28e2b", other: "#a0a0a0" };
    const laneOf = new Map();
    lanes.forEach((l, j) => laneOf.set(l.rank, j));
    // rowLabel names a row: its rank, and its thread in a multi-threaded rank.
    const rowLabel = (r) => r.thread < 0 ? label(lanes[r.j]) : "rank " + r.rank + " thread " + r.thread + (oneHost || !lanes[r.j].host ? "" : " " + lanes[r.j].host);
    // Calls in progress when the processes ended, which never returned
    // (l.unfinished): in the row of their thread, from the entry to the
    // process's end; where nothing says when that was (d < 0), open to the
    // end of the run and fading out; where it was after the job's
    // interrupt (al), to the interrupt and fading out past it. Their line
    // in the program is the report's list of them (one call per rank and
    // thread).
    const opens = [];
    lanes.forEach((l, j) => {
      const u = l.unfinished;
      if (!u) return;
      for (let k = 0; k < u.start.length; k++) {
        const b = blocks[j], th = u.thread[k];
        const c = (rep.unfinished || []).find((c) => c.rank === l.rank && (c.thread || 0) === th);
        opens.push({ row: b.row.has(th) ? b.row.get(th) : b.top, rank: l.rank, thread: th, s: u.start[k], d: u.dur[k], func: u.func[k],
          al: !!(u.at_least && u.at_least[k]), at: c && c.file ? base(c.file) + ":" + c.line : "" });
      }
    });
    function openTip(o) {
      const f = tl.funcs[o.func] || { name: "?", kind: "other" };
      return [f.name + " (" + f.kind + "): never returned", "rank " + o.rank + (o.thread ? " thread " + o.thread : "") + (o.at ? ", " + o.at : ""),
        "start " + dur(o.s) + (o.d < 0 ? ", in progress when its process ended, at a time its trace does not hold" :
          o.al ? ", in progress for at least " + dur(o.d) + ": the job was interrupted then, and its process ended later" :
          ", in progress for " + dur(o.d) + " when its process ended")];
    }
    // openSpan is where call o is drawn: from x0 to x1, then fading out
    // over fade px when its end is unknown.
    function openSpan(o) {
      const fade = o.d < 0 || o.al ? 24 : 0, x0 = X(o.s);
      const x1 = Math.max(o.d >= 0 ? X(o.s + o.d) : X(Math.max(tl.end, o.s)) - fade, x0 + 2);
      return [x0, x1, fade];
    }
    const openColor = "#8b0000";
    // The moments processes crashed (l.crash): a cross on the crashed
    // thread's row (the rank's first for a thread that never called MPI),
    // whose tip says where (the report's crashes, report.Crash.Lines).
    const crashColor = "#c00000", crashOf = {};
    crashLines.forEach((ls, i) => {
      if (rep.crashes && rep.crashes[i]) crashOf[rep.crashes[i].rank] = ls;
    });
    const crashes = [];
    lanes.forEach((l, j) => {
      const c = l.crash;
      if (!c) return;
      const b = blocks[j];
      crashes.push({ row: b.row.has(c.thread) ? b.row.get(c.thread) : b.top, rank: l.rank, t: c.at, lines: crashOf[l.rank] || ["rank " + l.rank + " crashed"] });
    });
    const crashTip = (c) => c.lines.concat(["at " + dur(c.t)]);
    host.setAttribute("data-crashes", crashes.map((c) => c.rank + "@" + c.t).join(" "));
    host.setAttribute("data-crash-tips", crashes.map((c) => crashTip(c).join("; ")).join(" | "));
    // The moments processes that neither crashed nor called MPI_Finalize
    // ended (l.end): exited (exit(), a return from main, a Fortran STOP)
    // or found in no MPI call by the signal that ended the job; a bar
    // across the thread's row (the rank's first when unknown), whose tip
    // says how (report.LaneEnd.How).
    const endColor = "#d95f02", endMarks = [];
    lanes.forEach((l, j) => {
      const e = l.end;
      if (!e) return;
      const b = blocks[j];
      endMarks.push({ row: b.row.has(e.thread) ? b.row.get(e.thread) : b.top, rank: l.rank, t: e.at, exited: e.exited,
        how: e.how || ("rank " + l.rank + (e.exited ? ": had exited without MPI_Finalize" : ": in no MPI call")) });
    });
    const endTip = (e) => [e.how, (e.exited ? "exited at " : "ended at ") + dur(e.t)];
    host.setAttribute("data-ends", endMarks.map((e) => e.rank + "@" + e.t).join(" "));
    host.setAttribute("data-end-tips", endMarks.map((e) => endTip(e).join("; ")).join(" | "));
    host.setAttribute("data-unfinished", String(opens.length));
    host.setAttribute("data-unfinished-open", String(opens.filter((o) => o.d < 0 || o.al).length));
    host.setAttribute("data-unfinished-tips", opens.map((o) => openTip(o).join("; ")).join(" | "));
    info.append(legend([["point-to-point", , colors.p2p], ["collective", , colors.coll], ["wait/test", , colors.wait],
      ["other MPI", , colors.other], ["lost to late partner", , "#d62728"]].concat(opens.length ? [["never returned (hatched)", , openColor]] : [],
      crashes.length ? [["crashed (×)", , crashColor]] : [], endMarks.length ? [["ended without MPI_Finalize (┤)", , endColor]] : [])),
    el("div", { class: "note" }, tl.call_count + " calls, " + tl.message_count + " messages on " + n +
      " ranks" + (oneHost && hosts[0] ? " on host " + hosts[0] : "") +
      (nr > n ? " in " + nr + " lanes, one per thread of a rank whose threads call MPI" : "") + "; intervals shaded purple behind the calls. Drag or arrow keys to pan, wheel or +/− to zoom, 0 to reset; hover a call for details. " +
      "A link ending in #t=FROM,TO (seconds) opens this window."));
    if (live.window) {
      info.append(el("div", { class: "note", id: "live" }, "Served by dtpa view: the overview shows the whole run; each window you zoom to is fetched in detail (every call, message and interval) when it holds at most a few hundred thousand calls, else aggregated per pixel."));
    } else if (tl.truncated) {
      info.append(el("div", { class: "trunc", id: "truncated" }, "Detail truncated: the page keeps " + tl.max_calls +
        " calls; past each lane's last kept call (marked ┃) only the overview (time per kind, aggregated) is drawn. dtpa view shows every call."));
    }

    const arrowNote = el("div", { class: "note", id: "arrow-note" });
    info.append(arrowNote);
    const canvas = el("canvas");
    host.append(canvas);
    const ctx0 = canvas.getContext("2d");
    const tip = el("div", { id: "tip" });
    host.append(tip);
    host.tabIndex = 0;
    const axis = 22;
    ctx0.font = "11px system-ui, sans-serif";
    const gutter = Math.min(200, Math.max(56, 10 + Math.max(...rows.map((r) => ctx0.measureText(rowLabel(r)).width))));
    const laneH = Math.max(3, Math.min(28, Math.floor(560 / nr)));
    const H = axis + nr * laneH + 8;
    let W = 800, t0 = 0, t1 = Math.max(tl.end, 1);
    const ctx = canvas.getContext("2d");
    function resize() {
      W = Math.max(300, host.clientWidth || 800);
      const dpr = window.devicePixelRatio || 1;
      canvas.width = W * dpr; canvas.height = H * dpr;
      canvas.style.height = H + "px";
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    }
    const X = (t) => gutter + (t - t0) * (W - gutter - 4) / (t1 - t0);
    const T = (x) => t0 + (x - gutter) * (t1 - t0) / (W - gutter - 4);
    const Y = (j) => axis + j * laneH;
    // first box of lane l ending at or after t (starts are in call order).
    function firstAt(l, t) {
      let lo = 0, hi = l.start.length;
      while (lo < hi) {
        const m = (lo + hi) >> 1;
        if (l.start[m] + l.dur[m] < t) lo = m + 1; else hi = m;
      }
      return lo;
    }
    // Served: after each change of the view, ask for its window (the
    // latest request wins; an answer to an older one is dropped).
    let pending = null, seq = 0, windows = 0;
    function want() {
      clearTimeout(pending);
      pending = setTimeout(() => {
        const px = Math.max(1, Math.round(W - gutter - 4)), from = Math.floor(t0), to = Math.ceil(t1);
        if (D.from === from && D.to === to && (D.detail || D.bins === px)) return;
        const my = ++seq;
        fetch(live.window + "?from=" + from + "&to=" + to + "&px=" + px).then((r) => {
          if (!r.ok) throw new Error("window request: HTTP " + r.status);
          return r.json();
        }).then((w) => {
          if (my !== seq) return;
          const byRank = new Map(w.lanes.map((l) => [l.rank, l]));
          const ls = lanes.map((l) => byRank.get(l.rank) || { rank: l.rank, start: [], dur: [], lost: [], func: [], site: [], bytes: [], peer: [], coll: [] });
          D = view(ls, w.messages, w.from, w.to, w.detail, w.bins);
          windows++;
          host.setAttribute("data-window", w.from + "," + w.to);
          host.setAttribute("data-window-detail", w.detail ? "1" : "0");
          host.setAttribute("data-window-calls", String(w.calls));
          host.setAttribute("data-window-boxes", String(ls.reduce((a, l) => a + l.start.length, 0)));
          host.setAttribute("data-window-spans", String(ls.reduce((a, l) => a + spansOf(l).start.length, 0)));
          host.setAttribute("data-arrows", String(w.messages.from.length));
          host.setAttribute("data-windows", String(windows));
          if (windows === 1) host.setAttribute("data-window-ms", String(Math.round(performance.now())));
          paint();
        }).catch((e) => { if (my === seq) host.setAttribute("data-window-error", String(e)); });
      }, 80);
    }
    // tick labels a time with as many decimals as the step between ticks
    // needs, in the unit of the time itself (at 40 s, steps of 20 µs read
    // 40.00002 s).
    function tick(t, step) {
      const a = Math.abs(t), u = a >= 1e9 ? [1e9, " s"] : a >= 1e6 ? [1e6, " ms"] : a >= 1e3 ? [1e3, " µs"] : [1, " ns"];
      const d = Math.max(0, Math.min(9, Math.ceil(-Math.log10(step / u[0]) - 1e-9)));
      return (t / u[0]).toFixed(d) + u[1];
    }
    function draw() {
      paint();
      if (live.window) want();
    }
    function paint() {
      ctx.clearRect(0, 0, W, H);
      ctx.font = "11px system-ui, sans-serif";
      // Axis.
      const span = t1 - t0, step = Math.pow(10, Math.floor(Math.log10(span / 6)));
      const st = step * (span / step > 30 ? 5 : span / step > 12 ? 2 : 1);
      ctx.fillStyle = "#444"; ctx.strokeStyle = "#ddd";
      for (let t = Math.ceil(t0 / st) * st; t <= t1; t += st) {
        const x = X(t);
        ctx.fillText(tick(t, st), x + 2, 12);
        ctx.beginPath(); ctx.moveTo(x, 15); ctx.lineTo(x, H); ctx.stroke();
      }
      const px = (t1 - t0) / (W - gutter - 4);
      // A rank's block of rows: its background and labels, then what is
      // the rank's as a whole (interval executions, overview, the end of
      // its detail) over the whole block.
      lanes.forEach((l, j) => {
        const blk = blocks[j], y = Y(blk.top), bH = blk.count * laneH, h = Math.max(2, bH - 2);
        ctx.fillStyle = j % 2 ? "#f7f7f7" : "#fbfbfb";
        ctx.fillRect(gutter, y, W - gutter, bH);
        for (let k = 0; k < blk.count; k++) {
          if (k > 0) { ctx.fillStyle = "#e8e8e8"; ctx.fillRect(gutter, y + k * laneH, W - gutter, 1); }
          if (laneH >= 9) { ctx.fillStyle = "#333"; ctx.fillText(rowLabel(rows[blk.top + k]), 4, y + k * laneH + Math.min(laneH - 3, 14), gutter - 6); }
        }
        // Interval executions: a purple tint per level, a line on top.
        const sp = spansOf(D.lanes[j] || {});
        for (let i = 0; i < sp.start.length; i++) {
          const s = sp.start[i], e = s + sp.dur[i];
          if (e < t0 || s > t1) continue;
          const x0 = Math.max(gutter, X(s)), x1 = Math.max(x0 + 1, X(e));
          ctx.fillStyle = "rgba(148,103,189,.13)";
          ctx.fillRect(x0, y, x1 - x0, bH);
          ctx.fillStyle = "rgba(118,73,159,.8)";
          ctx.fillRect(x0, y + Math.min(sp.level[i] - 1, 3), x1 - x0, 1);
        }
        // The overview: of the whole run where D holds nothing, past the
        // detail's end in a truncated page, or D's own when it is an
        // aggregated window.
        const ovDraw = (ov, bins, from, to, lo, hi) => {
          const bw = (to - from) / bins;
          for (let b = Math.max(0, Math.floor((Math.max(t0, lo) - from) / bw)); b < bins && from + b * bw <= Math.min(t1, hi); b++) {
            const vals = [["p2p", ov.p2p[b]], ["coll", ov.coll[b]], ["wait", ov.wait[b]], ["other", ov.other[b]]];
            let busy = 0, best = vals[0];
            for (const v of vals) { busy += v[1]; if (v[1] > best[1]) best = v; }
            if (!busy) continue;
            const x0 = Math.max(X(Math.max(from + b * bw, lo)), gutter), x1 = Math.min(X(Math.min(from + (b + 1) * bw, hi)), W);
            const f = Math.min(1, busy / bw);
            ctx.fillStyle = colors[best[0]];
            ctx.fillRect(x0, y + 1 + h * (1 - f), Math.max(1, x1 - x0), h * f);
            const lf = Math.min(1, ov.lost[b] / bw);
            if (lf > 0) { ctx.fillStyle = "#d62728"; ctx.fillRect(x0, y + 1 + h * (1 - lf), Math.max(1, x1 - x0), Math.max(1, h * lf * 0.35)); }
          }
        };
        const dl = D.lanes[j] || {};
        if (live.window) {
          if (t0 < D.from) ovDraw(l.overview, tl.bins, 0, tl.end, t0, D.from);
          if (t1 > D.to) ovDraw(l.overview, tl.bins, 0, tl.end, D.to, t1);
          if (!D.detail && dl.overview) ovDraw(dl.overview, D.bins, D.from, D.to, D.from, D.to);
        } else if (l.truncated && l.detail_end < t1) {
          ovDraw(l.overview, tl.bins, 0, tl.end, l.detail_end, tl.end);
          const xd = X(l.detail_end);
          if (xd >= gutter && xd <= W) { ctx.fillStyle = "#000"; ctx.fillRect(xd, y, 2, bH); }
        }
      });
      // The calls, row by row.
      rows.forEach((row, j) => {
        const y = Y(j), h = Math.max(2, laneH - 2);
        const dl = D.rows[j] || { start: [] };
        let lastX = -1;
        for (let i = firstAt(dl, t0); i < dl.start.length && dl.start[i] <= t1; i++) {
          const s = dl.start[i], d = dl.dur[i];
          let x0 = X(s), x1 = X(s + d);
          if (x1 - x0 < 1) {
            if (Math.floor(x0) === lastX) continue;
            x1 = x0 + 1;
          }
          lastX = Math.floor(x0);
          x0 = Math.max(x0, gutter);
          ctx.fillStyle = colors[kinds[dl.func[i]]] || colors.other;
          ctx.fillRect(x0, y + 1, x1 - x0, h);
          if (dl.lost[i] > 0 && dl.lost[i] >= px) {
            const xl = Math.max(gutter, X(s)), xe = X(s + Math.min(dl.lost[i], d));
            ctx.fillStyle = "#d62728";
            ctx.fillRect(xl, y + 1 + h * 0.6, Math.max(1, xe - xl), h * 0.4);
          }
        }
      });
      // Calls that never returned: hatched in their kind's colour, outlined;
      // an open one fades out past its end.
      for (const o of opens) {
        const y = Y(o.row) + 1, h = Math.max(2, laneH - 2);
        const c = colors[kinds[o.func]] || colors.other;
        const [x0, x1, fade] = openSpan(o);
        if (x1 + fade < gutter || x0 > W) continue;
        ctx.save();
        ctx.beginPath(); ctx.rect(gutter, y, W - gutter, h); ctx.clip();
        ctx.fillStyle = hatch(c);
        ctx.fillRect(x0, y, x1 - x0, h);
        if (fade) {
          const g = ctx.createLinearGradient(x1, 0, x1 + fade, 0);
          g.addColorStop(0, c); g.addColorStop(1, "rgba(255,255,255,0)");
          ctx.fillStyle = g;
          ctx.fillRect(x1, y, fade, h);
        }
        ctx.strokeStyle = openColor; ctx.lineWidth = 1.5;
        ctx.beginPath();
        ctx.moveTo(x1 + fade, y + 0.75); ctx.lineTo(x0 + 0.75, y + 0.75); ctx.lineTo(x0 + 0.75, y + h - 0.75); ctx.lineTo(x1 + fade, y + h - 0.75);
        if (!fade) ctx.lineTo(x1 - 0.75, y + 0.75);
        ctx.stroke();
        ctx.restore();
      }
      // Ends: a bar where and when the process ended, a tick before it.
      for (const e of endMarks) {
        const x = X(e.t), y = Y(e.row) + 1, h = Math.max(4, laneH - 2);
        if (x + 6 < gutter || x - 6 > W) continue;
        ctx.save();
        ctx.beginPath(); ctx.rect(gutter, 0, W - gutter, H); ctx.clip();
        ctx.strokeStyle = endColor; ctx.lineWidth = 2.5;
        ctx.beginPath();
        ctx.moveTo(x, y); ctx.lineTo(x, y + h);
        ctx.moveTo(x - 6, y + h / 2); ctx.lineTo(x, y + h / 2);
        ctx.stroke();
        ctx.restore();
      }
      // Crashes: a cross where and when the process crashed.
      for (const c of crashes) {
        const x = X(c.t), y = Y(c.row) + 1, h = Math.max(4, laneH - 2), r = Math.min(h / 2, 6);
        if (x + r < gutter || x - r > W) continue;
        ctx.save();
        ctx.beginPath(); ctx.rect(gutter, 0, W - gutter, H); ctx.clip();
        ctx.strokeStyle = crashColor; ctx.lineWidth = 2.5;
        ctx.beginPath();
        ctx.moveTo(x - r, y + h / 2 - r); ctx.lineTo(x + r, y + h / 2 + r);
        ctx.moveTo(x - r, y + h / 2 + r); ctx.lineTo(x + r, y + h / 2 - r);
        ctx.stroke();
        ctx.restore();
      }
      // Lines stay out of the lane labels.
      ctx.save();
      ctx.beginPath(); ctx.rect(gutter, 0, W - gutter, H); ctx.clip();
      // Collective instances: a line through the lanes at the latest entry.
      ctx.strokeStyle = "rgba(30,90,30,.55)"; ctx.lineWidth = 1;
      let drawn = 0;
      for (const c of D.insts) {
        if (c.t < t0 || c.t > t1 || c.lo === c.hi) continue;
        if (++drawn > 20000) break;
        const x = X(c.t);
        ctx.beginPath(); ctx.moveTo(x, Y(c.lo) + 1); ctx.lineTo(x, Y(c.hi) + laneH - 1); ctx.stroke();
      }
      // Nonblocking collectives: a dashed line along the lane from each
      // start to the call that completed it.
      ctx.setLineDash([3, 2]);
      drawn = 0;
      for (const k of D.links) {
        if (k.b < t0 || k.a > t1) continue;
        if (++drawn > 20000) break;
        const y = Y(k.j) + laneH / 2;
        ctx.beginPath(); ctx.moveTo(X(k.a), y); ctx.lineTo(X(k.b), y); ctx.stroke();
      }
      ctx.setLineDash([]);
      // Message arrows.
      ctx.strokeStyle = "rgba(0,0,0,.6)"; ctx.fillStyle = "rgba(0,0,0,.6)";
      drawn = 0;
      const M = D.M, ends = [];
      // More arrows than one per three pixels would only blacken the
      // lanes: then none are drawn (zoom in to see them).
      let visible = 0;
      for (let m = 0; m < M.from.length; m++) if (M.recv[m] >= t0 && M.send[m] <= t1) visible++;
      const dense = visible > (W - gutter) / 3;
      host.setAttribute("data-arrows-hidden", dense ? "1" : "0");
      arrowNote.textContent = dense ? visible + " message arrows in this window are not drawn: zoom in to see them." : "";
      for (let m = 0; m < M.from.length && !dense; m++) {
        const s = M.send[m], r = M.recv[m];
        if (r < t0 || s > t1) continue;
        if (++drawn > 20000) break;
        const jf = rowAt(M.from[m], s, "starts"), jt = rowAt(M.to[m], r, "ends");
        if (jf === undefined || jt === undefined) continue;
        if (ends.length < 64) ends.push(jf + "-" + jt);
        const xa = X(s), ya = Y(jf) + laneH / 2, xb = X(r), yb = Y(jt) + laneH / 2;
        ctx.beginPath(); ctx.moveTo(xa, ya); ctx.lineTo(xb, yb); ctx.stroke();
        const a = Math.atan2(yb - ya, xb - xa), k = Math.min(6, laneH / 2);
        ctx.beginPath(); ctx.moveTo(xb, yb);
        ctx.lineTo(xb - k * Math.cos(a - 0.4), yb - k * Math.sin(a - 0.4));
        ctx.lineTo(xb - k * Math.cos(a + 0.4), yb - k * Math.sin(a + 0.4));
        ctx.fill();
      }
      ctx.restore();
      // The lanes (rows) of the first arrows drawn, FROM-TO.
      host.setAttribute("data-arrow-lanes", ends.join(" "));
    }
    // hatch is a pattern of diagonal stripes of colour c on its pale tint.
    const hatches = new Map();
    function hatch(c) {
      if (!hatches.has(c)) {
        const p = document.createElement("canvas");
        p.width = p.height = 8;
        const g = p.getContext("2d");
        g.fillStyle = c; g.globalAlpha = 0.3; g.fillRect(0, 0, 8, 8);
        g.globalAlpha = 1; g.strokeStyle = c; g.lineWidth = 2;
        g.beginPath(); g.moveTo(-2, 10); g.lineTo(10, -2); g.moveTo(6, 10); g.lineTo(10, 6); g.moveTo(-2, 2); g.lineTo(2, -2); g.stroke();
        hatches.set(c, ctx.createPattern(p, "repeat"));
      }
      return hatches.get(c);
    }
    // rowAt is the row of rank's call starting (starts) or ending (ends)
    // at t; the rank's first row when it has one row or no such call.
    function rowAt(rank, t, which) {
      const j = laneOf.get(rank);
      if (j === undefined) return undefined;
      const a = D.at[blocks[j].top], r = a ? a[which].get(t) : undefined;
      return r === undefined ? blocks[j].top : r;
    }
    function zoom(f, at) {
      const c = at === undefined ? (t0 + t1) / 2 : at;
      let n0 = c - (c - t0) * f, n1 = c + (t1 - c) * f;
      if (n1 - n0 < 100) return;
      const full = Math.max(tl.end, 1);
      if (n1 - n0 > full) { n0 = 0; n1 = full; }
      t0 = n0; t1 = n1; draw();
    }
    function pan(dt) { t0 += dt; t1 += dt; draw(); }
    canvas.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = canvas.getBoundingClientRect();
      zoom(e.deltaY > 0 ? 1.25 : 0.8, T(e.clientX - r.left));
    }, { passive: false });
    let drag = null;
    canvas.addEventListener("mousedown", (e) => { drag = { x: e.clientX, t0, t1 }; canvas.style.cursor = "grabbing"; });
    window.addEventListener("mouseup", () => { drag = null; canvas.style.cursor = "grab"; });
    window.addEventListener("mousemove", (e) => {
      if (!drag) return;
      const dt = (e.clientX - drag.x) * (drag.t1 - drag.t0) / (W - gutter - 4);
      t0 = drag.t0 - dt; t1 = drag.t1 - dt; draw();
    });
    host.addEventListener("keydown", (e) => {
      const w = t1 - t0;
      const k = { "+": () => zoom(0.8), "=": () => zoom(0.8), "-": () => zoom(1.25), "_": () => zoom(1.25),
        ArrowLeft: () => pan(-w / 10), ArrowRight: () => pan(w / 10), "0": () => { t0 = 0; t1 = Math.max(tl.end, 1); draw(); },
        Home: () => { t0 = 0; t1 = Math.max(tl.end, 1); draw(); } }[e.key];
      if (k) { e.preventDefault(); k(); }
    });
    canvas.addEventListener("mousemove", (e) => {
      if (drag) return;
      const r = canvas.getBoundingClientRect(), x = e.clientX - r.left, yy = e.clientY - r.top;
      const j = Math.floor((yy - axis) / laneH);
      tip.style.display = "none";
      if (j < 0 || j >= nr) return;
      const show = (lines) => {
        tip.textContent = lines.join("\n");
        tip.style.display = "block";
        tip.style.left = Math.min(x + 12, W - 260) + "px";
        tip.style.top = (yy + 14) + "px";
      };
      if (x < gutter) {
        const ln = lanes[rows[j].j];
        show(["rank " + ln.rank + (rows[j].thread >= 0 ? " thread " + rows[j].thread : "") + (ln.host ? " on host " + ln.host : ""),
          ln.calls + " calls" + (rows[j].thread >= 0 ? " on the rank's " + blocks[rows[j].j].count + " threads" : "")]);
        return;
      }
      {
        const t = T(x), slack = 3 * (t1 - t0) / (W - gutter);
        const c = crashes.find((c) => c.row === j && Math.abs(X(c.t) - x) <= 7);
        if (c) { show(crashTip(c)); return; }
        const e = endMarks.find((e) => e.row === j && Math.abs(X(e.t) - x) <= 7);
        if (e) { show(endTip(e)); return; }
        const o = opens.find((o) => { const [, x1, fade] = openSpan(o); return o.row === j && t >= o.s - slack && x <= x1 + fade + 2; });
        if (o) { show(openTip(o)); return; }
      }
      const row = rows[j], who = "rank " + row.rank + (row.thread >= 0 ? " thread " + row.thread : "");
      const l = Object.assign({ rank: row.rank }, D.rows[j] || { start: [], dur: [] }), t = T(x), slack = 3 * (t1 - t0) / (W - gutter);
      let i = firstAt(l, t - slack);
      if (i >= l.start.length || l.start[i] > t + slack) {
        // Not on a call: the innermost interval there, if any.
        const sp = spansOf(D.lanes[row.j] || {});
        let best = -1;
        for (let k = 0; k < sp.start.length; k++)
          if (sp.start[k] <= t && t <= sp.start[k] + sp.dur[k] && (best < 0 || sp.level[k] > sp.level[best])) best = k;
        if (best >= 0)
          show(["interval " + tl.intervals[sp.interval[best]], who,
            "start " + dur(sp.start[best]) + ", duration " + dur(sp.dur[best])]);
        return;
      }
      const f = tl.funcs[l.func[i]], p = srcById.get(l.site[i]);
      const lines = [f.name + " (" + f.kind + ")", who + (p ? ", " + siteText(site(p)) + " [SRC " + p.id + "]" : ""),
        "start " + dur(l.start[i]) + ", duration " + dur(l.dur[i])];
      if (l.lost[i] > 0) lines.push("lost to a late partner " + dur(l.lost[i]));
      if (l.bytes[i] > 0) lines.push(l.bytes[i] + " bytes");
      if (l.peer[i] >= 0) lines.push("peer rank " + l.peer[i]);
      const ts = l.tie && Array.isArray(l.tie[i]) ? l.tie[i] : [], joined = ts.filter((x) => !x[1]).map((x) => x[0]), done = ts.filter((x) => x[1]).map((x) => x[0]);
      if (l.coll[i] >= 0) joined.unshift(l.coll[i]);
      if (joined.length) lines.push("collective instance" + (joined.length > 1 ? "s " : " ") + joined.join(", "));
      if (done.length) lines.push("completes collective instance" + (done.length > 1 ? "s " : " ") + done.join(", "));
      show(lines);
    });
    canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
    window.addEventListener("resize", () => { resize(); draw(); });
    // #t=FROM,TO (seconds since the start) opens the timeline on a window,
    // at load and when a link within the page sets it.
    const h = /^#t=([0-9.]+),([0-9.]+)$/.exec(location.hash);
    if (h && +h[2] > +h[1]) { t0 = +h[1] * 1e9; t1 = +h[2] * 1e9; }
    window.addEventListener("hashchange", () => {
      const m = /^#t=([0-9.]+),([0-9.]+)$/.exec(location.hash);
      if (m && +m[2] > +m[1]) { t0 = +m[1] * 1e9; t1 = +m[2] * 1e9; draw(); host.scrollIntoView(); }
    });
    resize();
    draw();
  })();
  document.body.setAttribute("data-rendered", "1");
  // Milliseconds from navigation start to the page drawn (benchmarks).
  document.body.setAttribute("data-render-ms", String(Math.round(performance.now())));
})();
