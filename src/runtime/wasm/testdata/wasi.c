// Test guest importing a WASI function, which workflows may not use.
#define EXPORT(name) __attribute__((export_name(name)))
__attribute__((import_module("wasi_snapshot_preview1"), import_name("fd_write"))) int fd_write(
    int fd, int iovs, int iovs_len, int nwritten);
EXPORT("hello") int hello(void) { return fd_write(1, 0, 0, 0); }
