/* A stand-in libnccl for tests/autograd/test_distributed.py: logs every call with its arguments (one line each,
 * to the file named by FAKE_NCCL_LOG plus ".<rank>") so the test checks the call sequence our ctypes binding
 * makes: pointers, counts, types, ops, roots, streams. It moves no data between ranks (a real run is the
 * `gpu` test); out-of-place calls copy the send buffer so results stay defined. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct { char internal[128]; } ncclUniqueId;
typedef struct { int nranks, rank; FILE *log; } fake_comm;

static size_t type_size(int t) {
    switch (t) { case 0: case 1: return 1; case 2: case 3: return 4; case 4: case 5: return 8;
                 case 6: case 9: return 2; case 7: return 4; case 8: return 8; default: return 1; }
}

int ncclGetUniqueId(ncclUniqueId *id) {
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "fake-nccl-%d", (int)getpid());
    return 0;
}

int ncclCommInitRank(fake_comm **comm, int nranks, ncclUniqueId id, int rank) {
    fake_comm *c = calloc(1, sizeof *c);
    char path[4096];
    const char *base = getenv("FAKE_NCCL_LOG");
    c->nranks = nranks; c->rank = rank;
    snprintf(path, sizeof path, "%s.%d", base ? base : "/tmp/fake_nccl", rank);
    c->log = fopen(path, "w");
    fprintf(c->log, "CommInitRank nranks=%d rank=%d id=%.20s\n", nranks, rank, id.internal);
    fflush(c->log);
    *comm = c;
    return 0;
}

#define LOG(c, ...) do { fprintf((c)->log, __VA_ARGS__); fflush((c)->log); } while (0)

int ncclAllReduce(const void *s, void *r, size_t n, int t, int op, fake_comm *c, void *st) {
    LOG(c, "AllReduce send=0x%lx recv=0x%lx count=%zu dtype=%d op=%d stream=0x%lx\n", (unsigned long)s, (unsigned long)r, n, t, op, (unsigned long)st);
    if (s != r) memmove(r, s, n * type_size(t));
    return 0;
}

int ncclBroadcast(const void *s, void *r, size_t n, int t, int root, fake_comm *c, void *st) {
    LOG(c, "Broadcast send=0x%lx recv=0x%lx count=%zu dtype=%d root=%d stream=0x%lx\n", (unsigned long)s, (unsigned long)r, n, t, root, (unsigned long)st);
    return 0;
}

int ncclReduce(const void *s, void *r, size_t n, int t, int op, int root, fake_comm *c, void *st) {
    LOG(c, "Reduce send=0x%lx recv=0x%lx count=%zu dtype=%d op=%d root=%d stream=0x%lx\n", (unsigned long)s, (unsigned long)r, n, t, op, root, (unsigned long)st);
    return 0;
}

int ncclAllGather(const void *s, void *r, size_t n, int t, fake_comm *c, void *st) {
    LOG(c, "AllGather send=0x%lx recv=0x%lx count=%zu dtype=%d stream=0x%lx\n", (unsigned long)s, (unsigned long)r, n, t, (unsigned long)st);
    return 0;
}

int ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, fake_comm *c, void *st) {
    LOG(c, "ReduceScatter send=0x%lx recv=0x%lx count=%zu dtype=%d op=%d stream=0x%lx\n", (unsigned long)s, (unsigned long)r, n, t, op, (unsigned long)st);
    return 0;
}

int ncclCommGetAsyncError(fake_comm *c, int *err) { *err = 0; return 0; }
int ncclCommAbort(fake_comm *c) { LOG(c, "CommAbort\n"); return 0; }
int ncclCommDestroy(fake_comm *c) { LOG(c, "CommDestroy\n"); fclose(c->log); free(c); return 0; }
const char *ncclGetErrorString(int rc) { return "fake NCCL error"; }
