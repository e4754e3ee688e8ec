(() => {
  'use strict';
  const body = document.querySelector('#grid tbody');
  if (!body) return;
  const rows = [...body.querySelectorAll('tr.agent-row')];
  const pick = id => document.getElementById(id);
  const words = (row, key) => (row.dataset[key] || '').split(' ').filter(Boolean);
  function apply() {
    const journey = pick('f-journey').value, failure = pick('f-failure').value;
    const kind = pick('f-kind').value, status = pick('f-status').value, sort = pick('f-sort').value;
    let shown = 0;
    for (const row of rows) {
      let ok = true;
      if (journey) {
        const [want, jid] = journey.split(':');
        ok = words(row, want === 'fail' ? 'fails' : 'passes').includes(jid);
      }
      if (ok && failure) ok = words(row, 'failures').includes(failure);
      if (ok && kind) ok = row.dataset.kind === kind;
      if (ok && status) ok = row.dataset.status === status;
      row.hidden = !ok;
      if (ok) shown += 1;
    }
    const sorted = [...rows].sort((a, b) => {
      const pa = Number(a.dataset.passed) || 0, pb = Number(b.dataset.passed) || 0;
      if (sort === 'passed' && pa !== pb) return pb - pa;
      if (sort === 'failed' && pa !== pb) return pa - pb;
      return a.dataset.id < b.dataset.id ? -1 : a.dataset.id > b.dataset.id ? 1 : 0;
    });
    for (const row of sorted) body.appendChild(row);
    pick('shown').textContent = `${shown} of ${rows.length} agents shown`;
  }
  for (const id of ['f-journey', 'f-failure', 'f-kind', 'f-status', 'f-sort']) pick(id).addEventListener('change', apply);
  pick('filters').addEventListener('submit', e => e.preventDefault());
  apply();
})();
