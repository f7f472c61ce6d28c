// Entry point: the hash router and the token box. Pages render into #app and
// return an optional cleanup function (timers, streams).
import { getToken, setToken } from './api.js';
import { el, clear, flash } from './util.js';
import { executionsPage } from './executions.js';
import { detailPage } from './detail.js';
import { componentsPage } from './components.js';
import { schedulesPage } from './schedules.js';
import { tracePage } from './trace.js';

let cleanup = null;

function parseHash() {
  const h = location.hash.replace(/^#/, '') || '/executions';
  const [path, query = ''] = h.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, query: new URLSearchParams(query) };
}

function notFound(root, what) {
  root.append(el('section', { class: 'not-found' },
    el('h1', {}, 'Not found'), el('p', {}, what),
    el('p', {}, el('a', { href: '#/executions' }, 'Back to executions'))));
}

async function route() {
  if (cleanup) { try { cleanup(); } catch { /* ignore */ } cleanup = null; }
  const root = clear(document.getElementById('app'));
  const { parts, query } = parseHash();
  const page = parts[0] || 'executions';
  for (const a of document.querySelectorAll('nav a')) {
    a.classList.toggle('active', a.dataset.nav === page ||
      (a.dataset.nav === 'executions' && (page === 'execution' || page === 'trace')));
  }
  try {
    if (page === 'executions') cleanup = await executionsPage(root, query);
    else if (page === 'execution' && parts[1]) cleanup = await detailPage(root, parts[1]);
    else if (page === 'trace' && parts[1]) cleanup = await tracePage(root, parts[1], query);
    else if (page === 'components') cleanup = await componentsPage(root, query);
    else if (page === 'schedules') cleanup = await schedulesPage(root);
    else notFound(root, 'No page at ' + location.hash);
  } catch (e) {
    root.append(el('div', { class: 'error-box' }, String(e && e.message || e)));
  }
}

document.getElementById('token').value = getToken();
document.getElementById('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  setToken(document.getElementById('token').value.trim());
  flash('Token ' + (getToken() ? 'set' : 'cleared') + ' for this tab', 'info');
  route();
});
window.addEventListener('hashchange', route);
route();
