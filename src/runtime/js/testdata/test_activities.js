// Activities for the runtime/js tests (js_host_test.cc), mirroring the
// wasm host's (src/runtime/wasm_host/testdata/test_activities.c).
import { Err } from "stele";

export const functions = {
  "testing:js/act.greet": {
    params: [["name", "string"]],
    returns: "string",
    run: async (ctx, name) => {
      console.log("greeting", name);
      return "hello, " + name;
    },
  },
  "testing:js/act.square": {
    params: [["x", "u64"]],
    returns: "u64",
    run: async (ctx, x) => x * x,
  },
  "testing:js/act.trap": {
    run: async () => {
      null.boom();
    },
  },
  "testing:js/act.err": {
    run: async () => {
      throw new Err("no luck");
    },
  },
  "testing:js/act.declined": {
    run: async () => {
      throw new Err("declined", "the card was declined", { retryable: false });
    },
  },
  "testing:js/act.loop": {
    run: async () => {
      for (;;) {}
    },
  },
  "testing:js/act.env": {
    run: async (ctx) => [ctx.env.GREETING ?? null, ctx.env.HOME ?? null, ctx.attempt],
  },
  "testing:js/act.fetch": {
    params: [["url", "string"], ["init", "string"]],
    run: async (ctx, url, init) => {
      try {
        const response = await fetch(url, { ...JSON.parse(init), signal: ctx.signal });
        return { status: response.status, ok: response.ok, type: response.headers.get("content-type"),
                 body: await response.text() };
      } catch (e) {
        throw new Err(e.message);
      }
    },
  },
};
