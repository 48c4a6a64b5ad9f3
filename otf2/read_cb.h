// Records the C event callbacks of read_cb.c hand to Go (read_cgo.go).
#ifndef DTPA_OTF2_READ_CB_H
#define DTPA_OTF2_READ_CB_H

#include <stdint.h>
#include <otf2/otf2.h>

enum {
    DT_ENTER = 1,
    DT_LEAVE,
    DT_SEND,             // ref peer, comm, tag, len
    DT_ISEND,            // ref peer, comm, tag, len, req
    DT_ISEND_COMPLETE,   // req
    DT_IRECV_REQUEST,    // req
    DT_RECV,             // ref peer, comm, tag, len
    DT_IRECV,            // ref peer, comm, tag, len, req
    DT_REQUEST_TEST,     // req
    DT_REQUEST_CANCELLED,// req
    DT_COLL_END,         // ref op, comm, tag root, len sent, len2 received
    DT_COMM_CREATE,      // comm
    DT_FLUSH,            // req = stop time
    DT_ONOFF,            // ref mode
    DT_CALLING_CONTEXT,
    DT_PROGRAM_END,
    DT_NBC_REQUEST,      // req
    DT_NBC_COMPLETE,     // ref op, comm, tag root, len sent, len2 received, req
};

// What an ENTER record carries of the attributes dtpa writes (write.go),
// in dt_rec.tag: these bits, the flag's value in bits 8–15 and that of
// dtpa::unfinished (how the Leave of a call in progress at the process's
// end was placed) in bits 16–23. Its
// source code location is in comm, MPI_Pcontrol's second argument in len,
// its level in the low 32 bits of len2 and the folded calls in the high 32;
// MPI_Probe's status source and tag in the low and high 32 bits of req and
// its communicator in the low 32 bits of len2 (a probe has no level); the
// bytes of a send or receive to MPI_PROC_NULL in len (it has no argument);
// a folded run's inner gaps (ticks) in req (it has no status).
enum {
    DT_ATTR_SCL = 1,
    DT_ATTR_PC_LEVEL = 2,
    DT_ATTR_PC_ARG = 4,
    DT_ATTR_CALLS = 8,
    DT_ATTR_FLAG = 16,
    DT_ATTR_STATUS = 32,
    DT_ATTR_BYTES = 64,
    DT_ATTR_INNER = 128,
    DT_ATTR_UNFINISHED = 1 << 24, // (above the values in bits 8–23)
};

typedef struct {
    uint64_t time;
    uint64_t req;
    uint64_t len;
    uint64_t len2;
    uint32_t kind;
    uint32_t ref;
    uint32_t comm;
    uint32_t tag;
} dt_rec;

typedef struct {
    dt_rec *recs;
    uint64_t n, cap;
    uint64_t unknown;
    int overflow;
} dt_buf;

void dt_errors_init(void);
void dt_set_attrs(uint32_t scl, uint32_t level, uint32_t arg, uint32_t calls, uint32_t flag, uint32_t st_src,
                  uint32_t st_tag, uint32_t st_comm, uint32_t bytes, uint32_t inner, uint32_t unf);
const char *dt_last_error(void);
void dt_clear_error(void);
OTF2_ErrorCode dt_read_global_defs(OTF2_Reader *r, uintptr_t handle, uint64_t *n);
OTF2_ErrorCode dt_open_location(OTF2_Reader *r, uint64_t loc, dt_buf *b, OTF2_EvtReader **out, int *local_defs);
OTF2_ErrorCode dt_read_events(OTF2_EvtReader *er, dt_buf *b, uint64_t max, uint64_t *nread);

#endif
