package timeline

// pageHTML is the page: inline style, inline SVG, an inline script for the
// hover box and for jumping to evidence. Nothing is loaded from anywhere.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font: 13px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fff; }
header { padding: 10px 16px; border-bottom: 1px solid #ddd; }
h1 { font-size: 16px; margin: 0 0 4px; }
.summary { color: #555; }
.cmd { font-family: ui-monospace, monospace; background: #f4f4f4; padding: 2px 6px; user-select: all; }
#violations { margin: 8px 0 0; padding: 8px 12px; background: #fff0f0; border: 1px solid #e3a0a0; }
#violations h2 { font-size: 14px; margin: 0 0 4px; color: #a00; }
#violations li { margin: 2px 0; }
#violations a { color: #a00; cursor: pointer; text-decoration: underline; }
.ok { margin-top: 6px; color: #070; }
.legend span { margin-right: 14px; white-space: nowrap; }
.sw { display: inline-block; width: 10px; height: 10px; vertical-align: middle; margin-right: 4px; }
#scroll { overflow-x: auto; border-top: 1px solid #eee; }
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
.owed circle { fill: none; stroke: #d00000; stroke-width: 2; stroke-dasharray: 3 2; }
.owed text { fill: #d00000; font-weight: bold; }
.owed.other circle { stroke: #ef8f00; } .owed.other text { fill: #b86e00; font-weight: normal; }
details { margin-top: 4px; } summary { cursor: pointer; color: #a00; }
.evline { stroke: #d00000; stroke-dasharray: 4 3; stroke-width: 1; }
.flash { animation: flash 1s 3; }
@keyframes flash { 50% { opacity: .1; } }
#tip { position: fixed; display: none; max-width: 720px; background: #222; color: #fff; padding: 6px 8px;
  border-radius: 4px; font: 12px ui-monospace, monospace; pointer-events: none; white-space: pre-wrap; z-index: 9; }
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<div class="summary">{{.Summary}}</div>
{{if .Command}}<div>replay: <span class="cmd">{{.Command}}</span></div>{{end}}
{{if .Violations}}<div id="violations"><h2>Violations ({{add (len .Violations) (len .More)}})</h2><ol>
{{range .Violations}}<li>{{.Text}}{{range .Lines}} <a data-goto="{{.}}">line {{.}}</a>{{end}}</li>
{{end}}</ol>{{if .More}}<details><summary>and {{len .More}} more</summary><ol start="6">
{{range .More}}<li>{{.Text}}{{range .Lines}} <a data-goto="{{.}}">line {{.}}</a>{{end}}</li>
{{end}}</ol></details>{{end}}</div>{{else}}<div class="ok">No violation: every property held.</div>{{end}}
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
<div id="scroll">
<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}">
<defs><marker id="head" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#7a93bd"/></marker></defs>
{{range .Axis}}<line class="grid" x1="{{f .X}}" x2="{{f .X}}" y1="20" y2="{{$.Height}}"/><text x="{{f .X}}" y="14">{{.Label}}</text>
{{end}}{{range .Lanes}}<rect class="lane-{{.Kind}}" x="0" y="{{.Y}}" width="{{$.Width}}" height="26"/><text class="lane-label" x="4" y="{{add .Y 17}}">{{.Name}}</text>
{{end}}{{range $i, $m := .Marks}}{{if eq .Shape "bar"}}<rect class="{{.Class}}{{if eq .Evidence 1}} evidence{{else if eq .Evidence 2}} evidence2{{end}}" x="{{f .X}}" y="{{.Y}}" width="{{f (sub .X2 .X)}}" height="{{.H}}" data-l="{{.Line}}" data-t="{{.Text}}"/>
{{else if eq .Shape "dot"}}<circle class="{{.Class}}{{if eq .Evidence 1}} evidence{{else if eq .Evidence 2}} evidence2{{end}}" cx="{{f .X}}" cy="{{.Y}}" r="{{if .Evidence}}6{{else}}3.5{{end}}" data-l="{{.Line}}" data-t="{{.Text}}"/>
{{else if eq .Shape "arrow"}}<line class="{{.Class}}{{if eq .Evidence 1}} evidence{{else if eq .Evidence 2}} evidence2{{end}}" x1="{{f .X}}" y1="{{.Y}}" x2="{{f .X2}}" y2="{{.Y2}}" data-l="{{.Line}}" data-t="{{.Text}}"/>
{{else if eq .Shape "span"}}<rect class="{{.Class}}{{if eq .Evidence 1}} evidence{{else if eq .Evidence 2}} evidence2{{end}}" x="{{f .X}}" y="{{.Y}}" width="{{f (sub .X2 .X)}}" height="{{.H}}" data-l="{{.Line}}" data-t="{{.Text}}"/>
{{else if eq .Shape "owed"}}<g class="owed{{if eq .Evidence 2}} other{{end}}" data-l="0" data-t="{{.Text}}"><circle cx="{{f .X}}" cy="{{.Y}}" r="7" data-l="0" data-t="{{.Text}}"/><text x="{{f (sub .X -10)}}" y="{{add .Y -9}}">{{.Label}}</text></g>
{{else}}<line class="{{.Class}}{{if eq .Evidence 1}} evidence{{else if eq .Evidence 2}} evidence2{{end}}" x1="{{f .X}}" x2="{{f .X}}" y1="{{.Y}}" y2="{{add .Y 26}}" data-l="{{.Line}}" data-t="{{.Text}}"/>
{{end}}{{if eq .Evidence 1}}<line class="evline" x1="{{f .X}}" x2="{{f .X}}" y1="20" y2="{{$.Height}}"/>
{{end}}{{end}}</svg>
</div>
<div id="tip"></div>
<script>
(function () {
  "use strict";
  var lines = {{.Lines}};
  var tip = document.getElementById("tip");
  var svg = document.querySelector("svg");
  function show(ev) {
    var el = ev.target;
    if (!el.dataset || el.dataset.t === undefined) { return; }
    var l = el.dataset.l, s = el.dataset.t;
    if (l && l !== "0") { s += "\ntrace line " + l + (lines[l] ? ":\n" + lines[l] : ""); }
    tip.textContent = s;
    tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - 740) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  }
  svg.addEventListener("mouseover", show);
  svg.addEventListener("mousemove", show);
  svg.addEventListener("mouseout", function () { tip.style.display = "none"; });
  document.querySelectorAll("a[data-goto]").forEach(function (a) {
    a.addEventListener("click", function () {
      var el = svg.querySelector('[data-l="' + a.dataset.goto + '"]');
      if (!el) { return; }
      var box = el.getBBox();
      document.getElementById("scroll").scrollLeft = Math.max(box.x - 200, 0);
      el.classList.add("flash");
      setTimeout(function () { el.classList.remove("flash"); }, 3200);
    });
  });
  document.getElementById("scroll").scrollLeft = {{.FocusX}};
  document.body.dataset.ready = "yes";
})();
</script>
</body>
</html>
`
