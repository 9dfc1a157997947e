// Measures the page as the browser laid it out, after the page's own script ran and after
// the test's actions (run just before this, leaving anything they found in
// window.mnsimExtra), and leaves the findings as JSON in <pre id="mnsim-measure">:
// - outside: SVG text whose box leaves its chart's box (cut at the chart's edge);
// - unfit: a bar's label (g.hold) wider than its bar;
// - overlaps: a bar's label that a later bar of its lane covers;
// - page_overflow: pixels the page is wider than the window;
// - tables: each table's width and the width of its box.
(function () {
  var out = {
    outside: [], unfit: [], overlaps: [], page_overflow: 0, tables: [],
    extra: window.mnsimExtra || null
  };
  // Boxes on the screen (transforms, such as a rotated axis title, applied).
  var box = function (e) { return e.getBoundingClientRect(); };
  var svgs = document.querySelectorAll('svg');
  for (var i = 0; i < svgs.length; i++) {
    var svg = svgs[i], s = box(svg), id = svg.id || ('svg ' + i);
    var texts = svg.querySelectorAll('text');
    for (var j = 0; j < texts.length; j++) {
      var b = box(texts[j]);
      if (b.width === 0 && b.height === 0) continue;
      if (b.left < s.left - 0.5 || b.top < s.top - 0.5 ||
          b.right > s.right + 0.5 || b.bottom > s.bottom + 0.5) {
        out.outside.push(id + ': ' + texts[j].textContent);
      }
    }
    var holds = svg.querySelectorAll('g.hold');
    for (var j = 0; j < holds.length; j++) {
      var t = holds[j].querySelector('text');
      if (!t) continue;
      var r = box(holds[j].querySelector('rect')), tb = box(t);
      if (tb.left < r.left - 0.5 || tb.right > r.right + 0.5) {
        out.unfit.push(id + ': ' + t.textContent);
      }
      for (var k = j + 1; k < holds.length; k++) {
        var o = box(holds[k].querySelector('rect'));
        if (Math.abs(o.top - r.top) < 0.5 && o.left < tb.right - 0.5 && o.right > tb.left + 0.5) {
          out.overlaps.push(id + ': ' + t.textContent);
        }
      }
    }
  }
  var root = document.documentElement;
  out.page_overflow = root.scrollWidth - root.clientWidth;
  var tables = document.querySelectorAll('table');
  for (var i = 0; i < tables.length; i++) {
    out.tables.push({
      class: tables[i].className,
      width: tables[i].scrollWidth,
      room: tables[i].parentElement.clientWidth
    });
  }
  var pre = document.createElement('pre');
  pre.id = 'mnsim-measure';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
