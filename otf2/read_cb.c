// C side of the OTF2 reader (read_cgo.go): libotf2 calls back into C for
// every event, and a C callback per event costs a fraction of a C→Go call,
// so the event callbacks append fixed-size records to a buffer that Go
// decodes a chunk at a time. Definitions are few and go to Go directly.

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "read_cb.h"
#include "_cgo_export.h"

// ---------------------------------------------------------------------------
// Errors: libotf2 prints its errors on stderr unless a callback takes them.
// The first message since dt_clear_error on the calling thread is kept for
// the Go error: it names the cause, the later ones the calls it failed.

static __thread char dt_errmsg[512];

static OTF2_ErrorCode dt_error(void *ud, const char *file, uint64_t line, const char *function,
                               OTF2_ErrorCode code, const char *fmt, va_list va) {
    (void)ud; (void)file; (void)line; (void)function;
    if (dt_errmsg[0] == 0) {
        vsnprintf(dt_errmsg, sizeof dt_errmsg, fmt, va);
    }
    return code;
}

void dt_errors_init(void) { OTF2_Error_RegisterCallback(dt_error, NULL); }

const char *dt_last_error(void) { return dt_errmsg; }

void dt_clear_error(void) { dt_errmsg[0] = 0; }

// ---------------------------------------------------------------------------
// Global definitions.

static OTF2_CallbackCode def_clock(void *ud, uint64_t res, uint64_t off, uint64_t len, uint64_t realtime) {
    dtpaOtf2Clock((uintptr_t)ud, res, off, len, realtime);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_string(void *ud, OTF2_StringRef self, const char *s) {
    dtpaOtf2String((uintptr_t)ud, self, (char *)s);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_tree(void *ud, OTF2_SystemTreeNodeRef self, OTF2_StringRef name,
                                  OTF2_StringRef cls, OTF2_SystemTreeNodeRef parent) {
    dtpaOtf2TreeNode((uintptr_t)ud, self, name, cls, parent);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_region(void *ud, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef canon,
                                    OTF2_StringRef descr, OTF2_RegionRole role, OTF2_Paradigm paradigm,
                                    OTF2_RegionFlag flags, OTF2_StringRef file, uint32_t begin, uint32_t end) {
    (void)canon; (void)descr; (void)flags; (void)end;
    dtpaOtf2Region((uintptr_t)ud, self, name, role, paradigm, file, begin);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_locgroup(void *ud, OTF2_LocationGroupRef self, OTF2_StringRef name,
                                      OTF2_LocationGroupType type, OTF2_SystemTreeNodeRef parent,
                                      OTF2_LocationGroupRef creator) {
    (void)creator;
    dtpaOtf2LocationGroup((uintptr_t)ud, self, name, type, parent);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_location(void *ud, OTF2_LocationRef self, OTF2_StringRef name, OTF2_LocationType type,
                                      uint64_t events, OTF2_LocationGroupRef group) {
    (void)name;
    dtpaOtf2Location((uintptr_t)ud, self, type, events, group);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_group(void *ud, OTF2_GroupRef self, OTF2_StringRef name, OTF2_GroupType type,
                                   OTF2_Paradigm paradigm, OTF2_GroupFlag flags, uint32_t n, const uint64_t *members) {
    (void)name; (void)flags;
    dtpaOtf2Group((uintptr_t)ud, self, type, paradigm, n, (uint64_t *)members);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_comm(void *ud, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef group,
                                  OTF2_CommRef parent, OTF2_CommFlag flags) {
    (void)flags;
    dtpaOtf2Comm((uintptr_t)ud, self, name, group, parent);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_attribute(void *ud, OTF2_AttributeRef self, OTF2_StringRef name, OTF2_StringRef descr,
                                       OTF2_Type type) {
    (void)descr;
    dtpaOtf2Attribute((uintptr_t)ud, self, name, type);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode def_scl(void *ud, OTF2_SourceCodeLocationRef self, OTF2_StringRef file, uint32_t line) {
    dtpaOtf2SourceLocation((uintptr_t)ud, self, file, line);
    return OTF2_CALLBACK_SUCCESS;
}

OTF2_ErrorCode dt_read_global_defs(OTF2_Reader *r, uintptr_t handle, uint64_t *n) {
    OTF2_GlobalDefReader *gdr = OTF2_Reader_GetGlobalDefReader(r);
    if (!gdr) {
        return OTF2_ERROR_FILE_CAN_NOT_OPEN;
    }
    OTF2_GlobalDefReaderCallbacks *cb = OTF2_GlobalDefReaderCallbacks_New();
    OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cb, def_clock);
    OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, def_string);
    OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback(cb, def_tree);
    OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cb, def_region);
    OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(cb, def_locgroup);
    OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cb, def_location);
    OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cb, def_group);
    OTF2_GlobalDefReaderCallbacks_SetCommCallback(cb, def_comm);
    OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(cb, def_attribute);
    OTF2_GlobalDefReaderCallbacks_SetSourceCodeLocationCallback(cb, def_scl);
    OTF2_ErrorCode err = OTF2_Reader_RegisterGlobalDefCallbacks(r, gdr, cb, (void *)handle);
    OTF2_GlobalDefReaderCallbacks_Delete(cb);
    if (err != OTF2_SUCCESS) {
        return err;
    }
    err = OTF2_Reader_ReadAllGlobalDefinitions(r, gdr, n);
    OTF2_Reader_CloseGlobalDefReader(r, gdr);
    return err;
}

// ---------------------------------------------------------------------------
// Events.

static inline dt_rec *next(void *ud, OTF2_TimeStamp t, uint32_t kind) {
    dt_buf *b = ud;
    if (b->n >= b->cap) {
        b->overflow = 1;
        return NULL;
    }
    dt_rec *r = &b->recs[b->n++];
    r->time = t;
    r->kind = kind;
    return r;
}

#define REC(kind)                                  \
    dt_rec *r = next(ud, t, kind);                 \
    if (!r) return OTF2_CALLBACK_INTERRUPT;        \
    (void)loc; (void)pos; (void)al;

// The global ids of the attributes an ENTER record may carry
// (dt_set_attrs; OTF2_UNDEFINED_ATTRIBUTE: not in the archive). One
// archive is read at a time (read_cgo.go, libMu).
static OTF2_AttributeRef attr_scl = OTF2_UNDEFINED_ATTRIBUTE, attr_level = OTF2_UNDEFINED_ATTRIBUTE,
                         attr_arg = OTF2_UNDEFINED_ATTRIBUTE, attr_calls = OTF2_UNDEFINED_ATTRIBUTE,
                         attr_flag = OTF2_UNDEFINED_ATTRIBUTE, attr_st_src = OTF2_UNDEFINED_ATTRIBUTE,
                         attr_st_tag = OTF2_UNDEFINED_ATTRIBUTE, attr_st_comm = OTF2_UNDEFINED_ATTRIBUTE,
                         attr_bytes = OTF2_UNDEFINED_ATTRIBUTE, attr_inner = OTF2_UNDEFINED_ATTRIBUTE,
                         attr_unf = OTF2_UNDEFINED_ATTRIBUTE;

void dt_set_attrs(uint32_t scl, uint32_t level, uint32_t arg, uint32_t calls, uint32_t flag, uint32_t st_src,
                  uint32_t st_tag, uint32_t st_comm, uint32_t bytes, uint32_t inner, uint32_t unf) {
    attr_scl = scl; attr_level = level; attr_arg = arg; attr_calls = calls; attr_flag = flag;
    attr_st_src = st_src; attr_st_tag = st_tag; attr_st_comm = st_comm; attr_bytes = bytes; attr_inner = inner;
    attr_unf = unf;
}

static OTF2_CallbackCode ev_enter(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                  OTF2_AttributeList *al, OTF2_RegionRef region) {
    REC(DT_ENTER) r->ref = region;
    r->tag = 0; r->comm = 0; r->len = 0; r->len2 = 0; r->req = 0;
    if (al == NULL || OTF2_AttributeList_GetNumberOfElements(al) == 0) {
        return OTF2_CALLBACK_SUCCESS;
    }
    OTF2_SourceCodeLocationRef scl;
    if (attr_scl != OTF2_UNDEFINED_ATTRIBUTE && OTF2_AttributeList_GetSourceCodeLocationRef(al, attr_scl, &scl) == OTF2_SUCCESS) {
        r->tag |= DT_ATTR_SCL; r->comm = scl;
    }
    int32_t level;
    if (attr_level != OTF2_UNDEFINED_ATTRIBUTE && OTF2_AttributeList_GetInt32(al, attr_level, &level) == OTF2_SUCCESS) {
        r->tag |= DT_ATTR_PC_LEVEL; r->len2 |= (uint32_t)level;
    }
    int64_t arg;
    if (attr_arg != OTF2_UNDEFINED_ATTRIBUTE && OTF2_AttributeList_GetInt64(al, attr_arg, &arg) == OTF2_SUCCESS) {
        r->tag |= DT_ATTR_PC_ARG; r->len = (uint64_t)arg;
    }
    uint32_t calls;
    if (attr_calls != OTF2_UNDEFINED_ATTRIBUTE && OTF2_AttributeList_GetUint32(al, attr_calls, &calls) == OTF2_SUCCESS) {
        r->tag |= DT_ATTR_CALLS; r->len2 |= (uint64_t)calls << 32;
    }
    uint8_t flag;
    if (attr_flag != OTF2_UNDEFINED_ATTRIBUTE && OTF2_AttributeList_GetUint8(al, attr_flag, &flag) == OTF2_SUCCESS) {
        r->tag |= DT_ATTR_FLAG | ((uint32_t)flag << 8);
    }
    int32_t src, tag;
    OTF2_CommRef comm;
    if (attr_st_src != OTF2_UNDEFINED_ATTRIBUTE && attr_st_tag != OTF2_UNDEFINED_ATTRIBUTE &&
        attr_st_comm != OTF2_UNDEFINED_ATTRIBUTE && !(r->tag & DT_ATTR_PC_LEVEL) &&
        OTF2_AttributeList_GetInt32(al, attr_st_src, &src) == OTF2_SUCCESS &&
        OTF2_AttributeList_GetInt32(al, attr_st_tag, &tag) == OTF2_SUCCESS &&
        OTF2_AttributeList_GetCommRef(al, attr_st_comm, &comm) == OTF2_SUCCESS) {
        r->tag |= DT_ATTR_STATUS;
        r->req = (uint64_t)(uint32_t)src | ((uint64_t)(uint32_t)tag << 32);
        r->len2 |= comm;
    }
    uint64_t bytes;
    if (attr_bytes != OTF2_UNDEFINED_ATTRIBUTE && !(r->tag & DT_ATTR_PC_ARG) &&
        OTF2_AttributeList_GetUint64(al, attr_bytes, &bytes) == OTF2_SUCCESS) {
        r->tag |= DT_ATTR_BYTES; r->len = bytes;
    }
    uint64_t inner;
    if (attr_inner != OTF2_UNDEFINED_ATTRIBUTE && (r->tag & DT_ATTR_CALLS) && !(r->tag & DT_ATTR_STATUS) &&
        OTF2_AttributeList_GetUint64(al, attr_inner, &inner) == OTF2_SUCCESS) {
        r->tag |= DT_ATTR_INNER; r->req = inner;
    }
    uint8_t unf;
    if (attr_unf != OTF2_UNDEFINED_ATTRIBUTE && !(r->tag & DT_ATTR_CALLS) &&
        OTF2_AttributeList_GetUint8(al, attr_unf, &unf) == OTF2_SUCCESS) {
        r->tag |= DT_ATTR_UNFINISHED | ((uint32_t)unf << 16);
    }
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_leave(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                  OTF2_AttributeList *al, OTF2_RegionRef region) {
    REC(DT_LEAVE) r->ref = region;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_send(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                 OTF2_AttributeList *al, uint32_t peer, OTF2_CommRef comm, uint32_t tag, uint64_t len) {
    REC(DT_SEND) r->ref = peer; r->comm = comm; r->tag = tag; r->len = len;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_isend(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                  OTF2_AttributeList *al, uint32_t peer, OTF2_CommRef comm, uint32_t tag, uint64_t len,
                                  uint64_t req) {
    REC(DT_ISEND) r->ref = peer; r->comm = comm; r->tag = tag; r->len = len; r->req = req;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_recv(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                 OTF2_AttributeList *al, uint32_t peer, OTF2_CommRef comm, uint32_t tag, uint64_t len) {
    REC(DT_RECV) r->ref = peer; r->comm = comm; r->tag = tag; r->len = len;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_irecv(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                  OTF2_AttributeList *al, uint32_t peer, OTF2_CommRef comm, uint32_t tag, uint64_t len,
                                  uint64_t req) {
    REC(DT_IRECV) r->ref = peer; r->comm = comm; r->tag = tag; r->len = len; r->req = req;
    return OTF2_CALLBACK_SUCCESS;
}

#define REQ_EVENT(name, kind)                                                                        \
    static OTF2_CallbackCode name(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,     \
                                  OTF2_AttributeList *al, uint64_t req) {                            \
        REC(kind) r->req = req;                                                                      \
        return OTF2_CALLBACK_SUCCESS;                                                                \
    }
REQ_EVENT(ev_isend_complete, DT_ISEND_COMPLETE)
REQ_EVENT(ev_irecv_request, DT_IRECV_REQUEST)
REQ_EVENT(ev_request_test, DT_REQUEST_TEST)
REQ_EVENT(ev_request_cancelled, DT_REQUEST_CANCELLED)

static OTF2_CallbackCode ev_coll_end(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                     OTF2_AttributeList *al, OTF2_CollectiveOp op, OTF2_CommRef comm, uint32_t root,
                                     uint64_t sent, uint64_t received) {
    REC(DT_COLL_END) r->ref = op; r->comm = comm; r->tag = root; r->len = sent; r->len2 = received;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_nbc_request(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                        OTF2_AttributeList *al, uint64_t req) {
    REC(DT_NBC_REQUEST) r->req = req;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_nbc_complete(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                         OTF2_AttributeList *al, OTF2_CollectiveOp op, OTF2_CommRef comm,
                                         uint32_t root, uint64_t sent, uint64_t received, uint64_t req) {
    REC(DT_NBC_COMPLETE) r->ref = op; r->comm = comm; r->tag = root; r->len = sent; r->len2 = received; r->req = req;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_comm_create(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                        OTF2_AttributeList *al, OTF2_CommRef comm) {
    REC(DT_COMM_CREATE) r->comm = comm;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_flush(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                  OTF2_AttributeList *al, OTF2_TimeStamp stop) {
    REC(DT_FLUSH) r->req = stop;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_onoff(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                  OTF2_AttributeList *al, OTF2_MeasurementMode mode) {
    REC(DT_ONOFF) r->ref = mode;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_cc_enter(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                     OTF2_AttributeList *al, OTF2_CallingContextRef cc, uint32_t unwind) {
    (void)cc; (void)unwind;
    REC(DT_CALLING_CONTEXT)
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_cc_sample(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                      OTF2_AttributeList *al, OTF2_CallingContextRef cc, uint32_t unwind,
                                      OTF2_InterruptGeneratorRef gen) {
    (void)cc; (void)unwind; (void)gen;
    REC(DT_CALLING_CONTEXT)
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_program_end(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                        OTF2_AttributeList *al, int64_t status) {
    (void)status;
    REC(DT_PROGRAM_END)
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode ev_unknown(OTF2_LocationRef loc, OTF2_TimeStamp t, uint64_t pos, void *ud,
                                    OTF2_AttributeList *al) {
    (void)loc; (void)t; (void)pos; (void)al;
    ((dt_buf *)ud)->unknown++;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_EvtReaderCallbacks *dt_evt_callbacks(void) {
    OTF2_EvtReaderCallbacks *cb = OTF2_EvtReaderCallbacks_New();
    OTF2_EvtReaderCallbacks_SetEnterCallback(cb, ev_enter);
    OTF2_EvtReaderCallbacks_SetLeaveCallback(cb, ev_leave);
    OTF2_EvtReaderCallbacks_SetMpiSendCallback(cb, ev_send);
    OTF2_EvtReaderCallbacks_SetMpiIsendCallback(cb, ev_isend);
    OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(cb, ev_isend_complete);
    OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(cb, ev_irecv_request);
    OTF2_EvtReaderCallbacks_SetMpiRecvCallback(cb, ev_recv);
    OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(cb, ev_irecv);
    OTF2_EvtReaderCallbacks_SetMpiRequestTestCallback(cb, ev_request_test);
    OTF2_EvtReaderCallbacks_SetMpiRequestCancelledCallback(cb, ev_request_cancelled);
    OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(cb, ev_coll_end);
    OTF2_EvtReaderCallbacks_SetCommCreateCallback(cb, ev_comm_create);
    OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveRequestCallback(cb, ev_nbc_request);
    OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback(cb, ev_nbc_complete);
    OTF2_EvtReaderCallbacks_SetBufferFlushCallback(cb, ev_flush);
    OTF2_EvtReaderCallbacks_SetMeasurementOnOffCallback(cb, ev_onoff);
    OTF2_EvtReaderCallbacks_SetCallingContextEnterCallback(cb, ev_cc_enter);
    OTF2_EvtReaderCallbacks_SetCallingContextSampleCallback(cb, ev_cc_sample);
    OTF2_EvtReaderCallbacks_SetProgramEndCallback(cb, ev_program_end);
    OTF2_EvtReaderCallbacks_SetUnknownCallback(cb, ev_unknown);
    return cb;
}

OTF2_ErrorCode dt_open_location(OTF2_Reader *r, uint64_t loc, dt_buf *b, OTF2_EvtReader **out, int *local_defs) {
    *local_defs = 0;
    OTF2_EvtReader *er = OTF2_Reader_GetEvtReader(r, loc);
    if (!er) {
        return OTF2_ERROR_FILE_CAN_NOT_OPEN;
    }
    // The local definitions hold the mapping tables and clock offsets that
    // the event reader applies; an archive may lack them.
    OTF2_DefReader *dr = OTF2_Reader_GetDefReader(r, loc);
    if (dr) {
        uint64_t n = 0;
        OTF2_ErrorCode err = OTF2_Reader_ReadAllLocalDefinitions(r, dr, &n);
        OTF2_Reader_CloseDefReader(r, dr);
        if (err != OTF2_SUCCESS) {
            OTF2_Reader_CloseEvtReader(r, er);
            return err;
        }
        *local_defs = 1;
    }
    OTF2_EvtReaderCallbacks *cb = dt_evt_callbacks();
    OTF2_ErrorCode err = OTF2_Reader_RegisterEvtCallbacks(r, er, cb, b);
    OTF2_EvtReaderCallbacks_Delete(cb);
    if (err != OTF2_SUCCESS) {
        OTF2_Reader_CloseEvtReader(r, er);
        return err;
    }
    *out = er;
    return OTF2_SUCCESS;
}

OTF2_ErrorCode dt_read_events(OTF2_EvtReader *er, dt_buf *b, uint64_t max, uint64_t *nread) {
    b->n = 0;
    b->overflow = 0;
    return OTF2_EvtReader_ReadEvents(er, max < b->cap ? max : b->cap, nread);
}
