// JavaScript activities in TypeScript (docs/js.md), bundled by esbuild into
// dist/activities.js, which examples/server/demo.toml loads as an
// [[activity_js]]. Activities run once per attempt (retried on failure):
// they may use the clock, randomness and the network (fetch, through the
// server's traced HTTP client and the component's allowed_hosts).
import { Err, type ActivityContext, type ActivitySpec } from "stele";

function greet(ctx: ActivityContext, name: string): string {
  const greeting = ctx.env.GREETING ?? "Hello";
  console.log(`attempt ${ctx.attempt}: greeting ${name}`);
  return `${greeting}, ${name}!`;
}

function square(_ctx: ActivityContext, x: number): number {
  return x * x;
}

// The HTTP status of a URL; a transport error is an err result.
async function status(ctx: ActivityContext, url: string): Promise<number> {
  try {
    const response = await fetch(url, { method: "HEAD", signal: ctx.signal, timeoutMs: 5000 });
    return response.status;
  } catch (e) {
    throw new Err(e instanceof Error ? e.message : String(e));
  }
}

export const functions: Record<string, ActivitySpec> = {
  "demo:hello-js/activity.greet": { params: [["name", "string"]], returns: "string", run: greet },
  "demo:hello-js/activity.square": { params: [["x", "u64"]], returns: "u64", run: square },
  "demo:hello-js/activity.status": { params: [["url", "string"]], returns: "result<u16, string>", run: status },
};
