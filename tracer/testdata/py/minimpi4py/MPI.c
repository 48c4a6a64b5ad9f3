// A stand-in for mpi4py's MPI module, for the tracer's Python call-stack
// tests under interpreters Debian ships no mpi4py for (CPython 3.12 and
// 3.13 here): the few methods tracer/testdata/py's scripts call, with
// mpi4py's names and what matters to the tracer done as mpi4py does it —
// MPI_Init_thread at the import, every call made from this extension
// (built as <dir>/mpi4py/MPI.<abi>.so) with the GIL released around it,
// MPI_Finalize at the interpreter's exit (Py_AtExit). Not a binding.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <mpi.h>

typedef struct {
	PyObject_HEAD
	MPI_Comm comm;
} Comm;

static PyObject *fail(int err) {
	char msg[MPI_MAX_ERROR_STRING];
	int n = 0;
	MPI_Error_string(err, msg, &n);
	PyErr_SetString(PyExc_RuntimeError, msg);
	return NULL;
}

static PyObject *Comm_Barrier(Comm *self, PyObject *noargs) {
	(void)noargs;
	int err;
	Py_BEGIN_ALLOW_THREADS err = MPI_Barrier(self->comm);
	Py_END_ALLOW_THREADS if (err != MPI_SUCCESS) return fail(err);
	Py_RETURN_NONE;
}

static PyObject *Comm_Get_rank(Comm *self, PyObject *noargs) {
	(void)noargs;
	int r, err;
	Py_BEGIN_ALLOW_THREADS err = MPI_Comm_rank(self->comm, &r);
	Py_END_ALLOW_THREADS if (err != MPI_SUCCESS) return fail(err);
	return PyLong_FromLong(r);
}

static PyObject *Comm_Send(Comm *self, PyObject *args, PyObject *kw) {
	static char *names[] = {"buf", "dest", "tag", NULL};
	Py_buffer b;
	int dest, tag = 0, err;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "y*i|i", names, &b, &dest, &tag)) return NULL;
	Py_BEGIN_ALLOW_THREADS err = MPI_Send(b.buf, (int)b.len, MPI_BYTE, dest, tag, self->comm);
	Py_END_ALLOW_THREADS PyBuffer_Release(&b);
	if (err != MPI_SUCCESS) return fail(err);
	Py_RETURN_NONE;
}

static PyObject *Comm_Recv(Comm *self, PyObject *args, PyObject *kw) {
	static char *names[] = {"buf", "source", "tag", NULL};
	Py_buffer b;
	int source = MPI_ANY_SOURCE, tag = MPI_ANY_TAG, err;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "w*|ii", names, &b, &source, &tag)) return NULL;
	Py_BEGIN_ALLOW_THREADS err = MPI_Recv(b.buf, (int)b.len, MPI_BYTE, source, tag, self->comm, MPI_STATUS_IGNORE);
	Py_END_ALLOW_THREADS PyBuffer_Release(&b);
	if (err != MPI_SUCCESS) return fail(err);
	Py_RETURN_NONE;
}

static PyTypeObject CommType;

static PyObject *Comm_Dup(Comm *self, PyObject *noargs) {
	(void)noargs;
	Comm *c = PyObject_New(Comm, &CommType);
	if (!c) return NULL;
	int err;
	Py_BEGIN_ALLOW_THREADS err = MPI_Comm_dup(self->comm, &c->comm);
	Py_END_ALLOW_THREADS if (err != MPI_SUCCESS) {
		c->comm = MPI_COMM_NULL;
		Py_DECREF(c);
		return fail(err);
	}
	return (PyObject *)c;
}

static PyObject *Comm_Free(Comm *self, PyObject *noargs) {
	(void)noargs;
	int err;
	Py_BEGIN_ALLOW_THREADS err = MPI_Comm_free(&self->comm);
	Py_END_ALLOW_THREADS if (err != MPI_SUCCESS) return fail(err);
	Py_RETURN_NONE;
}

static PyMethodDef comm_methods[] = {
	{"Barrier", (PyCFunction)Comm_Barrier, METH_NOARGS, NULL},
	{"Get_rank", (PyCFunction)Comm_Get_rank, METH_NOARGS, NULL},
	{"Send", (PyCFunction)(void (*)(void))Comm_Send, METH_VARARGS | METH_KEYWORDS, NULL},
	{"Recv", (PyCFunction)(void (*)(void))Comm_Recv, METH_VARARGS | METH_KEYWORDS, NULL},
	{"Dup", (PyCFunction)Comm_Dup, METH_NOARGS, NULL},
	{"Free", (PyCFunction)Comm_Free, METH_NOARGS, NULL},
	{NULL, NULL, 0, NULL},
};

static PyTypeObject CommType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mpi4py.MPI.Comm",
	.tp_basicsize = sizeof(Comm),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_methods = comm_methods,
	.tp_new = NULL,
};

static void finalize(void) {
	int done = 1;
	MPI_Finalized(&done);
	if (!done) MPI_Finalize();
}

static PyObject *Finalize(PyObject *self, PyObject *noargs) {
	(void)self, (void)noargs;
	int err;
	Py_BEGIN_ALLOW_THREADS err = MPI_Finalize();
	Py_END_ALLOW_THREADS if (err != MPI_SUCCESS) return fail(err);
	Py_RETURN_NONE;
}

static PyMethodDef functions[] = {
	{"Finalize", Finalize, METH_NOARGS, NULL},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mpi4py.MPI", NULL, -1, functions, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_MPI(void) {
	if (PyType_Ready(&CommType) < 0) return NULL;
	int ok = 0, provided;
	MPI_Initialized(&ok);
	if (!ok) {
		int err = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
		if (err != MPI_SUCCESS) return fail(err);
		Py_AtExit(finalize);
	}
	PyObject *m = PyModule_Create(&module);
	if (!m) return NULL;
	Comm *w = PyObject_New(Comm, &CommType);
	if (!w) return NULL;
	w->comm = MPI_COMM_WORLD;
	if (PyModule_AddObject(m, "COMM_WORLD", (PyObject *)w) < 0) return NULL;
	Comm *self = PyObject_New(Comm, &CommType);
	if (!self) return NULL;
	self->comm = MPI_COMM_SELF;
	if (PyModule_AddObject(m, "COMM_SELF", (PyObject *)self) < 0) return NULL;
	return m;
}
