// The W1–W5 workflows of bench/README.md in JavaScript, the twin of
// workflows.c: the same ffqns and values, driven through the server's HTTP
// API by stele_http_bench with STELE_HTTP_GUESTS=js (docs/js.md).
//   w1 []            one trivial step                      -> 1
//   w2 [steps]       `steps` sequential trivial steps      -> steps
//   w3 [children]    `children` w1 children in a join set  -> children
//   w4 [sleep_ms]    t0 = now; sleep; t1 = now             -> t1 - t0 - sleep (µs)
//   w5 [sleep_ms]    sleep; append the id to the effects   -> 1
const STEP = "bench:http/activities.step";
const NOW = "bench:http/activities.now";
const EFFECT = "bench:http/effects.append";
const W1 = "bench:http/workflows.w1";

export const functions = {
  [W1]: {
    returns: "u64",
    run: async (ctx) => ctx.call(STEP, []),
  },
  "bench:http/workflows.w2": {
    params: [["steps", "u64"]],
    returns: "u64",
    run: async (ctx, steps) => {
      let sum = 0;
      for (let i = 0; i < steps; ++i) sum += await ctx.call(STEP, []);
      return sum;
    },
  },
  "bench:http/workflows.w3": {
    params: [["children", "u64"]],
    returns: "u64",
    run: async (ctx, children) => {
      const js = ctx.joinSet();
      for (let i = 0; i < children; ++i) js.submit(W1, []);
      let sum = 0;
      for (let i = 0; i < children; ++i) {
        const response = await js.next();
        sum += response.result.ok;
      }
      return sum;
    },
  },
  "bench:http/workflows.w4": {
    params: [["sleep-ms", "u64"]],
    returns: "s64",
    run: async (ctx, sleepMs) => {
      const t0 = await ctx.call(NOW, []);
      await ctx.sleep(sleepMs);
      const t1 = await ctx.call(NOW, []);
      return t1 - t0 - sleepMs * 1000;
    },
  },
  "bench:http/workflows.w5": {
    params: [["sleep-ms", "u64"]],
    returns: "u64",
    run: async (ctx, sleepMs) => {
      await ctx.sleep(sleepMs);
      return ctx.call(EFFECT, []);
    },
  },
};
