// Execution detail: state, params, result, the event log as a timeline,
// responses linked to their requests, children as a tree, the messages it
// received and the values it published, backtraces, and
// the cancel/stub actions. Follows the execution live while it runs.
import { api, allEvents, descendants, follow } from './api.js';
import {
  el, clear, badge, fmtTime, idLink, jsonView, errorBox, flash, joinSetColors, confirmDialog, link,
  truncatedNote,
} from './util.js';

// Descendants listed at most in the children tree.
const MAX_CHILDREN = 10000;

let componentsCache = null;
async function functionKinds() {
  if (!componentsCache) {
    const res = await api.components();
    componentsCache = new Map();
    for (const c of res.components) for (const f of c.functions) componentsCache.set(f.ffqn, { type: c.type, fn: f });
  }
  return componentsCache;
}

export function parentOf(id) {
  const i = id.lastIndexOf('.');
  return i > 0 ? id.slice(0, i) : null;
}

// The single key of an event object ({"locked": {...}} -> ["locked", {...}]).
function kindOf(obj) {
  const k = obj && typeof obj === 'object' ? Object.keys(obj)[0] : String(obj);
  return [k, obj && typeof obj === 'object' ? obj[k] : null];
}

function findKey(obj, key) {
  if (!obj || typeof obj !== 'object') return undefined;
  if (key in obj) return obj[key];
  for (const v of Object.values(obj)) {
    const f = findKey(v, key);
    if (f !== undefined) return f;
  }
  return undefined;
}

export async function detailPage(root, id) {
  let ex;
  try {
    ex = await api.get(id);
  } catch (e) {
    if (e.status === 404 || e.status === 400) {
      root.append(el('section', { class: 'not-found' },
        el('h1', {}, 'Execution not found'),
        el('p', {}, 'No execution ', el('code', {}, id), ' (', e.message, ')'),
        el('p', {}, link('#/executions', 'Back to executions'))));
      return null;
    }
    throw e;
  }
  const kinds = await functionKinds().catch(() => new Map());
  const info = kinds.get(ex.ffqn) || {};
  const parent = parentOf(id);

  const stateBox = el('span', { id: 'state' });
  const actions = el('div', { class: 'actions' });
  const resultBox = el('div', { id: 'result' });
  const timeline = el('ol', { class: 'timeline', id: 'timeline' });
  const childrenBox = el('div', { id: 'children' });
  const messagesBox = el('div', { id: 'messages' });
  const sendBox = messageForm();
  const btBox = el('div', { id: 'backtrace' });
  let params = null;

  root.append(
    el('h1', {}, 'Execution ', el('code', { id: 'exec-id' }, id)),
    el('dl', { class: 'meta' },
      el('dt', {}, 'Function'), el('dd', { class: 'mono', id: 'ffqn' }, ex.ffqn, info.type ? ` (${info.type})` : ''),
      el('dt', {}, 'State'), el('dd', {}, stateBox),
      el('dt', {}, 'Created'), el('dd', {}, fmtTime(ex.created_at)),
      el('dt', {}, 'First scheduled'), el('dd', {}, fmtTime(ex.first_scheduled_at)),
      el('dt', {}, 'Component'), el('dd', { class: 'mono small' }, ex.component_digest),
      parent ? [el('dt', {}, 'Parent'), el('dd', {}, idLink(parent))] : null,
      el('dt', {}, 'Views'), el('dd', {}, link('#/trace/' + encodeURIComponent(id), 'Trace (time axis)', { id: 'trace-link' }))),
    actions,
    el('h2', {}, 'Parameters'), el('div', { id: 'params' }),
    el('h2', {}, 'Result'), resultBox,
    el('h2', {}, 'Children'), childrenBox,
    el('h2', {}, 'Messages and published values'), sendBox, messagesBox,
    el('h2', {}, 'Event log'), timeline,
    btBox);

  function renderState(ps, result) {
    clear(stateBox).append(badge(ps), ' ', stateText(ps));
    clear(resultBox).append(result ? jsonView(result, 'json result') : el('p', { class: 'muted' }, 'Not finished yet.'));
    clear(actions);
    const finished = ps && ps.status === 'finished';
    if (!finished) {
      const paused = ps.status === 'paused';
      actions.append(paused
        ? el('button', { type: 'button', id: 'resume', onclick: onResume }, 'Resume')
        : el('button', { type: 'button', id: 'pause', onclick: onPause }, 'Pause…'), ' ');
    }
    if (!finished && info.type && info.type.startsWith('activity') && info.type !== 'activity_stub') {
      actions.append(el('button', { type: 'button', class: 'danger', id: 'cancel', onclick: onCancel }, 'Cancel activity'));
    }
    if (!finished && info.type && info.type.startsWith('workflow')) {
      actions.append(
        el('button', { type: 'button', class: 'danger', id: 'cancel-workflow', onclick: onCancelWorkflow }, 'Cancel workflow…'), ' ',
        el('button', { type: 'button', class: 'danger', id: 'terminate-workflow', onclick: onTerminate }, 'Terminate…'));
    }
    if (!finished && info.type === 'activity_stub' && parent) {
      actions.append(stubForm());
    }
    // Only a workflow receives messages; the form is made once so that a
    // refresh keeps what is being typed.
    sendBox.hidden = finished || !(info.type && info.type.startsWith('workflow'));
  }

  function stateText(ps) {
    if (!ps) return '';
    // Paused or cancelling: the state underneath is in ps.state.
    const underneath = ps.state ? stateText({ ...ps, status: ps.state, state: undefined }) : '';
    switch (ps.status) {
      case 'paused': return 'paused; ' + underneath;
      case 'cancelling': return 'cancel requested; ' + underneath;
      case 'pending_at': return 'scheduled at ' + fmtTime(ps.scheduled_at);
      case 'locked': return `locked by ${ps.executor_id} until ${fmtTime(ps.lock_expires_at)}`;
      case 'blocked_by_join_set': return `waiting on join set ${ps.join_set_id}${ps.closing ? ' (closing)' : ''}`;
      case 'finished': return 'finished at ' + fmtTime(ps.finished_at);
      default: return '';
    }
  }

  async function onCancelWorkflow() {
    if (!await confirmDialog(`Cancel workflow ${id}? It sees the request at its next wait, may clean up ` +
                             'for the grace period, and finishes with execution_error cancelled; its open ' +
                             'children are cancelled.')) return;
    try {
      const r = await api.cancel(id);
      flash('Cancel: ' + r.outcome, 'info');
      await refresh();
    } catch (e) { flash(e.message); }
  }

  async function onPause() {
    if (!await confirmDialog(`Pause ${id}? It is not run again until resumed; a run in progress is ` +
                             'stopped. Child results and sleeps that end meanwhile are kept.')) return;
    try {
      const r = await api.pause(id);
      flash('Pause: ' + r.outcome, 'info');
      await refresh();
    } catch (e) { flash(e.message); }
  }

  async function onResume() {
    try {
      const r = await api.resume(id);
      flash('Resume: ' + r.outcome, 'info');
      await refresh();
    } catch (e) { flash(e.message); }
  }

  async function onTerminate() {
    if (!await confirmDialog(`Terminate workflow ${id}? It ends at once, without cleanup; its open ` +
                             'children are cancelled.')) return;
    try {
      const r = await api.terminate(id);
      flash('Terminate: ' + r.outcome, 'info');
      await refresh();
    } catch (e) { flash(e.message); }
  }

  async function onCancel() {
    if (!await confirmDialog(`Cancel activity ${id}? It finishes with execution_error cancelled.`)) return;
    try {
      const r = await api.cancel(id);
      flash('Cancel: ' + r.outcome, 'info');
      await refresh();
    } catch (e) { flash(e.message); }
  }

  function stubForm() {
    const ret = info.fn && info.fn.return_type;
    const value = el('textarea', { id: 'stub-value', rows: 2, placeholder: 'JSON value, e.g. true' }, 'true');
    const kind = el('select', { id: 'stub-kind' }, el('option', { value: 'ok' }, 'ok'), el('option', { value: 'err' }, 'err'));
    const form = el('form', { class: 'stub', id: 'stub-form' },
      el('strong', {}, 'Stub this activity'), ret ? el('span', { class: 'muted' }, ` returns ${ret}`) : null,
      el('div', {}, kind, ' ', value, ' ', el('button', { type: 'submit' }, 'Stub…')));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      let v;
      try { v = JSON.parse(value.value); } catch (e) { flash('Not JSON: ' + e.message); return; }
      const result = { [kind.value]: v };
      if (!await confirmDialog(`Complete ${id} with ${JSON.stringify(result)}?`)) return;
      try {
        await api.stub(id, result);
        flash('Stubbed', 'info');
        await refresh();
      } catch (e) { flash(e.message); }
    });
    return form;
  }

  // Sends a message (docs/api.md, "send a message"): no confirmation (a
  // message only adds to the execution's inbox), but the input is checked
  // first, so a malformed one sends nothing.
  function messageForm() {
    const channel = el('input', { id: 'message-channel', placeholder: 'channel', size: 16 });
    const body = el('textarea', { id: 'message-body', rows: 2, placeholder: 'JSON body, e.g. {"by": "ann"}' });
    const messageId = el('input', { id: 'message-id', placeholder: 'message id (optional)', size: 20 });
    const form = el('form', { class: 'send-message', id: 'message-form' },
      el('strong', {}, 'Send a message'),
      el('div', {}, channel, ' ', messageId, ' ', body, ' ', el('button', { type: 'submit' }, 'Send')));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const ch = channel.value.trim();
      if (!/^[A-Za-z0-9/-]{1,128}$/.test(ch)) {
        flash('Channel: 1 to 128 ASCII letters, digits, - or /');
        return;
      }
      const mid = messageId.value.trim();
      if (mid && !/^[A-Za-z0-9_.:@/-]{1,128}$/.test(mid)) {
        flash('Message id: 1 to 128 ASCII letters, digits, _ . : @ / or -');
        return;
      }
      let v;
      try { v = JSON.parse(body.value); } catch (e) { flash('Body: not JSON: ' + e.message); return; }
      try {
        const r = await api.sendMessage(id, ch, v, mid || undefined);
        flash(`Message ${r.message_id}: ` + (r.delivered_now ? 'delivered' : 'delivered before'), 'info');
        body.value = '';
        messageId.value = '';
        await refresh();
      } catch (e) { flash(e.message); }
    });
    return form;
  }

  async function showBacktrace(version) {
    clear(btBox).append(el('h2', {}, `Backtrace at version ${version}`));
    try {
      const bt = await api.backtrace(id, String(version));
      const frames = (bt.wasm_backtrace && bt.wasm_backtrace.frames) || [];
      btBox.append(el('p', { class: 'muted' },
        `versions ${bt.version_min_including}..${bt.version_max_excluding} of ${bt.component_id}`,
        bt.wasm_backtrace && bt.wasm_backtrace.engine ? ` · ${bt.wasm_backtrace.engine}` : ''));
      // Each frame: the function, its module, and source positions when known.
      const where = (f) => (f.symbols || []).map((s) => [s.func_name !== f.func_name ? s.func_name : null,
        s.file ? s.file + (s.line ? ':' + s.line + (s.col ? ':' + s.col : '') : '') : null].filter(Boolean).join(' ')).filter(Boolean).join('; ');
      btBox.append(el('ol', { class: 'frames' }, frames.map((f) => el('li', { class: 'mono' },
        el('span', { class: 'fn' }, f.func_name || '?'), ' ', el('span', { class: 'muted' }, f.module || ''),
        where(f) ? el('span', { class: 'muted' }, ' · ', where(f)) : null))));
    } catch (e) { btBox.append(errorBox(e)); }
  }

  async function renderTimeline() {
    const [events, responses] = await Promise.all([allEvents(id), api.responses(id).catch(() => ({ responses: [] }))]);
    // Responses by what they answer (child id or delay id).
    const answered = new Map();
    for (const r of responses.responses || []) {
      const e = (r.response && r.response.event && r.response.event.event) || {};
      const key = e.child_execution_id || e.delay_id || findKey(r.response, 'child_execution_id') ||
        findKey(r.response, 'delay_id');
      if (key) answered.set(key, r);
    }
    clear(timeline);
    const joinSetColor = joinSetColors();  // by first appearance in this log
    for (const ev of events) {
      const [k, body] = kindOf(ev.event);
      let title = k;
      const details = [];
      let js = null;
      if (k === 'created') {
        params = body.params;
        clear(root.querySelector('#params')).append(jsonView(body.params, 'json params'));
        if (body.scheduled_at) details.push('scheduled at ' + fmtTime(body.scheduled_at));
        const policy = body.policy || {};
        if (policy.deadline) details.push(el('span', {}, 'deadline ' + fmtTime(policy.deadline)));
        if (policy.retry) details.push(el('span', { class: 'muted' }, 'own retry policy ' + JSON.stringify(policy.retry)));
      } else if (k === 'locked') {
        details.push(el('span', {}, `lock until ${fmtTime(body.lock_expires_at)}`));
        const rc = body.retry_config;
        if (rc) {
          const b = rc.retry_exp_backoff || {};
          const backoff = (b.secs || 0) * 1000 + (b.nanos || 0) / 1e6;
          const m = rc.max_backoff;
          const cap = m ? `, at most ${(m.secs || 0) * 1000 + (m.nanos || 0) / 1e6} ms` : '';
          const jitter = rc.jitter_percent ? `, jitter ${rc.jitter_percent}%` : '';
          details.push(el('span', { class: 'muted' },
            `max retries ${rc.max_retries ?? '∞'}, backoff from ${backoff} ms${cap}${jitter}`));
        }
      } else if (k === 'temporarily_failed' || k === 'temporarily_timed_out') {
        title = k === 'temporarily_failed' ? 'retry: failed' : 'retry: timed out';
        if (body.attempt) {
          // "attempt 3 of 6": the limit the retry policy sets (docs/model.md §5.3).
          title += ` (attempt ${body.attempt}${body.max_attempts ? ' of ' + body.max_attempts : ''})`;
        }
        if (body.reason) details.push(el('span', { class: 'reason' }, 'reason: ', String(body.reason)));
        if (body.detail) details.push(el('span', { class: 'reason' }, 'detail: ', String(body.detail)));
        if (body.backoff_expires_at) details.push('backoff until ' + fmtTime(body.backoff_expires_at));
      } else if (k === 'paused' || k === 'resumed') {
        if (body.reason) details.push(el('span', { class: 'reason' }, 'reason: ', String(body.reason)));
      } else if (k === 'finished') {
        details.push(jsonView(body.result, 'json inline'));
      } else if (k === 'history_event') {
        // {"event": {"type": "join_set_request", "join_set_id", "request": {"type": ...}}}
        const he = (body && body.event) || body || {};
        const req = he.request;
        title = (req && req.type) || he.type || 'history';
        js = he.join_set_id;
        const cid = req && req.child_execution_id;
        const did = req && req.delay_id;
        if (cid) {
          details.push('child ', idLink(cid), ' ', el('span', { class: 'mono' }, req.target_ffqn || ''));
          if (req.params !== undefined) details.push(' ', jsonView(req.params, 'json inline'));
          const r = answered.get(cid);
          details.push(r ? el('span', { class: 'resp' }, ' → response #', String(r.cursor), ' at ',
            fmtTime(r.response.created_at), ' ', jsonView(findKey(r.response, 'result'), 'json inline'))
            : el('span', { class: 'muted' }, ' (no response yet)'));
        } else if (did) {
          details.push(el('span', { class: 'mono' }, did), ' expires ', fmtTime(req.expires_at));
          const r = answered.get(did);
          if (r) {
            details.push(el('span', { class: 'resp' }, ' → delay finished at ', fmtTime(r.response.created_at),
              ' (response #', String(r.cursor), ') ', jsonView(findKey(r.response, 'result'), 'json inline')));
          } else {
            details.push(' ', el('button', {
              type: 'button', class: 'danger cancel-delay', 'data-delay': did,
              onclick: async () => {
                if (!await confirmDialog(`Cancel delay ${did}?`)) return;
                try { const o = await api.cancelDelay(did); flash('Delay: ' + o.outcome, 'info'); await refresh(); } catch (e) { flash(e.message); }
              },
            }, 'Cancel delay…'));
          }
        } else {
          const rest = { ...he };
          delete rest.type;
          delete rest.join_set_id;
          if (he.type === 'join_next' && he.run_expires_at) {
            details.push('waiting for the next response', he.closing ? ' (closing)' : '');
          } else if (Object.keys(rest).length) {
            details.push(jsonView(rest, 'json inline'));
          }
        }
      } else if (body) {
        details.push(jsonView(body, 'json inline'));
      }
      const li = el('li', { class: 'ev ev-' + k.replace(/[^a-z_]/g, ''), 'data-version': ev.version },
        el('span', { class: 'ver' }, '#' + ev.version),
        el('span', { class: 'time' }, fmtTime(ev.created_at)),
        js ? el('span', {
          class: 'js', style: { background: joinSetColor(js) }, title: 'join set ' + js, 'data-join-set': js,
        }, String(js)) : null,
        el('span', { class: 'kind' }, title),
        el('span', { class: 'details' }, details),
        ev.backtrace_id !== undefined && ev.backtrace_id !== null
          ? el('button', { type: 'button', class: 'small bt', onclick: () => showBacktrace(ev.version) }, 'backtrace') : null);
      if (js) li.style.borderLeftColor = joinSetColor(js);
      timeline.append(li);
    }
  }

  // docs/model.md §8.6: the values the workflow published (the last of each
  // key) and the messages sent to it, in arrival order, by channel.
  async function renderMessages() {
    let values;
    let responses;
    try {
      [values, responses] = await Promise.all([api.values(id), api.responses(id)]);
    } catch (e) { clear(messagesBox).append(errorBox(e)); return; }
    const messages = (responses.responses || []).filter((r) =>
      ((r.response && r.response.event && r.response.event.event) || {}).type === 'message_received');
    clear(messagesBox);
    const rows = values.values || [];
    messagesBox.append(rows.length
      ? el('table', { class: 'values', id: 'values' },
        el('tr', {}, el('th', {}, 'Key'), el('th', {}, 'Value'), el('th', {}, 'Version'), el('th', {}, 'Published')),
        rows.map((v) => el('tr', { 'data-key': v.key }, el('td', { class: 'mono' }, v.key),
          el('td', {}, jsonView(v.value, 'json inline')), el('td', {}, '#' + v.version),
          el('td', {}, fmtTime(v.published_at)))))
      : el('p', { class: 'muted' }, 'No published values.'));
    messagesBox.append(messages.length
      ? el('ol', { class: 'messages', id: 'received-messages' }, messages.map((r) => {
        const e = r.response.event || {};
        const m = e.event || {};
        return el('li', { 'data-message-id': m.message_id },
          el('span', { class: 'mono' }, String(e.join_set_id || '').replace(/^m:/, '')), ' ',
          el('span', { class: 'mono muted' }, m.message_id || ''), ' ', fmtTime(r.response.created_at), ' ',
          jsonView(m.body, 'json inline'));
      }))
      : el('p', { class: 'muted' }, 'No messages.'));
  }

  async function renderChildren() {
    clear(childrenBox);
    let rows;
    let truncated;
    try {
      ({ rows, truncated } = await descendants(id, MAX_CHILDREN));
    } catch (e) { childrenBox.append(errorBox(e)); return; }
    if (truncated) childrenBox.append(truncatedNote(truncated, 'children-truncated'));
    if (!rows.length) { childrenBox.append(el('p', { class: 'muted' }, 'No children.')); return; }
    // The server lists newest first in the order of docs/api.md (children
    // after their parent, `_2` before `_10`): reversed, each execution's
    // children come in the order it created them. Never re-sorted by id
    // text, which would put `_10` between `_1` and `_2`.
    rows.reverse();
    const byParent = new Map();
    for (const r of rows) {
      const p = parentOf(r.execution_id);
      if (!byParent.has(p)) byParent.set(p, []);
      byParent.get(p).push(r);
    }
    const tree = (pid) => el('ul', { class: 'tree' }, (byParent.get(pid) || []).map((r) =>
      el('li', { 'data-id': r.execution_id }, badge(r.pending_state), ' ', idLink(r.execution_id), ' ',
        el('span', { class: 'mono muted' }, r.ffqn), byParent.has(r.execution_id) ? tree(r.execution_id) : null)));
    childrenBox.append(tree(id));
  }

  async function refresh() {
    const cur = await api.get(id);
    renderState(cur.pending_state, cur.result);
    await Promise.all([renderTimeline(), renderChildren(), renderMessages()]);
    return cur;
  }

  renderState(ex.pending_state, ex.result);
  await Promise.all([renderTimeline(), renderChildren(), renderMessages()]);

  let stop = null;
  if (!ex.result) {
    let busy = false;
    stop = follow(id, async (ps) => {
      renderState(ps, null);
      if (busy) return;
      busy = true;
      try { await Promise.all([renderTimeline(), renderChildren(), renderMessages()]); } catch { /* next time */ }
      busy = false;
    }, async () => {
      try { await refresh(); } catch { /* ignore */ }
      root.dataset.finished = 'true';
    });
  } else {
    root.dataset.finished = 'true';
  }
  return () => { if (stop) stop(); };
}
