// report_page.js - What tests/test_report.sh reads of the report page in Chromium: one
// expression for tests/cdp.js (CDP_EVAL), whose value is a JSON string:
//   title       the h1's words;  versions: the line that names every version on the page
//   charts      the measure of every bar chart drawn (data-measure)
//   labels      {measure: [line labels, in order]}
//   bar         {"measure line group": width in px of that line's first bar, or 0}
//   nm          {"measure line group": 1 when the line says "not measured"}
//   declared    ["measure line group"] of the bars outlined as the row's own measure
//   short       [lines of the sales/s chart drawn as too short to be a rate]
//   marks       every kind of mark the SVGs draw (class m-KIND), sorted; moment_marks:
//               the moments'
//   unlegended  ["figure: mark"] for every mark (class m-*) an SVG draws without an entry
//               in its figure's legend (a moment's: the moments' legend)
//   lanes       [[lane names] per moment chart, in the order drawn]
//   font        {px, at}: the smallest text on the page as drawn (an SVG's text scaled
//               with its SVG), and where
//   page_w      the page's width;  moment_w: the widest moment chart's width
(() => {
  const key = (el) => [el.closest("svg").dataset.measure, el.dataset.line, el.dataset.group].join(" ");
  const out = { title: document.querySelector("h1").textContent,
                versions: (document.getElementById("versions") || {}).textContent || "",
                charts: [], labels: {}, bar: {}, nm: {}, declared: [], short: [], unlegended: [],
                lanes: [], font: { px: 1e9, at: "" }, marks: [], moment_marks: [],
                page_w: document.documentElement.scrollWidth, moment_w: 0 };
  document.querySelectorAll("svg.bars").forEach((svg) => {
    const m = svg.dataset.measure;
    out.charts.push(m);
    out.labels[m] = [...svg.querySelectorAll("text.label")].map((t) => t.textContent);
  });
  document.querySelectorAll("svg.bars rect[data-line]").forEach((r) => {
    const k = key(r);
    if (r.classList.contains("m-nm")) out.nm[k] = 1;
    else if (r.classList.contains("m-short")) out.short.push(r.dataset.line);
    else if (!(k in out.bar)) out.bar[k] = r.getBoundingClientRect().width;
    if (r.classList.contains("m-declared")) out.declared.push(k);
  });
  const legendOf = (svg) => {
    const fig = svg.closest("figure");
    const where = svg.classList.contains("moment") ? document : fig;
    return new Set([...where.querySelectorAll(".legend li")].map((li) => li.dataset.mark));
  };
  const all = new Set(), moment = new Set();
  document.querySelectorAll("svg:not(.sw)").forEach((svg) => {
    const legend = legendOf(svg);
    const cap = (svg.closest("figure")?.querySelector("figcaption")?.textContent || "").slice(0, 40);
    const marks = new Set();
    svg.querySelectorAll("[class]").forEach((el) =>
      el.classList.forEach((c) => { if (c.startsWith("m-")) marks.add(c.slice(2)); }));
    marks.forEach((m) => {
      all.add(m);
      if (svg.classList.contains("moment")) moment.add(m);
      if (!legend.has(m)) out.unlegended.push(cap + ": " + m);
    });
  });
  out.marks = [...all].sort();
  out.moment_marks = [...moment].sort();
  document.querySelectorAll("svg.moment").forEach((svg) => {
    out.lanes.push([...svg.querySelectorAll("text.lane")].map((t) => t.lastChild.textContent));
    out.moment_w = Math.max(out.moment_w, Math.round(svg.getBoundingClientRect().width));
  });
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || el.closest("title, style")) continue;
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    let px = parseFloat(getComputedStyle(el).fontSize);
    const svg = el.closest("svg");
    if (svg && svg.viewBox.baseVal && svg.viewBox.baseVal.width)
      px *= svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    if (px < out.font.px) out.font = { px: Math.round(px * 10) / 10, at: el.tagName + " " + n.textContent.trim().slice(0, 30) };
  }
  return JSON.stringify(out);
})()
