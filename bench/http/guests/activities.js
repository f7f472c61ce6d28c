// The trivial steps of the HTTP workloads in JavaScript, the twin of
// activities.c:
//   step() -> 1
//   now()  -> the realtime clock in µs (W4's t0 and t1; Date has whole
//             milliseconds, so W4's lateness is in steps of 1000 µs)
export const functions = {
  "bench:http/activities.step": { returns: "u64", run: async () => 1 },
  "bench:http/activities.now": { returns: "u64", run: async () => Date.now() * 1000 },
};
