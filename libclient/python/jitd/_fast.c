/* jitd._fast: the per-call hot path of the Python package in C.
 *
 * LocalExecutable.Execute / exe(x, y) with numpy arguments costs, through
 * ctypes, a Python LocalBuffer per argument and result and one daemon round
 * trip per buffer created or destroyed. This module does the same call in
 * C, over the public C API (include/jitd/jitd.h): it checks each argument's
 * dtype and shape against the executable's signature, copies the arguments
 * into shared-memory buffers that it keeps between calls, runs the
 * executable with the GIL released (one round trip), and copies the results
 * out into new numpy arrays, which the caller owns and which never point
 * into shared memory (they outlive the executable, the client and the
 * daemon).
 *
 * The C functions are not linked: bind() looks them up in the libjitd.so
 * that the package already loaded through ctypes (its dlopen handle), so
 * the handles this module receives from Python and the functions it calls
 * come from one and the same library.
 *
 * Declining. execute() returns NotImplemented, having done nothing, for any
 * call it does not handle: a wrong number of arguments, an argument that is
 * not an ndarray or numpy scalar (a LocalBuffer, a Python number, a list),
 * a dtype or shape other than the executable's, any call of an executable
 * with a dimension unknown until it runs. The package then takes its
 * ctypes path, which handles those or raises the package's error for them,
 * so both paths give the same results and the same errors.
 *
 * Threads. execute() may be called from any thread; the GIL is released
 * from the copy in to the copy out. One call at a time uses an executable's
 * buffers (a mutex, taken without the GIL); calls on one client are
 * serialized by libjitd anyway.
 *
 * Lifetime. An Executable borrows the jitd_executable_t and jitd_client_t
 * it was made with from the Python LocalExecutable, which calls detach()
 * before it releases them (when it dies, or is compiled again after a
 * reconnect): from then on the object declines every call. The buffers it
 * keeps belong to it; detach() hands them to the caller (handles as ints,
 * to destroy with jitd_buffer_destroy), and dealloc destroys any still
 * held.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "jitd/jitd.h"

/* Bumped when the Python side must change with this module. */
#define JITD_FAST_ABI 1

/* ---- The C API, looked up in the package's libjitd.so ------------------ */

static struct {
  int bound;
  __typeof__(jitd_status_code)* status_code;
  __typeof__(jitd_status_message)* status_message;
  __typeof__(jitd_status_free)* status_free;
  __typeof__(jitd_buffer_create)* buffer_create;
  __typeof__(jitd_buffer_data)* buffer_data;
  __typeof__(jitd_buffer_destroy)* buffer_destroy;
  __typeof__(jitd_executable_num_arguments)* num_arguments;
  __typeof__(jitd_executable_num_results)* num_results;
  __typeof__(jitd_executable_argument_shape)* argument_shape;
  __typeof__(jitd_executable_result_shape)* result_shape;
  __typeof__(jitd_executable_execute_with_deadline)* execute;
} api;

static PyObject* error_class; /* jitd.JitdError(code, message) */

static PyObject* fast_bind(PyObject* module, PyObject* args) {
  unsigned long long handle = 0;
  PyObject* error = NULL;
  if (!PyArg_ParseTuple(args, "KO:bind", &handle, &error)) return NULL;
  if (handle == 0) {
    PyErr_SetString(PyExc_ValueError, "bind: the libjitd.so handle is 0");
    return NULL;
  }
  void* lib = (void*)(uintptr_t)handle;
#define JITD_FAST_LOOKUP(field, name)                                               \
  do {                                                                              \
    void* symbol = dlsym(lib, #name);                                               \
    if (symbol == NULL) {                                                           \
      PyErr_Format(PyExc_ImportError, "jitd._fast: the loaded libjitd.so has no %s", \
                   #name);                                                          \
      return NULL;                                                                  \
    }                                                                               \
    api.field = (__typeof__(name)*)symbol;                                          \
  } while (0)
  JITD_FAST_LOOKUP(status_code, jitd_status_code);
  JITD_FAST_LOOKUP(status_message, jitd_status_message);
  JITD_FAST_LOOKUP(status_free, jitd_status_free);
  JITD_FAST_LOOKUP(buffer_create, jitd_buffer_create);
  JITD_FAST_LOOKUP(buffer_data, jitd_buffer_data);
  JITD_FAST_LOOKUP(buffer_destroy, jitd_buffer_destroy);
  JITD_FAST_LOOKUP(num_arguments, jitd_executable_num_arguments);
  JITD_FAST_LOOKUP(num_results, jitd_executable_num_results);
  JITD_FAST_LOOKUP(argument_shape, jitd_executable_argument_shape);
  JITD_FAST_LOOKUP(result_shape, jitd_executable_result_shape);
  JITD_FAST_LOOKUP(execute, jitd_executable_execute_with_deadline);
#undef JITD_FAST_LOOKUP
  Py_XINCREF(error);
  Py_XSETREF(error_class, error);
  api.bound = 1;
  Py_RETURN_NONE;
}

/* Raises error_class(code, message) for `status` and frees it; NULL. */
static PyObject* raise_status(jitd_status_t* status) {
  const int code = (int)api.status_code(status);
  PyObject* message = PyUnicode_DecodeUTF8(api.status_message(status),
                                           (Py_ssize_t)strlen(api.status_message(status)),
                                           "replace");
  api.status_free(status);
  if (message == NULL) return NULL;
  PyObject* error = PyObject_CallFunction(error_class, "iO", code, message);
  Py_DECREF(message);
  if (error == NULL) return NULL;
  PyErr_SetObject((PyObject*)Py_TYPE(error), error);
  Py_DECREF(error);
  return NULL;
}

/* ---- Signatures -------------------------------------------------------- */

/* One argument or result: the numpy type it must have and its dims. */
typedef struct {
  int typenum;      /* the numpy type of results */
  char kind;        /* numpy dtype.kind an argument must have ... */
  int itemsize;     /* ... and dtype.itemsize */
  jitd_dtype_t dtype;
  int rank;
  npy_intp* dims;   /* rank entries (NULL for rank 0); owned */
  size_t nbytes;
} Slot;

/* The numpy type of a jitd dtype; -1 when numpy has none. */
static int numpy_type(jitd_dtype_t dtype, char* kind, int* itemsize) {
  switch (dtype) {
    case JITD_DTYPE_PRED: *kind = 'b'; *itemsize = 1; return NPY_BOOL;
    case JITD_DTYPE_S8: *kind = 'i'; *itemsize = 1; return NPY_INT8;
    case JITD_DTYPE_S16: *kind = 'i'; *itemsize = 2; return NPY_INT16;
    case JITD_DTYPE_S32: *kind = 'i'; *itemsize = 4; return NPY_INT32;
    case JITD_DTYPE_S64: *kind = 'i'; *itemsize = 8; return NPY_INT64;
    case JITD_DTYPE_U8: *kind = 'u'; *itemsize = 1; return NPY_UINT8;
    case JITD_DTYPE_U16: *kind = 'u'; *itemsize = 2; return NPY_UINT16;
    case JITD_DTYPE_U32: *kind = 'u'; *itemsize = 4; return NPY_UINT32;
    case JITD_DTYPE_U64: *kind = 'u'; *itemsize = 8; return NPY_UINT64;
    case JITD_DTYPE_F16: *kind = 'f'; *itemsize = 2; return NPY_FLOAT16;
    case JITD_DTYPE_F32: *kind = 'f'; *itemsize = 4; return NPY_FLOAT32;
    case JITD_DTYPE_F64: *kind = 'f'; *itemsize = 8; return NPY_FLOAT64;
    case JITD_DTYPE_C64: *kind = 'c'; *itemsize = 8; return NPY_COMPLEX64;
    case JITD_DTYPE_C128: *kind = 'c'; *itemsize = 16; return NPY_COMPLEX128;
    default: return -1;
  }
}

/* Reads slot `index` of `exe` (a result when `result`); 0 or -1 with an
 * exception set. */
static int read_slot(jitd_executable_t* exe, size_t index, int result, Slot* out) {
  jitd_dtype_t dtype = JITD_DTYPE_INVALID;
  size_t rank = 0;
  const int64_t* dims = NULL;
  jitd_status_t* status = result ? api.result_shape(exe, index, &dtype, &rank, &dims)
                                 : api.argument_shape(exe, index, &dtype, &rank, &dims);
  if (status != NULL) {
    raise_status(status);
    return -1;
  }
  out->dtype = dtype;
  out->typenum = numpy_type(dtype, &out->kind, &out->itemsize);
  if (out->typenum < 0) {
    PyErr_Format(PyExc_TypeError, "jitd._fast: %s %zu has jitd element type %d, which numpy lacks",
                 result ? "result" : "argument", index, (int)dtype);
    return -1;
  }
  out->rank = (int)rank;
  out->nbytes = (size_t)out->itemsize;
  if (rank > 0) {
    out->dims = PyMem_Malloc(rank * sizeof(npy_intp));
    if (out->dims == NULL) {
      PyErr_NoMemory();
      return -1;
    }
    for (size_t d = 0; d < rank; ++d) {
      out->dims[d] = (npy_intp)dims[d];
      out->nbytes *= dims[d] < 0 ? 0 : (size_t)dims[d];
    }
  }
  return 0;
}

/* ---- Executable -------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  jitd_executable_t* exe; /* borrowed (see Lifetime) */
  jitd_client_t* client;  /* borrowed: where the kept buffers are made */
  Py_ssize_t num_args, num_results;
  Slot* slots;            /* arguments, then results */
  int result_is_tuple;
  int keep;               /* keep buffers between calls (small enough) */
  int dynamic;            /* a dimension unknown before the run: decline */
  int detached;           /* detach() ran: decline every call (the handles
                             may be released from now on) */
  jitd_buffer_t** kept;   /* num_args + num_results, NULL until first use */
  pthread_mutex_t mu;     /* guards kept and timing */
  jitd_execute_timing_t timing;
  int has_timing;
} Executable;

static void destroy_kept(Executable* self) {
  if (self->kept == NULL) return;
  for (Py_ssize_t i = 0; i < self->num_args + self->num_results; ++i) {
    if (self->kept[i] != NULL) api.buffer_destroy(self->kept[i]);
    self->kept[i] = NULL;
  }
}

static void executable_dealloc(Executable* self) {
  destroy_kept(self);
  PyMem_Free(self->kept);
  if (self->slots != NULL) {
    for (Py_ssize_t i = 0; i < self->num_args + self->num_results; ++i) {
      PyMem_Free(self->slots[i].dims);
    }
    PyMem_Free(self->slots);
  }
  pthread_mutex_destroy(&self->mu);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

/* Executable(executable, client, result_is_tuple, keep_bytes): the
 * handles as ints; buffers are kept between calls when all arguments and
 * results together take at most keep_bytes. */
static int executable_init(Executable* self, PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"executable", "client", "result_is_tuple", "keep_bytes", NULL};
  unsigned long long exe = 0, client = 0, keep_bytes = 0;
  int result_is_tuple = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KKpK:Executable", keywords, &exe, &client,
                                   &result_is_tuple, &keep_bytes)) {
    return -1;
  }
  if (!api.bound) {
    PyErr_SetString(PyExc_RuntimeError, "jitd._fast: bind() was not called");
    return -1;
  }
  if (exe == 0 || client == 0) {
    PyErr_SetString(PyExc_ValueError, "jitd._fast.Executable: a NULL executable or client");
    return -1;
  }
  if (self->slots != NULL) {
    PyErr_SetString(PyExc_RuntimeError, "jitd._fast.Executable: already initialized");
    return -1;
  }
  self->exe = (jitd_executable_t*)(uintptr_t)exe;
  self->client = (jitd_client_t*)(uintptr_t)client;
  self->num_args = (Py_ssize_t)api.num_arguments(self->exe);
  self->num_results = (Py_ssize_t)api.num_results(self->exe);
  self->result_is_tuple = result_is_tuple;
  const Py_ssize_t n = self->num_args + self->num_results;
  self->slots = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(Slot));
  self->kept = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof(jitd_buffer_t*));
  if (self->slots == NULL || self->kept == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  size_t total = 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    const int result = i >= self->num_args;
    if (read_slot(self->exe, (size_t)(result ? i - self->num_args : i), result,
                  &self->slots[i]) != 0) {
      return -1;
    }
    total += self->slots[i].nbytes;
    for (int d = 0; d < self->slots[i].rank; ++d) self->dynamic |= self->slots[i].dims[d] < 0;
  }
  self->keep = total <= keep_bytes;
  return 0;
}

static PyObject* executable_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  Executable* self = (Executable*)type->tp_alloc(type, 0);
  if (self != NULL) pthread_mutex_init(&self->mu, NULL);
  return (PyObject*)self;
}

/* The numpy array an argument is, as a C-contiguous array of slot's type and
 * dims (a new reference), or NULL without an exception when it is not. */
static PyArrayObject* argument_array(PyObject* value, const Slot* slot) {
  PyArrayObject* array;
  if (PyArray_Check(value)) {
    array = (PyArrayObject*)value;
    Py_INCREF(array);
  } else if (PyArray_IsScalar(value, Generic)) {
    array = (PyArrayObject*)PyArray_FromScalar(value, NULL);
    if (array == NULL) {
      PyErr_Clear();
      return NULL;
    }
  } else {
    return NULL;
  }
  const PyArray_Descr* descr = PyArray_DESCR(array);
  int fits = descr->kind == slot->kind && descr->elsize == slot->itemsize &&
             PyArray_ISNOTSWAPPED(array) && !PyDataType_HASFIELDS(descr) &&
             PyArray_NDIM(array) == slot->rank;
  for (int d = 0; fits && d < slot->rank; ++d) {
    fits = PyArray_DIM(array, d) == slot->dims[d];
  }
  if (!fits) {
    Py_DECREF(array);
    return NULL;
  }
  if (!PyArray_IS_C_CONTIGUOUS(array)) {
    PyArrayObject* copy = PyArray_GETCONTIGUOUS(array);
    Py_DECREF(array);
    if (copy == NULL) PyErr_Clear();
    return copy;
  }
  return array;
}

/* Makes buffers[i] for each slot i in [begin, end) that has none. */
static jitd_status_t* make_buffers(Executable* self, jitd_buffer_t** buffers, Py_ssize_t begin,
                                   Py_ssize_t end) {
  for (Py_ssize_t i = begin; i < end; ++i) {
    if (buffers[i] != NULL) continue;
    const Slot* s = &self->slots[i];
    int64_t dims[64];
    int64_t* heap = NULL;
    int64_t* d = dims;
    if (s->rank > 64) {
      heap = PyMem_RawMalloc((size_t)s->rank * sizeof(int64_t));
      if (heap == NULL) return NULL; /* cannot say why without the GIL; see caller */
      d = heap;
    }
    for (int k = 0; k < s->rank; ++k) d[k] = (int64_t)s->dims[k];
    jitd_status_t* status = api.buffer_create(self->client, s->dtype, s->rank ? d : NULL,
                                              (size_t)s->rank, &buffers[i]);
    PyMem_RawFree(heap);
    if (status != NULL) return status;
  }
  return NULL;
}

/* The call without the GIL: buffers (kept, or made for this call), copy
 * in, execute, copy out. Under self->mu. */
static jitd_status_t* run_locked(Executable* self, PyArrayObject** in, PyArrayObject** out,
                                 uint64_t deadline_micros, int* out_no_memory,
                                 int* out_detached) {
  if (self->detached) {
    *out_detached = 1;
    return NULL;
  }
  const Py_ssize_t n = self->num_args + self->num_results;
  jitd_buffer_t* local[16] = {NULL};
  jitd_buffer_t** buffers = self->keep ? self->kept : local;
  if (!self->keep && n > 16) {
    buffers = PyMem_RawCalloc((size_t)n, sizeof(jitd_buffer_t*));
    if (buffers == NULL) {
      *out_no_memory = 1;
      return NULL;
    }
  }
  jitd_status_t* status = make_buffers(self, buffers, 0, n);
  for (Py_ssize_t i = 0; status == NULL && i < n; ++i) {
    if (buffers[i] == NULL) *out_no_memory = 1;
  }
  if (status == NULL && !*out_no_memory) {
    for (Py_ssize_t i = 0; i < self->num_args; ++i) {
      if (self->slots[i].nbytes > 0) {
        memcpy(api.buffer_data(buffers[i]), PyArray_DATA(in[i]), self->slots[i].nbytes);
      }
    }
    jitd_execute_timing_t timing = {sizeof(jitd_execute_timing_t), 0, 0, 0};
    status = api.execute(self->exe, buffers, (size_t)self->num_args, buffers + self->num_args,
                         (size_t)self->num_results, deadline_micros, &timing);
    if (status == NULL) {
      for (Py_ssize_t j = 0; j < self->num_results; ++j) {
        const Slot* s = &self->slots[self->num_args + j];
        if (s->nbytes > 0) {
          memcpy(PyArray_DATA(out[j]), api.buffer_data(buffers[self->num_args + j]), s->nbytes);
        }
      }
      self->timing = timing;
      self->has_timing = 1;
    }
  }
  if (!self->keep) {
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (buffers[i] != NULL) api.buffer_destroy(buffers[i]);
    }
    if (buffers != local) PyMem_RawFree(buffers);
  }
  return status;
}

/* execute(arguments, deadline_micros=0): the results (an ndarray, or a tuple
 * of them), or NotImplemented when this call is not one it handles (see
 * Declining at the top). */
static PyObject* executable_execute(Executable* self, PyObject* const* argv, Py_ssize_t argc) {
  if (argc < 1 || argc > 2) {
    PyErr_SetString(PyExc_TypeError, "execute(arguments, deadline_micros=0)");
    return NULL;
  }
  unsigned long long deadline = 0;
  if (argc == 2) {
    deadline = PyLong_AsUnsignedLongLong(argv[1]);
    if (PyErr_Occurred()) return NULL;
  }
  PyObject* arguments = argv[0];
  if (!PyList_Check(arguments) && !PyTuple_Check(arguments)) Py_RETURN_NOTIMPLEMENTED;
  if (PySequence_Fast_GET_SIZE(arguments) != self->num_args || self->dynamic) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  PyObject** items = PySequence_Fast_ITEMS(arguments);

  PyArrayObject* small[16];
  PyArrayObject** arrays = small;
  const Py_ssize_t n = self->num_args + self->num_results;
  if (n > 16) {
    arrays = PyMem_Calloc((size_t)n, sizeof(PyArrayObject*));
    if (arrays == NULL) return PyErr_NoMemory();
  } else {
    memset(small, 0, sizeof(small));
  }
  PyObject* result = NULL;
  Py_ssize_t made = 0;
  for (; made < self->num_args; ++made) {
    arrays[made] = argument_array(items[made], &self->slots[made]);
    if (arrays[made] == NULL) {
      result = Py_NotImplemented;
      Py_INCREF(result);
      goto done;
    }
  }
  for (; made < n; ++made) {
    const Slot* s = &self->slots[made];
    arrays[made] = (PyArrayObject*)PyArray_SimpleNew(s->rank, s->dims, s->typenum);
    if (arrays[made] == NULL) goto done;
  }

  jitd_status_t* status;
  int no_memory = 0, detached = 0;
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&self->mu);
  status = run_locked(self, arrays, arrays + self->num_args, deadline, &no_memory, &detached);
  pthread_mutex_unlock(&self->mu);
  Py_END_ALLOW_THREADS
  if (detached) {
    result = Py_NotImplemented;
    Py_INCREF(result);
    goto done;
  }
  if (status != NULL) {
    raise_status(status);
    goto done;
  }
  if (no_memory) {
    PyErr_NoMemory();
    goto done;
  }
  if (self->result_is_tuple) {
    result = PyTuple_New(self->num_results);
    if (result == NULL) goto done;
    for (Py_ssize_t j = 0; j < self->num_results; ++j) {
      PyTuple_SET_ITEM(result, j, (PyObject*)arrays[self->num_args + j]);
      arrays[self->num_args + j] = NULL;
    }
  } else {
    result = (PyObject*)arrays[self->num_args];
    arrays[self->num_args] = NULL;
  }
done:
  for (Py_ssize_t i = 0; i < made; ++i) Py_XDECREF(arrays[i]);
  if (arrays != small) PyMem_Free(arrays);
  return result;
}

/* The latest successful call's timing: a dict like the package's
 * last_timing, or None before the first. */
static PyObject* executable_last_timing(Executable* self, PyObject* unused) {
  jitd_execute_timing_t timing;
  int has;
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&self->mu);
  timing = self->timing;
  has = self->has_timing;
  pthread_mutex_unlock(&self->mu);
  Py_END_ALLOW_THREADS
  if (!has) Py_RETURN_NONE;
  return Py_BuildValue("{sKsKsK}", "queue_micros", (unsigned long long)timing.queue_micros,
                       "execute_micros", (unsigned long long)timing.execute_micros,
                       "total_micros", (unsigned long long)timing.total_micros);
}

/* detach(): the kept buffers' handles (a list of ints) for the caller to
 * destroy with jitd_buffer_destroy. It waits for a call in flight; every
 * later execute() returns NotImplemented without touching a handle, so the
 * caller may release the executable (and these buffers) as soon as it
 * returns, even while other threads still hold this object. */
static PyObject* executable_detach(Executable* self, PyObject* unused) {
  const Py_ssize_t n = self->num_args + self->num_results;
  jitd_buffer_t* taken[16];
  jitd_buffer_t** handles = taken;
  if (n > 16) {
    handles = PyMem_Calloc((size_t)n, sizeof(jitd_buffer_t*));
    if (handles == NULL) return PyErr_NoMemory();
  }
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&self->mu);
  for (Py_ssize_t i = 0; i < n; ++i) {
    handles[i] = self->kept[i];
    self->kept[i] = NULL;
  }
  self->detached = 1;
  pthread_mutex_unlock(&self->mu);
  Py_END_ALLOW_THREADS
  PyObject* list = PyList_New(0);
  for (Py_ssize_t i = 0; list != NULL && i < n; ++i) {
    if (handles[i] == NULL) continue;
    PyObject* h = PyLong_FromVoidPtr(handles[i]);
    if (h == NULL || PyList_Append(list, h) != 0) {
      Py_XDECREF(h);
      Py_CLEAR(list);
      break;
    }
    Py_DECREF(h);
  }
  if (list == NULL) {
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (handles[i] != NULL) api.buffer_destroy(handles[i]);
    }
  }
  if (handles != taken) PyMem_Free(handles);
  return list;
}

static PyObject* executable_get_keeps(Executable* self, void* unused) {
  return PyBool_FromLong(self->keep);
}

static PyMethodDef executable_methods[] = {
    {"execute", (PyCFunction)(void (*)(void))executable_execute, METH_FASTCALL,
     "execute(arguments, deadline_micros=0) -> ndarray, tuple of ndarrays, or NotImplemented"},
    {"last_timing", (PyCFunction)executable_last_timing, METH_NOARGS,
     "The latest call's daemon timing (a dict), or None."},
    {"detach", (PyCFunction)executable_detach, METH_NOARGS,
     "The kept buffers' handles, handed to the caller to destroy."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef executable_getset[] = {
    {"keeps_buffers", (getter)executable_get_keeps, NULL,
     "Whether the buffers are kept between calls.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ExecutableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "jitd._fast.Executable",
    .tp_basicsize = sizeof(Executable),
    .tp_dealloc = (destructor)executable_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One jitd executable's hot path: execute(arguments) with numpy arrays.",
    .tp_methods = executable_methods,
    .tp_getset = executable_getset,
    .tp_init = (initproc)executable_init,
    .tp_new = executable_new,
};

/* ---- The module -------------------------------------------------------- */

static PyMethodDef module_methods[] = {
    {"bind", fast_bind, METH_VARARGS,
     "bind(libjitd_dlopen_handle, error_class): use that library's C API."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_fast",
    "jitd's per-call hot path in C (see LocalExecutable.Execute).", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fast(void) {
  import_array();
  if (PyType_Ready(&ExecutableType) < 0) return NULL;
  PyObject* module = PyModule_Create(&module_def);
  if (module == NULL) return NULL;
  Py_INCREF(&ExecutableType);
  if (PyModule_AddObject(module, "Executable", (PyObject*)&ExecutableType) < 0 ||
      PyModule_AddIntConstant(module, "ABI", JITD_FAST_ABI) < 0 ||
      PyModule_AddIntConstant(module, "API_VERSION", JITD_API_VERSION) < 0) {
    Py_DECREF(&ExecutableType);
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
