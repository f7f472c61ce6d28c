// Workflows for the runtime/js tests (js_host_test.cc), mirroring the wasm
// host's test guests (src/runtime/wasm_host/testdata). `const VARIANT = 1`
// is replaced by the tests: 2 changes `two-calls` inside its recorded
// prefix (nondeterminism), 3 only after it (an upgrade that continues).
import { Err, FunctionMismatch } from "stele";

const VARIANT = 1;

async function placeTheCall(ctx, ffqn) {
  return ctx.call(ffqn, ["x"]);
}

function deepThrow(depth) {
  if (depth === 0) throw new TypeError("deep trouble");
  return deepThrow(depth - 1) + 1;
}

export const functions = {
  "testing:js/wf.messages": {
    params: [],
    returns: "string",
    run: async (ctx) => {
      ctx.publish("stage", "waiting");
      const late = await ctx.receive("orders", { timeoutMs: 10 });
      const early = ctx.tryReceive("orders");
      ctx.send(ctx.executionId, "orders", { n: 1 });
      const got = await ctx.receive("orders");
      ctx.publish("stage", got.body);
      let missing = "sent";
      try {
        ctx.send("E_01KBNHM5FQW81KP5Y3XMNX31K4", "orders", 1);
      } catch (e) {
        missing = e.message;
      }
      return JSON.stringify([late, early === undefined, got.channel, got.body, missing]);
    },
  },
  "testing:js/wf.hello": {
    params: [["name", "string"]],
    returns: "string",
    run: async (ctx, name) => {
      const greeting = await ctx.call("testing:js/act.greet", [name]);
      await ctx.sleep(1);
      return greeting;
    },
  },
  "testing:js/wf.fan-out": {
    params: [["n", "u64"]],
    returns: "u64",
    run: async (ctx, n) => {
      const js = ctx.joinSet();
      for (let i = 1; i <= n; i++) js.submit("testing:js/act.square", [i]);
      let sum = 0;
      for await (const response of js) sum += response.result.ok;
      if ((await js.next()) !== null) throw new Error("a join set gave more than it got");
      return sum;
    },
  },
  // Per-child options (docs/js.md, "Deadlines"): calls `ffqn([x])`, then
  // submits it and awaits it, both with `options` (JSON text). Returns what
  // each saw: a value, an outcome, or the error thrown.
  "testing:js/wf.child-options": {
    params: [["options", "string"], ["ffqn", "string"], ["x", "u64"]],
    returns: "string",
    run: async (ctx, optionsText, ffqn, x) => {
      const options = JSON.parse(optionsText);
      const seen = [];
      try {
        seen.push(await ctx.call(ffqn, [x], options));
      } catch (e) {
        seen.push(e.name + ": " + (e.kind ?? e.message));
      }
      try {
        const js = ctx.joinSet();
        js.submit(ffqn, [x], options);
        seen.push((await js.next()).result);
      } catch (e) {
        seen.push(e.name + ": " + e.message);
      }
      return JSON.stringify(seen);
    },
  },
  "testing:js/wf.sleep": {
    params: [["millis", "u64"]],
    returns: "string",
    run: async (ctx, millis) => {
      await ctx.sleep(millis);
      return "slept";
    },
  },
  "testing:js/wf.loop": {
    run: async () => {
      let spins = 0;
      for (;;) spins++;
    },
  },
  // Spins after an operation: the slice that ends it starts when the
  // operation returns to the guest.
  "testing:js/wf.loop-after-call": {
    run: async (ctx) => {
      ctx.log.info("about to spin");
      let spins = 0;
      for (;;) spins++;
    },
  },
  "testing:js/wf.recurse": {
    params: [["depth", "u64"]],
    run: async (ctx, depth) => {
      const f = (n) => (n === 0 ? 0 : f(n - 1) + 1);
      return f(depth);
    },
  },
  "testing:js/wf.trap": {
    run: async () => deepThrow(2),
  },
  "testing:js/wf.memory": {
    run: async () => {
      const hoard = [];
      for (;;) hoard.push(new Array(100000).fill(hoard.length));
    },
  },
  "testing:js/wf.two-calls": {
    returns: "list<string>",
    run: async (ctx) => {
      const a = await placeTheCall(ctx, "testing:js/act.greet");
      let b = VARIANT === 2 ? await placeTheCall(ctx, "testing:js/act.square")
                            : await placeTheCall(ctx, "testing:js/stub.approve");
      b = await placeTheCall(ctx, "testing:js/act.greet");
      return VARIANT === 3 ? [a, b, "v3"] : [a, b];
    },
  },
  "testing:js/wf.approval": {
    params: [["amount", "u64"]],
    returns: "string",
    run: async (ctx, amount) => {
      try {
        return (await ctx.call("testing:js/stub.approve", [amount])) === true ? "approved" : "rejected";
      } catch (e) {
        if (e instanceof Err) return "rejected";
        throw e;
      }
    },
  },
  "testing:js/wf.random": {
    run: async (ctx) => {
      const a = ctx.randomU64(0n, 1000000n);
      const b = ctx.randomU64Inclusive(5, 5);
      const s = ctx.randomString(8, 9);
      const i = ctx.randomInt(-10, 10);
      const m = Math.random();
      const bytes = crypto.getRandomValues(new Uint8Array(4));
      return [String(a), String(b), s, i, m, Array.from(bytes)];
    },
  },
  "testing:js/wf.time": {
    run: async (ctx) => {
      const t1 = Date.now();
      const t2 = new Date().getTime();
      await ctx.sleep(20);
      const t3 = Date.now();
      return [t1, t2, t3];
    },
  },
  "testing:js/wf.bad-ffqn": {
    run: async (ctx) => ctx.call("not an ffqn", []),
  },
  "testing:js/wf.bad-result": {
    run: async () => 10n,
  },
  "testing:js/wf.forever": {
    run: async () => new Promise(() => {}),
  },
  "testing:js/wf.err": {
    run: async () => {
      throw new Err({ code: 42 });
    },
  },
  // --- the effects (wasm: effect_workflows.c) ---
  "testing:js/wf.schedule": {
    params: [["delay-millis", "u64"]],
    returns: "string",
    run: async (ctx, delay) => ctx.schedule("testing:js/wf.sleep", [1], { delayMs: delay }),
  },
  "testing:js/wf.get": {
    run: async (ctx) => {
      const batch = ctx.joinSet("batch");
      const later = ctx.joinSet("later");
      const child = batch.submit("testing:js/act.square", [5]);
      const pending = later.submit("testing:js/act.square", [6]);
      const awaited = await batch.next({ ffqn: "testing:js/act.square" });
      const next = await batch.next({ ffqn: "testing:js/act.square" });
      const got = ctx.get("testing:js/act.square", child);
      const attempt = (f) => {
        try {
          return f();
        } catch (e) {
          return e.message;
        }
      };
      return [awaited.result, next, got, attempt(() => ctx.get("testing:js/act.greet", child)),
              attempt(() => ctx.get("testing:js/act.square", pending)),
              attempt(() => ctx.get("testing:js/act.square", "garbage"))];
    },
  },
  "testing:js/wf.delay": {
    params: [["millis", "u64"]],
    run: async (ctx, millis) => {
      const js = ctx.joinSet();
      const delay = js.submitDelay(millis);
      const response = await js.next();
      return [response.kind, response.id === delay, response.expired];
    },
  },
  "testing:js/wf.named": {
    run: async (ctx) => {
      const first = ctx.joinSet("orders");
      const out = [first.id];
      for (const name of ["orders", "no spaces"]) {
        try {
          ctx.joinSet(name);
          out.push("created");
        } catch (e) {
          out.push(e.message);
        }
      }
      return out;
    },
  },
  "testing:js/wf.close": {
    run: async (ctx) => {
      const first = ctx.joinSet("first");
      const second = ctx.joinSet("second");
      first.submitDelay(100000000);
      second.submit("testing:js/wf.sleep", [20]);
      second.submit("testing:js/stub.approve", []);
      await second.close();
      await first.close();
      return "parent done";
    },
  },
  "testing:js/wf.mismatch": {
    run: async (ctx) => {
      const js = ctx.joinSet();
      js.submitDelay(1);
      try {
        await js.next({ ffqn: "testing:js/act.square" });
        return "no mismatch";
      } catch (e) {
        if (!(e instanceof FunctionMismatch)) throw e;
        return [e.response.kind, e.response.expired];
      }
    },
  },
  "testing:js/wf.stub": {
    run: async (ctx) => {
      const js = ctx.joinSet();
      const child = js.submit("testing:js/stub.approve", []);
      const first = ctx.stub("testing:js/stub.approve", child, { ok: true });
      const same = ctx.stub("testing:js/stub.approve", child, { ok: true });
      const other = ctx.stub("testing:js/stub.approve", child, { err: "no" });
      const response = await js.next();
      return [first, same, other, response.result];
    },
  },
  "testing:js/wf.empty-random": {
    run: async (ctx) => String(ctx.randomU64(5, 5)),
  },
};
