// Shared setup of the UI browser tests and the screenshot script: starts the
// REAL `stele` binary on 127.0.0.1 (port 0) with a temp data dir and a config
// of exec, stub and (when built) wasm components, and launches Debian's
// headless chromium through playwright-core.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The JavaScript workflow of the JS backtrace test (ui_e2e.mjs): its
// sleep is at line 6, column 17.
const JS_WORKFLOW = `export const functions = {
  "ui:js/wf.hello": {
    params: [["name", "string"]],
    returns: "string",
    run: async (ctx, name) => {
      await ctx.sleep(1);
      return "hello, " + name;
    },
  },
};
`;

export const SKIP = 77;  // ctest SKIP_RETURN_CODE
const here = path.dirname(fileURLToPath(import.meta.url));
export const repo = path.resolve(here, '../..');
export const CHROMIUM = process.env.STELE_CHROMIUM || '/usr/bin/chromium';

export function args() {
  const a = { stele: null, wasmDir: null, out: null };
  const v = process.argv.slice(2);
  for (let i = 0; i < v.length; ++i) {
    if (v[i] === '--stele') a.stele = v[++i];
    else if (v[i] === '--wasm-dir') a.wasmDir = v[++i];
    else if (v[i] === '--out') a.out = v[++i];
  }
  if (!a.stele) a.stele = path.join(repo, 'build/ui/src/cli/stele');
  return a;
}

export function skip(msg) {
  console.log('SKIP: ' + msg);
  process.exit(SKIP);
}

export async function loadPlaywright() {
  if (!fs.existsSync(CHROMIUM)) skip(`no chromium at ${CHROMIUM} (apt-get install chromium)`);
  try {
    return await import('playwright-core');
  } catch (e) {
    skip('playwright-core is not installed (cd tests/ui && npm ci): ' + e.message);
  }
  return null;
}

export function wasmAvailable(dir) {
  return !!dir && ['durable_sleep', 'human_approval', 'hello_workflow', 'hello_activity', 'fan_out',
    'square_activity', 'await_approval']
    .every((n) => fs.existsSync(path.join(dir, n + '.wasm')));
}

function config(dataDir, wasmDir, token, uiListen) {
  const slow = path.join(dataDir, '..', 'slow.sh');
  fs.writeFileSync(slow, '#!/bin/sh\ncat >/dev/null\nsleep "${SLOW_SECS:-60}"\nprintf \'{"ok": "slept"}\\n\'\n', { mode: 0o755 });
  let t = `data_dir = "${dataDir}"
[api]
listen = "127.0.0.1:0"
${token ? `token = "${token}"` : ''}
${uiListen ? 'ui_listen = "127.0.0.1:0"' : ''}
[executor]
tick_sleep = "50ms"
[watcher]
tick_sleep = "50ms"

[[activity_exec]]
name = "greeter"
command = ["${path.join(repo, 'examples/server/greet.sh')}"]
env = { GREETING = "Hello" }
max_retries = 2
retry_backoff = "200ms"
lock_expiry = "10s"
[[activity_exec.functions]]
ffqn = "demo:greet/api.hello"
params = [{ name = "who", type = "string" }]
return_type = "result<string, string>"

[[activity_exec]]
name = "slow"
command = ["${slow}"]
max_retries = 0
lock_expiry = "120s"
[[activity_exec.functions]]
ffqn = "demo:slow/api.wait"
params = [{ name = "label", type = "string" }]
return_type = "result<string, string>"

[[activity_stub]]
name = "approvals"
[[activity_stub.functions]]
ffqn = "demo:expenses/manager.approve"
params = [{ name = "amount", type = "u64" }, { name = "payee", type = "string" }]
return_type = "result<bool, string>"
`;
  if (wasmAvailable(wasmDir)) {
    // A JavaScript workflow (docs/js.md), written beside the data folder:
    // the same V8 serves wasm and JS, so a server that loads wasm loads it.
    const js = path.join(path.dirname(dataDir), 'hello_js.js');
    fs.writeFileSync(js, JS_WORKFLOW);
    t += `
[[workflow_js]]
name = "hello_js"
location = "${js}"
[[workflow_wasm]]
name = "hello"
location = "${wasmDir}/hello_workflow.wasm"
[[activity_wasm]]
name = "hello_activity"
location = "${wasmDir}/hello_activity.wasm"
[[workflow_wasm]]
name = "durable_sleep"
location = "${wasmDir}/durable_sleep.wasm"
[[workflow_wasm]]
name = "human_approval"
location = "${wasmDir}/human_approval.wasm"
[[workflow_wasm]]
name = "await_approval"
location = "${wasmDir}/await_approval.wasm"
[[workflow_wasm]]
name = "fan_out"
location = "${wasmDir}/fan_out.wasm"
[[activity_wasm]]
name = "square_activity"
location = "${wasmDir}/square_activity.wasm"
[[activity_exec]]
name = "shop"
command = ["${path.join(repo, 'examples/server/shop.sh')}"]
max_retries = 1
retry_backoff = "200ms"
lock_expiry = "10s"
[[activity_exec.functions]]
ffqn = "demo:expenses/bank.pay"
params = [{ name = "amount", type = "u64" }, { name = "payee", type = "string" }]
return_type = "result<string, string>"
`;
  }
  return t;
}

// Starts `stele server run`; resolves { base, uiBase, stop(), request() }:
// `base` is the API's address, `uiBase` the UI's (the same, unless
// `uiListen` asks for [api] ui_listen: then a second port).
export async function startServer({ stele, wasmDir, token, uiListen = false }) {
  if (!fs.existsSync(stele)) throw new Error(`no stele binary at ${stele} (build the \`stele\` target)`);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'stele-ui-'));
  const dataDir = path.join(tmp, 'data');
  fs.mkdirSync(dataDir);
  const cfg = path.join(tmp, 'stele.toml');
  fs.writeFileSync(cfg, config(dataDir, wasmDir, token, uiListen));
  const child = spawn(stele, ['server', 'run', '--config', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const [port, uiPort] = await new Promise((resolve, reject) => {
    const onData = (d) => {
      log += d.toString();
      const m = /listening on port (\d+)/.exec(log);
      const ui = /web UI on port (\d+)/.exec(log);
      if (m && (!uiListen || ui)) resolve([Number(m[1]), ui ? Number(ui[1]) : Number(m[1])]);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`stele exited ${code}:\n${log}`)));
    setTimeout(() => reject(new Error('stele did not start in 30 s:\n' + log)), 30000);
  });
  const base = `http://127.0.0.1:${port}`;
  const request = async (method, p, body) => {
    const headers = { 'Content-Type': 'application/json' };
    if (token) headers.Authorization = 'Bearer ' + token;
    const res = await fetch(base + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    let data = null;
    try { data = JSON.parse(text); } catch { data = text; }
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
    return data;
  };
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => { child.once('exit', r); setTimeout(r, 5000); });
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  return {
    base, uiBase: `http://127.0.0.1:${uiPort}`, port, stop, request, log: () => log, wasm: wasmAvailable(wasmDir),
  };
}

export async function launch(chromium) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'stele-ui-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1360, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    context,
    close: async () => { await context.close(); fs.rmSync(profile, { recursive: true, force: true }); },
  };
}

// Polls fn() until it returns a truthy value (test conditions, not timings).
export async function until(fn, what, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try { last = await fn(); if (last) return last; } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
