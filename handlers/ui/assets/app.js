// catalogsync catalog browser: live catalog state and upgrade graphs.
// Everything from a catalog is set as text (textContent, setAttribute of
// plain values), never parsed as HTML.
"use strict";
(function () {
  var SVG = "http://www.w3.org/2000/svg";

  function el(name, attrs, parent) {
    var e = document.createElementNS(SVG, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function short(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  function bytes(n) {
    if (n >= 1048576) return (n / 1048576).toFixed(1) + " MB";
    if (n >= 1024) return (n / 1024).toFixed(1) + " KB";
    return n + " B";
  }

  // progressText says what a running sync is doing, as the status does.
  function progressText(p) {
    if (!p) return "";
    switch (p.phase) {
      case "Pulling":
        if (p.layers) return "layer " + p.layer + "/" + p.layers + ": " + bytes(p.bytesDone || 0) + " of " + bytes(p.bytesTotal || 0);
        return "pulling";
      case "Validating": return "validating " + (p.bundles || 0) + " bundles";
      case "Indexing": return "indexing " + (p.objects || 0) + " objects";
      default: return p.phase;
    }
  }

  function lastError(c) {
    if (c.storeError) return c.storeError;
    if (c.lastSync && c.lastSync.error) return c.lastSync.error.reason + ": " + c.lastSync.error.message;
    if (c.lastPoll && c.lastPoll.error) return c.lastPoll.error;
    return "";
  }

  function updateRow(row, c) {
    var set = function (cls, text) { var x = row.querySelector("." + cls); if (x) x.textContent = text; };
    set("phase", c.phase);
    set("progress-text", progressText(c.progress));
    var bar = row.querySelector(".progress-bar");
    var p = c.progress;
    if (bar && p && p.phase === "Pulling" && p.bytesTotal > 0) {
      bar.hidden = false;
      bar.value = p.bytesDone / p.bytesTotal;
    } else if (bar) {
      bar.hidden = true;
    }
    set("last-error", lastError(c));
    if (c.published) {
      var d = row.querySelector(".digest");
      if (d && d.title !== c.published.digest) {
        d.title = c.published.digest;
        d.textContent = c.published.digest.slice(0, 19) + "…";
        set("published", c.published.publishedAt.replace("T", " ").replace(/\.\d+/, "").replace("Z", " UTC"));
      }
    }
    row.dataset.phase = c.phase;
  }

  function when(iso) {
    return iso ? iso.replace("T", " ").replace(/\.\d+/, "").replace("Z", " UTC") : "–";
  }

  // pollStatus keeps a catalog's status page current; once the catalog
  // is published, it links to its content.
  function pollStatus(table) {
    var tick = function () {
      fetch(table.dataset.api, { headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
        .then(function (c) {
          updateRow(table, c);
          var set = function (cls, text) { var x = table.querySelector("." + cls); if (x) x.textContent = text; };
          set("failures", String(c.consecutiveFailures || 0));
          set("next-retry", c.nextRetry ? when(c.nextRetry) : "none planned");
          markCut();
          if (c.published) {
            var cell = table.querySelector(".published-link");
            if (cell && !cell.querySelector("a")) {
              var a = document.createElement("a");
              a.href = location.pathname;
              a.textContent = "published " + when(c.published.publishedAt) + ": open its packages";
              cell.textContent = "";
              cell.appendChild(a);
            }
          }
          table.dataset.updated = String(Date.now());
        })
        .catch(function () { table.dataset.updated = "error"; })
        .finally(function () { setTimeout(tick, 2000); });
    };
    tick();
  }

  function pollCatalogs(table) {
    var api = table.dataset.api;
    var rows = {};
    table.querySelectorAll("tr.catalog").forEach(function (r) { rows[r.dataset.catalog] = r; });
    var tick = function () {
      fetch(api, { headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
        .then(function (list) {
          (list.items || []).forEach(function (c) { if (rows[c.name]) updateRow(rows[c.name], c); });
          table.dataset.updated = String(Date.now());
        })
        .catch(function () { table.dataset.updated = "error"; })
        .finally(function () { setTimeout(tick, 1000); });
    };
    tick();
  }

  // drawGraph lays one channel out with dagre and draws it as SVG.
  function drawGraph(box) {
    var data = JSON.parse(box.dataset.graph);
    // A channel of one entry has no edge: tolerate null as well as [].
    data.nodes = data.nodes || [];
    data.edges = data.edges || [];
    if (!data.nodes.length) {
      var p = document.createElement("p");
      p.className = "muted";
      p.textContent = "no entries";
      box.appendChild(p);
      box.dataset.drawn = "true";
      return;
    }
    var g = new dagre.graphlib.Graph({ multigraph: true });
    // A long channel is laid out bottom to top, its head at the top
    // where the page opens it; a short one left to right.
    var tall = data.nodes.length > 12;
    g.setGraph({ rankdir: tall ? "BT" : "LR", nodesep: 14, ranksep: tall ? 28 : 48, marginx: 8, marginy: 8 });
    g.setDefaultEdgeLabel(function () { return {}; });
    data.nodes.forEach(function (n) {
      var label = short(n.name, 44);
      n.label = label;
      g.setNode(n.id, { width: Math.max(80, 7 * Math.max(label.length, (n.version || "").length) + 16), height: 38 });
    });
    data.edges.forEach(function (e, i) { g.setEdge(e.from, e.to, { kind: e.kind }, "e" + i); });
    dagre.layout(g);
    var gr = g.graph();
    var svg = el("svg", { "class": "graph-svg", width: Math.ceil(gr.width), height: Math.ceil(gr.height),
      viewBox: "0 0 " + Math.ceil(gr.width) + " " + Math.ceil(gr.height), role: "group", "aria-label": "upgrade graph of channel " + short(data.channel || "", 200) });
    var defs = el("defs", {}, svg);
    var id = "m" + Math.random().toString(36).slice(2);
    ["replaces", "skips", "skipRange"].forEach(function (k) {
      var m = el("marker", { id: id + k, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
      el("path", { d: "M0,0 L10,5 L0,10 z", "class": "arrow arrow-" + k }, m);
    });
    var edges = el("g", { "class": "edges" }, svg);
    data.edges.forEach(function (e, i) {
      var pts = g.edge(e.from, e.to, "e" + i).points;
      var d = pts.map(function (p, j) { return (j ? "L" : "M") + p.x.toFixed(1) + "," + p.y.toFixed(1); }).join(" ");
      var p = el("path", { d: d, "class": "edge edge-" + e.kind, "data-kind": e.kind, "data-from": e.from, "data-to": e.to,
        "marker-end": "url(#" + id + e.kind + ")" }, edges);
      var t = el("title", {}, p);
      t.textContent = e.kind + (e.range ? " " + e.range : "");
    });
    var nodes = el("g", { "class": "nodes" }, svg);
    data.nodes.forEach(function (n) {
      var box = g.node(n.id);
      var cls = ["node"];
      if (n.head) cls.push("head");
      if (n.deprecated) cls.push("deprecated");
      if (n.stranded) cls.push("stranded");
      if (n.missing) cls.push("missing");
      var parent = nodes;
      // Only paths this server built become links.
      var label = short(n.name, 200) + (n.version ? ", version " + n.version : "") + (n.head ? ", head" : "") +
        (n.deprecated ? ", deprecated" : "") + (n.stranded ? ", stranded" : "") + (n.missing ? ", not in the channel" : "");
      if (n.href && n.href.indexOf("/ui/") === 0) {
        // Named by its text, as shown; the title adds the rest.
        parent = el("a", { href: n.href }, nodes);
      } else {
        // Not a link, still reachable by keyboard to read it.
        parent = el("g", { tabindex: "0", role: "img", "aria-label": label, "class": "node-focus" }, nodes);
      }
      var grp = el("g", { "class": cls.join(" "), "data-id": n.id, transform: "translate(" + (box.x - box.width / 2) + "," + (box.y - box.height / 2) + ")" }, parent);
      el("rect", { width: box.width, height: box.height, rx: 5 }, grp);
      var t1 = el("text", { x: 8, y: 15, "class": "label" }, grp);
      t1.textContent = n.label;
      var t2 = el("text", { x: 8, y: 30, "class": "version" }, grp);
      t2.textContent = (n.version || (n.missing ? "not in channel" : "")) + (n.head ? "  ★ head" : "") + (n.stranded ? "  stranded" : "");
      var tip = el("title", {}, grp);
      tip.textContent = short(n.name, 300) + (n.deprecated ? "\ndeprecated: " + short(n.deprecated, 300) : "") +
        (n.missing ? "\nnot in the channel" : "");
    });
    box.appendChild(svg);
    // Open on the head: scrolled to it when the graph outgrows its box.
    var head = data.nodes.filter(function (n) { return n.head; })[0];
    if (head) {
      var hb = g.node(head.id);
      box.scrollLeft = Math.max(0, hb.x - box.clientWidth / 2);
      box.scrollTop = Math.max(0, hb.y - box.clientHeight / 2);
    }
    box.dataset.drawn = "true";
  }

  // markCut makes each cut name focusable, so that the keyboard shows
  // its full text as the mouse does.
  function markCut() {
    document.querySelectorAll(".trunc, .clamp").forEach(function (e) {
      if (e.tagName !== "A" && (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1)) e.tabIndex = 0;
    });
    // A region that scrolls is reachable by keyboard to scroll it.
    document.querySelectorAll(".scroll, .wrap-scroll").forEach(function (e) {
      if (e.scrollWidth > e.clientWidth + 1) e.tabIndex = 0;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var t = document.getElementById("catalogs");
    if (t) pollCatalogs(t);
    var st = document.getElementById("status");
    if (st) pollStatus(st);
    // One channel that cannot be drawn leaves the others drawn.
    document.querySelectorAll(".graph[data-graph]").forEach(function (box) {
      try { drawGraph(box); } catch (err) {
        box.dataset.drawn = "error";
        console.error("graph not drawn: " + err);
      }
    });
    markCut();
    document.body.dataset.ready = "true";
  });
})();
