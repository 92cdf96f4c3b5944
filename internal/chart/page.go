package chart

import "html/template"

// CSS styles the charts and tables of a page, on screen and in print:
// every chart and table row stays whole on a page, colours print, and
// the sort hints and hover-only marks leave.
const CSS template.CSS = `
figure.chart{margin:12px 0 20px;break-inside:avoid;page-break-inside:avoid}
figure.chart figcaption{font-weight:600;font-size:14px;margin-bottom:4px}
.legend{font-size:12px;margin:2px 0 6px}
.legend .key{display:inline-block;margin-right:14px;white-space:nowrap}
.legend .sw{vertical-align:-2px;margin-right:4px}
svg.plot{display:block;max-width:100%;height:auto}
svg.plot text{font-size:12px;fill:#1d2430}
svg.plot text.tick{fill:#555}
svg.plot text.axis-title{font-weight:600;fill:#333}
svg.plot text.series-label{fill:#556;font-size:11px}
svg.plot text.category{font-weight:600}
svg.plot text.summary{font-size:11px}
svg.plot text.summary tspan.value{font-variant-numeric:tabular-nums}
svg.plot text.inlabel{font-size:11px;font-weight:600}
svg.plot text.name{font-size:11px}
svg.plot text.value{font-variant-numeric:tabular-nums}
svg.plot text.value.big{font-size:13px;font-weight:600}
svg.plot line.grid{stroke:#e6e8eb}
svg.plot line.axis{stroke:#555}
svg.plot rect.track{fill:#f3f5f7}
svg.plot rect.hover{fill:transparent}
svg.plot rect.hover:hover{fill:rgba(0,0,0,.06)}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:16px}
table.data{border-collapse:collapse;font-size:12px;margin:6px 0 16px}
table.data th,table.data td{padding:3px 4px 3px 6px;border-bottom:1px solid #e3e6ea;text-align:left;vertical-align:top}
table.data th{background:#f3f5f7;vertical-align:bottom;font-size:11px}
table.data td:first-child{min-width:8em}
table.data td.codes{font-size:11px}
table.data tfoot td{border-top:1px solid #b8bec6;color:#333}
table.data td.n,table.data th.n{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer}
table.sortable th[data-dir=asc]::after{content:" \25B2";font-size:9px}
table.sortable th[data-dir=desc]::after{content:" \25BC";font-size:9px}
table.data td.fire{background:#f8d7d3;color:#8a1c12;font-weight:700;outline:2px solid #c0392b;outline-offset:-2px}
table.data tr.fire td:first-child{border-left:4px solid #c0392b}
@media print{
 body{margin:0;font-size:11px}
 *{-webkit-print-color-adjust:exact;print-color-adjust:exact}
 h2{break-after:avoid;page-break-after:avoid}
 table.data{font-size:9px}
 table.data th{font-size:8px}
 table.data th,table.data td{padding:2px 3px}
 table.data td:first-child{min-width:0}
 table.data td.codes{font-size:8px}
 table.data tr{break-inside:avoid;page-break-inside:avoid}
 table.sortable th::after{content:none !important}
 svg.plot rect.hover{display:none}
 .pair{grid-template-columns:1fr 1fr}
}
`

// SortScript makes every table.sortable sort by a column when its header
// is clicked (again: the other way), by a cell's data-v where it has one,
// numerically where both values are numbers.
const SortScript template.JS = `document.querySelectorAll("table.sortable").forEach(function(t){
 var hs=t.tHead.rows[0].cells;
 Array.prototype.forEach.call(hs,function(th,i){th.tabIndex=0;th.addEventListener("click",function(){
  var asc=th.dataset.dir!=="asc",b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);
  Array.prototype.forEach.call(hs,function(h){delete h.dataset.dir});th.dataset.dir=asc?"asc":"desc";
  function v(r){var c=r.cells[i];return c.dataset.v!==undefined?c.dataset.v:c.textContent.trim()}
  rows.sort(function(x,y){var a=v(x),c=v(y),na=parseFloat(a),nc=parseFloat(c);
   var d=(!isNaN(na)&&!isNaN(nc)&&isFinite(a)&&isFinite(c))?na-nc:a.localeCompare(c);return asc?d:-d});
  rows.forEach(function(r){b.appendChild(r)})})})});`
