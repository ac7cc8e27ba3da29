/* A stand-in for the NVIDIA driver library (libcuda.so.1): tkernels' real-driver code paths, Triton's
 * compiler, module loader and launcher all run on a machine without a GPU. Built by
 * tkernels.cuda.testing.build_fake_libcuda(); used by tests/tkernels/cuda/test_fake_driver.py and by
 * `python -m bench.gpu_check` in CI.
 *
 * What it models, strictly enough that a misuse fails here as it would on a GPU:
 * - one device by default (FAKE_CUDA_DEVICES=n for more), compute capability 9.0 (FAKE_CUDA_CC=80 for 8.0),
 *   132 SMs, 140 GiB, named "Fake GPU";
 * - contexts: each device has a primary context; the current context is per thread, as in the driver, and
 *   every call that needs one (memory, streams, events, modules, launches, copies, synchronization) returns
 *   CUDA_ERROR_INVALID_CONTEXT (201) on a thread where none is current;
 * - "device memory" is host memory (512-byte aligned, zero-filled): copies and memsets are real, so data
 *   round-trips; freeing an unknown pointer is CUDA_ERROR_INVALID_VALUE;
 * - CUDA IPC: each cuMemAlloc is a memfd mapping, so cuIpcGetMemHandle (of an allocation's base) names the
 *   process and descriptor, and cuIpcOpenMemHandle in another process maps it through /proc/<pid>/fd/<fd>: values
 *   really cross processes. As in the driver, opening a handle in the process that made it fails
 *   (CUDA_ERROR_INVALID_CONTEXT), a handle opened twice gives the same pointer (counted), and each open is paired
 *   with a cuIpcCloseMemHandle;
 * - streams and events are heap objects; an event keeps the host time of its record (elapsed times are real
 *   host time); destroying an unknown handle is CUDA_ERROR_INVALID_HANDLE;
 * - modules load (Triton's cubins), functions resolve by name, and a launch does NOT run the kernel: it is
 *   counted and, unless FAKE_CUDA_LOG_LAUNCHES=0, logged on stderr as
 *   "[fake libcuda] launch fn=NAME grid=(x,y,z) block=(x,y,z) smem=N stream=0xS ctx=0xC param0=0xP";
 * - counters of live objects and calls, read with fake_cuda_stats() (ctypes), and printed at exit when
 *   FAKE_CUDA_REPORT=1;
 * - stream capture and graphs: cuStreamBeginCapture on a created stream (the legacy/per-thread default streams
 *   refuse: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), then launches, async copies and memsets on it become nodes
 *   (logged as "[fake libcuda] capture fn=..."; nothing runs, nothing is counted as a launch) until
 *   cuStreamEndCapture makes a graph; synchronizing a capturing stream (or the context) is refused and invalidates
 *   the capture (cuStreamEndCapture then fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED), as are cuMemAlloc and
 *   synchronous copies on the capturing thread unless the capture is in relaxed mode; cuGraphInstantiate makes an
 *   executable graph and cuGraphLaunch replays its nodes in order (copies and memsets for real, each kernel
 *   counted and logged as "[fake libcuda] graph-launch fn=NAME stream=0xS");
 * - cuGetProcAddress resolves only what is defined here: an unknown entry point is reported not found, so a
 *   new driver call in the library shows up as a clear error instead of a silent success.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUmodule, *CUfunction, *CUmemoryPool;

enum {
  OK = 0, E_INVALID_VALUE = 1, E_OUT_OF_MEMORY = 2, E_NOT_INITIALIZED = 3, E_INVALID_DEVICE = 101,
  E_INVALID_CONTEXT = 201, E_MAP_FAILED = 205, E_INVALID_HANDLE = 400, E_ILLEGAL_STATE = 401, E_NOT_FOUND = 500,
  E_NOT_READY = 600, E_NOT_SUPPORTED = 801, E_CAPTURE_UNSUPPORTED = 900, E_CAPTURE_INVALIDATED = 901
};

#define MAX_DEVICES 8
#define CTX_MAGIC 0x43545846u    /* "FXTC" */
#define STREAM_MAGIC 0x4d525453u /* "STRM" */
#define EVENT_MAGIC 0x544e5645u  /* "EVNT" */
#define GRAPH_MAGIC 0x48505247u  /* "GRPH" */
#define EXEC_MAGIC 0x43455847u   /* "GXEC" */
#define CAPTURE_RELAXED 2        /* CU_STREAM_CAPTURE_MODE_RELAXED (GLOBAL 0, THREAD_LOCAL 1) */

/* a node of a captured graph: a kernel (name), a copy (dst <- src, n bytes) or a memset (dst, value, n, width) */
typedef struct { int kind; char name[256]; uintptr_t dst, src; size_t n; unsigned value, width; } Node;
enum { NODE_KERNEL, NODE_COPY, NODE_SET };
typedef struct { unsigned magic; Node *nodes; int n; } Graph;

typedef struct { unsigned magic; int device; } Ctx;
typedef struct { unsigned magic; Ctx *ctx; int capturing, invalid, mode, n, cap; Node *nodes; } Stream;
typedef struct { unsigned magic; Ctx *ctx; double t; int recorded; } Event;
typedef Ctx *CUcontext;
typedef Stream *CUstream;
typedef Event *CUevent;
typedef struct {
  unsigned gx, gy, gz, bx, by, bz, smem;
  CUstream hStream;
  void *attrs;
  unsigned numAttrs;
} CUlaunchConfig;

/* ------------------------------------------------------------------------------------------ state */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Ctx primary[MAX_DEVICES];
static int initialized = 0;
static __thread Ctx *current = NULL;

typedef struct Alloc { uintptr_t ptr; size_t size; int host; int fd; struct Alloc *next; } Alloc;
static Alloc *allocs = NULL;

/* counters, in the order fake_cuda_stats() returns them */
enum { S_ALLOCS, S_ALLOC_BYTES, S_STREAMS, S_EVENTS, S_MODULES, S_HOST_ALLOCS, S_LAUNCHES, S_MALLOC_CALLS,
       S_FREE_CALLS, S_CTX_ERRORS, S_EVENT_RECORDS, S_IPC_MAPPINGS, S_CAPTURED_NODES, S_GRAPHS, S_GRAPH_EXECS,
       S_GRAPH_LAUNCHES, S_GRAPH_KERNELS, S_N };
static long long stats[S_N];
static const char *stat_names[S_N] = {"allocations", "allocated_bytes", "streams", "events", "modules",
                                      "host_allocations", "launches", "malloc_calls", "free_calls",
                                      "context_errors", "event_records", "ipc_mappings", "captured_nodes", "graphs",
                                      "graph_execs", "graph_launches", "graph_kernels"};

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}
static int n_devices(void) {
  int n = env_int("FAKE_CUDA_DEVICES", 1);
  return n < 0 ? 0 : (n > MAX_DEVICES ? MAX_DEVICES : n);
}
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static void bump(int which, long long by) {
  pthread_mutex_lock(&lock);
  stats[which] += by;
  pthread_mutex_unlock(&lock);
}
/* the calling thread's context, or NULL (and the error counted) */
static Ctx *need_ctx(void) {
  if (!current) bump(S_CTX_ERRORS, 1);
  return current;
}
#define REQUIRE_CTX() do { if (!need_ctx()) return E_INVALID_CONTEXT; } while (0)
#define REQUIRE_INIT() do { if (!initialized) return E_NOT_INITIALIZED; } while (0)

static int valid_stream(CUstream s) { return s == NULL || (uintptr_t)s == 1 || (uintptr_t)s == 2 || s->magic == STREAM_MAGIC; }
static int valid_event(CUevent e) { return e != NULL && e->magic == EVENT_MAGIC; }

/* streams being captured (by any thread), and this thread's captures that are not relaxed */
#define MAX_CAPTURES 64
static Stream *capturing[MAX_CAPTURES];
static __thread int strict_captures = 0;
static int capturing_stream(CUstream s) { return s != NULL && (uintptr_t)s > 2 && s->capturing; }
/* a call that capture forbids: invalidates every capture of the calling thread's context, as the driver does */
static CUresult capture_violation(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_CAPTURES; i++)
    if (capturing[i] && capturing[i]->ctx == current) capturing[i]->invalid = 1;
  pthread_mutex_unlock(&lock);
  return E_CAPTURE_UNSUPPORTED;
}
static int any_capture_in_ctx(void) {
  int found = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_CAPTURES; i++) found |= capturing[i] && capturing[i]->ctx == current;
  pthread_mutex_unlock(&lock);
  return found;
}
static void add_node(Stream *s, Node node) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    s->nodes = realloc(s->nodes, (size_t)s->cap * sizeof(Node));
  }
  s->nodes[s->n++] = node;
  bump(S_CAPTURED_NODES, 1);
}
static void copy_node(Stream *s, uintptr_t dst, uintptr_t src, size_t n) {
  Node node = {NODE_COPY, "", dst, src, n, 0, 0};
  add_node(s, node);
}
static void set_node(Stream *s, uintptr_t dst, unsigned v, size_t n, unsigned width) {
  Node node = {NODE_SET, "", dst, 0, n, v, width};
  add_node(s, node);
}

static void track(uintptr_t p, size_t n, int host, int fd) {
  Alloc *a = malloc(sizeof *a);
  a->ptr = p; a->size = n; a->host = host; a->fd = fd;
  pthread_mutex_lock(&lock);
  a->next = allocs; allocs = a;
  stats[host ? S_HOST_ALLOCS : S_ALLOCS] += 1;
  if (!host) stats[S_ALLOC_BYTES] += (long long)n;
  pthread_mutex_unlock(&lock);
}
/* removes the allocation at p; returns it (the caller frees it), or NULL */
static Alloc *untrack(uintptr_t p, int host) {
  pthread_mutex_lock(&lock);
  for (Alloc **pp = &allocs; *pp; pp = &(*pp)->next) {
    Alloc *a = *pp;
    if (a->ptr == p && a->host == host) {
      *pp = a->next;
      stats[host ? S_HOST_ALLOCS : S_ALLOCS] -= 1;
      if (!host) stats[S_ALLOC_BYTES] -= (long long)a->size;
      pthread_mutex_unlock(&lock);
      return a;
    }
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

/* for ctypes: fills out[0..n) with the counters above, returns how many there are */
int fake_cuda_stats(long long *out, int n) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < n && i < S_N; i++) out[i] = stats[i];
  pthread_mutex_unlock(&lock);
  return S_N;
}
const char *fake_cuda_stat_name(int i) { return i >= 0 && i < S_N ? stat_names[i] : NULL; }

__attribute__((destructor)) static void report_at_exit(void) {
  if (!env_int("FAKE_CUDA_REPORT", 0)) return;
  fprintf(stderr, "[fake libcuda] at exit:");
  for (int i = 0; i < S_N; i++) fprintf(stderr, " %s=%lld", stat_names[i], stats[i]);
  fprintf(stderr, "\n");
}

/* ------------------------------------------------------------------------- init, errors, devices */
CUresult cuInit(unsigned flags) {
  (void)flags;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_DEVICES; i++) { primary[i].magic = CTX_MAGIC; primary[i].device = i; }
  initialized = 1;
  pthread_mutex_unlock(&lock);
  return OK;
}
CUresult cuDriverGetVersion(int *v) { if (!v) return E_INVALID_VALUE; *v = 13000; return OK; }

static const char *error_name(CUresult e) {
  switch (e) {
  case OK: return "CUDA_SUCCESS";
  case E_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
  case E_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
  case E_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
  case E_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
  case E_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
  case E_MAP_FAILED: return "CUDA_ERROR_MAP_FAILED";
  case E_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
  case E_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
  case E_NOT_READY: return "CUDA_ERROR_NOT_READY";
  case E_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
  case E_ILLEGAL_STATE: return "CUDA_ERROR_ILLEGAL_STATE";
  case E_CAPTURE_UNSUPPORTED: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
  case E_CAPTURE_INVALIDATED: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
  default: return NULL;
  }
}
CUresult cuGetErrorName(CUresult e, const char **s) {
  const char *n = error_name(e);
  if (!s || !n) return E_INVALID_VALUE;
  *s = n;
  return OK;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
  static const char *texts[] = {"no error", "invalid argument", "out of memory", "initialization error"};
  if (!s || !error_name(e)) return E_INVALID_VALUE;
  if (e >= 0 && e <= 3) *s = texts[e];
  else if (e == E_INVALID_CONTEXT) *s = "invalid device context (fake libcuda: no context current on this thread)";
  else if (e == E_INVALID_HANDLE) *s = "invalid resource handle";
  else if (e == E_NOT_READY) *s = "device not ready";
  else *s = error_name(e);
  return OK;
}
CUresult cuDeviceGetCount(int *n) { REQUIRE_INIT(); if (!n) return E_INVALID_VALUE; *n = n_devices(); return OK; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  REQUIRE_INIT();
  if (!d) return E_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= n_devices()) return E_INVALID_DEVICE;
  *d = ordinal;
  return OK;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  REQUIRE_INIT();
  if (d < 0 || d >= n_devices()) return E_INVALID_DEVICE;
  snprintf(name, (size_t)len, "Fake GPU");
  return OK;
}
CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) {
  REQUIRE_INIT();
  if (d < 0 || d >= n_devices()) return E_INVALID_DEVICE;
  *b = 140ull << 30;
  return OK;
}
CUresult cuDeviceGetAttribute(int *pi, int attr, CUdevice d) {
  REQUIRE_INIT();
  if (d < 0 || d >= n_devices()) return E_INVALID_DEVICE;
  int cc = env_int("FAKE_CUDA_CC", 90);
  switch (attr) {
  case 1: *pi = 1024; break;              /* max threads per block */
  case 8: *pi = 49152; break;             /* shared memory per block */
  case 10: *pi = 32; break;               /* warp size */
  case 13: *pi = 1980000; break;          /* clock rate, kHz */
  case 16: *pi = 132; break;              /* multiprocessors */
  case 36: *pi = 2619000; break;          /* memory clock rate, kHz */
  case 37: *pi = 5120; break;             /* memory bus width, bits */
  case 75: *pi = cc / 10; break;          /* compute capability major */
  case 76: *pi = cc % 10; break;          /* compute capability minor */
  case 97: *pi = cc >= 90 ? 232448 : 166912; break;  /* shared memory per block, opt-in */
  default: *pi = 1;
  }
  return OK;
}

/* -------------------------------------------------------------------------------------- contexts */
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  REQUIRE_INIT();
  if (!c) return E_INVALID_VALUE;
  if (d < 0 || d >= n_devices()) return E_INVALID_DEVICE;
  *c = &primary[d];
  return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { return d >= 0 && d < n_devices() ? OK : E_INVALID_DEVICE; }
CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active) {
  if (d < 0 || d >= n_devices()) return E_INVALID_DEVICE;
  *flags = 0;
  *active = 1;
  return OK;
}
CUresult cuCtxSetCurrent(CUcontext c) {
  if (c && c->magic != CTX_MAGIC) return E_INVALID_CONTEXT;
  current = c;
  return OK;
}
CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return OK; }
/* one level of push is what tkernels uses; a small per-thread stack keeps nested pushes honest */
static __thread Ctx *ctx_stack[16];
static __thread int ctx_depth = 0;
CUresult cuCtxPushCurrent_v2(CUcontext c) {
  if (!c || c->magic != CTX_MAGIC) return E_INVALID_CONTEXT;
  if (ctx_depth == 16) return E_INVALID_VALUE;
  ctx_stack[ctx_depth++] = current;
  current = c;
  return OK;
}
CUresult cuCtxPopCurrent_v2(CUcontext *c) {
  if (!current) return E_INVALID_CONTEXT;
  if (c) *c = current;
  current = ctx_depth ? ctx_stack[--ctx_depth] : NULL;
  return OK;
}
CUresult cuCtxGetDevice(CUdevice *d) { REQUIRE_CTX(); *d = current->device; return OK; }
CUresult cuCtxSynchronize(void) { REQUIRE_CTX(); return any_capture_in_ctx() ? capture_violation() : OK; }
CUresult cuCtxGetLimit(size_t *v, int limit) { (void)limit; REQUIRE_CTX(); *v = 1 << 20; return OK; }
CUresult cuCtxSetLimit(int limit, size_t v) { (void)limit; (void)v; REQUIRE_CTX(); return OK; }

/* ---------------------------------------------------------------------------------------- memory */
CUresult cuMemGetInfo_v2(size_t *fr, size_t *tot) {
  REQUIRE_CTX();
  *tot = 140ull << 30;
  pthread_mutex_lock(&lock);
  long long used = stats[S_ALLOC_BYTES];
  pthread_mutex_unlock(&lock);
  *fr = *tot - (size_t)used;
  return OK;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  REQUIRE_CTX();
  if (strict_captures) return capture_violation();  /* a potentially unsafe call while capturing, not relaxed */
  bump(S_MALLOC_CALLS, 1);
  if (!p) return E_INVALID_VALUE;
  if (n == 0) return E_INVALID_VALUE;  /* as the driver: a zero-byte cuMemAlloc is an error */
  if (n > (140ull << 30)) return E_OUT_OF_MEMORY;
  /* a memfd mapping (page-aligned, zero-filled), so that another process can map it (CUDA IPC) */
  int fd = memfd_create("fake_cuda_alloc", MFD_CLOEXEC);
  if (fd < 0) return E_OUT_OF_MEMORY;
  if (ftruncate(fd, (off_t)n)) { close(fd); return E_OUT_OF_MEMORY; }
  void *q = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (q == MAP_FAILED) { close(fd); return E_OUT_OF_MEMORY; }
  track((uintptr_t)q, n, 0, fd);
  *p = (CUdeviceptr)(uintptr_t)q;
  return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  REQUIRE_CTX();
  bump(S_FREE_CALLS, 1);
  Alloc *a = untrack((uintptr_t)p, 0);
  if (!a) return E_INVALID_VALUE;
  munmap((void *)a->ptr, a->size);
  close(a->fd);
  free(a);
  return OK;
}
CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) {
  if (!valid_stream(s)) return E_INVALID_HANDLE;
  return cuMemAlloc_v2(p, n);
}
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  if (!valid_stream(s)) return E_INVALID_HANDLE;
  return cuMemFree_v2(p);
}
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  (void)flags;
  REQUIRE_CTX();
  void *q = NULL;
  if (posix_memalign(&q, 4096, n ? n : 1)) return E_OUT_OF_MEMORY;
  track((uintptr_t)q, n, 1, -1);
  *p = q;
  return OK;
}
CUresult cuMemFreeHost(void *p) {
  REQUIRE_CTX();
  Alloc *a = untrack((uintptr_t)p, 1);
  if (!a) return E_INVALID_VALUE;
  free(a);
  free(p);
  return OK;
}

/* -------------------------------------------------------------------------------------------- IPC */
#define IPC_MAGIC 0x43504946u /* "FIPC" */
typedef struct { char reserved[64]; } CUipcMemHandle;
typedef struct { unsigned magic; int pid; int fd; int pad; unsigned long long size, ptr; } IpcHandle;
typedef struct Mapping { IpcHandle h; uintptr_t ptr; int opens; struct Mapping *next; } Mapping;
static Mapping *mappings = NULL;

CUresult cuIpcGetMemHandle(CUipcMemHandle *out, CUdeviceptr p) {
  REQUIRE_CTX();
  if (!out) return E_INVALID_VALUE;
  IpcHandle h = {0};
  pthread_mutex_lock(&lock);
  for (Alloc *a = allocs; a; a = a->next)
    if (!a->host && a->ptr == (uintptr_t)p) {  /* the base of an allocation, as the driver requires */
      h.magic = IPC_MAGIC; h.pid = (int)getpid(); h.fd = a->fd; h.size = a->size; h.ptr = a->ptr;
    }
  pthread_mutex_unlock(&lock);
  if (!h.magic) return E_INVALID_VALUE;
  memset(out, 0, sizeof *out);
  memcpy(out, &h, sizeof h);
  return OK;
}
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle handle, unsigned flags) {
  (void)flags;
  REQUIRE_CTX();
  IpcHandle h;
  memcpy(&h, &handle, sizeof h);
  if (!p || h.magic != IPC_MAGIC) return E_INVALID_HANDLE;
  if (h.pid == (int)getpid()) return E_INVALID_CONTEXT;
  pthread_mutex_lock(&lock);
  for (Mapping *m = mappings; m; m = m->next)
    if (m->h.pid == h.pid && m->h.fd == h.fd && m->h.ptr == h.ptr) {
      m->opens++;
      *p = m->ptr;
      pthread_mutex_unlock(&lock);
      return OK;
    }
  pthread_mutex_unlock(&lock);
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", h.pid, h.fd);
  int fd = open(path, O_RDWR);
  if (fd < 0) return E_MAP_FAILED;
  void *q = mmap(NULL, h.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (q == MAP_FAILED) return E_MAP_FAILED;
  Mapping *m = malloc(sizeof *m);
  m->h = h; m->ptr = (uintptr_t)q; m->opens = 1;
  pthread_mutex_lock(&lock);
  m->next = mappings; mappings = m;
  stats[S_IPC_MAPPINGS] += 1;
  pthread_mutex_unlock(&lock);
  *p = (CUdeviceptr)(uintptr_t)q;
  return OK;
}
CUresult cuIpcOpenMemHandle(CUdeviceptr *p, CUipcMemHandle handle, unsigned flags) {
  return cuIpcOpenMemHandle_v2(p, handle, flags);
}
CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
  REQUIRE_CTX();
  pthread_mutex_lock(&lock);
  for (Mapping **pp = &mappings; *pp; pp = &(*pp)->next) {
    Mapping *m = *pp;
    if (m->ptr == (uintptr_t)p) {
      if (--m->opens == 0) {
        *pp = m->next;
        stats[S_IPC_MAPPINGS] -= 1;
        munmap((void *)m->ptr, m->h.size);
        free(m);
      }
      pthread_mutex_unlock(&lock);
      return OK;
    }
  }
  pthread_mutex_unlock(&lock);
  return E_INVALID_VALUE;
}
#define COPY_CHECK(s) do { REQUIRE_CTX(); if (!valid_stream(s)) return E_INVALID_HANDLE; } while (0)
/* synchronous copies: refused on a thread capturing in global or thread-local mode */
#define SYNC_CHECK() do { REQUIRE_CTX(); if (strict_captures) return capture_violation(); } while (0)
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) { SYNC_CHECK(); memcpy((void *)(uintptr_t)d, h, n); return OK; }
CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) { SYNC_CHECK(); memcpy(h, (void *)(uintptr_t)d, n); return OK; }
CUresult cuMemcpyDtoD_v2(CUdeviceptr a, CUdeviceptr b, size_t n) { SYNC_CHECK(); memmove((void *)(uintptr_t)a, (void *)(uintptr_t)b, n); return OK; }
static CUresult copy_async(uintptr_t d, uintptr_t h, size_t n, CUstream s) {
  COPY_CHECK(s);
  if (capturing_stream(s)) copy_node(s, d, h, n);
  else memmove((void *)d, (void *)h, n);
  return OK;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream s) { return copy_async((uintptr_t)d, (uintptr_t)h, n, s); }
CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s) { return copy_async((uintptr_t)h, (uintptr_t)d, n, s); }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr a, CUdeviceptr b, size_t n, CUstream s) { return copy_async((uintptr_t)a, (uintptr_t)b, n, s); }
static void run_set(uintptr_t d, unsigned v, size_t n, unsigned width) {
  if (width == 1) memset((void *)d, (int)v, n);
  else for (size_t i = 0; i < n; i++) ((unsigned *)d)[i] = v;
}
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { SYNC_CHECK(); memset((void *)(uintptr_t)d, v, n); return OK; }
static CUresult set_async(uintptr_t d, unsigned v, size_t n, unsigned width, CUstream s) {
  COPY_CHECK(s);
  if (capturing_stream(s)) set_node(s, d, v, n, width);
  else run_set(d, v, n, width);
  return OK;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) { return set_async((uintptr_t)d, v, n, 1, s); }
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s) { return set_async((uintptr_t)d, v, n, 4, s); }
CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) {
  if (!data) return E_INVALID_VALUE;
  if (attr == 1) *(CUcontext *)data = current ? current : &primary[0];  /* CONTEXT */
  else if (attr == 2) *(unsigned *)data = 2;                             /* MEMORY_TYPE: device */
  else *(CUdeviceptr *)data = p;                                         /* DEVICE_POINTER and the rest */
  return OK;
}
CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p) {
  for (unsigned i = 0; i < n; i++) {
    CUresult r = cuPointerGetAttribute(data[i], attrs[i], p);
    if (r) return r;
  }
  return OK;
}

/* ------------------------------------------------------------------------------- streams, events */
/* streams and events share their first members {magic, ctx}: one way to make and to destroy either */
static void *handle_new(size_t size, unsigned magic, int stat) {
  Stream *h = calloc(1, size);
  h->magic = magic;
  h->ctx = current;
  bump(stat, 1);
  return h;
}
static CUresult handle_destroy(void *p, unsigned magic, int stat) {
  REQUIRE_CTX();
  Stream *h = p;
  if (!h || h->magic != magic) return E_INVALID_HANDLE;
  h->magic = 0;
  free(h);
  bump(stat, -1);
  return OK;
}
CUresult cuStreamCreate(CUstream *s, unsigned flags) {
  (void)flags;
  REQUIRE_CTX();
  *s = handle_new(sizeof(Stream), STREAM_MAGIC, S_STREAMS);
  return OK;
}
CUresult cuStreamCreateWithPriority(CUstream *s, unsigned flags, int priority) { (void)priority; return cuStreamCreate(s, flags); }
CUresult cuStreamDestroy_v2(CUstream s) {
  if (valid_stream(s) && capturing_stream(s)) return E_ILLEGAL_STATE;
  if (s && (uintptr_t)s > 2 && s->magic == STREAM_MAGIC) free(s->nodes);
  return handle_destroy(s, STREAM_MAGIC, S_STREAMS);
}
CUresult cuStreamSynchronize(CUstream s) {
  REQUIRE_CTX();
  if (!valid_stream(s)) return E_INVALID_HANDLE;
  if (capturing_stream(s) || ((s == NULL || (uintptr_t)s <= 2) && any_capture_in_ctx())) return capture_violation();
  return OK;
}
CUresult cuStreamQuery(CUstream s) {
  REQUIRE_CTX();
  if (!valid_stream(s)) return E_INVALID_HANDLE;
  return capturing_stream(s) ? capture_violation() : OK;
}
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  (void)flags;
  REQUIRE_CTX();
  return valid_stream(s) && valid_event(e) ? OK : E_INVALID_HANDLE;
}
CUresult cuStreamIsCapturing(CUstream s, int *status) {
  if (!valid_stream(s)) return E_INVALID_HANDLE;
  *status = capturing_stream(s) ? (s->invalid ? 2 : 1) : 0;  /* NONE, ACTIVE, INVALIDATED */
  return OK;
}
CUresult cuStreamBeginCapture(CUstream s, int mode) {
  REQUIRE_CTX();
  if (!valid_stream(s)) return E_INVALID_HANDLE;
  if (s == NULL || (uintptr_t)s <= 2) return E_CAPTURE_UNSUPPORTED;  /* the legacy and per-thread default streams */
  if (s->capturing) return E_ILLEGAL_STATE;
  if (mode < 0 || mode > CAPTURE_RELAXED) return E_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  int slot = -1;
  for (int i = 0; i < MAX_CAPTURES && slot < 0; i++) if (!capturing[i]) slot = i;
  if (slot >= 0) capturing[slot] = s;
  pthread_mutex_unlock(&lock);
  if (slot < 0) return E_NOT_SUPPORTED;
  s->capturing = 1; s->invalid = 0; s->mode = mode; s->n = 0;
  if (mode != CAPTURE_RELAXED) strict_captures++;
  return OK;
}
CUresult cuStreamBeginCapture_v2(CUstream s, int mode) { return cuStreamBeginCapture(s, mode); }
CUresult cuStreamEndCapture(CUstream s, Graph **out) {
  REQUIRE_CTX();
  if (!valid_stream(s) || !out) return E_INVALID_VALUE;
  if (!capturing_stream(s)) return E_ILLEGAL_STATE;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_CAPTURES; i++) if (capturing[i] == s) capturing[i] = NULL;
  pthread_mutex_unlock(&lock);
  s->capturing = 0;
  if (s->mode != CAPTURE_RELAXED) strict_captures--;
  if (s->invalid) { *out = NULL; s->n = 0; return E_CAPTURE_INVALIDATED; }
  Graph *g = calloc(1, sizeof *g);
  g->magic = GRAPH_MAGIC;
  g->n = s->n;
  g->nodes = malloc((size_t)(s->n ? s->n : 1) * sizeof(Node));
  memcpy(g->nodes, s->nodes, (size_t)s->n * sizeof(Node));
  s->n = 0;
  bump(S_GRAPHS, 1);
  *out = g;
  return OK;
}
CUresult cuEventCreate(CUevent *e, unsigned flags) {
  (void)flags;
  REQUIRE_CTX();
  *e = handle_new(sizeof(Event), EVENT_MAGIC, S_EVENTS);
  return OK;
}
CUresult cuEventDestroy_v2(CUevent e) { return handle_destroy(e, EVENT_MAGIC, S_EVENTS); }
CUresult cuEventRecord(CUevent e, CUstream s) {
  REQUIRE_CTX();
  if (!valid_event(e) || !valid_stream(s)) return E_INVALID_HANDLE;
  if (capturing_stream(s)) return OK;  /* an event node: it completes when a launch of the graph passes it */
  e->t = now_ms();
  e->recorded = 1;
  bump(S_EVENT_RECORDS, 1);
  return OK;
}
CUresult cuEventSynchronize(CUevent e) { REQUIRE_CTX(); return valid_event(e) ? OK : E_INVALID_HANDLE; }
CUresult cuEventQuery(CUevent e) { REQUIRE_CTX(); return valid_event(e) ? OK : E_INVALID_HANDLE; }
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  REQUIRE_CTX();
  if (!valid_event(a) || !valid_event(b)) return E_INVALID_HANDLE;
  if (!a->recorded || !b->recorded) return E_NOT_READY;
  *ms = (float)(b->t - a->t);
  return OK;
}
CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) { return cuEventElapsedTime(ms, a, b); }

/* -------------------------------------------------------------------------- modules and launches */
typedef struct { char name[256]; } Func;
CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  REQUIRE_CTX();
  if (!image) return E_INVALID_VALUE;
  *m = malloc(8);
  bump(S_MODULES, 1);
  return OK;
}
CUresult cuModuleUnload(CUmodule m) { REQUIRE_CTX(); free(m); bump(S_MODULES, -1); return OK; }
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  REQUIRE_CTX();
  if (!m || !name) return E_INVALID_VALUE;
  Func *fn = calloc(1, sizeof *fn);
  snprintf(fn->name, sizeof fn->name, "%s", name);
  *f = fn;
  return OK;
}
CUresult cuFuncGetAttribute(int *pi, int attr, CUfunction f) {
  (void)f;
  *pi = attr == 0 ? 1024 : (attr == 4 ? 64 : 0);  /* max threads per block; registers per thread */
  return OK;
}
CUresult cuFuncSetAttribute(CUfunction f, int a, int v) { (void)f; (void)a; (void)v; return OK; }
CUresult cuFuncSetCacheConfig(CUfunction f, int c) { (void)f; (void)c; return OK; }
CUresult cuOccupancyMaxActiveClusters(int *n, CUfunction f, const void *cfg) { (void)f; (void)cfg; *n = 1; return OK; }
CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
                                const unsigned long long *strides, const unsigned *box, const unsigned *estrides,
                                int interleave, int swizzle, int l2, int oob) {
  (void)dtype; (void)dims; (void)strides; (void)box; (void)estrides; (void)interleave; (void)swizzle; (void)l2; (void)oob;
  if (!map || rank == 0 || rank > 5) return E_INVALID_VALUE;
  memset(map, 0, 128);
  memcpy(map, &addr, sizeof addr);
  return OK;
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  (void)extra;
  REQUIRE_CTX();
  if (!c || !f) return E_INVALID_VALUE;
  if (!valid_stream(c->hStream)) return E_INVALID_HANDLE;
  if (c->gx == 0 || c->gy == 0 || c->gz == 0 || c->bx * c->by * c->bz > 1024) return E_INVALID_VALUE;
  if (capturing_stream(c->hStream)) {
    Node node = {NODE_KERNEL, "", 0, 0, 0, 0, 0};
    snprintf(node.name, sizeof node.name, "%s", ((Func *)f)->name);
    add_node(c->hStream, node);
    if (env_int("FAKE_CUDA_LOG_LAUNCHES", 1))
      fprintf(stderr, "[fake libcuda] capture fn=%s stream=0x%llx\n", node.name, (unsigned long long)(uintptr_t)c->hStream);
    return OK;
  }
  bump(S_LAUNCHES, 1);
  if (env_int("FAKE_CUDA_LOG_LAUNCHES", 1))
    fprintf(stderr, "[fake libcuda] launch fn=%s grid=(%u,%u,%u) block=(%u,%u,%u) smem=%u stream=0x%llx ctx=0x%llx "
            "param0=0x%llx\n", ((Func *)f)->name, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->smem,
            (unsigned long long)(uintptr_t)c->hStream, (unsigned long long)(uintptr_t)current,
            params ? *(unsigned long long *)params[0] : 0ull);
  return OK;
}

/* ----------------------------------------------------------------------------------------- graphs */
CUresult cuGraphDestroy(Graph *g) {
  if (!g || g->magic != GRAPH_MAGIC) return E_INVALID_HANDLE;
  g->magic = 0;
  free(g->nodes);
  free(g);
  bump(S_GRAPHS, -1);
  return OK;
}
CUresult cuGraphInstantiateWithFlags(Graph **exec, Graph *g, unsigned long long flags) {
  (void)flags;
  REQUIRE_CTX();
  if (!exec || !g || g->magic != GRAPH_MAGIC) return E_INVALID_VALUE;
  Graph *x = calloc(1, sizeof *x);
  x->magic = EXEC_MAGIC;
  x->n = g->n;
  x->nodes = malloc((size_t)(g->n ? g->n : 1) * sizeof(Node));
  memcpy(x->nodes, g->nodes, (size_t)g->n * sizeof(Node));
  bump(S_GRAPH_EXECS, 1);
  *exec = x;
  return OK;
}
CUresult cuGraphInstantiate(Graph **exec, Graph *g, unsigned long long flags) { return cuGraphInstantiateWithFlags(exec, g, flags); }
CUresult cuGraphExecDestroy(Graph *x) {
  if (!x || x->magic != EXEC_MAGIC) return E_INVALID_HANDLE;
  x->magic = 0;
  free(x->nodes);
  free(x);
  bump(S_GRAPH_EXECS, -1);
  return OK;
}
CUresult cuGraphLaunch(Graph *x, CUstream s) {
  REQUIRE_CTX();
  if (!x || x->magic != EXEC_MAGIC) return E_INVALID_HANDLE;
  if (!valid_stream(s)) return E_INVALID_HANDLE;
  if (capturing_stream(s)) return E_NOT_SUPPORTED;  /* a graph launched into a capture: not modelled */
  int log = env_int("FAKE_CUDA_LOG_LAUNCHES", 1);
  for (int i = 0; i < x->n; i++) {
    Node *nd = &x->nodes[i];
    if (nd->kind == NODE_COPY) memmove((void *)nd->dst, (void *)nd->src, nd->n);
    else if (nd->kind == NODE_SET) run_set(nd->dst, nd->value, nd->n, nd->width);
    else {
      bump(S_GRAPH_KERNELS, 1);
      if (log) fprintf(stderr, "[fake libcuda] graph-launch fn=%s stream=0x%llx\n", nd->name, (unsigned long long)(uintptr_t)s);
    }
  }
  bump(S_GRAPH_LAUNCHES, 1);
  return OK;
}

/* ------------------------------------------------------------------------------ entry-point lookup */
CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version, unsigned long long flags, int *status) {
  (void)version; (void)flags;
  static void *self = NULL;
  char buf[256];
  if (!self) {
    Dl_info info;
    dladdr((void *)cuInit, &info);
    self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }
  void *p = dlsym(self, sym);
  for (int v = 2; !p && v <= 3; v++) {
    snprintf(buf, sizeof buf, "%s_v%d", sym, v);
    p = dlsym(self, buf);
  }
  *pfn = p;
  if (status) *status = p ? 0 : 1;  /* CU_GET_PROC_ADDRESS_SUCCESS / _SYMBOL_NOT_FOUND */
  if (!p && env_int("FAKE_CUDA_VERBOSE", 0)) fprintf(stderr, "[fake libcuda] no entry point %s\n", sym);
  return p ? OK : E_NOT_FOUND;
}
CUresult cuGetProcAddress(const char *sym, void **pfn, int version, unsigned long long flags) {
  return cuGetProcAddress_v2(sym, pfn, version, flags, NULL);
}
