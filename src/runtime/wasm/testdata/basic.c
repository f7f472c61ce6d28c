// Test guest without imports: arithmetic, traps, loops, memory growth,
// recursion and a bump allocator. Built by CMake with clang --target=wasm32.
#define EXPORT(name) __attribute__((export_name(name)))
#define NOINLINE __attribute__((noinline))

EXPORT("add") int add(int a, int b) { return a + b; }
EXPORT("add64") long long add64(long long a, long long b) { return a + b; }
EXPORT("mulf") double mulf(double a, double b) { return a * b; }
EXPORT("div") int div_(int a, int b) { return a / b; }

NOINLINE void explode(int x) {
  if (x >= 0) __builtin_trap();
}
EXPORT("run_explode") int run_explode(int x) {
  explode(x);
  return 1;
}

volatile int spin_counter;
EXPORT("spin") int spin(void) {
  for (;;) spin_counter++;
  return 0;
}

EXPORT("grow") int grow(int pages) { return __builtin_wasm_memory_grow(0, pages); }
EXPORT("pages") int pages(void) { return __builtin_wasm_memory_size(0); }

// Recursion on the engine's stack only (no locals in linear memory): the
// store after the call keeps it from becoming a loop.
volatile int recurse_sink;
NOINLINE int recurse(int n) {
  if (n == 0) return 0;
  int r = recurse(n - 1);
  recurse_sink = r;
  return r + 1;
}

// Recursion through the C shadow stack in linear memory: overflowing it is
// a deterministic out-of-bounds trap, not an engine stack overflow.
NOINLINE int recurse_mem(volatile int n) {
  volatile char pad[64];
  pad[0] = (char)n;
  return n == 0 ? pad[0] : recurse_mem(n - 1) + pad[0];
}
EXPORT("recurse_mem") int run_recurse_mem(int n) { return recurse_mem(n); }
EXPORT("recurse") int run_recurse(int n) { return recurse(n); }

static unsigned char heap[65536];
static unsigned heap_top;
EXPORT("stele_alloc") int stele_alloc(int len) {
  unsigned p = (heap_top + 7u) & ~7u;
  if (len < 0 || p + (unsigned)len > sizeof heap) return 0;
  heap_top = p + (unsigned)len;
  return (int)(unsigned long)&heap[p];
}
