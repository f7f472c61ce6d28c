// Executions: a filtered, paginated list (cursor in both directions) that
// refreshes itself every few seconds.
import { api } from './api.js';
import { el, clear, badge, fmtTime, idLink, errorBox } from './util.js';

const PAGE = 20;

export async function executionsPage(root, query) {
  const filters = {
    ffqn_prefix: query.get('ffqn_prefix') || '',
    execution_id_prefix: query.get('execution_id_prefix') || '',
    show_derived: query.get('show_derived') === 'true',
    hide_finished: query.get('hide_finished') === 'true',
    status: query.get('status') || '',
  };
  // The current page is defined by (cursor, direction); null cursor = newest.
  let page = { cursor: query.get('cursor') || null, direction: query.get('direction') || 'older' };
  let lastRows = [];
  let nextCursor = null;

  const input = (name, placeholder) => el('input', { name, placeholder, value: filters[name], type: 'search' });
  const check = (name, label) => el('label', { class: 'check' },
    el('input', { type: 'checkbox', name, checked: filters[name] }), ' ', label);
  const form = el('form', { class: 'filters', id: 'filters' },
    input('ffqn_prefix', 'ffqn prefix (e.g. demo:)'),
    input('execution_id_prefix', 'id prefix (E_...)'),
    check('show_derived', 'show children'),
    check('hide_finished', 'hide finished'),
    el('select', { name: 'status', id: 'status-filter' },
      ['', 'pending_at', 'locked', 'blocked_by_join_set', 'paused', 'cancelling', 'finished'].map((v) =>
        el('option', { value: v, selected: filters.status === v }, v || 'any status'))),
    el('button', { type: 'submit' }, 'Filter'),
    el('label', { class: 'check' }, el('input', { type: 'checkbox', name: 'auto', checked: true }), ' auto-refresh'));
  const body = el('tbody');
  const table = el('table', { class: 'list', id: 'executions' },
    el('thead', {}, el('tr', {},
      ['Execution', 'Function', 'State', 'Created', 'Scheduled', 'Finished'].map((h) => el('th', {}, h)))),
    body);
  const status = el('div', { class: 'status' });
  const newer = el('button', { type: 'button', id: 'page-newer' }, '← Newer');
  const older = el('button', { type: 'button', id: 'page-older' }, 'Older →');
  const first = el('button', { type: 'button', id: 'page-first' }, 'Newest');
  const pager = el('div', { class: 'pager' }, first, newer, older, status);

  root.append(el('h1', {}, 'Executions'), form, table, pager);

  function params() {
    const q = { length: PAGE };
    if (filters.ffqn_prefix) q.ffqn_prefix = filters.ffqn_prefix;
    if (filters.execution_id_prefix) q.execution_id_prefix = filters.execution_id_prefix;
    if (filters.show_derived) q.show_derived = 'true';
    if (filters.hide_finished) q.hide_finished = 'true';
    if (filters.status) q.status = filters.status;
    return q;
  }

  function render(rows) {
    clear(body);
    if (rows.length === 0) {
      body.append(el('tr', {}, el('td', { colspan: 6, class: 'empty' }, 'No executions match.')));
    }
    for (const r of rows) {
      const ps = r.pending_state || {};
      body.append(el('tr', { 'data-id': r.execution_id },
        el('td', {}, idLink(r.execution_id)),
        el('td', { class: 'mono' }, r.ffqn),
        el('td', {}, badge(ps)),
        el('td', {}, fmtTime(r.created_at)),
        el('td', {}, fmtTime(ps.scheduled_at || r.first_scheduled_at)),
        el('td', {}, ps.status === 'finished' ? fmtTime(ps.finished_at) : '')));
    }
  }

  async function load() {
    const q = params();
    if (page.cursor) { q.cursor = page.cursor; q.direction = page.direction; }
    try {
      const res = await api.list(q);
      let rows = res.executions;
      // Paging newer past the newest row leaves nothing: stay on the page.
      if (rows.length === 0 && page.cursor && page.direction === 'newer') {
        page = { cursor: null, direction: 'older' };
        return load();
      }
      lastRows = rows;
      nextCursor = res.next_cursor || null;
      render(rows);
      older.disabled = page.direction === 'older' ? !nextCursor : false;
      newer.disabled = !page.cursor || (page.direction === 'newer' && !nextCursor);
      first.disabled = !page.cursor;
      status.textContent = `${rows.length} shown · refreshed ${new Date().toLocaleTimeString()}`;
    } catch (e) {
      clear(body);
      body.append(el('tr', {}, el('td', { colspan: 6 }, errorBox(e))));
    }
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const fd = new FormData(form);
    filters.ffqn_prefix = (fd.get('ffqn_prefix') || '').trim();
    filters.execution_id_prefix = (fd.get('execution_id_prefix') || '').trim();
    filters.show_derived = fd.get('show_derived') === 'on';
    filters.hide_finished = fd.get('hide_finished') === 'on';
    filters.status = fd.get('status') || '';
    page = { cursor: null, direction: 'older' };
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filters)) if (v) q.set(k, String(v));
    history.replaceState(null, '', '#/executions' + (q.toString() ? '?' + q : ''));
    load();
  });
  // Older: ids before the last shown row; newer: ids after the first shown.
  older.addEventListener('click', () => {
    if (!lastRows.length) return;
    page = { cursor: lastRows[lastRows.length - 1].execution_id, direction: 'older' };
    load();
  });
  newer.addEventListener('click', () => {
    if (!lastRows.length) { page = { cursor: null, direction: 'older' }; return load(); }
    page = { cursor: lastRows[0].execution_id, direction: 'newer' };
    load();
  });
  first.addEventListener('click', () => { page = { cursor: null, direction: 'older' }; load(); });

  await load();
  const timer = setInterval(() => {
    if (form.elements.auto.checked) load();
  }, 3000);
  return () => clearInterval(timer);
}
