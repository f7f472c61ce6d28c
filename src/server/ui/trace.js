// Trace: an execution and all its descendants as bars on one time axis
// (created → finished, or → now while running).
import { api, descendants } from './api.js';
import { el, badge, idLink, fmtDuration, fmtTime, errorBox, link, resultLabel, truncatedNote } from './util.js';

// Descendants shown at most; `#/trace/<id>?max=N` lowers it.
const MAX_DESCENDANTS = 10000;

export async function tracePage(root, id, query = new URLSearchParams()) {
  const asked = Number.parseInt(query.get('max') || '', 10);
  const max = asked >= 1 && asked <= MAX_DESCENDANTS ? asked : MAX_DESCENDANTS;
  let top;
  try { top = await api.get(id); } catch (e) {
    root.append(el('section', { class: 'not-found' }, el('h1', {}, 'Execution not found'), errorBox(e)));
    return null;
  }
  const rows = [{ ...top, execution_id: id }];
  let truncated = null;
  try {
    const found = await descendants(id, max);
    // Newest first in the server's order (docs/api.md): reversed, every
    // child follows its parent, siblings in creation order (`_2` before
    // `_10`; never re-sorted by id text).
    rows.push(...found.rows.reverse());
    truncated = found.truncated;
  } catch (e) { root.append(errorBox(e)); }
  const now = Date.now();
  const span = (r) => {
    const ps = r.pending_state || {};
    const start = Date.parse(r.created_at);
    const end = ps.status === 'finished' ? Date.parse(ps.finished_at) : now;
    return [start, Math.max(end, start)];
  };
  const spans = rows.map(span);
  const t0 = Math.min(...spans.map((s) => s[0]));
  const t1 = Math.max(...spans.map((s) => s[1]), t0 + 1);
  const total = t1 - t0;
  const depth = (rid) => rid.split('.').length - id.split('.').length;

  root.append(el('h1', {}, 'Trace of ', link('#/execution/' + encodeURIComponent(id), id, { class: 'mono' })),
    el('p', { class: 'muted' }, `${rows.length} executions · ${fmtTime(new Date(t0).toISOString())} · total ${fmtDuration(total)}`));
  if (truncated) root.append(truncatedNote(truncated, 'trace-truncated'));
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
  return null;
}
