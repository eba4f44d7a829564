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
  boxes.concat([code, waived]).forEach(function (control) {
    if (control) { control.addEventListener("change", apply); }
  });
  apply();
  // Clicking a node of the picture draws what surrounds it.
  Array.prototype.forEach.call(document.querySelectorAll(".picture g.node"), function (node) {
    node.addEventListener("click", function () {
      var params = new URLSearchParams(window.location.search);
      params.set("around", node.getAttribute("data-id"));
      if (!params.get("depth")) { params.set("depth", "__DEFAULT_DEPTH__"); }
      window.location.href = "?" + params.toString() + "#lineage";
    });
  });
})();
