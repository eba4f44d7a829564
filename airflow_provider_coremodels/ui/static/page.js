(function () {
  var rows = Array.prototype.slice.call(document.querySelectorAll("#findings tbody tr.finding"));
  var count = document.getElementById("findings-count");
  var code = document.getElementById("code-filter");
  var waived = document.getElementById("show-waived");
  var boxes = Array.prototype.slice.call(document.querySelectorAll("input[name=severity]"));
  function apply() {
    var wanted = {};
    boxes.forEach(function (box) { wanted[box.value] = box.checked; });
    var shown = 0;
    rows.forEach(function (row) {
      var visible = wanted[row.dataset.severity] !== false
        && (!code || code.value === "" || row.dataset.code === code.value)
        && (!waived || waived.checked || row.dataset.waived !== "true");
      row.hidden = !visible;
      if (visible) { shown += 1; }
    });
    if (count) { count.textContent = "Showing " + shown + " of " + rows.length + " findings"; }
  }
  // Choosing a team shows its findings and its trend: the page is asked for again with ?team=.
  var team = document.getElementById("team-filter");
  if (team) { team.addEventListener("change", function () { team.form.submit(); }); }
  boxes.concat([code, waived]).forEach(function (control) {
    if (control) { control.addEventListener("change", apply); }
  });
  apply();
  // The picture: drag to pan, the wheel or the buttons to zoom, Fit to see all of it.
  var frame = document.querySelector(".picture");
  var svg = frame && frame.querySelector("svg.coremodels-lineage");
  var dragged = false;
  if (svg) {
    var full = svg.viewBox.baseVal;
    var width = full.width, height = full.height;
    var level = document.getElementById("zoom-level");
    var view = { x: 0, y: 0, scale: 1 };
    // Without this script the picture scrolls in its frame at its own size; with it, it zooms.
    frame.classList.add("zoomable");
    var tools = document.querySelector(".picture-tools");
    if (tools) { tools.hidden = false; }
    svg.setAttribute("width", "100%");
    svg.setAttribute("height", "100%");
    svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    var clamp = function (value, low, high) { return Math.max(low, Math.min(high, value)); };
    var fitScale = function () {
      return Math.min(1, frame.clientWidth / width, frame.clientHeight / height);
    };
    var show = function () {
      var w = frame.clientWidth / view.scale, h = frame.clientHeight / view.scale;
      // Keep some of the picture in the frame however far it is dragged.
      view.x = clamp(view.x, Math.min(0, width - w) - w / 2, Math.max(0, width - w) + w / 2);
      view.y = clamp(view.y, Math.min(0, height - h) - h / 2, Math.max(0, height - h) + h / 2);
      svg.setAttribute("viewBox", [view.x, view.y, w, h].map(function (n) { return n.toFixed(1); }).join(" "));
      frame.dataset.scale = view.scale.toFixed(3);
      if (level) { level.textContent = Math.round(view.scale * 100) + "%"; }
    };
    var fit = function () {
      view.scale = fitScale();
      view.x = (width - frame.clientWidth / view.scale) / 2;
      view.y = (height - frame.clientHeight / view.scale) / 2;
      if (view.x < 0) { view.x = 0; }
      if (view.y < 0) { view.y = 0; }
      show();
    };
    var zoomAt = function (factor, px, py) {
      var scale = clamp(view.scale * factor, Math.min(0.05, fitScale()), 4);
      view.x += px / view.scale - px / scale;
      view.y += py / view.scale - py / scale;
      view.scale = scale;
      show();
    };
    // As tall as the whole picture fitted to the frame's width, within 240 px and 75% of the window.
    var wide = Math.min(1, frame.clientWidth / width);
    frame.style.height = Math.round(clamp(height * wide, 240, window.innerHeight * 0.75)) + "px";
    fit();
    frame.addEventListener("wheel", function (event) {
      event.preventDefault();
      var box = frame.getBoundingClientRect();
      zoomAt(Math.exp(-event.deltaY * 0.0015), event.clientX - box.left, event.clientY - box.top);
    }, { passive: false });
    var start = null;
    frame.addEventListener("pointerdown", function (event) {
      if (event.button !== 0) { return; }
      start = { x: event.clientX, y: event.clientY, vx: view.x, vy: view.y };
      dragged = false;
    });
    frame.addEventListener("pointermove", function (event) {
      if (!start) { return; }
      var dx = event.clientX - start.x, dy = event.clientY - start.y;
      if (!dragged && Math.abs(dx) + Math.abs(dy) < 5) { return; }
      if (!dragged) { dragged = true; frame.setPointerCapture(event.pointerId); frame.classList.add("panning"); }
      view.x = start.vx - dx / view.scale;
      view.y = start.vy - dy / view.scale;
      show();
    });
    var stop = function () { start = null; frame.classList.remove("panning"); };
    frame.addEventListener("pointerup", stop);
    frame.addEventListener("pointercancel", stop);
    var centre = function () { return [frame.clientWidth / 2, frame.clientHeight / 2]; };
    var actions = {
      "in": function () { zoomAt(1.25, centre()[0], centre()[1]); },
      "out": function () { zoomAt(0.8, centre()[0], centre()[1]); },
      "fit": fit,
      "actual": function () { zoomAt(1 / view.scale, centre()[0], centre()[1]); }
    };
    Array.prototype.forEach.call(document.querySelectorAll("[data-zoom]"), function (button) {
      button.addEventListener("click", function () { actions[button.getAttribute("data-zoom")](); });
    });
    frame.addEventListener("keydown", function (event) {
      var keys = { "+": "in", "=": "in", "-": "out", "0": "fit", "1": "actual" };
      var step = 60 / view.scale;
      var moves = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
      if (keys[event.key]) { actions[keys[event.key]](); event.preventDefault(); }
      else if (moves[event.key]) {
        view.x += moves[event.key][0];
        view.y += moves[event.key][1];
        show();
        event.preventDefault();
      }
    });
    window.addEventListener("resize", show);
  }
  // Clicking a node of the picture draws what surrounds it (a drag that ends on one does not).
  Array.prototype.forEach.call(document.querySelectorAll(".picture g.node"), function (node) {
    node.addEventListener("click", function () {
      if (dragged) { dragged = false; return; }
      var params = new URLSearchParams(window.location.search);
      params.set("around", node.getAttribute("data-id"));
      if (!params.get("depth")) { params.set("depth", "__DEFAULT_DEPTH__"); }
      window.location.href = "?" + params.toString() + "#lineage";
    });
  });
})();
