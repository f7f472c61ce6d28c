// TypeScript declarations of Stele's JavaScript runtime (docs/js.md): the
// "stele" module a workflow, activity or webhook module may import, the context
// its functions get, and the globals of the realm they run in.
//
// Use: copy (or reference) this file in your project and keep "stele"
// external when bundling (esbuild --external:stele); the server provides
// the module at run time. examples/js shows a project set up this way.

declare module "stele" {
  /** A value any Stele function takes or returns: whatever JSON can hold. */
  export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

  /** How a child execution ended: its ok value, its err value, or a failure without a value. */
  export type Outcome<T = Json, E = Json> =
    | { ok: T }
    | { err: E }
    | { failure: { kind: FailureKind; reason: string | null; detail: string | null } };

  export type FailureKind =
    | "timed_out"
    | "nondeterminism_detected"
    | "out_of_fuel"
    | "cancelled"
    | "uncategorized";

  /**
   * A business error: `ctx.call` throws it when the child returned err, and a
   * function that throws it (or returns a promise rejected with it) ends with
   * err `value`. Any other exception is a trap (a permanent workflow failure,
   * a retried activity attempt).
   */
  export class Err<E = Json> extends Error {
    /** `{ retryable: false }` from an activity: a permanent failure, final at once. */
    constructor(value: E, message?: string, options?: { retryable?: boolean });
    readonly value: E;
    readonly retryable: boolean;
  }

  /** The child ended without a value of its own (timed out, cancelled, ...). */
  export class ExecutionFailure extends Error {
    readonly kind: FailureKind;
    readonly reason: string | null;
    readonly detail: string | null;
  }

  /** `joinSet.next({ffqn})` got the response of another function (it is consumed). */
  export class FunctionMismatch extends Error {
    readonly response: JoinSetResponse;
  }

  /**
   * The workflow is being cancelled: thrown once, by the `next()`, call or
   * sleep it interrupted. The workflow may clean up (call activities) until
   * its grace period ends, then it finishes `cancelled` whatever it returns.
   */
  export class Cancelled extends Error {}

  /** The ok value of an outcome; throws `Err` or `ExecutionFailure` otherwise. */
  export function unwrap<T = Json>(outcome: Outcome<T>): T;

  export interface ChildResponse {
    kind: "child";
    /** The child execution id. */
    id: string;
    ffqn: string;
    result: Outcome;
  }
  export interface DelayResponse {
    kind: "delay";
    /** The delay id. */
    id: string;
    /** true: the delay expired; false: it was cancelled. */
    expired: boolean;
  }
  export type JoinSetResponse = ChildResponse | DelayResponse;

  /**
   * One child's own deadline and retry policy (docs/js.md, "Deadlines"), in
   * milliseconds: `timeout` from the workflow's current time (never past
   * the workflow's own deadline, which the child inherits anyway), and
   * overrides of the child function's retry policy. A timeout that is not
   * positive or a jitter over 100 fails the workflow; an unknown key or a
   * value that is not a whole number throws a TypeError.
   */
  export interface ChildOptions {
    timeout?: number;
    maxRetries?: number;
    backoff?: number;
    maxBackoff?: number;
    jitterPercent?: number;
  }

  /** A join set: submissions run concurrently, `next` awaits them in arrival order. */
  export interface JoinSet extends AsyncIterable<JoinSetResponse> {
    /** "g:1", "n:orders", ... */
    readonly id: string;
    /** Submits a child execution; returns its id. */
    submit(ffqn: string, params?: Json[], options?: ChildOptions): string;
    /** Submits a durable timer; returns its delay id. */
    submitDelay(ms: number): string;
    /**
     * The next response, in arrival order; null once every submission was
     * awaited. With `ffqn`, a response of another function (or a delay)
     * throws FunctionMismatch.
     */
    next(options?: { ffqn?: string }): Promise<JoinSetResponse | null>;
    /**
     * The next response if it has arrived, without waiting: undefined when
     * nothing has yet (the answer is recorded, so a replay gives the same),
     * null once every submission was awaited. `ffqn` as for `next`.
     */
    tryNext(options?: { ffqn?: string }): JoinSetResponse | null | undefined;
    /** Cancels unawaited activities and delays, awaits child workflows. */
    close(): Promise<void>;
  }

  export interface Log {
    (...args: unknown[]): void;
    trace(...args: unknown[]): void;
    debug(...args: unknown[]): void;
    info(...args: unknown[]): void;
    warn(...args: unknown[]): void;
    error(...args: unknown[]): void;
  }

  /**
   * What a workflow may do. Every operation runs when it is called, in
   * program order, and is recorded; the promise it returns is already
   * settled. Awaiting anything that no operation settles is an error.
   */
  export interface WorkflowContext {
    readonly executionId: string;
    readonly ffqn: string;
    /** A durable direct call; resolves to the child's ok value, throws Err / ExecutionFailure. */
    call<T = Json>(ffqn: string, params?: Json[], options?: ChildOptions): Promise<T>;
    /** A generated join set (`g:N`), or a named one (`n:name`; throws when taken or invalid). */
    joinSet(name?: string): JoinSet;
    /** A durable sleep; resolves true when it expired, false when the delay was cancelled. */
    sleep(ms: number): Promise<boolean>;
    /** Schedules a new top-level execution; returns its id. */
    schedule(ffqn: string, params?: Json[], options?: { delayMs?: number }): string;
    /** Writes the result of a stub activity child; false when it held another result. */
    stub(ffqn: string, executionId: string, result: { ok: Json } | { err: Json }): boolean;
    /** The result of a child a join set's `next` already returned. */
    get(ffqn: string, childId: string): Outcome;
    /** Uniform in [min, maxExclusive) (recorded). */
    randomU64(min: bigint | number, maxExclusive: bigint | number): bigint;
    /** Uniform in [min, maxInclusive] (recorded). */
    randomU64Inclusive(min: bigint | number, maxInclusive: bigint | number): bigint;
    /** Uniform integer in [min, maxExclusive), safe integers (recorded). */
    randomInt(min: number, maxExclusive: number): number;
    /** Alphanumeric, length in [minLength, maxLengthExclusive) (recorded). */
    randomString(minLength: number, maxLengthExclusive: number): string;
    /** To the server's log; dropped while replaying. */
    readonly log: Log;
  }

  /** What an activity gets. */
  export interface ActivityContext {
    readonly executionId: string;
    readonly ffqn: string;
    /** 1 for the first attempt. */
    readonly attempt: number;
    /** When the attempt is stopped (its lock's expiry). */
    readonly deadline: Date;
    /** The `env` of the component's configuration, nothing else. */
    readonly env: Readonly<Record<string, string>>;
    /** Aborted when the attempt is cancelled or timed out; pass it to fetch. */
    readonly signal: AbortSignal;
    readonly log: Log;
  }

  export interface FunctionSpec<Ctx, Args extends Json[] = Json[], R = Json> {
    /** [name, WIT-like type] per parameter: "string", "u64", "list<string>", ... (docs/types.md) */
    params?: [string, string][];
    /** A WIT-like type, e.g. "string" or "result<string, string>". */
    returns?: string;
    run(ctx: Ctx, ...args: Args): Promise<R> | R;
  }
  export type WorkflowSpec<Args extends Json[] = any, R = any> = FunctionSpec<WorkflowContext, Args, R>;
  export type ActivitySpec<Args extends Json[] = any, R = any> = FunctionSpec<ActivityContext, Args, R>;
  /** The type of a module's `functions` export: specs keyed by ffqn. */
  export type Functions<Spec> = Record<string, Spec>;

  // --- Webhooks ([[webhook_js]], docs/js.md "Webhooks") ---------------------

  /** The HTTP request a webhook answers (names of headers in lowercase). */
  export interface WebhookRequest {
    readonly method: string;
    readonly path: string;
    /** The route's `:params`, e.g. { id: "A-1" } for POST /orders/:id. */
    readonly params: Readonly<Record<string, string>>;
    readonly query: Readonly<Record<string, string>>;
    readonly headers: Readonly<Record<string, string>>;
    /** The body as text (bytes that are not UTF-8 become U+FFFD). */
    readonly body: string;
  }

  /**
   * What a webhook returns. A string `body` is sent as is (Content-Type from
   * `headers`, else text/plain); any other JSON value is sent as JSON.
   */
  export interface WebhookResponse {
    /** 200..599 */
    status: number;
    headers?: Record<string, string>;
    body?: Json;
  }

  /** What a webhook gets: the same host operations as a wasm webhook. */
  export interface WebhookContext {
    /** The webhook's name in the configuration. */
    readonly name: string;
    /** The `env` of the webhook's configuration, nothing else. */
    readonly env: Readonly<Record<string, string>>;
    /**
     * Starts a new top-level execution (the checks of POST /v1/executions)
     * and returns its id. Throws `Err` with value {kind, message} (the API's
     * error kinds: "validation", "not_found", ...).
     */
    submit(ffqn: string, params?: Json[]): string;
    /**
     * The execution's outcome once it finished within `timeoutMs` (never past
     * the webhook's `timeout`), else undefined. Throws `Err` with value
     * {kind, message} for a malformed or unknown id.
     */
    awaitResult<T = Json, E = Json>(executionId: string,
                                    timeoutMs: number): Promise<Outcome<T, E> | undefined>;
    readonly log: Log;
  }

  /** The type of a webhook module's `webhook` export. */
  export type Webhook = (ctx: WebhookContext, request: WebhookRequest) =>
      Promise<WebhookResponse> | WebhookResponse;
}

// The realm's globals beyond ECMAScript (both kinds): console (to the
// server's log) and crypto (in workflows, seeded from a recorded value).
interface Console {
  log(...args: unknown[]): void;
  info(...args: unknown[]): void;
  debug(...args: unknown[]): void;
  trace(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}
declare var console: Console;
declare var crypto: {
  getRandomValues<T extends Int8Array | Uint8Array | Uint8ClampedArray | Int16Array | Uint16Array |
                      Int32Array | Uint32Array | BigInt64Array | BigUint64Array>(array: T): T;
  randomUUID(): string;
};

// Activities only: fetch through Stele's traced HTTP client (string bodies,
// redirects not followed, the component's allowed_hosts).
interface AbortSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  throwIfAborted(): void;
}
type HeadersInit = Headers | [string, string][] | Record<string, string>;
declare class Headers implements Iterable<[string, string]> {
  constructor(init?: HeadersInit);
  append(name: string, value: string): void;
  set(name: string, value: string): void;
  get(name: string): string | null;
  has(name: string): boolean;
  delete(name: string): void;
  forEach(fn: (value: string, name: string, headers: Headers) => void): void;
  keys(): IterableIterator<string>;
  values(): IterableIterator<string>;
  entries(): IterableIterator<[string, string]>;
  [Symbol.iterator](): IterableIterator<[string, string]>;
}
declare class Response {
  readonly status: number;
  readonly ok: boolean;
  readonly statusText: string;
  readonly url: string;
  readonly redirected: boolean;
  readonly headers: Headers;
  readonly bodyUsed: boolean;
  text(): Promise<string>;
  json(): Promise<any>;
}
interface RequestInit {
  method?: string;
  headers?: HeadersInit;
  body?: string | null;
  signal?: AbortSignal | null;
  /** Stele's own: the request's time limit (default 30 s). */
  timeoutMs?: number;
}
declare function fetch(input: string | { url: string }, init?: RequestInit): Promise<Response>;
