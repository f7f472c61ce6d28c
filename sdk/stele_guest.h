/* stele_guest.h: the parts of the Stele guest SDK shared by workflows and
 * activities compiled to wasm32 (docs/guest_abi.md): byte strings, a tiny
 * string builder, minimal JSON reading/writing, the `stele_alloc` export and
 * the macro that declares an exported function in the "stele:functions"
 * custom section.
 *
 * Freestanding C99 (no libc needed): workflows link without wasi-libc.
 * Threading: a wasm instance is single-threaded. Ownership: memory comes
 * from a bump allocator that never frees; every run gets a fresh instance,
 * so the heap only lives as long as one run. Activities built against
 * wasi-libc define STELE_USE_MALLOC before including this header, so
 * `stele_alloc` uses malloc instead.
 */
#ifndef STELE_GUEST_H
#define STELE_GUEST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STELE_EXPORT(name) __attribute__((export_name(name)))
#define STELE_IMPORT(name) __attribute__((import_module("stele"), import_name(name)))

/* Status codes returned by host functions (docs/guest_abi.md §3). */
enum {
  STELE_OK = 0,            /* payload: the ok value (JSON) or an id (text) */
  STELE_ERR = 1,           /* payload: the err value (JSON) */
  STELE_FAILED = 2,        /* payload: {"kind":..,"reason":..,"detail":..} */
  STELE_ALL_PROCESSED = 3, /* join_next: every submission was awaited */
  STELE_MISMATCH = 4,      /* join_next_fn / get: another function answered */
  STELE_NOT_FOUND = 5,     /* get: the child was not among processed responses */
  STELE_CANCELLED = 6,     /* join_next: the workflow is being cancelled; clean up */
  STELE_PENDING = 7        /* join_next_try: nothing has arrived yet */
};

/* What an activity returns (besides STELE_OK and STELE_ERR) for a permanent
 * failure: the err value is final at once, whatever retries remain (the
 * export writes {"err": v, "retryable": false}; docs/guest_abi.md §2). */
#define STELE_ERR_NON_RETRYABLE 100

/* A byte string in guest memory (not NUL-terminated). */
typedef struct {
  const char* ptr;
  uint32_t len;
} stele_str;

/* The slot a host function fills with a buffer it allocated through
 * stele_alloc: {ptr, len}, two little-endian u32. */
typedef struct {
  uint32_t ptr;
  uint32_t len;
} stele_out;

static inline stele_str stele_out_str(stele_out out) {
  stele_str s = {(const char*)(uintptr_t)out.ptr, out.len};
  return s;
}

static inline uint32_t stele_strlen(const char* s) {
  uint32_t n = 0;
  while (s[n]) ++n;
  return n;
}
static inline stele_str stele_cstr(const char* s) {
  stele_str r = {s, stele_strlen(s)};
  return r;
}
static inline int stele_str_eq(stele_str a, const char* b) {
  uint32_t n = stele_strlen(b);
  if (a.len != n) return 0;
  for (uint32_t i = 0; i < n; ++i)
    if (a.ptr[i] != b[i]) return 0;
  return 1;
}

/* --- Memory ----------------------------------------------------------------- */
/* The compiler may emit calls to these; weak so that several translation
 * units (or wasi-libc) can provide them. */
__attribute__((weak)) void* memcpy(void* dst, const void* src, size_t n) {
  char* d = (char*)dst;
  const char* s = (const char*)src;
  while (n--) *d++ = *s++;
  return dst;
}
__attribute__((weak)) void* memset(void* dst, int c, size_t n) {
  char* d = (char*)dst;
  while (n--) *d++ = (char)c;
  return dst;
}
__attribute__((weak)) void* memmove(void* dst, const void* src, size_t n) {
  char* d = (char*)dst;
  const char* s = (const char*)src;
  if (d < s) {
    while (n--) *d++ = *s++;
  } else {
    while (n--) d[n] = s[n];
  }
  return dst;
}

#ifdef STELE_USE_MALLOC
void* malloc(size_t size);
static inline void* stele_malloc(uint32_t size) { return malloc(size ? size : 1); }
#else
extern unsigned char __heap_base;
/* Bump allocator over memory.grow: 8-byte aligned, never frees. Returns 0
 * when the memory cannot grow (the host's memory cap). */
__attribute__((weak)) uintptr_t stele__heap_top;
static inline void* stele_malloc(uint32_t size) {
  if (stele__heap_top == 0) stele__heap_top = (uintptr_t)&__heap_base;
  uintptr_t start = (stele__heap_top + 7u) & ~(uintptr_t)7u;
  uintptr_t end = start + size;
  if (end < start) return 0;
  uintptr_t limit = __builtin_wasm_memory_size(0) * 65536u;
  if (end > limit) {
    uintptr_t pages = (end - limit + 65535u) / 65536u;
    if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) return 0;
  }
  stele__heap_top = end;
  return (void*)start;
}
#endif

/* The host allocates every buffer it hands to the guest through this. */
__attribute__((weak)) STELE_EXPORT("stele_alloc") uint32_t stele_alloc(uint32_t size) {
  return (uint32_t)(uintptr_t)stele_malloc(size);
}

/* --- String builder ------------------------------------------------------------ */
typedef struct {
  char* ptr;
  uint32_t len;
  uint32_t cap;
} stele_buf;

static inline void stele_buf_reserve(stele_buf* b, uint32_t extra) {
  if (b->len + extra <= b->cap) return;
  uint32_t cap = b->cap ? b->cap * 2 : 64;
  while (cap < b->len + extra) cap *= 2;
  char* p = (char*)stele_malloc(cap);
  if (!p) __builtin_trap(); /* out of memory: a trap */
  for (uint32_t i = 0; i < b->len; ++i) p[i] = b->ptr[i];
  b->ptr = p;
  b->cap = cap;
}
static inline void stele_buf_add(stele_buf* b, stele_str s) {
  stele_buf_reserve(b, s.len);
  for (uint32_t i = 0; i < s.len; ++i) b->ptr[b->len + i] = s.ptr[i];
  b->len += s.len;
}
static inline void stele_buf_addc(stele_buf* b, const char* s) { stele_buf_add(b, stele_cstr(s)); }
static inline void stele_buf_add_u64(stele_buf* b, uint64_t v) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  stele_buf_reserve(b, (uint32_t)n);
  while (n) b->ptr[b->len++] = tmp[--n];
}
/* Appends `s` as a JSON string literal (quotes and escapes added). */
static inline void stele_buf_add_json_string(stele_buf* b, stele_str s) {
  static const char hex[] = "0123456789abcdef";
  stele_buf_reserve(b, s.len + 2);
  b->ptr[b->len++] = '"';
  for (uint32_t i = 0; i < s.len; ++i) {
    unsigned char c = (unsigned char)s.ptr[i];
    stele_buf_reserve(b, 6);
    if (c == '"' || c == '\\') {
      b->ptr[b->len++] = '\\';
      b->ptr[b->len++] = (char)c;
    } else if (c < 0x20) {
      b->ptr[b->len++] = '\\';
      b->ptr[b->len++] = 'u';
      b->ptr[b->len++] = '0';
      b->ptr[b->len++] = '0';
      b->ptr[b->len++] = hex[c >> 4];
      b->ptr[b->len++] = hex[c & 15];
    } else {
      b->ptr[b->len++] = (char)c;
    }
  }
  stele_buf_reserve(b, 1);
  b->ptr[b->len++] = '"';
}
static inline stele_str stele_buf_str(const stele_buf* b) {
  stele_str s = {b->ptr, b->len};
  return s;
}

/* --- Minimal JSON reading ----------------------------------------------------------
 * These functions slice well-formed JSON produced by the host; they do not
 * validate. A missing element gives {0, 0}. */
static inline uint32_t stele__json_ws(stele_str s, uint32_t i) {
  while (i < s.len && (s.ptr[i] == ' ' || s.ptr[i] == '\n' || s.ptr[i] == '\t' || s.ptr[i] == '\r'))
    ++i;
  return i;
}
/* Index one past the JSON value starting at s[i]. */
static inline uint32_t stele__json_skip(stele_str s, uint32_t i) {
  i = stele__json_ws(s, i);
  if (i >= s.len) return i;
  if (s.ptr[i] == '"') {
    for (++i; i < s.len; ++i) {
      if (s.ptr[i] == '\\')
        ++i;
      else if (s.ptr[i] == '"')
        return i + 1;
    }
    return i;
  }
  if (s.ptr[i] == '[' || s.ptr[i] == '{') {
    int depth = 0;
    for (; i < s.len; ++i) {
      char c = s.ptr[i];
      if (c == '"') {
        i = stele__json_skip(s, i) - 1;
      } else if (c == '[' || c == '{') {
        ++depth;
      } else if (c == ']' || c == '}') {
        if (--depth == 0) return i + 1;
      }
    }
    return i;
  }
  while (i < s.len && s.ptr[i] != ',' && s.ptr[i] != ']' && s.ptr[i] != '}' && s.ptr[i] != ' ' &&
         s.ptr[i] != '\n')
    ++i;
  return i;
}
static inline stele_str stele__slice(stele_str s, uint32_t from, uint32_t to) {
  stele_str r = {s.ptr + from, to - from};
  return r;
}
/* The raw JSON of element `index` of array `arr`. */
static inline stele_str stele_json_at(stele_str arr, uint32_t index) {
  stele_str none = {0, 0};
  uint32_t i = stele__json_ws(arr, 0);
  if (i >= arr.len || arr.ptr[i] != '[') return none;
  ++i;
  for (uint32_t k = 0;; ++k) {
    i = stele__json_ws(arr, i);
    if (i >= arr.len || arr.ptr[i] == ']') return none;
    uint32_t end = stele__json_skip(arr, i);
    if (k == index) return stele__slice(arr, i, end);
    i = stele__json_ws(arr, end);
    if (i < arr.len && arr.ptr[i] == ',') ++i;
  }
}
/* The raw JSON of member `key` of object `obj`. */
static inline stele_str stele_json_get(stele_str obj, const char* key) {
  stele_str none = {0, 0};
  uint32_t i = stele__json_ws(obj, 0);
  if (i >= obj.len || obj.ptr[i] != '{') return none;
  ++i;
  for (;;) {
    i = stele__json_ws(obj, i);
    if (i >= obj.len || obj.ptr[i] != '"') return none;
    uint32_t kend = stele__json_skip(obj, i);
    stele_str k = stele__slice(obj, i + 1, kend - 1);
    i = stele__json_ws(obj, kend);
    if (i < obj.len && obj.ptr[i] == ':') ++i;
    i = stele__json_ws(obj, i);
    uint32_t vend = stele__json_skip(obj, i);
    if (stele_str_eq(k, key)) return stele__slice(obj, i, vend);
    i = stele__json_ws(obj, vend);
    if (i < obj.len && obj.ptr[i] == ',') ++i;
  }
}
/* Decodes a JSON string literal (simple escapes; \uXXXX below 0x80 only,
 * others become '?'). A non-string gives its raw text. */
static inline stele_str stele_json_string(stele_str v) {
  if (v.len < 2 || v.ptr[0] != '"') return v;
  char* out = (char*)stele_malloc(v.len);
  if (!out) __builtin_trap();
  uint32_t n = 0;
  for (uint32_t i = 1; i + 1 < v.len; ++i) {
    char c = v.ptr[i];
    if (c == '\\' && i + 2 < v.len) {
      char e = v.ptr[++i];
      switch (e) {
        case 'n':
          c = '\n';
          break;
        case 't':
          c = '\t';
          break;
        case 'r':
          c = '\r';
          break;
        case 'b':
          c = '\b';
          break;
        case 'f':
          c = '\f';
          break;
        case 'u': {
          uint32_t code = 0;
          for (int k = 0; k < 4 && i + 1 < v.len - 1; ++k) {
            char h = v.ptr[++i];
            code = code * 16 + (uint32_t)(h >= 'a'   ? h - 'a' + 10
                                          : h >= 'A' ? h - 'A' + 10
                                                     : h - '0');
          }
          c = code < 0x80 ? (char)code : '?';
          break;
        }
        default:
          c = e;
      }
    }
    out[n++] = c;
  }
  stele_str r = {out, n};
  return r;
}
/* Parses an unsigned JSON number (0 when it is not one). */
static inline uint64_t stele_json_u64(stele_str v) {
  uint64_t r = 0;
  uint32_t i = stele__json_ws(v, 0);
  for (; i < v.len && v.ptr[i] >= '0' && v.ptr[i] <= '9'; ++i)
    r = r * 10 + (uint64_t)(v.ptr[i] - '0');
  return r;
}

/* --- Declaring exported functions ----------------------------------------------------
 * STELE__DECLARE(kind, ffqn, fn, params, ret) puts one JSON line into the
 * "stele:functions" custom section and exports `fn` under the name `ffqn`.
 * The user function has the signature
 *     int fn(stele_str params_json, stele_buf* result_json)
 * and returns STELE_OK or STELE_ERR; `result_json` receives the ok or err
 * value (nothing appended = null). params/ret are WIT-like type strings,
 * e.g. "name: string, count: u64" and "result<string, string>". None of the
 * strings may contain '"' or '\'. */
#define STELE__CAT2(a, b) a##b
#define STELE__CAT(a, b) STELE__CAT2(a, b)
/* The declaration goes through top-level assembly: clang has no attribute
 * that places data into a wasm custom section, but the assembler's
 * ".custom_section.<name>" sections become custom sections, and wasm-ld
 * concatenates those of the same name. */
#define STELE__DECLARE(kind, ffqn, fn, params, ret)                                            \
  int fn(stele_str params_json, stele_buf* result_json);                                       \
  __asm__(                                                                                     \
      ".section \".custom_section.stele:functions\",\"\",@\n"                                  \
      ".ascii \"{\\\"kind\\\":\\\"" kind "\\\",\\\"ffqn\\\":\\\"" ffqn                         \
      "\\\",\\\"export\\\":\\\"" ffqn "\\\",\\\"params\\\":\\\"" params                        \
      "\\\",\\\"return\\\":\\\"" ret "\\\"}\\n\"\n");                                          \
  STELE_EXPORT(ffqn) uint64_t STELE__CAT(stele__export_, fn)(uint32_t ptr, uint32_t len) {     \
    stele_str params_json = {(const char*)(uintptr_t)ptr, len};                                \
    stele_buf value = {0, 0, 0};                                                               \
    int status = fn(params_json, &value);                                                      \
    stele_buf out = {0, 0, 0};                                                                 \
    stele_buf_addc(&out, status == STELE_OK                  ? "{\"ok\":"                      \
                         : status == STELE_ERR_NON_RETRYABLE ? "{\"retryable\":false,\"err\":" \
                                                             : "{\"err\":");                   \
    if (value.len)                                                                             \
      stele_buf_add(&out, stele_buf_str(&value));                                              \
    else                                                                                       \
      stele_buf_addc(&out, "null");                                                            \
    stele_buf_addc(&out, "}");                                                                 \
    return ((uint64_t)(uintptr_t)out.ptr << 32) | out.len;                                     \
  }

#ifdef __cplusplus
}
#endif

#endif /* STELE_GUEST_H */
