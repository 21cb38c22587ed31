package timeline

// pageHTML is the page: inline style, inline SVG, an inline script that
// places the marks for the window shown (zoom and pan), lays out labels,
// draws the time axis and shows the hover box. Nothing is loaded from
// anywhere.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
html, body { height: 100%; }
body { font: 13px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fff; display: flex; flex-direction: column; }
header { padding: 8px 16px; border-bottom: 1px solid #ddd; flex: none; }
h1 { font-size: 16px; margin: 0 0 2px; overflow-wrap: anywhere; }
.summary { color: #555; } .summary b { color: #222; }
.cmd { font-family: ui-monospace, monospace; background: #f4f4f4; padding: 2px 6px; user-select: all; overflow-wrap: anywhere; }
.ok { margin-top: 4px; color: #070; }
.legend span { margin-right: 14px; white-space: nowrap; }
.sw { display: inline-block; width: 10px; height: 10px; vertical-align: middle; margin-right: 4px; }
#wrap { display: flex; flex: 1; min-height: 0; }
#violations { flex: none; width: 300px; overflow-y: auto; padding: 6px 10px; background: #fff6f6; border-right: 1px solid #e3a0a0; }
#violations h2 { font-size: 14px; margin: 0 0 4px; color: #a00; }
#violations summary { cursor: pointer; color: #a00; }
#violations .n { color: #fff; background: #a00; border-radius: 8px; padding: 0 6px; font-size: 11px; }
#violations ol { margin: 2px 0 6px; padding-left: 34px; }
#violations li { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
#violations a { color: #a00; cursor: pointer; text-decoration: underline; }
#violations a.on { font-weight: bold; }
#tl { flex: 1; min-width: 0; display: flex; flex-direction: column; }
#toolbar { padding: 4px 8px; display: flex; gap: 6px; align-items: center; flex: none; }
#toolbar button { font: inherit; min-width: 28px; }
#range { font-family: ui-monospace, monospace; margin-left: 6px; }
.hint { color: #888; margin-left: auto; }
.row { display: flex; flex: none; }
.side { flex: none; width: {{.LabelW}}px; font-size: 11px; color: #777; text-align: right; padding-right: 4px; box-sizing: border-box; }
#overview { flex: 1; min-width: 0; display: block; height: 40px; background: #fafafa; border: 1px solid #ddd; cursor: pointer; }
#overview .bar { fill: #9fb3d6; } #overview .ovfault { fill: #e57373; opacity: .6; }
#overview .ovev { fill: #ef8f00; } #overview .ovev.first { fill: #d00000; }
#brush { fill: #4f7fcf; fill-opacity: .12; stroke: #2a4f99; stroke-width: 1.5; }
#lanes { flex: 1; min-height: 0; overflow-y: auto; display: flex; align-items: flex-start; border-top: 1px solid #eee; }
#names { flex: none; }
#main { flex: 1; min-width: 0; display: block; cursor: grab; user-select: none; }
#main.dragging { cursor: grabbing; }
svg text { font: 11px ui-monospace, monospace; fill: #333; }
.lane-redis { fill: #fbf3e6; } .lane-node { fill: #eef3fb; } .lane-client { fill: #f7f7f7; }
.grid { stroke: #e4e4e4; }
.call { fill: #8aa6d6; } .call.send { fill: #4f7fcf; } .call.join { fill: #6ab07a; } .call.leave { fill: #c9a13b; }
.call.connect { fill: #9b87c9; } .call.disconnect { fill: #b7b7b7; } .call.failed { fill: #fff; stroke: #c33; stroke-width: 1.5; }
.call.forged-send, .call.forged-join, .call.forged-leave, .call.forged-create-room, .call.forged-connect,
.call.forged-relay, .call.forged-relay-bulk, .call.forged-relay-stream { fill: #555; }
.deliver.live { fill: #2a7a3a; } .deliver.fromlog { fill: #fff; stroke: #2a7a3a; stroke-width: 1.5; }
.accepted { fill: #4f7fcf; }
.relay { stroke: #7a93bd; stroke-width: 1; opacity: .55; marker-end: url(#head); }
.fault { fill: #e57373; opacity: .22; } .fault.op { stroke: #c62828; stroke-width: 2; opacity: .9; }
.panic { stroke: #000; stroke-width: 3; }
.evidence { stroke: #d00000 !important; stroke-width: 3 !important; opacity: 1 !important; }
.evidence2 { stroke: #ef8f00 !important; stroke-width: 2 !important; opacity: 1 !important; }
.picked { stroke: #7b1fa2 !important; stroke-width: 4 !important; opacity: 1 !important; }
.owed circle { fill: none; stroke: #d00000; stroke-width: 2; stroke-dasharray: 3 2; }
.owed text { fill: #d00000; font-weight: bold; }
.owed.other circle { stroke: #ef8f00; } .owed.other text { fill: #b86e00; font-weight: normal; }
.owed.picked circle { stroke: #7b1fa2; } .owed.picked text { fill: #7b1fa2; }
.olabel.hidden { visibility: hidden; }
.evline { stroke: #d00000; stroke-dasharray: 4 3; stroke-width: 1; }
.flash { animation: flash 1s 3; }
@keyframes flash { 50% { opacity: .1; } }
#tip { position: fixed; display: none; max-width: 720px; background: #222; color: #fff; padding: 6px 8px;
  border-radius: 4px; font: 12px ui-monospace, monospace; pointer-events: none; white-space: pre-wrap; overflow-wrap: anywhere; z-index: 9; }
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<div class="summary">mode {{.Mode}} · <b data-count="users">{{.Counts.Users}}</b> users · <b data-count="acked">{{.Counts.Acked}}</b> sends acked · <b data-count="deliveries">{{.Counts.Deliveries}}</b> deliveries ({{.Counts.Live}} live, {{.Counts.FromLog}} from the log) · <b data-count="faults">{{.Counts.Faults}}</b> faults injected · {{.Verdict}}</div>
{{if .Command}}<div>replay: <span class="cmd">{{.Command}}</span></div>{{end}}
{{if not .Groups}}<div class="ok">No violation: every property held.</div>{{end}}
<div class="legend">
<span><i class="sw" style="background:#4f7fcf"></i>send</span>
<span><i class="sw" style="background:#6ab07a"></i>join</span>
<span><i class="sw" style="background:#c9a13b"></i>leave</span>
<span><i class="sw" style="background:#9b87c9"></i>connect</span>
<span><i class="sw" style="background:#2a7a3a;border-radius:5px"></i>delivered live</span>
<span><i class="sw" style="border:1.5px solid #2a7a3a;border-radius:5px"></i>delivered from the log</span>
<span><i class="sw" style="background:#7a93bd"></i>relay (arrow)</span>
<span><i class="sw" style="background:#e57373;opacity:.4"></i>fault</span>
<span><i class="sw" style="background:#d00000"></i>evidence</span>
</div>
</header>
<div id="wrap">
{{if .Groups}}<aside id="violations"><h2>Violations ({{.Total}})</h2>
{{range $i, $g := .Groups}}<details class="group" data-property="{{.Property}}"{{if eq $i 0}} open{{end}}><summary><b>{{.Property}}</b> <span class="n">{{len .Items}}</span></summary><ol>
{{range .Items}}<li value="{{.N}}"><a tabindex="0" data-v="{{.N}}"{{if .Window.OK}} data-win="{{.Window.Attr}}"{{end}} data-lines="{{.Lines}}" title="{{.Full}}">{{.Short}}</a></li>
{{end}}</ol></details>
{{end}}</aside>
{{end}}<div id="tl">
<div id="toolbar"><button data-zoom="out" title="zoom out (-)">−</button><button data-zoom="in" title="zoom in (+)">+</button><button data-zoom="fit" title="the whole run (0)">fit</button>{{if .Groups}}<button data-zoom="first" title="the first violation's evidence (1)">first violation</button>{{end}}<span id="range"></span><span class="hint">wheel: zoom · drag: pan · click or drag the strip: move</span></div>
<div class="row"><div class="side">whole run</div><svg id="overview" viewBox="0 0 1000 40" preserveAspectRatio="none" xmlns="http://www.w3.org/2000/svg">
{{range .Overview.Bars}}<rect class="bar" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"/>{{end}}
{{range .Overview.Faults}}<rect class="ovfault" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"/>{{end}}
{{range .Overview.Evidence}}<rect class="ovev{{if .First}} first{{end}}" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}" vector-effect="non-scaling-stroke"/>{{end}}
<rect id="brush" x="0" y="0.5" width="1000" height="39" vector-effect="non-scaling-stroke"/></svg></div>
<div id="lanes">
<svg id="names" xmlns="http://www.w3.org/2000/svg" width="{{.LabelW}}" height="{{.Height}}">
{{range .Lanes}}<rect class="lane-{{.Kind}}" x="0" y="{{.Y}}" width="{{$.LabelW}}" height="26"/><text class="lane-label" x="4" y="{{add .Y 17}}">{{.Label}}<title>{{.Name}}</title></text>
{{end}}</svg>
<svg id="main" xmlns="http://www.w3.org/2000/svg" height="{{.Height}}" data-focus="{{.Focus.Attr}}" data-end="{{f .End}}">
<defs><marker id="head" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#7a93bd"/></marker></defs>
{{range .Lanes}}<rect class="lane-{{.Kind}}" x="0" y="{{.Y}}" width="100%" height="26"/>
{{end}}<g id="axis"></g>
<g id="marks">
{{range $i, $m := .Marks}}{{if eq .Shape "bar"}}<rect class="{{.Class}}{{if eq .Evidence 1}} evidence{{else if eq .Evidence 2}} evidence2{{end}}" data-a="{{f .X}}" data-b="{{f .X2}}" y="{{.Y}}" height="{{.H}}" data-l="{{.Line}}" data-t="{{.Text}}"/>
{{else if eq .Shape "dot"}}<circle class="{{.Class}}{{if eq .Evidence 1}} evidence{{else if eq .Evidence 2}} evidence2{{end}}" data-a="{{f .X}}" cy="{{.Y}}" r="{{if .Evidence}}6{{else}}3.5{{end}}" data-l="{{.Line}}" data-t="{{.Text}}"/>
{{else if eq .Shape "arrow"}}<line class="{{.Class}}{{if eq .Evidence 1}} evidence{{else if eq .Evidence 2}} evidence2{{end}}" data-a="{{f .X}}" data-b="{{f .X2}}" y1="{{.Y}}" y2="{{.Y2}}" data-l="{{.Line}}" data-t="{{.Text}}"/>
{{else if eq .Shape "span"}}<rect class="{{.Class}}{{if eq .Evidence 1}} evidence{{else if eq .Evidence 2}} evidence2{{end}}" data-a="{{f .X}}" data-b="{{f .X2}}" y="{{.Y}}" height="{{.H}}" data-l="{{.Line}}" data-t="{{.Text}}"/>
{{else if eq .Shape "owed"}}<g class="owed{{if eq .Evidence 2}} other{{end}}" data-v="{{add .Viol 1}}" data-l="0" data-t="{{.Text}}"><circle data-a="{{f .X}}" cy="{{.Y}}" r="7" data-l="0" data-t="{{.Text}}"/><text class="olabel" data-a="{{f .X}}" y="{{add .Y -9}}" data-l="0" data-t="{{.Text}}">{{.Label}}<title>{{.Text}}</title></text></g>
{{else}}<line class="{{.Class}}{{if eq .Evidence 1}} evidence{{else if eq .Evidence 2}} evidence2{{end}}" data-a="{{f .X}}" y1="{{.Y}}" y2="{{add .Y 26}}" data-l="{{.Line}}" data-t="{{.Text}}"/>
{{end}}{{if eq .Evidence 1}}<line class="evline" data-a="{{f .X}}" y1="16" y2="{{$.Height}}"/>
{{end}}{{end}}</g>
</svg>
</div>
</div>
</div>
<div id="tip"></div>
<script>
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var lines = {{.Lines}};
  var main = document.getElementById("main");
  var ov = document.getElementById("overview");
  var brush = document.getElementById("brush");
  var axis = document.getElementById("axis");
  var range = document.getElementById("range");
  var tip = document.getElementById("tip");
  var height = +main.getAttribute("height");
  var end = Math.max(+main.dataset.end, 1);
  var focus = main.dataset.focus.split(" ").map(Number);
  var layer = document.getElementById("marks");
  var marks = Array.prototype.slice.call(layer.querySelectorAll("[data-a]"));
  var view = { a: 0, b: end };
  var minSpan = 5; // milliseconds: the closest zoom

  // Labels keep their drawn length, measured once while all are shown.
  var labels = Array.prototype.slice.call(main.querySelectorAll("text.olabel")).map(function (el) {
    var len = el.getComputedTextLength ? el.getComputedTextLength() : el.textContent.length * 7;
    el.dataset.w = String(Math.ceil(len));
    return { el: el, len: Math.ceil(len), first: el.parentNode.classList.contains("other") ? 1 : 0, y: el.getAttribute("y") };
  });

  // width is the drawing's, measured once per size of the window (a
  // measurement after the marks moved would cost a layout).
  var measured = 0;
  function width() {
    if (!measured) { measured = Math.max(main.getBoundingClientRect().width, 1); }
    return measured;
  }
  window.addEventListener("resize", function () { measured = 0; redraw(); });
  function num(x) { return String(Math.round(x * 10) / 10); }
  function pad(n, w) { n = String(n); while (n.length < w) { n = "0" + n; } return n; }
  function clock(ms) {
    var t = Math.round(ms);
    return pad(Math.floor(t / 60000), 2) + ":" + pad(Math.floor(t / 1000) % 60, 2) + "." + pad(t % 1000, 3);
  }

  // show sets the window to a..b (milliseconds), kept inside the run.
  function show(a, b) {
    var span = Math.min(Math.max(b - a, minSpan), end);
    a = Math.min(Math.max(a, 0), end - span);
    view.a = a;
    view.b = a + span;
  }

  // place puts every mark where the window puts it: marks move and
  // stretch, but nothing is scaled, so dots stay round and text readable.
  // A pan keeps the zoom: the layer of marks shifts, and they stay put.
  var placed = { a: 0, k: 0, w: 0 };
  function place() {
    var w = width(), k = w / (view.b - view.a);
    if (Math.abs(k - placed.k) > k * 1e-9 || w !== placed.w) {
      placeAll(view.a, k);
      placed = { a: view.a, k: k, w: w };
    }
    var dx = (placed.a - view.a) * k;
    layer.setAttribute("transform", "translate(" + num(dx) + " 0)");
    ticks(k);
    layLabels(w, dx);
    brush.setAttribute("x", num(view.a / end * 1000));
    brush.setAttribute("width", num(Math.max((view.b - view.a) / end * 1000, 0.5)));
    range.textContent = clock(view.a) + " – " + clock(view.b);
    main.dataset.view = num(view.a) + " " + num(view.b);
    main.dataset.width = num(w);
    main.dataset.shift = num(dx);
  }

  function placeAll(a0, k) {
    marks.forEach(function (el) {
      var xa = (+el.dataset.a - a0) * k;
      var xb = el.dataset.b === undefined ? xa : (+el.dataset.b - a0) * k;
      switch (el.tagName) {
      case "rect":
        el.setAttribute("x", num(xa));
        el.setAttribute("width", num(Math.max(xb - xa, el.classList.contains("call") ? 3 : 2)));
        break;
      case "circle":
        el.setAttribute("cx", num(xa));
        break;
      case "text":
        el.setAttribute("x", num(xa + 9));
        break;
      default:
        el.setAttribute("x1", num(xa));
        el.setAttribute("x2", num(xb));
      }
    });
  }

  // ticks draws the time axis: a tick at least 90 pixels from the next.
  var steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000, 120000, 300000, 600000];
  function ticks(k) {
    while (axis.firstChild) { axis.removeChild(axis.firstChild); }
    var step = steps[steps.length - 1];
    for (var i = 0; i < steps.length; i++) {
      if (steps[i] * k >= 90) { step = steps[i]; break; }
    }
    for (var t = Math.ceil(view.a / step) * step; t <= view.b; t += step) {
      var x = num((t - view.a) * k);
      var l = document.createElementNS(NS, "line");
      l.setAttribute("class", "grid");
      l.setAttribute("x1", x); l.setAttribute("x2", x);
      l.setAttribute("y1", "16"); l.setAttribute("y2", String(height));
      var s = document.createElementNS(NS, "text");
      s.setAttribute("x", num((t - view.a) * k + 2)); s.setAttribute("y", "12");
      s.textContent = clock(t);
      axis.appendChild(l); axis.appendChild(s);
    }
  }

  // layLabels shows the labels that fit: on each lane, the first
  // violation's first, then the others in order, each only where it is
  // wholly on the screen and overlaps no label already shown. A hidden
  // label's mark still tells everything on hover.
  function layLabels(w, dx) {
    var shown = {};
    labels.slice().sort(function (p, q) { return p.first - q.first; }).forEach(function (p) {
      var x = +p.el.getAttribute("x") + dx, row = shown[p.y] = shown[p.y] || [];
      var fits = x >= 0 && x + p.len <= w && row.every(function (r) { return x + p.len + 6 <= r[0] || x >= r[1] + 6; });
      p.el.classList.toggle("hidden", !fits);
      if (fits) { row.push([x, x + p.len]); }
    });
  }

  // redraw places the marks once per frame however many events ask; the
  // timer stands in for frames a hidden or headless page never gets.
  var queued = false;
  function redraw() {
    if (queued) { return; }
    queued = true;
    var run = function () { if (queued) { queued = false; place(); } };
    requestAnimationFrame(run);
    setTimeout(run, 40);
  }
  function zoom(f, t) {
    if (t === undefined) { t = (view.a + view.b) / 2; }
    show(t - (t - view.a) * f, t + (view.b - t) * f);
    redraw();
  }
  function timeAt(el, clientX, a, b) {
    var r = el.getBoundingClientRect();
    return a + (clientX - r.left) / Math.max(r.width, 1) * (b - a);
  }

  main.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var span = view.b - view.a;
    if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      var d = (ev.deltaX || ev.deltaY) / width() * span;
      show(view.a + d, view.b + d);
      redraw();
      return;
    }
    zoom(ev.deltaY > 0 ? 1.25 : 0.8, timeAt(main, ev.clientX, view.a, view.b));
  }, { passive: false });

  var drag = null;
  main.addEventListener("mousedown", function (ev) {
    drag = { x: ev.clientX, a: view.a, b: view.b, el: main };
    main.classList.add("dragging");
    ev.preventDefault();
  });
  function center(ev) {
    var t = timeAt(ov, ev.clientX, 0, end), half = (view.b - view.a) / 2;
    show(t - half, t + half);
    redraw();
  }
  ov.addEventListener("mousedown", function (ev) { drag = { el: ov }; center(ev); ev.preventDefault(); });
  window.addEventListener("mousemove", function (ev) {
    if (!drag) { return; }
    if (drag.el === ov) { center(ev); return; }
    var d = (ev.clientX - drag.x) / width() * (drag.b - drag.a);
    show(drag.a - d, drag.b - d);
    redraw();
  });
  window.addEventListener("mouseup", function () { drag = null; main.classList.remove("dragging"); });

  function first() { show(focus[0], focus[1]); redraw(); }
  document.querySelectorAll("button[data-zoom]").forEach(function (b) {
    b.addEventListener("click", function () {
      switch (b.dataset.zoom) {
      case "in": zoom(0.5); break;
      case "out": zoom(2); break;
      case "fit": show(0, end); redraw(); break;
      default: first();
      }
    });
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) { return; } // the browser's own
    var span = view.b - view.a;
    switch (ev.key) {
    case "+": case "=": zoom(0.5); break;
    case "-": zoom(2); break;
    case "0": show(0, end); redraw(); break;
    case "1": first(); break;
    case "ArrowLeft": show(view.a - span / 5, view.b - span / 5); redraw(); break;
    case "ArrowRight": show(view.a + span / 5, view.b + span / 5); redraw(); break;
    }
  });

  // A violation in the list shows its window and picks out its evidence.
  function pick(a) {
    document.querySelectorAll(".picked").forEach(function (el) { el.classList.remove("picked"); });
    document.querySelectorAll("#violations a.on").forEach(function (el) { el.classList.remove("on"); });
    a.classList.add("on");
    var ls = a.dataset.lines ? a.dataset.lines.split(" ") : [];
    ls.forEach(function (l) {
      main.querySelectorAll('[data-l="' + l + '"]').forEach(function (el) { el.classList.add("picked"); });
    });
    main.querySelectorAll('g.owed[data-v="' + a.dataset.v + '"]').forEach(function (el) { el.classList.add("picked"); });
    if (a.dataset.win) {
      var w = a.dataset.win.split(" ").map(Number);
      show(w[0], w[1]);
      place();
    }
  }
  document.querySelectorAll("#violations a[data-v]").forEach(function (a) {
    a.addEventListener("click", function () { pick(a); });
    a.addEventListener("keydown", function (ev) { if (ev.key === "Enter") { pick(a); } });
  });

  function hover(ev) {
    var el = ev.target;
    if (!el.dataset || el.dataset.t === undefined) { return; }
    var l = el.dataset.l, s = el.dataset.t;
    if (l && l !== "0") { s += "\ntrace line " + l + (lines[l] ? ":\n" + lines[l] : ""); }
    tip.textContent = s;
    tip.style.display = "block";
    tip.style.left = Math.max(Math.min(ev.clientX + 12, window.innerWidth - 740), 0) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  }
  main.addEventListener("mouseover", hover);
  main.addEventListener("mousemove", hover);
  main.addEventListener("mouseout", function () { tip.style.display = "none"; });

  // The page opens on the first violation's evidence (the whole run
  // without one), its lane scrolled into sight, and says for tests how
  // much of that evidence the screen shows.
  show(focus[0], focus[1]);
  place();
  var ev1 = main.querySelector(".evidence");
  if (ev1 && ev1.scrollIntoView) { ev1.scrollIntoView({ block: "nearest", inline: "nearest" }); }
  var box = main.getBoundingClientRect(), seen = 0, all = main.querySelectorAll(".evidence");
  all.forEach(function (el) {
    var r = el.getBoundingClientRect();
    if (r.right >= box.left && r.left <= box.right && r.bottom >= 0 && r.top <= window.innerHeight) { seen++; }
  });
  document.body.dataset.evidenceInView = seen + "/" + all.length;
  document.body.dataset.ready = "yes";
})();
</script>
</body>
</html>
`
