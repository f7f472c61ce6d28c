// Components: each loaded component, its digest and functions, and a submit
// form per function generated from the declared parameter types; then the
// webhook endpoints with their routes.
import { api } from './api.js';
import { el, clear, flash, idLink, errorBox } from './util.js';

const INT_RANGES = {
  u8: [0, 255], u16: [0, 65535], u32: [0, 4294967295], u64: [0, Number.MAX_SAFE_INTEGER],
  s8: [-128, 127], s16: [-32768, 32767], s32: [-2147483648, 2147483647],
  s64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

// One input for a parameter type; returns { node, read() -> value or throws }.
export function inputFor(name, type) {
  const t = (type || '').trim();
  if (t === 'string' || t === 'char') {
    const i = el('input', { type: 'text', name, 'data-type': t });
    return { node: i, read: () => {
      if (t === 'char' && [...i.value].length !== 1) throw new Error(`${name}: expected one character`);
      return i.value;
    } };
  }
  if (t === 'bool') {
    const i = el('input', { type: 'checkbox', name, 'data-type': t });
    return { node: i, read: () => i.checked };
  }
  if (INT_RANGES[t]) {
    const [lo, hi] = INT_RANGES[t];
    const i = el('input', { type: 'text', inputmode: 'numeric', name, 'data-type': t, placeholder: t });
    return { node: i, read: () => {
      const s = i.value.trim();
      if (!/^-?\d+$/.test(s)) throw new Error(`${name}: expected an integer (${t})`);
      const n = Number(s);
      if (n < lo || n > hi) throw new Error(`${name}: out of range for ${t} (${lo}..${hi})`);
      return n;
    } };
  }
  if (t === 'f32' || t === 'f64') {
    const i = el('input', { type: 'text', inputmode: 'decimal', name, 'data-type': t, placeholder: t });
    return { node: i, read: () => {
      const n = Number(i.value.trim());
      if (i.value.trim() === '' || !Number.isFinite(n)) throw new Error(`${name}: expected a number (${t})`);
      return n;
    } };
  }
  // Compound or undeclared types: a JSON value.
  const i = el('textarea', { name, rows: 2, 'data-type': t || 'json', placeholder: `JSON (${t || 'any'})` });
  return { node: i, read: () => {
    try { return JSON.parse(i.value); } catch (e) { throw new Error(`${name}: not valid JSON (${t || 'any'}): ${e.message}`); }
  } };
}

function submitForm(fn) {
  const readers = [];
  const fields = [];
  const declared = Array.isArray(fn.params);
  if (declared) {
    for (const p of fn.params) {
      const { node, read } = inputFor(p.name, p.type);
      readers.push(read);
      fields.push(el('label', { class: 'field' }, el('span', {}, p.name, ' ', el('small', { class: 'muted' }, p.type)), node));
    }
  } else {
    const { node, read } = inputFor('params', 'list<any>');
    node.value = '[]';
    readers.push(read);
    fields.push(el('label', { class: 'field' }, el('span', {}, 'params (JSON array)'), node));
  }
  const out = el('div', { class: 'submit-out' });
  const form = el('form', { class: 'submit', 'data-ffqn': fn.ffqn }, fields,
    el('button', { type: 'submit' }, 'Submit'), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(out);
    let params;
    try {
      params = declared ? readers.map((r) => r()) : readers[0]();
      if (!Array.isArray(params)) throw new Error('params must be a JSON array');
    } catch (e) {
      out.append(el('span', { class: 'invalid' }, e.message));
      return;
    }
    try {
      const r = await api.submit({ ffqn: fn.ffqn, params });
      out.append('Submitted ', idLink(r.execution_id));
      flash('Submitted ' + r.execution_id, 'info');
    } catch (e) {
      out.append(errorBox(e));
    }
  });
  return form;
}

export async function componentsPage(root) {
  root.append(el('h1', {}, 'Components'));
  let res;
  try { res = await api.components(); } catch (e) { root.append(errorBox(e)); return null; }
  for (const c of res.components) {
    const sec = el('section', { class: 'component', 'data-name': c.name },
      el('h2', {}, c.name, ' ', el('span', { class: 'badge type' }, c.type)),
      el('p', { class: 'mono small' }, 'digest ', c.digest));
    for (const fn of c.functions) {
      const sig = Array.isArray(fn.params)
        ? fn.params.map((p) => `${p.name}: ${p.type}`).join(', ') : '(undeclared)';
      const fsec = el('div', { class: 'function', 'data-ffqn': fn.ffqn },
        el('h3', { class: 'mono' }, fn.ffqn, '(', sig, ')', fn.return_type ? ' -> ' + fn.return_type : ''));
      if (c.type === 'activity_stub') {
        fsec.append(el('p', { class: 'muted' }, 'Stub activity: completed from the parent’s child execution, not submitted.'));
      } else {
        fsec.append(submitForm(fn));
      }
      sec.append(fsec);
    }
    root.append(sec);
  }
  // [[webhook_wasm]] endpoints: a route each, called with any HTTP client.
  for (const w of res.webhooks || []) {
    root.append(el('section', { class: 'component webhook', 'data-name': w.name },
      el('h2', {}, w.name, ' ', el('span', { class: 'badge type' }, w.type)),
      el('p', { class: 'mono small' }, 'digest ', w.digest),
      el('h3', { class: 'mono route' }, w.route),
      el('p', { class: 'muted' }, w.auth === 'none'
        ? 'Webhook: anyone who reaches the server may call this route.'
        : 'Webhook: calls need the API token when one is configured.')));
  }
  return null;
}
