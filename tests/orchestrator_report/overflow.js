// Appended to a test copy of report.html (the report has no script):
// lists what does not fit, as JSON in a pre#overflow-result with the
// page's height in data-height, which chromium --dump-dom prints. It
// removes its own script element, so the rest of the dumped DOM is the
// page's.
(function () {
  var me = document.currentScript;
  var bad = [];
  function name(el) {
    return el.tagName + (el.id ? "#" + el.id : "") +
      (el.getAttribute("class") ? "." + el.getAttribute("class") : "") + ": " +
      (el.textContent || "").slice(0, 60);
  }
  var doc = document.documentElement;
  if (doc.scrollWidth > window.innerWidth + 1)
    bad.push("page wider than the window: " + doc.scrollWidth + " > " + window.innerWidth);
  document.querySelectorAll("body *").forEach(function (el) {
    if (el.closest("svg") || el.clientWidth === 0) return;
    if (el.scrollWidth > el.clientWidth + 1)
      bad.push("spills (" + el.scrollWidth + " > " + el.clientWidth + "): " + name(el));
  });
  // Text of an SVG cell stays inside the cell's rectangle.
  document.querySelectorAll("g.cell").forEach(function (g) {
    var r = g.querySelector("rect"), t = g.querySelector("text");
    if (!r || !t) return;
    var rb = r.getBBox(), tb = t.getBBox();
    if (tb.x < rb.x - 0.5 || tb.x + tb.width > rb.x + rb.width + 0.5)
      bad.push("text out of its cell (" + tb.x.toFixed(1) + "+" + tb.width.toFixed(1) +
               " vs " + rb.x.toFixed(1) + "+" + rb.width.toFixed(1) + "): " + name(t));
  });
  // Any SVG text stays inside its drawing.
  document.querySelectorAll("svg").forEach(function (svg) {
    var vb = svg.viewBox.baseVal;
    if (!vb || !vb.width) return;
    svg.querySelectorAll("text").forEach(function (t) {
      var b = t.getBBox();
      if (b.x < -0.5 || b.x + b.width > vb.width + 0.5 || b.y < -0.5 ||
          b.y + b.height > vb.height + 0.5)
        bad.push("text outside its svg: " + name(t));
    });
  });
  var pre = document.createElement("pre");
  pre.id = "overflow-result";
  pre.setAttribute("data-height", Math.ceil(doc.scrollHeight));
  pre.textContent = JSON.stringify(bad);
  if (me) me.remove();
  document.body.appendChild(pre);
})();
