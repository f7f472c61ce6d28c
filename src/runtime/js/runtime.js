// The JavaScript side of Stele's JS runtime (docs/js.md): evaluated once per
// realm (a V8 context reused run after run), before any guest code, by
// v8_realm.cc. It receives the native functions of the realm and its flavor
// ("workflow" or "activity"), hardens the realm and returns the internals
// the engine drives runs with.
//
// Hardening is what lets one realm serve many runs without sharing state
// between them: every run gets a fresh instance of the guest module (its
// top-level bindings are new), and everything else the guest can reach —
// the global object, every intrinsic, the "stele" module's exports — is
// frozen here, so a run cannot leave anything behind for the next one
// (docs/js.md, "Isolation between runs"). Sources of nondeterminism are
// removed (WebAssembly, SharedArrayBuffer, Atomics, WeakRef,
// FinalizationRegistry, the legacy RegExp statics) or, in workflows, bound
// to the replay engine (Date, Math.random, crypto.getRandomValues).
//
// Host functions (natives) look up the running run themselves; none is
// reachable from guest code except through the closures below.
(function (natives, flavor) {
  "use strict";
  const { host, now, random, randomBytes } = natives;
  const workflow = flavor === "workflow";
  const webhook = flavor === "webhook";

  // Intrinsics used below, captured before the guest could replace them
  // (the realm is frozen anyway; this keeps the runtime's own code
  // independent of what the freeze leaves).
  const JSONparse = JSON.parse;
  const JSONstringify = JSON.stringify;
  const ObjectFreeze = Object.freeze;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectGetPrototypeOf = Object.getPrototypeOf;
  const ObjectSetPrototypeOf = Object.setPrototypeOf;
  const ObjectGetOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const ObjectPrototypeHasOwnProperty = Object.prototype.hasOwnProperty;
  const ReflectOwnKeys = Reflect.ownKeys;
  const ReflectApply = Reflect.apply;
  const PromiseResolve = Promise.resolve.bind(Promise);
  const PromiseReject = Promise.reject.bind(Promise);
  const ArrayIsArray = Array.isArray;
  const NumberIsSafeInteger = Number.isSafeInteger;
  const StringCtor = String;
  const BigIntCtor = BigInt;
  const NativeDate = Date;
  const SetCtor = Set;
  const ArrayPush = Array.prototype.push;
  const ArrayJoin = Array.prototype.join;
  const Uint8ArrayCtor = Uint8Array;
  const TypedArrayProto = ObjectGetPrototypeOf(Uint8Array.prototype);

  // --- Errors the guest sees ---------------------------------------------------

  // A business error: thrown by ctx.call when the child returned err, and
  // thrown (or returned as the rejection) by a function to end with err.
  // `new Err(v, message, { retryable: false })` from an activity is a
  // permanent failure: final at once, whatever retries remain.
  class Err extends Error {
    constructor(value, message, options) {
      super(message !== undefined && message !== null ? StringCtor(message)
                                                      : "err: " + describe(value));
      ObjectDefineProperty(this, "value", { value, enumerable: true });
      const retryable = !(options !== undefined && options !== null && options.retryable === false);
      ObjectDefineProperty(this, "retryable", { value: retryable, enumerable: true });
    }
  }
  // The child failed without a value of its own (timed out, cancelled,
  // nondeterminism, ...).
  class ExecutionFailure extends Error {
    constructor(kind, reason, detail) {
      super("execution failed: " + kind + (reason ? ": " + reason : ""));
      ObjectDefineProperty(this, "kind", { value: kind, enumerable: true });
      ObjectDefineProperty(this, "reason", { value: reason ?? null, enumerable: true });
      ObjectDefineProperty(this, "detail", { value: detail ?? null, enumerable: true });
    }
  }
  // joinSet.next({ffqn}) got the response of another function (consumed).
  class FunctionMismatch extends Error {
    constructor(response) {
      super("join next: " + (response.kind === "delay" ? "a delay" : response.ffqn) +
            " answered, not the requested function");
      ObjectDefineProperty(this, "response", { value: response, enumerable: true });
    }
  }
  // The workflow is being cancelled (docs/model.md §9.5): thrown once, by
  // the blocking operation it interrupted; the workflow may clean up.
  class Cancelled extends Error {
    constructor(message) {
      super(message || "the workflow is being cancelled");
    }
  }
  for (const [cls, name] of [[Err, "Err"], [ExecutionFailure, "ExecutionFailure"],
                             [FunctionMismatch, "FunctionMismatch"], [Cancelled, "Cancelled"]]) {
    ObjectDefineProperty(cls.prototype, "name", { value: name, writable: true, configurable: true });
  }

  function describe(value) {
    try {
      const text = JSONstringify(value);
      return text === undefined ? StringCtor(value) : text;
    } catch {
      return StringCtor(value);
    }
  }

  // --- Calling the host ----------------------------------------------------------

  // Synchronous: the host answers at once (it may block the thread while a
  // workflow waits warm). Its reply is {"v": value} or {"t": type, "m":
  // message, "p": payload}: the error to throw. When the run must stop the
  // host terminates execution instead: nothing here can catch that.
  function call(op, args) {
    const reply = JSONparse(host(op, JSONstringify(args)));
    if (reply.t === undefined) return reply.v;
    switch (reply.t) {
      case "Err": throw new Err(reply.p, reply.m);
      case "FunctionMismatch": throw new FunctionMismatch(reply.p);
      case "Cancelled": throw new Cancelled(reply.m);
      case "TypeError": throw new TypeError(reply.m);
      case "RangeError": throw new RangeError(reply.m);
      default: throw new Error(reply.m);
    }
  }
  // The promise of an operation that already happened: operations run when
  // they are called, in program order, and their promises are settled
  // before the caller gets them (docs/js.md, "Promises").
  function settled(fn) {
    return function (...args) {
      try {
        return PromiseResolve(ReflectApply(fn, this, args));
      } catch (e) {
        return PromiseReject(e);
      }
    };
  }

  // Ok value of an outcome, or the error it stands for.
  function unwrap(result) {
    if (result === null || typeof result !== "object") {
      throw new TypeError("unwrap: expected {ok}, {err} or {failure}");
    }
    if (ObjectPrototypeHasOwnProperty.call(result, "ok")) return result.ok;
    if (ObjectPrototypeHasOwnProperty.call(result, "err")) throw new Err(result.err);
    if (ObjectPrototypeHasOwnProperty.call(result, "failure")) {
      const f = result.failure;
      throw new ExecutionFailure(f.kind, f.reason, f.detail);
    }
    throw new TypeError("unwrap: expected {ok}, {err} or {failure}");
  }

  // --- Argument checks (TypeError: the guest's own mistake, catchable) ----------

  function text(value, what) {
    if (typeof value !== "string") throw new TypeError(what + " must be a string");
    return value;
  }
  function params(value, what) {
    if (value === undefined) return [];
    if (!ArrayIsArray(value)) throw new TypeError(what + ": params must be an array");
    return value;
  }
  function millis(value, what) {
    if (typeof value === "bigint") value = Number(value);
    if (!NumberIsSafeInteger(value) || value < 0) {
      throw new TypeError(what + " must be a whole number of milliseconds >= 0");
    }
    return value;
  }
  function u64(value, what) {
    const v = typeof value === "bigint" ? value : (NumberIsSafeInteger(value) ? BigIntCtor(value) : null);
    if (v === null || v < 0n || v > 0xffffffffffffffffn) {
      throw new TypeError(what + " must be an integer (or bigint) in [0, 2^64)");
    }
    return StringCtor(v);
  }
  // The options of one child (docs/js.md, "Deadlines"), in the host's
  // keys (runtime::workflow::ChildOptionsFromJson); null when none. Only
  // the shape is checked here: a timeout that is not positive or a jitter
  // over 100 fails the workflow (a constraint violation), as on every face.
  const childOptionKeys = ObjectFreeze({
    timeout: "timeout_ms", maxRetries: "max_retries", backoff: "backoff_ms",
    maxBackoff: "max_backoff_ms", jitterPercent: "jitter_percent",
  });
  function childOptions(options, what) {
    if (options === undefined) return null;
    if (options === null || typeof options !== "object" || ArrayIsArray(options)) {
      throw new TypeError(what + ": options must be an object");
    }
    const out = {};
    for (const key of ReflectOwnKeys(options)) {
      if (typeof key !== "string" || !ObjectPrototypeHasOwnProperty.call(childOptionKeys, key)) {
        throw new TypeError(what + ": unknown option " + StringCtor(key) +
                            " (timeout, maxRetries, backoff, maxBackoff, jitterPercent)");
      }
      let value = options[key];
      if (value === undefined) continue;
      if (typeof value === "bigint") value = Number(value);
      if (!NumberIsSafeInteger(value) || (key !== "timeout" && value < 0)) {
        throw new TypeError(what + ": " + key + " must be " +
                            (key === "timeout" ? "a whole number of milliseconds"
                                               : "a whole number >= 0"));
      }
      out[childOptionKeys[key]] = value;
    }
    return out;
  }
  // `args` of a call or submit, with the child's options last when given.
  function withChildOptions(args, options, what) {
    const own = childOptions(options, what);
    if (own !== null) ReflectApply(ArrayPush, args, [own]);
    return args;
  }
  function outcomeArg(value, what) {
    if (value === null || typeof value !== "object" ||
        (ObjectPrototypeHasOwnProperty.call(value, "ok") ===
         ObjectPrototypeHasOwnProperty.call(value, "err"))) {
      throw new TypeError(what + " must be {ok: value} or {err: value}");
    }
    return ObjectPrototypeHasOwnProperty.call(value, "ok") ? { ok: value.ok ?? null }
                                                           : { err: value.err ?? null };
  }

  function message(args) {
    const parts = [];
    for (const a of args) ReflectApply(ArrayPush, parts, [typeof a === "string" ? a : describe(a)]);
    return ReflectApply(ArrayJoin, parts, [" "]);
  }
  const levels = ObjectFreeze(["trace", "debug", "info", "warn", "error"]);
  function log(level, args) {
    call("log", [level, message(args)]);
  }
  function makeLog() {
    const fn = (...args) => log("info", args);
    for (const level of levels) fn[level] = (...args) => log(level, args);
    return ObjectFreeze(fn);
  }

  // --- Workflow context -------------------------------------------------------------

  function makeJoinSet(id) {
    const joinSet = {
      id,
      submit(ffqn, args, options) {
        return call("submit", withChildOptions(
            [id, text(ffqn, "submit: ffqn"), params(args, "submit")], options, "submit"));
      },
      submitDelay(ms) {
        return call("submitDelay", [id, millis(ms, "submitDelay: the delay")]);
      },
      next: settled(function (options) {
        const ffqn = options?.ffqn;
        return call("next", [id, ffqn === undefined ? null : text(ffqn, "next: ffqn")]);
      }),
      // The next response if it has arrived, without waiting: undefined
      // when nothing has yet (recorded: a replay answers the same), null
      // once every submission was awaited.
      tryNext(options) {
        const ffqn = options?.ffqn;
        const got = call("tryNext", [id, ffqn === undefined ? null : text(ffqn, "tryNext: ffqn")]);
        if (got.state === "pending") return undefined;
        if (got.state === "done") return null;
        return got.response;
      },
      close: settled(function () {
        call("close", [id]);
      }),
      async *[Symbol.asyncIterator]() {
        for (;;) {
          const response = await joinSet.next();
          if (response === null) return;
          yield response;
        }
      },
    };
    return ObjectFreeze(joinSet);
  }

  function makeWorkflowContext(info) {
    return ObjectFreeze({
      executionId: info.executionId,
      ffqn: info.ffqn,
      call: settled(function (ffqn, args, options) {
        return unwrap(call("call", withChildOptions(
            [text(ffqn, "call: ffqn"), params(args, "call")], options, "call")));
      }),
      joinSet(name) {
        const id = call("joinSet", name === undefined ? [] : [text(name, "joinSet: name")]);
        return makeJoinSet(id);
      },
      sleep: settled(function (ms) {
        return call("sleep", [millis(ms, "sleep: the duration")]);
      }),
      schedule(ffqn, args, options) {
        const delay = options?.delayMs === undefined ? 0 : millis(options.delayMs, "schedule: delayMs");
        return call("schedule", [text(ffqn, "schedule: ffqn"), params(args, "schedule"), delay]);
      },
      stub(ffqn, executionId, result) {
        return call("stub", [text(ffqn, "stub: ffqn"), text(executionId, "stub: execution id"),
                             outcomeArg(result, "stub: the result")]);
      },
      // Messages and published values (docs/js.md, "Messages").
      receive: settled(function (channel, options) {
        const timeout = options?.timeoutMs === undefined ? null
          : millis(options.timeoutMs, "receive: timeoutMs");
        return call("receive", [text(channel, "receive: channel"), timeout]);
      }),
      tryReceive(channel) {
        const got = call("tryReceive", [text(channel, "tryReceive: channel")]);
        return got === null ? undefined : got;
      },
      publish(key, value) {
        call("publish", [text(key, "publish: key"), value === undefined ? null : value]);
      },
      send(executionId, channel, body) {
        call("send", [text(executionId, "send: execution id"), text(channel, "send: channel"),
                      body === undefined ? null : body]);
      },
      get(ffqn, childId) {
        return call("get", [text(ffqn, "get: ffqn"), text(childId, "get: child id")]);
      },
      randomU64(min, maxExclusive) {
        return BigIntCtor(call("randomU64", [u64(min, "randomU64: min"),
                                             u64(maxExclusive, "randomU64: maxExclusive")]));
      },
      randomU64Inclusive(min, maxInclusive) {
        return BigIntCtor(call("randomU64Inclusive", [u64(min, "randomU64Inclusive: min"),
                                                      u64(maxInclusive, "randomU64Inclusive: max")]));
      },
      randomInt(min, maxExclusive) {
        if (!NumberIsSafeInteger(min) || !NumberIsSafeInteger(maxExclusive) || maxExclusive <= min ||
            !NumberIsSafeInteger(maxExclusive - min)) {
          throw new TypeError("randomInt: needs safe integers min < maxExclusive");
        }
        const offset = call("randomU64", ["0", StringCtor(maxExclusive - min)]);
        return min + Number(offset);
      },
      randomString(minLength, maxLengthExclusive) {
        return call("randomString", [millis(minLength, "randomString: minLength"),
                                     millis(maxLengthExclusive, "randomString: maxLengthExclusive")]);
      },
      log: makeLog(),
    });
  }

  // --- Activity context ----------------------------------------------------------------

  class AbortSignal {
    constructor() {
      throw new TypeError("AbortSignal is not constructible: use ctx.signal");
    }
    get aborted() { return call("aborted", []); }
    get reason() { return this.aborted ? new Error("the attempt was cancelled or timed out") : undefined; }
    throwIfAborted() {
      if (this.aborted) throw this.reason;
    }
    // The attempt stops at its deadline (the engine terminates it), so no
    // listener would ever run: accepted and ignored.
    addEventListener() {}
    removeEventListener() {}
  }
  const signal = ObjectFreeze({ __proto__: AbortSignal.prototype });

  function headerEntries(init) {
    const out = [];
    if (init === undefined || init === null) return out;
    if (init instanceof Headers) {
      for (const pair of init) ReflectApply(ArrayPush, out, [pair]);
    } else if (ArrayIsArray(init)) {
      for (const pair of init) {
        if (!ArrayIsArray(pair) || pair.length !== 2) throw new TypeError("fetch: headers must be [name, value] pairs");
        ReflectApply(ArrayPush, out, [[StringCtor(pair[0]), StringCtor(pair[1])]]);
      }
    } else if (typeof init === "object") {
      for (const name of ReflectOwnKeys(init)) {
        if (typeof name === "string") ReflectApply(ArrayPush, out, [[name, StringCtor(init[name])]]);
      }
    } else {
      throw new TypeError("fetch: headers must be an object, an array of pairs or Headers");
    }
    return out;
  }

  class Headers {
    #map = new Map();
    constructor(init) {
      for (const [name, value] of headerEntries(init)) this.append(name, value);
    }
    append(name, value) {
      const key = StringCtor(name).toLowerCase();
      const old = this.#map.get(key);
      this.#map.set(key, old === undefined ? StringCtor(value) : old + ", " + StringCtor(value));
    }
    set(name, value) { this.#map.set(StringCtor(name).toLowerCase(), StringCtor(value)); }
    get(name) { return this.#map.get(StringCtor(name).toLowerCase()) ?? null; }
    has(name) { return this.#map.has(StringCtor(name).toLowerCase()); }
    delete(name) { this.#map.delete(StringCtor(name).toLowerCase()); }
    forEach(fn, thisArg) { for (const [k, v] of this.#map) ReflectApply(fn, thisArg, [v, k, this]); }
    keys() { return this.#map.keys(); }
    values() { return this.#map.values(); }
    entries() { return this.#map.entries(); }
    [Symbol.iterator]() { return this.#map.entries(); }
  }

  class Response {
    #body;
    #used = false;
    constructor(reply, url) {
      this.#body = reply.body;
      ObjectDefineProperty(this, "status", { value: reply.status, enumerable: true });
      ObjectDefineProperty(this, "ok", { value: reply.status >= 200 && reply.status < 300, enumerable: true });
      ObjectDefineProperty(this, "statusText", { value: "", enumerable: true });
      ObjectDefineProperty(this, "url", { value: url, enumerable: true });
      ObjectDefineProperty(this, "redirected", { value: false, enumerable: true });
      ObjectDefineProperty(this, "headers", { value: new Headers(reply.headers), enumerable: true });
    }
    get bodyUsed() { return this.#used; }
    #take() {
      if (this.#used) throw new TypeError("the body was read already");
      this.#used = true;
      return this.#body;
    }
    text() { return settled(() => this.#take())(); }
    json() { return settled(() => JSONparse(this.#take()))(); }
  }

  // fetch through the traced HTTP client of activities (docs/js.md,
  // "Activities"): string bodies, no redirects followed.
  const fetch = settled(function (input, init) {
    const options = init ?? {};
    const url = typeof input === "string" ? input : (input && typeof input.url === "string" ? input.url : StringCtor(input));
    if (options.signal !== undefined && options.signal !== null && options.signal.aborted) {
      throw new Error("fetch: the signal is aborted");
    }
    const body = options.body;
    if (body !== undefined && body !== null && typeof body !== "string") {
      throw new TypeError("fetch: the body must be a string (JSON.stringify objects)");
    }
    const request = { url, method: options.method === undefined ? "GET" : StringCtor(options.method).toUpperCase() };
    const headers = {};
    for (const [name, value] of headerEntries(options.headers)) headers[name] = value;
    request.headers = headers;
    if (typeof body === "string") request.body = body;
    if (options.timeoutMs !== undefined) request.timeout_ms = millis(options.timeoutMs, "fetch: timeoutMs");
    return new Response(call("fetch", [request]), url);
  });

  function makeActivityContext(info) {
    return ObjectFreeze({
      executionId: info.executionId,
      ffqn: info.ffqn,
      attempt: info.attempt,
      deadline: new NativeDate(info.deadlineMs),
      env: ObjectFreeze({ ...info.env }),
      signal,
      log: makeLog(),
    });
  }

  // --- Webhook context (docs/js.md, "Webhooks") -------------------------------------------

  // The host operations of a [[webhook_js]] request: the same as the wasm
  // guest's (docs/guest_abi.md §6). Errors of the service throw Err with
  // {kind, message}.
  function makeWebhookContext(info) {
    return ObjectFreeze({
      name: info.ffqn,
      env: ObjectFreeze({ ...info.env }),
      // The new top-level execution's id.
      submit(ffqn, args) {
        return call("submit", [text(ffqn, "submit: ffqn"), params(args, "submit")]);
      },
      // {ok} / {err} / {failure: {kind, reason, detail}} once finished within
      // timeoutMs (cut to what is left of the webhook's timeout), else
      // undefined.
      awaitResult: settled(function (executionId, timeoutMs) {
        const got = call("awaitResult", [text(executionId, "awaitResult: execution id"),
                                         millis(timeoutMs, "awaitResult: timeoutMs")]);
        return got === null ? undefined : got;
      }),
      log: makeLog(),
    });
  }

  // --- Deterministic time and randomness (workflows) ---------------------------------

  function installWorkflowClock() {
    // Date.now() and new Date() give the time of the current step
    // (docs/js.md, "Time"); Date.parse / Date.UTC / new Date(x) are pure.
    function SteleDate(...args) {
      if (new.target === undefined) return new NativeDate(now()).toString();
      const date = args.length === 0 ? new NativeDate(now()) : new NativeDate(...args);
      if (new.target !== SteleDate) ObjectSetPrototypeOf(date, new.target.prototype);
      return date;
    }
    ObjectDefineProperty(SteleDate, "prototype", { value: NativeDate.prototype, writable: false });
    ObjectDefineProperty(NativeDate.prototype, "constructor", { value: SteleDate, writable: true, configurable: true });
    SteleDate.now = function now_() { return now(); };
    SteleDate.parse = NativeDate.parse;
    SteleDate.UTC = NativeDate.UTC;
    ObjectDefineProperty(globalThis, "Date", { value: SteleDate, writable: true, configurable: true });
  }

  function fillRandom(array) {
    if (!(array instanceof TypedArrayProto.constructor) || array instanceof Float32Array ||
        array instanceof Float64Array) {
      throw new TypeError("crypto.getRandomValues: expected an integer typed array");
    }
    if (array.byteLength > 65536) throw new RangeError("crypto.getRandomValues: at most 65536 bytes");
    randomBytes(new Uint8ArrayCtor(array.buffer, array.byteOffset, array.byteLength));
    return array;
  }
  function randomUUID() {
    const b = fillRandom(new Uint8ArrayCtor(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let s = "";
    for (let i = 0; i < 16; i++) {
      if (i === 4 || i === 6 || i === 8 || i === 10) s += "-";
      s += (b[i] < 16 ? "0" : "") + b[i].toString(16);
    }
    return s;
  }

  // --- Hardening ---------------------------------------------------------------------

  // Nondeterministic or cross-run channels: removed.
  for (const name of ["WebAssembly", "SharedArrayBuffer", "Atomics", "WeakRef",
                      "FinalizationRegistry", "console"]) {
    delete globalThis[name];
  }
  // RegExp.$1, RegExp.lastMatch, ...: the last match of the whole realm.
  for (const key of ReflectOwnKeys(RegExp)) {
    if (typeof key === "string" && (key.startsWith("$") ||
        ["input", "lastMatch", "lastParen", "leftContext", "rightContext"].includes(key))) {
      delete RegExp[key];
    }
  }

  if (workflow) {
    installWorkflowClock();
  }
  ObjectDefineProperty(Math, "random", {
    value: function random_() { return random(); }, writable: true, configurable: true,
  });
  const crypto = { getRandomValues: fillRandom, randomUUID };
  const consoleObject = {};
  for (const [method, level] of [["log", "info"], ["info", "info"], ["debug", "debug"],
                                 ["trace", "trace"], ["warn", "warn"], ["error", "error"]]) {
    consoleObject[method] = (...args) => log(level, args);
  }
  const globals = { crypto, console: consoleObject };
  if (!workflow && !webhook) {
    defineGlobals({ fetch, Headers, Response, AbortSignal });
  }
  defineGlobals(globals);
  function defineGlobals(values) {
    for (const key of ReflectOwnKeys(values)) {
      ObjectDefineProperty(globalThis, key, { value: values[key], writable: true, configurable: true });
    }
  }

  // Frozen prototypes make `obj.toString = f` throw in strict code when
  // Object.prototype.toString is read-only (the "override mistake"): the
  // properties code commonly assigns on its own objects become accessors
  // whose setter defines an own property on the object assigned to, as if
  // the prototype's were writable. Only Object.prototype, Function.prototype
  // and the error prototypes: V8 guards its fast paths for arrays, promises
  // and regular expressions on their prototypes staying untouched.
  const ErrorPrototype = Error.prototype;
  function overridableKeys(object) {
    if (object === Object.prototype) {
      return ["constructor", "toString", "valueOf", "toLocaleString", "hasOwnProperty",
              "isPrototypeOf", "propertyIsEnumerable"];
    }
    if (object === Function.prototype) return ["toString"];
    if (object === ErrorPrototype || ReflectApply(Object.prototype.isPrototypeOf, ErrorPrototype, [object])) {
      return typeof object === "object" ? ["constructor", "name", "message", "toString"] : [];
    }
    return [];
  }
  const overriddenValues = [];
  function enableOverride(object, key) {
    const desc = ObjectGetOwnPropertyDescriptor(object, key);
    if (desc === undefined || !("value" in desc) || !desc.configurable) return;
    const value = desc.value;
    ReflectApply(ArrayPush, overriddenValues, [value]);
    ObjectDefineProperty(object, key, {
      get() { return value; },
      set(newValue) {
        if (this === object) throw new TypeError("Cannot assign to read only property '" + StringCtor(key) + "'");
        if (ReflectApply(ObjectPrototypeHasOwnProperty, this, [key])) {
          const own = ObjectGetOwnPropertyDescriptor(this, key);
          if (own.writable) {
            ObjectDefineProperty(this, key, { value: newValue });
            return;
          }
          throw new TypeError("Cannot assign to read only property '" + StringCtor(key) + "'");
        }
        ObjectDefineProperty(this, key, { value: newValue, writable: true, enumerable: true, configurable: true });
      },
      enumerable: desc.enumerable,
      configurable: false,
    });
  }

  // Roots: the global object and the intrinsics it does not reach by name.
  const hiddenIntrinsics = [
    ObjectGetPrototypeOf(function* () {}),
    ObjectGetPrototypeOf(async function () {}),
    ObjectGetPrototypeOf(async function* () {}),
    ObjectGetPrototypeOf((async function* () {})()),
    ObjectGetPrototypeOf((function* () {})()),
    ObjectGetPrototypeOf(Int8Array),
    ObjectGetPrototypeOf([][Symbol.iterator]()),
    ObjectGetPrototypeOf(new Map()[Symbol.iterator]()),
    ObjectGetPrototypeOf(new Set()[Symbol.iterator]()),
    ObjectGetPrototypeOf(""[Symbol.iterator]()),
    ObjectGetPrototypeOf(/x/[Symbol.matchAll]("")),
    ObjectGetOwnPropertyDescriptor(Function.prototype, "caller")?.get,
    (function () { "use strict"; return ObjectGetOwnPropertyDescriptor(arguments, "callee").get; })(),
  ];
  if (typeof Intl === "object" && typeof Intl.Segmenter === "function") {
    const segments = new Intl.Segmenter().segment("");
    ReflectApply(ArrayPush, hiddenIntrinsics, [ObjectGetPrototypeOf(segments),
                                              ObjectGetPrototypeOf(segments[Symbol.iterator]())]);
  }

  // Every object reachable from the roots through own properties (values,
  // getters, setters) and prototypes, breadth first.
  function reachable(roots) {
    const seen = new SetCtor();
    const queue = [];
    const add = (v) => {
      if ((typeof v === "object" && v !== null) || typeof v === "function") {
        if (!seen.has(v)) {
          seen.add(v);
          ReflectApply(ArrayPush, queue, [v]);
        }
      }
    };
    for (const r of roots) add(r);
    for (let i = 0; i < queue.length; i++) {
      const object = queue[i];
      add(ObjectGetPrototypeOf(object));
      for (const key of ReflectOwnKeys(object)) {
        const desc = ObjectGetOwnPropertyDescriptor(object, key);
        if (desc === undefined) continue;
        add(desc.value);
        add(desc.get);
        add(desc.set);
      }
    }
    return queue;
  }

  const steleExports = ObjectFreeze({ Err, ExecutionFailure, FunctionMismatch, Cancelled, unwrap });
  const roots = [globalThis, steleExports, ...hiddenIntrinsics];
  for (const object of reachable(roots)) {
    for (const key of overridableKeys(object)) {
      if (ReflectApply(ObjectPrototypeHasOwnProperty, object, [key])) enableOverride(object, key);
    }
  }
  const frozen = reachable([...roots, ...overriddenValues]);
  for (const object of frozen) ObjectFreeze(object);

  // --- Internals the engine calls ------------------------------------------------------

  // The declarations of a module's `functions` export, as JSON: throws a
  // TypeError naming what is wrong.
  function declarations(functions) {
    if (webhook) {
      // Realm::Instantiate checked that the export is a function.
      return JSONstringify([{ ffqn: "webhook", params: [], returns: null }]);
    }
    if (functions === null || typeof functions !== "object") {
      throw new TypeError("the module must export `functions`, an object keyed by ffqn");
    }
    const out = [];
    for (const ffqn of ReflectOwnKeys(functions)) {
      if (typeof ffqn !== "string") continue;
      const entry = functions[ffqn];
      const where = "functions[\"" + ffqn + "\"]";
      if (entry === null || typeof entry !== "object") throw new TypeError(where + " must be an object");
      if (typeof entry.run !== "function") throw new TypeError(where + ".run must be a function");
      const declared = entry.params === undefined ? [] : entry.params;
      if (!ArrayIsArray(declared)) throw new TypeError(where + ".params must be an array of [name, type]");
      const pairs = [];
      for (const p of declared) {
        if (!ArrayIsArray(p) || p.length !== 2 || typeof p[0] !== "string" || typeof p[1] !== "string") {
          throw new TypeError(where + ".params must be an array of [name, type] string pairs");
        }
        ReflectApply(ArrayPush, pairs, [[p[0], p[1]]]);
      }
      if (entry.returns !== undefined && typeof entry.returns !== "string") {
        throw new TypeError(where + ".returns must be a type string");
      }
      ReflectApply(ArrayPush, out, [{ ffqn, params: pairs, returns: entry.returns ?? null }]);
    }
    return JSONstringify(out);
  }

  function start(functions, ffqn, info, paramsJson) {
    const fn = webhook ? functions : functions[ffqn].run;
    const ctx = workflow ? makeWorkflowContext(info)
                         : (webhook ? makeWebhookContext(info) : makeActivityContext(info));
    const args = JSONparse(paramsJson);
    try {
      return PromiseResolve(ReflectApply(fn, undefined, [ctx, ...args]));
    } catch (e) {
      return PromiseReject(e);
    }
  }

  // {"ok": value} of a fulfilled function's value as JSON; {"bad": message}
  // when it has no JSON form (undefined becomes null).
  function encodeOk(value) {
    try {
      return JSONstringify({ ok: value === undefined ? null : value });
    } catch (e) {
      return JSONstringify({ bad: "the returned value is not JSON: " + StringCtor(e && e.message) });
    }
  }
  // {"err": value} for an Err, else null (a trap).
  function encodeRejection(reason) {
    if (!(reason instanceof Err)) return null;
    try {
      const err = reason.value === undefined ? null : reason.value;
      const json = reason.retryable === false ? JSONstringify({ err, retryable: false })
                                              : JSONstringify({ err });
      return json;
    } catch (e) {
      return JSONstringify({ bad: "the err value is not JSON: " + StringCtor(e && e.message) });
    }
  }
  function errorText(reason) {
    try {
      if (reason instanceof Error) return StringCtor(reason.name) + ": " + StringCtor(reason.message);
      return "uncaught " + describe(reason);
    } catch {
      return "uncaught exception";
    }
  }

  return ObjectFreeze({ steleExports, declarations, start, encodeOk, encodeRejection, errorText,
                        frozen: () => frozen, reachable: () => reachable(roots) });
});
