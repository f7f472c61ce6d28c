// DOM helpers. All user data goes in through textContent (el's string
// children) or attributes set with setAttribute: never innerHTML.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k === 'style' && typeof v === 'object') Object.assign(node.style, v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

export function fmtTime(s) {
  if (!s) return '';
  const d = new Date(s);
  if (isNaN(d)) return String(s);
  return d.toISOString().replace('T', ' ').replace('Z', '');
}

export function fmtDuration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)} s`;
  return `${(ms / 60000).toFixed(1)} min`;
}

// A JSON value as indented text in a <pre>.
export function jsonView(value, cls = 'json') {
  return el('pre', { class: cls }, JSON.stringify(value, null, 2));
}

// result_kind is "ok", "execution completed with an error" or
// "execution terminated: <kind>": a short label and a class for each.
export function resultLabel(kind) {
  const k = String(kind || 'ok');
  if (k === 'ok') return ['ok', 'ok'];
  if (k.includes('completed with an error')) return ['err', 'err'];
  const m = /terminated: *([a-z_]+)/.exec(k);
  return [m ? m[1] : k, 'failed'];
}

export function stateOf(ps) {
  if (!ps) return 'unknown';
  if (ps.status === 'finished') return 'finished-' + resultLabel(ps.result_kind)[1];
  return ps.status;
}

export function badge(ps) {
  const s = stateOf(ps);
  let label = ps ? ps.status : 'unknown';
  if (ps && ps.status === 'finished') label = resultLabel(ps.result_kind)[0];
  return el('span', { class: `badge st-${s.replace(/[^a-z_-]/g, '')}`, title: ps ? JSON.stringify(ps) : '' }, label);
}

export function link(hash, text, attrs = {}) { return el('a', { href: hash, ...attrs }, text); }

export function idLink(id) { return link('#/execution/' + encodeURIComponent(id), id, { class: 'mono' }); }

export function flash(msg, kind = 'error') {
  const f = document.getElementById('flash');
  f.textContent = msg;
  f.className = kind;
  f.hidden = false;
  clearTimeout(flash.t);
  flash.t = setTimeout(() => { f.hidden = true; }, 8000);
}

// Hues for join sets, in order of first appearance: each at least 55° from
// the one before, the first four at least 75° from each other, so the first
// join sets of an execution never look alike (a hash of the names did:
// o:1-approve and o:2-pay got hues 230 and 226).
const JOIN_SET_HUES = [215, 28, 140, 320, 265, 185, 0, 85];

function hashHue(name) {
  let h = 0;
  for (const ch of String(name)) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return h % 360;
}

// A colour assigner for the join sets of one execution: call it with each
// join set name in event order. The first JOIN_SET_HUES.length distinct
// names get the palette's hues in order, later ones a hash of the name, so
// a given event log always gets the same colours.
export function joinSetColors() {
  const hues = new Map();
  return (name) => {
    const key = String(name);
    if (!hues.has(key)) {
      hues.set(key, hues.size < JOIN_SET_HUES.length ? JOIN_SET_HUES[hues.size] : hashHue(key));
    }
    return `hsl(${hues.get(key)} 65% 42%)`;
  };
}

// The note of a list cut short by api.js descendants().
export function truncatedNote(truncated, id) {
  const why = truncated.reason === 'max' ? 'the execution has more'
    : `the search stopped after ${truncated.shown} were found; there may be more`;
  return el('p', { class: 'truncated', id }, `Truncated: ${truncated.shown} descendants are shown (${why}).`);
}

export function errorBox(e) {
  return el('div', { class: 'error-box' },
    el('strong', {}, e.status ? `${e.status} ${e.kind}` : 'error'), ': ', e.message);
}

// Confirmation dialog (native <dialog>), resolves true/false.
export function confirmDialog(message) {
  return new Promise((resolve) => {
    const dlg = el('dialog', { class: 'confirm' },
      el('p', {}, message),
      el('div', { class: 'buttons' },
        el('button', { type: 'button', class: 'danger', 'data-confirm': 'yes' }, 'Confirm'),
        el('button', { type: 'button', 'data-confirm': 'no' }, 'Cancel')));
    dlg.addEventListener('click', (ev) => {
      const v = ev.target.getAttribute && ev.target.getAttribute('data-confirm');
      if (!v) return;
      dlg.close();
      dlg.remove();
      resolve(v === 'yes');
    });
    document.body.append(dlg);
    dlg.showModal();
  });
}
