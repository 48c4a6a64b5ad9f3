// Layout of CPython 3.11's thread state, frames, code and string objects on
// x86-64, as the tracer reads them without the interpreter (dt_py.c).
// From the installed headers (python3.11-dev: cpython/pystate.h,
// internal/pycore_frame.h with Py_BUILD_CORE, cpython/code.h,
// cpython/unicodeobject.h); TestPyLayout compiles this file against them
// and fails if an offset differs.
#ifndef DT_PY311_H
#define DT_PY311_H

#define DT_PY_OB_TYPE 8            // PyObject.ob_type
#define DT_PY_TS_CFRAME 56         // PyThreadState.cframe
#define DT_PY_CF_CURRENT 8         // _PyCFrame.current_frame
#define DT_PY_FR_CODE 32           // _PyInterpreterFrame.f_code
#define DT_PY_FR_PREVIOUS 48       // _PyInterpreterFrame.previous
#define DT_PY_FR_PREV_INSTR 56     // _PyInterpreterFrame.prev_instr
#define DT_PY_FR_OWNER 69          // _PyInterpreterFrame.owner (char)
#define DT_PY_OWNED_BY_GENERATOR 1 // FRAME_OWNED_BY_GENERATOR
#define DT_PY_CO_FILENAME 112      // PyCodeObject.co_filename
#define DT_PY_CO_FIRSTTRACEABLE 168 // PyCodeObject._co_firsttraceable (int)
#define DT_PY_CO_CODE 184          // PyCodeObject.co_code_adaptive: the first _Py_CODEUNIT
#define DT_PY_CO_LINETABLE 136     // PyCodeObject.co_linetable (a bytes object)
#define DT_PY_CO_LINEARRAY 160     // PyCodeObject._co_linearray (NULL unless traced)
#define DT_PY_CO_LINEARRAY_SIZE 54 // PyCodeObject._co_linearray_entry_size (short: 2 or 4)
#define DT_PY_B_SIZE 16            // PyBytesObject.ob_size
#define DT_PY_B_DATA 32            // PyBytesObject.ob_sval
#define DT_PY_CODEUNIT 2           // sizeof(_Py_CODEUNIT)
#define DT_PY_U_LENGTH 16          // PyASCIIObject.length
#define DT_PY_U_STATE 32           // PyASCIIObject.state (bit field: interned 2, kind 3, compact 1, ascii 1)
#define DT_PY_U_ASCII_DATA 48      // sizeof(PyASCIIObject): a compact ASCII string's characters
#define DT_PY_U_COMPACT_DATA 72    // sizeof(PyCompactUnicodeObject): a compact string's characters

#endif
