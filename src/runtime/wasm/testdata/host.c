// Test guest calling host functions from module "env": passes strings by
// pointer and length, receives a string the host placed with stele_alloc.
#define EXPORT(name) __attribute__((export_name(name)))
#define IMPORT(name) __attribute__((import_module("env"), import_name(name)))

IMPORT("log") void host_log(const char* ptr, int len);
IMPORT("reverse") long long host_reverse(const char* ptr, int len);
IMPORT("fail") int host_fail(int code);
IMPORT("where") void host_where(void);

static unsigned char heap[65536];
static unsigned heap_top;
EXPORT("stele_alloc") int stele_alloc(int len) {
  unsigned p = (heap_top + 7u) & ~7u;
  if (len < 0 || p + (unsigned)len > sizeof heap) return 0;
  heap_top = p + (unsigned)len;
  return (int)(unsigned long)&heap[p];
}

static const char kHello[] = "hello from the guest";

EXPORT("greet") int greet(void) {
  host_log(kHello, sizeof kHello - 1);
  return sizeof kHello - 1;
}

// Returns the first byte of the reversed string, -1 on a bad result.
EXPORT("reverse_hello") int reverse_hello(void) {
  long long packed = host_reverse(kHello, sizeof kHello - 1);
  const char* out = (const char*)(unsigned long)(unsigned)(packed >> 32);
  int len = (int)(packed & 0xffffffff);
  if (len != sizeof kHello - 1) return -1;
  for (int i = 0; i < len; ++i) {
    if (out[i] != kHello[len - 1 - i]) return -1;
  }
  return out[0];
}

int after_fail;
EXPORT("call_fail") int call_fail(void) {
  int r = host_fail(7);
  after_fail = 1;
  return r;
}
EXPORT("after_fail") int get_after_fail(void) { return after_fail; }

__attribute__((noinline)) void inner_where(void) { host_where(); }
EXPORT("outer_where") void outer_where(void) { inner_where(); }

volatile int spin_counter;
EXPORT("where_then_spin") void where_then_spin(void) {
  host_where();
  for (;;) spin_counter++;
}
