// Layouts of CPython's thread state, frames, code and string objects on
// x86-64, as the tracer reads them without the interpreter (dt_py.c), one
// per minor version it knows: these structures are internal and change
// with every minor version, never within one. From each version's
// installed headers (cpython/pystate.h, internal/pycore_frame.h with
// Py_BUILD_CORE, cpython/code.h, cpython/unicodeobject.h); TestPyLayout
// compiles this file against every version's headers it finds and fails
// if an offset differs.
#ifndef DT_PYLAYOUT_H
#define DT_PYLAYOUT_H

// The same in every version known.
#define DT_PY_OB_TYPE 8            // PyObject.ob_type (a build with the GIL; the free-threaded build differs)
#define DT_PY_OWNED_BY_GENERATOR 1 // FRAME_OWNED_BY_GENERATOR
#define DT_PY_OWNED_BY_CSTACK 3    // FRAME_OWNED_BY_CSTACK (3.12 on): the interpreter's entry frame, no Python code
#define DT_PY_B_SIZE 16            // PyBytesObject.ob_size
#define DT_PY_B_DATA 32            // PyBytesObject.ob_sval
#define DT_PY_CODEUNIT 2           // sizeof(_Py_CODEUNIT)
#define DT_PY_U_LENGTH 16          // PyASCIIObject.length
#define DT_PY_U_STATE 32           // PyASCIIObject.state (bit field: interned 2, kind 3, compact 1, ascii 1)

// What differs. Before 3.11 a frame is a PyFrameObject (its last
// instruction an int, f_lasti: -1 before it started); from 3.11 on a
// _PyInterpreterFrame (a pointer into its code object's instructions).
typedef struct {
	int minor;             // 3.<minor>
	int ts_frame;          // PyThreadState.frame (3.8 to 3.10), .cframe (3.11, 3.12), .current_frame (3.13)
	int cf_current;        // _PyCFrame.current_frame; -1: ts_frame holds the frame itself
	int fr_code;           // the frame's code object: f_code (3.13: f_executable, a code object or None)
	int fr_previous;       // its caller's frame: f_back (3.8 to 3.10), previous
	int fr_instr;          // its instruction: f_lasti (int), prev_instr (3.13: instr_ptr); its line is the frame's
	int lasti_div;         // 0: fr_instr points into co_code; else f_lasti / lasti_div is in code units (2: a byte offset, 3.8 and 3.9)
	int fr_owner;          // _PyInterpreterFrame.owner (char); -1: none (before 3.11)
	int fr_copy;           // bytes of a frame holding every field above (dt_py_crash_stack's copy)
	int co_filename;       // PyCodeObject.co_filename
	int co_firsttraceable; // PyCodeObject._co_firsttraceable (int); -1: none (before 3.11)
	int co_code;           // PyCodeObject.co_code_adaptive: the first _Py_CODEUNIT; -1: not inline (before 3.11)
	int co_linetable;      // PyCodeObject.co_linetable (3.8, 3.9: co_lnotab; a bytes object)
	int co_linearray;      // PyCodeObject._co_linearray (NULL unless traced; 3.11 only, else -1)
	int co_linearray_size; // PyCodeObject._co_linearray_entry_size (short: 2 or 4; 3.11 only)
	int co_copy;           // bytes of a code object holding every field above (its instructions start there from 3.11 on)
	int u_ascii_data;      // sizeof(PyASCIIObject): a compact ASCII string's characters
	int u_compact_data;    // sizeof(PyCompactUnicodeObject): a compact string's characters
} dt_py_layout;

#define DT_PY_LAYOUT_38                                                                                          \
	{.minor = 8, .ts_frame = 24, .cf_current = -1, .fr_code = 32, .fr_previous = 24, .fr_instr = 104, .lasti_div = 2, \
		.fr_owner = -1, .fr_copy = 112, .co_filename = 104, .co_firsttraceable = -1, .co_code = -1,              \
		.co_linetable = 120, .co_linearray = -1, .co_linearray_size = -1, .co_copy = 128, .u_ascii_data = 48,    \
		.u_compact_data = 72}
#define DT_PY_LAYOUT_39                                                                                          \
	{.minor = 9, .ts_frame = 24, .cf_current = -1, .fr_code = 32, .fr_previous = 24, .fr_instr = 104, .lasti_div = 2, \
		.fr_owner = -1, .fr_copy = 112, .co_filename = 104, .co_firsttraceable = -1, .co_code = -1,              \
		.co_linetable = 120, .co_linearray = -1, .co_linearray_size = -1, .co_copy = 128, .u_ascii_data = 48,    \
		.u_compact_data = 72}
#define DT_PY_LAYOUT_310                                                                                         \
	{.minor = 10, .ts_frame = 24, .cf_current = -1, .fr_code = 32, .fr_previous = 24, .fr_instr = 96, .lasti_div = 1, \
		.fr_owner = -1, .fr_copy = 104, .co_filename = 104, .co_firsttraceable = -1, .co_code = -1,              \
		.co_linetable = 120, .co_linearray = -1, .co_linearray_size = -1, .co_copy = 128, .u_ascii_data = 48,    \
		.u_compact_data = 72}

#define DT_PY_LAYOUT_311                                                                                        \
	{.minor = 11, .ts_frame = 56, .cf_current = 8, .fr_code = 32, .fr_previous = 48, .fr_instr = 56, .lasti_div = 0, \
		.fr_owner = 69, .fr_copy = 70, .co_filename = 112, .co_firsttraceable = 168, .co_code = 184,           \
		.co_linetable = 136, .co_linearray = 160, .co_linearray_size = 54, .co_copy = 184, .u_ascii_data = 48, \
		.u_compact_data = 72}
#define DT_PY_LAYOUT_312                                                                                       \
	{.minor = 12, .ts_frame = 56, .cf_current = 0, .fr_code = 0, .fr_previous = 8, .fr_instr = 56, .lasti_div = 0, \
		.fr_owner = 70, .fr_copy = 71, .co_filename = 112, .co_firsttraceable = 176, .co_code = 192,          \
		.co_linetable = 136, .co_linearray = -1, .co_linearray_size = -1, .co_copy = 192, .u_ascii_data = 40, \
		.u_compact_data = 56}
#define DT_PY_LAYOUT_313                                                                                        \
	{.minor = 13, .ts_frame = 72, .cf_current = -1, .fr_code = 0, .fr_previous = 8, .fr_instr = 56, .lasti_div = 0, \
		.fr_owner = 70, .fr_copy = 71, .co_filename = 112, .co_firsttraceable = 184, .co_code = 200,           \
		.co_linetable = 136, .co_linearray = -1, .co_linearray_size = -1, .co_copy = 200, .u_ascii_data = 40,  \
		.u_compact_data = 56}

// Bounds over the versions, for copies of a frame's and a code object's
// heads (dt_py_crash_stack) and of a string's (py_safe_name).
#define DT_PY_FR_MAX 112 // ≥ every fr_copy
#define DT_PY_CO_MAX 208 // ≥ every co_copy
#define DT_PY_U_MAX 72   // ≥ every u_compact_data

#endif
