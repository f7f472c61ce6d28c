// A JavaScript workflow with no build step (docs/js.md): this file is the
// module the server loads ([[workflow_js]] in examples/server/demo.toml).
// It sleeps durably — a server restart during the sleep loses nothing —
// then asks the wasm hello activity for a greeting: JS and wasm
// components call each other by ffqn.
import { Err } from "stele";

export const functions = {
  "demo:reminder-js/api.remind": {
    params: [["seconds", "u32"], ["name", "string"]],
    returns: "result<string, string>",
    run: async (ctx, seconds, name) => {
      if (seconds > 3600) throw new Err("at most an hour");
      const slept = await ctx.sleep(seconds * 1000);
      if (!slept) throw new Err("the reminder was cancelled");
      const greeting = await ctx.call("demo:hello/api.greet", [name]);
      return `${greeting} Time to stretch.`;
    },
  },
};
