// The HTTP API of docs/api.md, as used by the pages. The bearer token (when
// the server needs one) lives in sessionStorage and goes in every request.
const TOKEN_KEY = 'stele.token';

export function getToken() { return sessionStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(status, kind, message) {
    super(message);
    this.status = status;
    this.kind = kind;
  }
}

function headers(extra = {}) {
  const h = { ...extra };
  const t = getToken();
  if (t) h['Authorization'] = 'Bearer ' + t;
  return h;
}

export async function request(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'network', 'server unreachable: ' + e.message);
  }
  let data = null;
  const text = await res.text();
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!res.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(res.status, err.kind || 'http', err.message || `HTTP ${res.status}`);
  }
  return data;
}

const enc = encodeURIComponent;
export const api = {
  list: (q) => request('GET', '/v1/executions?' + new URLSearchParams(q).toString()),
  get: (id) => request('GET', `/v1/executions/${enc(id)}`),
  events: (id, since = 0, length = 1000) =>
    request('GET', `/v1/executions/${enc(id)}/events?since_version=${since}&length=${length}`),
  responses: (id, cursor) =>
    request('GET', `/v1/executions/${enc(id)}/responses?length=1000` +
      (cursor === undefined ? '' : `&cursor=${cursor}`)),
  values: (id) => request('GET', `/v1/executions/${enc(id)}/values`),
  // The channel keeps its `/`s: they are part of the path (docs/api.md).
  sendMessage: (id, channel, body, messageId) =>
    request('POST', `/v1/executions/${enc(id)}/messages/${channel.split('/').map(enc).join('/')}`,
      messageId ? { body, message_id: messageId } : { body }),
  backtrace: (id, version) => request('GET', `/v1/executions/${enc(id)}/backtrace?version=${enc(version)}`),
  cancel: (id) => request('PUT', `/v1/executions/${enc(id)}/cancel`, {}),
  terminate: (id) => request('PUT', `/v1/executions/${enc(id)}/terminate`, {}),
  pause: (id) => request('PUT', `/v1/executions/${enc(id)}/pause`, {}),
  resume: (id) => request('PUT', `/v1/executions/${enc(id)}/resume`, {}),
  cancelDelay: (id) => request('PUT', `/v1/delays/${enc(id)}/cancel`, {}),
  stub: (id, result) => request('PUT', `/v1/executions/${enc(id)}/stub`, { result }),
  submit: (body) => request('POST', '/v1/executions', body),
  components: () => request('GET', '/v1/components'),
  schedules: () => request('GET', '/v1/schedules'),
  pauseSchedule: (name) => request('PUT', `/v1/schedules/${enc(name)}/pause`, {}),
  resumeSchedule: (name) => request('PUT', `/v1/schedules/${enc(name)}/resume`, {}),
  triggerSchedule: (name) => request('POST', `/v1/schedules/${enc(name)}/trigger`, {}),
};

// Every event of an execution (pages of 1000).
export async function allEvents(id) {
  let since = 0;
  const out = [];
  for (;;) {
    const page = await api.events(id, since);
    out.push(...page.events);
    if (page.next_since_version === undefined) return out;
    since = page.next_since_version;
  }
}

// Requests made at most by descendants(): the server scans at most 10,000
// rows per request (docs/api.md), so this bounds the rows scanned too.
const MAX_LIST_REQUESTS = 100;

// Every descendant of `id` (children, grandchildren...), newest first,
// following next_cursor until the list ends. Stops early past `max` rows or
// MAX_LIST_REQUESTS requests; `truncated` then says which, else it is null.
// Resolves { rows, truncated: null | { shown, reason: 'max' | 'requests' } }.
export async function descendants(id, max) {
  const rows = [];
  let cursor = null;
  for (let i = 0; i < MAX_LIST_REQUESTS; ++i) {
    // One row more than `max` in all, to know whether more exist.
    const q = { show_derived: 'true', execution_id_prefix: id + '.', length: Math.min(1000, max + 1 - rows.length) };
    if (cursor) q.cursor = cursor;
    const res = await api.list(q);
    rows.push(...res.executions);
    if (rows.length > max) return { rows: rows.slice(0, max), truncated: { shown: max, reason: 'max' } };
    if (!res.next_cursor) return { rows, truncated: null };
    cursor = res.next_cursor;
  }
  return { rows, truncated: { shown: rows.length, reason: 'requests' } };
}

// Live state: Server-Sent Events from /follow need a header for the token,
// which EventSource cannot send, so the stream is read with fetch.
// onState(state) for each `state`, onFinished(data) at the end. Returns a
// stop function. Falls back to polling when streaming fails.
export function follow(id, onState, onFinished) {
  const ctl = new AbortController();
  let stopped = false;
  (async () => {
    try {
      const res = await fetch(`/v1/executions/${enc(id)}/follow`, { headers: headers(), signal: ctl.signal });
      if (!res.ok || !res.body) throw new Error('follow failed: ' + res.status);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let idx;
        while ((idx = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          let ev = 'message', data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) ev = line.slice(6).trim();
            else if (line.startsWith('data:')) data += line.slice(5).trim();
          }
          let parsed = null;
          try { parsed = JSON.parse(data); } catch { continue; }
          if (ev === 'state') onState(parsed);
          else if (ev === 'finished') { onFinished(parsed); return; }
        }
      }
    } catch (e) {
      if (stopped) return;
      // Polling fallback.
      while (!stopped) {
        try {
          const ex = await api.get(id);
          onState(ex.pending_state);
          if (ex.result) { onFinished(ex); return; }
        } catch { /* retry */ }
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  })();
  return () => { stopped = true; ctl.abort(); };
}
