// Schedules: the cron schedules (docs/api.md, "Schedules") with their state
// and next tick; pause, resume and trigger each, after a confirmation.
import { api } from './api.js';
import { el, fmtTime, flash, idLink, errorBox, confirmDialog } from './util.js';

function actionButton(label, question, run, after) {
  return el('button', {
    type: 'button', 'data-action': label.toLowerCase(),
    onclick: async () => {
      if (!await confirmDialog(question)) return;
      try {
        const r = await run();
        after(r);
      } catch (e) {
        flash(e.message);
      }
    },
  }, label);
}

export async function schedulesPage(root) {
  root.append(el('h1', {}, 'Schedules'));
  let res;
  try { res = await api.schedules(); } catch (e) { root.append(errorBox(e)); return null; }
  if (res.schedules.length === 0) {
    root.append(el('p', { class: 'muted' },
      'No cron schedules. Declare them in stele.toml ([[cron]]) or create one with ',
      el('code', {}, 'stele schedule create'), '.'));
    return null;
  }
  const rows = res.schedules.map((s) => {
    const reload = () => window.dispatchEvent(new HashChangeEvent('hashchange'));
    const actions = el('td', { class: 'actions' },
      s.paused
        ? actionButton('Resume', `Resume schedule ${s.name}? Ticks that fell in the pause do not fire.`,
          () => api.resumeSchedule(s.name), () => { flash(`Resumed ${s.name}`, 'info'); reload(); })
        : actionButton('Pause', `Pause schedule ${s.name}?`,
          () => api.pauseSchedule(s.name), () => { flash(`Paused ${s.name}`, 'info'); reload(); }),
      ' ',
      actionButton('Trigger', `Submit ${s.ffqn} of schedule ${s.name} now?`,
        () => api.triggerSchedule(s.name),
        (r) => flash(`Triggered ${s.name}: ${r.execution_id}`, 'info')));
    return el('tr', { 'data-name': s.name },
      el('td', { class: 'mono' }, s.name, ' ', el('small', { class: 'muted' }, s.source)),
      el('td', { class: 'mono' }, s.schedule), el('td', {}, s.time_zone),
      el('td', { class: 'mono' }, s.ffqn),
      el('td', {}, s.paused ? 'paused' : 'active'),
      el('td', {}, s.next_tick ? fmtTime(s.next_tick) : ''),
      el('td', {}, s.last_execution_id ? idLink(s.last_execution_id) : ''),
      actions);
  });
  root.append(el('table', { class: 'schedules' },
    el('thead', {}, el('tr', {}, ['Name', 'Cron', 'Zone', 'Function', 'State', 'Next tick',
      'Last fired', ''].map((h) => el('th', {}, h)))),
    el('tbody', {}, rows)));
  return null;
}
