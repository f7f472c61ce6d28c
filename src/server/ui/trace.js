// Trace: an execution and all its descendants as bars on one time axis
// (created → finished, or → now while running).
import { api } from './api.js';
import { el, badge, idLink, fmtDuration, fmtTime, errorBox, link, resultLabel } from './util.js';
import { parentOf } from './detail.js';

export async function tracePage(root, id) {
  let top;
  try { top = await api.get(id); } catch (e) {
    root.append(el('section', { class: 'not-found' }, el('h1', {}, 'Execution not found'), errorBox(e)));
    return null;
  }
  const rows = [{ ...top, execution_id: id }];
  try {
    const res = await api.list({ show_derived: 'true', execution_id_prefix: id + '.', length: 1000 });
    rows.push(...res.executions);
  } catch (e) { root.append(errorBox(e)); }
  const now = Date.now();
  const span = (r) => {
    const ps = r.pending_state || {};
    const start = Date.parse(r.created_at);
    const end = ps.status === 'finished' ? Date.parse(ps.finished_at) : now;
    return [start, Math.max(end, start)];
  };
  rows.sort((a, b) => (a.execution_id < b.execution_id ? -1 : 1));
  const spans = rows.map(span);
  const t0 = Math.min(...spans.map((s) => s[0]));
  const t1 = Math.max(...spans.map((s) => s[1]), t0 + 1);
  const total = t1 - t0;
  const depth = (rid) => rid.split('.').length - id.split('.').length;

  root.append(el('h1', {}, 'Trace of ', link('#/execution/' + encodeURIComponent(id), id, { class: 'mono' })),
    el('p', { class: 'muted' }, `${rows.length} executions · ${fmtTime(new Date(t0).toISOString())} · total ${fmtDuration(total)}`));
  const axis = el('div', { class: 'axis' },
    [0, 0.25, 0.5, 0.75, 1].map((f) => el('span', { style: { left: `${f * 100}%` } }, fmtDuration(f * total))));
  const list = el('div', { class: 'trace', id: 'trace' }, axis);
  rows.forEach((r, i) => {
    const [s, e] = spans[i];
    const ps = r.pending_state || {};
    const cls = ps.status === 'finished' ? 'bar fin-' + resultLabel(ps.result_kind)[1] : 'bar running';
    list.append(el('div', { class: 'trow', 'data-id': r.execution_id },
      el('div', { class: 'tlabel', style: { paddingLeft: `${depth(r.execution_id) * 14}px` } },
        badge(ps), ' ', idLink(r.execution_id), el('div', { class: 'mono small muted' }, r.ffqn)),
      el('div', { class: 'ttrack' },
        el('div', {
          class: cls,
          title: `${r.ffqn}: ${fmtDuration(e - s)}`,
          style: { left: `${((s - t0) / total) * 100}%`, width: `${Math.max(((e - s) / total) * 100, 0.3)}%` },
        }, el('span', {}, fmtDuration(e - s))))));
  });
  root.append(list);
  void parentOf;
  return null;
}
