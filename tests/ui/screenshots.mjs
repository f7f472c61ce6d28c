// Takes the screenshots of docs/ui/ with the same setup as the browser
// tests (real `stele`, headless Debian chromium):
//   node tests/ui/screenshots.mjs --stele build/x/src/cli/stele \
//     --wasm-dir build/x/examples/wasm --out docs/ui
import fs from 'node:fs';
import path from 'node:path';
import { args, loadPlaywright, startServer, launch, until, repo } from './harness.mjs';

const opts = args();
const out = path.resolve(opts.out || path.join(repo, 'docs/ui'));
fs.mkdirSync(out, { recursive: true });
const { chromium } = await loadPlaywright();
const srv = await startServer({ stele: opts.stele, wasmDir: opts.wasmDir });
if (!srv.wasm) { console.error('screenshots need the wasm examples (--wasm-dir)'); process.exit(1); }
const browser = await launch(chromium);
const submit = async (ffqn, params) => (await srv.request('POST', '/v1/executions', { ffqn, params })).execution_id;
const done = (id) => until(async () => (await srv.request('GET', '/v1/executions/' + id)).result, id, 30000);
const childOf = (id) => until(async () => (await srv.request('GET',
  `/v1/executions?show_derived=true&execution_id_prefix=${encodeURIComponent(id + '.')}`)).executions[0], 'child');
try {
  for (const who of ['ada', 'grace', 'linus']) await done(await submit('demo:greet/api.hello', [who]));
  await done(await submit('demo:greet/api.hello', ['say "hi"']));
  await done(await submit('demo:reminder/api.remind', [1, 'stretch']));
  const approved = await submit('demo:expenses/flow.expense', [120, 'acme']);
  const child = (await childOf(approved)).execution_id;
  await srv.request('PUT', `/v1/executions/${encodeURIComponent(child)}/stub`, { result: { ok: true } });
  await done(approved);
  const waiting = await submit('demo:expenses/flow.expense', [900, 'contoso']);
  const waitingChild = (await childOf(waiting)).execution_id;
  const sleeping = await submit('demo:reminder/api.remind', [3600, 'later']);
  await submit('demo:slow/api.wait', ['nightly-report']);
  await until(async () => (await srv.request('GET', `/v1/executions/${sleeping}/events`)).events.length >= 4, 'sleep');

  const page = await browser.context.newPage();
  const shot = async (hash, name, selector) => {
    await page.goto(srv.base + '/ui/' + hash);
    await page.waitForSelector(selector);
    await page.waitForTimeout(300);  // let the last fetches paint
    await page.screenshot({ path: path.join(out, name), fullPage: true });
    console.log('wrote', path.join(out, name));
  };
  await shot('#/executions?show_derived=true', 'executions.png', '#executions tbody tr[data-id]');
  await shot('#/execution/' + approved, 'detail.png', '#children li[data-id]');
  await shot('#/execution/' + sleeping, 'detail-running.png', 'button.cancel-delay');
  await shot('#/execution/' + waitingChild, 'stub.png', '#stub-form');
  await shot('#/components', 'components.png', 'form.submit');
  await shot('#/trace/' + approved, 'trace.png', '#trace .trow');
  void waiting;
} finally {
  await browser.close();
  await srv.stop();
}
