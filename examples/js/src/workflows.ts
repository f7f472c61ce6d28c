// JavaScript workflows in TypeScript (docs/js.md), bundled by esbuild into
// dist/workflows.js, which examples/server/demo.toml loads as a
// [[workflow_js]]. Every ctx operation is durable: after a crash or a
// restart the workflow is replayed and continues where it was.
import { Err, type WorkflowContext, type WorkflowSpec } from "stele";

// Greets through a JS activity, then waits a durable second.
async function welcome(ctx: WorkflowContext, name: string): Promise<string> {
  const greeting = await ctx.call<string>("demo:hello-js/activity.greet", [name]);
  const started = new Date(); // the recorded time of this step
  await ctx.sleep(1000);
  const waited = Date.now() - started.getTime();
  ctx.log.info(`greeted ${name}, then waited ${waited} ms`);
  return greeting;
}

// Fan-out / fan-in: one child activity per number, results in arrival order.
async function sumOfSquares(ctx: WorkflowContext, n: number): Promise<number> {
  if (!Number.isInteger(n) || n < 0 || n > 1000) throw new Err(`n must be in [0, 1000], got ${n}`);
  const squares = ctx.joinSet();
  for (let x = 1; x <= n; x++) squares.submit("demo:hello-js/activity.square", [x]);
  let sum = 0;
  for await (const response of squares) {
    if (response.kind === "child" && "ok" in response.result) sum += response.result.ok as number;
  }
  return sum;
}

// A raffle: the winner is drawn from the workflow's recorded randomness, so
// a replay draws the same one.
async function raffle(ctx: WorkflowContext, names: string[]): Promise<string> {
  if (names.length === 0) throw new Err("nobody entered");
  const winner = names[ctx.randomInt(0, names.length)];
  return await ctx.call<string>("demo:hello-js/activity.greet", [winner]);
}

export const functions: Record<string, WorkflowSpec> = {
  "demo:hello-js/api.welcome": { params: [["name", "string"]], returns: "string", run: welcome },
  "demo:hello-js/api.sum-of-squares": { params: [["n", "u32"]], returns: "u64", run: sumOfSquares },
  "demo:hello-js/api.raffle": { params: [["names", "list<string>"]], returns: "result<string, string>", run: raffle },
};
