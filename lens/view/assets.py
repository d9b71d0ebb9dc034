"""The viewer's own stylesheet and script, served from /static/ (no inline script: the pages'
Content-Security-Policy allows only these). The script puts data into the page with
``textContent`` only, never as markup."""

from __future__ import annotations

from lens.report.documents.html import CSS as REPORT_CSS

VIEW_CSS = REPORT_CSS + """
body{max-width:1400px}
nav.top{font-size:13px;color:#4a5263;margin-bottom:8px}nav.top a{color:#1f4fa3}
a{color:#1f4fa3;text-decoration:none}a.run,a.qlink,a.sbs{white-space:nowrap}a:hover{text-decoration:underline}
.live{border:1px solid #d5d9e0;border-radius:6px;padding:8px 12px;margin:8px 0 16px;
background:#f9fafc}
.live table{margin:4px 0}.live progress{width:420px;height:14px}
.kv{margin:0;font-size:12px}.kv th{background:#f7f8fa;font-weight:600;width:1%;
white-space:nowrap}
form.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:end;margin:8px 0}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:#4a5263}
form.filters input[type=search]{width:240px}form.filters input.num{width:70px}
tr.differs td{background:#fff6db}tr td.worse{background:#fbdad7}tr td.better{background:#d8f3e1}
.pager{margin:8px 0}.pager a,.pager span{margin-right:10px}
.clip{max-width:420px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
body:has(#side){max-width:2400px}
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,560px),1fr));
gap:12px;align-items:start}.cols>div{min-width:0;
border:1px solid #e3e6ec;border-radius:4px;padding:6px 10px}
.cols table{width:100%;table-layout:fixed}.cols table.kv{table-layout:auto}
.cols td,.cols th{overflow-wrap:anywhere}.cols .kv th{white-space:normal}
.cols table.data>thead>tr>th:nth-child(1){width:24%}
.cols table.data>thead>tr>th:nth-child(2){width:11%}
.pending{color:#8a5a00}.refused{background:#fbdad7;color:#b3261e;padding:8px 12px}
"""

VIEW_JS = r"""
(function () {
  'use strict';
  function setText(id, text) {
    var el = document.getElementById(id);
    if (el) { el.textContent = text; }
  }
  function getJSON(url) {
    return fetch(url, {cache: 'no-store'}).then(function (r) {
      if (!r.ok) { throw new Error('HTTP ' + r.status); }
      return r.json();
    });
  }
  // Live progress of a run: the server sends the panel's texts by element id.
  var live = document.getElementById('live');
  if (live) {
    var src = live.getAttribute('data-src');
    var tick = function () {
      getJSON(src).then(function (d) {
        Object.keys(d.display).forEach(function (id) { setText(id, d.display[id]); });
        var bar = document.getElementById('live-bar');
        if (bar && d.questions.total) {
          bar.max = d.questions.total;
          bar.value = d.questions.done;
        }
        setText('live-conn', '');
        live.setAttribute('data-updates', String(Number(live.getAttribute('data-updates')) + 1));
      }).catch(function () {
        setText('live-conn', 'the viewer does not answer; retrying');
      }).then(function () { setTimeout(tick, 1500); });
    };
    tick();
  }
  // Content still being computed (a large run's statistics): reload once it is ready.
  Array.prototype.forEach.call(document.querySelectorAll('[data-job]'), function (el) {
    var url = '/api/job?name=' + encodeURIComponent(el.getAttribute('data-job'));
    var wait = function () {
      getJSON(url).then(function (d) {
        if (!d.ready) { setTimeout(wait, 1000); return; }
        if (el.getAttribute('data-empty') === '1') { window.location.reload(); return; }
        var note = document.createElement('button');
        note.type = 'button';
        note.textContent = 'newer figures are ready: reload';
        note.addEventListener('click', function () { window.location.reload(); });
        el.appendChild(note);
      }).catch(function () { setTimeout(wait, 3000); });
    };
    wait();
  });
  // The run list: status and progress cells follow the runs.
  var runs = document.getElementById('runs');
  if (runs) {
    var cells = document.querySelectorAll('[data-run][data-field]');
    var refresh = function () {
      getJSON('/api/runs').then(function (d) {
        var by = {};
        d.runs.forEach(function (r) { by[r.id] = r; });
        Array.prototype.forEach.call(cells, function (c) {
          var r = by[c.getAttribute('data-run')];
          var f = c.getAttribute('data-field');
          if (r && Object.prototype.hasOwnProperty.call(r, f)) { c.textContent = String(r[f]); }
        });
      }).catch(function () {}).then(function () { setTimeout(refresh, 3000); });
    };
    setTimeout(refresh, 3000);
  }
  // Filters apply as soon as a choice is made.
  Array.prototype.forEach.call(document.querySelectorAll('form.filters select'), function (s) {
    s.addEventListener('change', function () { s.form.submit(); });
  });
})();
"""
