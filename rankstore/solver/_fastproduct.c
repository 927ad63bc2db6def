/* The C twin of the product's kernel call (rankstore.solver.product.python_row_sums): for rows
 * [start, stop) of an in-link CSR, out[i] = fill + sum over the row's links of z[source] (times the
 * link's value when there are values), without the GIL.  And gather_rows, the row gather the
 * product's setup copies the links in its own order with (scipy's csr_row_index does the same): the
 * solver needs no scipy, whose import is a good part of a small rank's time.
 *
 * The sums are the same, bit for bit, as scipy's csr_matvec on out pre-filled with fill: each row
 * starts from fill (cast to z's type) and adds its links in order, in z's type.  What differs is
 * the wait: a row's sources are scattered over z, so scipy's loop stalls on each gather in turn;
 * this one asks for z[indices[k + AHEAD]] while it adds z[indices[k]], so that many gathers are on
 * their way at once. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Links between a prefetch and its use.  Far ahead: many of a row's sources are pages that others
 * read too, already cached, so the misses among the next AHEAD sources are what stays in flight
 * (the timings behind the choice are in BENCHMARKS.md).  A z small enough to stay in the cache
 * gets no prefetches: they would only cost instructions. */
#define AHEAD 192
#define PREFETCH_BYTES (8 << 20)

/* Returns 0, or -1 at a row pointer or a source out of range (checked as it goes: the loop waits on
 * memory, not on these tests).  The links are [first, last), checked by the caller against the
 * arrays' sizes and not read again from indptr: another thread may change it meanwhile, and every
 * row's end is held within them. */
#define KERNEL(NAME, IDX, T, WEIGHTED)                                                                   \
    static int NAME(const IDX *indptr, const int32_t *indices, const T *values, const T *z, T *out,    \
                    Py_ssize_t start, Py_ssize_t stop, int64_t first, int64_t last, T fill,              \
                    const T *fills, int64_t size) {                                                      \
        int64_t k = first;                                                                               \
        int64_t ahead = size * (int64_t)sizeof(T) > PREFETCH_BYTES ? last - AHEAD : INT64_MIN;          \
        for (Py_ssize_t i = start; i < stop; i++) {                                                     \
            int64_t end = (int64_t)indptr[i + 1];                                                       \
            if (end < k || end > last) return -1; /* row pointers must not go back */                  \
            T sum = fills != NULL ? fills[i] : fill;                                                     \
            for (int64_t fetched = end < ahead ? end : ahead; k < fetched; k++) { /* with prefetches */ \
                __builtin_prefetch(&z[(uint32_t)indices[k + AHEAD]], 0, 1);                              \
                uint32_t source = (uint32_t)indices[k];                                                  \
                if (source >= (uint64_t)size) return -1;                                                 \
                sum += WEIGHTED ? values[k] * z[source] : z[source];                                     \
            }                                                                                            \
            for (; k < end; k++) { /* the last AHEAD links, or a z that stays cached */                  \
                uint32_t source = (uint32_t)indices[k];                                                  \
                if (source >= (uint64_t)size) return -1;                                                 \
                sum += WEIGHTED ? values[k] * z[source] : z[source];                                     \
            }                                                                                            \
            out[i] = sum;                                                                                \
        }                                                                                                \
        return 0;                                                                                        \
    }

KERNEL(sums_i32_f64, int32_t, double, 0)
KERNEL(sums_i32_f64_w, int32_t, double, 1)
KERNEL(sums_i64_f64, int64_t, double, 0)
KERNEL(sums_i64_f64_w, int64_t, double, 1)
KERNEL(sums_i32_f32, int32_t, float, 0)
KERNEL(sums_i32_f32_w, int32_t, float, 1)
KERNEL(sums_i64_f32, int64_t, float, 0)
KERNEL(sums_i64_f32_w, int64_t, float, 1)

/* The item size of a buffer whose format is one of ``kinds`` (a string of struct codes) in the
 * machine's byte order, aligned for its type; else 0. */
static Py_ssize_t item_of(Py_buffer *view, const char *kinds) {
    const char *format = view->format == NULL ? "B" : view->format;
    if (*format == '@' || *format == '=' || *format == (PY_LITTLE_ENDIAN ? '<' : '>')) format++;
    if (format[0] == '\0' || format[1] != '\0' || strchr(kinds, format[0]) == NULL) return 0;
    if (view->itemsize <= 0 || (uintptr_t)view->buf % (uintptr_t)view->itemsize != 0) return 0;
    return view->itemsize;
}

static PyObject *row_sums(PyObject *self, PyObject *args) {
    PyObject *indptr_o, *indices_o, *values_o, *z_o, *out_o, *fill_o;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "OOOOOnnO", &indptr_o, &indices_o, &values_o, &z_o, &out_o, &start, &stop, &fill_o))
        return NULL;
    Py_buffer indptr = {0}, indices = {0}, values = {0}, z = {0}, out = {0}, fills = {0};
    PyObject *result = NULL;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (PyObject_GetBuffer(indptr_o, &indptr, flags) < 0) goto done;
    if (PyObject_GetBuffer(indices_o, &indices, flags) < 0) goto done;
    if (values_o != Py_None && PyObject_GetBuffer(values_o, &values, flags) < 0) goto done;
    if (PyObject_GetBuffer(z_o, &z, flags) < 0) goto done;
    if (PyObject_GetBuffer(out_o, &out, flags | PyBUF_WRITABLE) < 0) goto done;
    int scalar_fill = 1; /* a number, a numpy scalar or a 0-d array; else an array by row */
    if (!PyFloat_Check(fill_o) && !PyLong_Check(fill_o)) {
        if (PyObject_GetBuffer(fill_o, &fills, flags) < 0) goto done;
        if (fills.ndim == 0)
            PyBuffer_Release(&fills);
        else
            scalar_fill = 0;
    }

    Py_ssize_t index_size = item_of(&indptr, "ilq"), real = item_of(&z, "fd");
    if ((index_size != 4 && index_size != 8) || item_of(&indices, "il") != 4 || (real != 4 && real != 8) ||
        item_of(&out, "fd") != real || (values_o != Py_None && item_of(&values, "fd") != real) ||
        (!scalar_fill && item_of(&fills, "fd") != real)) {
        PyErr_SetString(PyExc_TypeError,
                        "row_sums: int32/int64 row pointers, int32 sources, one float type (native, aligned)");
        goto done;
    }
    Py_ssize_t rows = indptr.len / index_size - 1;
    if (start < 0 || stop < start || stop > rows || stop > out.len / real || (!scalar_fill && stop > fills.len / real)) {
        PyErr_SetString(PyExc_IndexError, "row_sums: rows out of range");
        goto done;
    }
    int64_t first = index_size == 4 ? ((int32_t *)indptr.buf)[start] : ((int64_t *)indptr.buf)[start];
    int64_t last = index_size == 4 ? ((int32_t *)indptr.buf)[stop] : ((int64_t *)indptr.buf)[stop];
    if (first < 0 || last < first || last > indices.len / 4 || (values_o != Py_None && last > values.len / real)) {
        PyErr_SetString(PyExc_IndexError, "row_sums: links out of range");
        goto done;
    }
    const int32_t *sources = (const int32_t *)indices.buf;
    int64_t size = z.len / real;
    double fill = scalar_fill ? PyFloat_AsDouble(fill_o) : 0.0;
    if (fill == -1.0 && PyErr_Occurred()) goto done;
    const void *v = values_o != Py_None ? values.buf : NULL, *f = scalar_fill ? NULL : fills.buf;
    int bad;
    Py_BEGIN_ALLOW_THREADS
    if (real == 8) {
        if (index_size == 4)
            bad = (v ? sums_i32_f64_w : sums_i32_f64)(indptr.buf, sources, v, z.buf, out.buf, start, stop, first, last, fill,
                                                   f, size);
        else
            bad = (v ? sums_i64_f64_w : sums_i64_f64)(indptr.buf, sources, v, z.buf, out.buf, start, stop, first, last, fill,
                                                   f, size);
    } else {
        if (index_size == 4)
            bad = (v ? sums_i32_f32_w : sums_i32_f32)(indptr.buf, sources, v, z.buf, out.buf, start, stop, first, last,
                                                   (float)fill, f, size);
        else
            bad = (v ? sums_i64_f32_w : sums_i64_f32)(indptr.buf, sources, v, z.buf, out.buf, start, stop, first, last,
                                                   (float)fill, f, size);
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_IndexError, "row_sums: a row pointer or a source is out of range");
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&indptr);
    PyBuffer_Release(&indices);
    if (values.obj != NULL) PyBuffer_Release(&values);
    PyBuffer_Release(&z);
    PyBuffer_Release(&out);
    if (fills.obj != NULL) PyBuffer_Release(&fills);
    return result;
}

/* gather_rows(rows, indptr, indices, values, out_indices, out_values): the links of rows[0], rows[1],
 * ... one after another into out_indices (and their values into out_values), without the GIL, as
 * scipy's csr_row_index gives them.  Values may be None (then out_values too), else of one item size
 * in and out. */
static PyObject *gather_rows(PyObject *self, PyObject *args) {
    PyObject *rows_o, *indptr_o, *indices_o, *values_o, *out_indices_o, *out_values_o;
    if (!PyArg_ParseTuple(args, "OOOOOO", &rows_o, &indptr_o, &indices_o, &values_o, &out_indices_o, &out_values_o))
        return NULL;
    Py_buffer rows = {0}, indptr = {0}, indices = {0}, values = {0}, out_indices = {0}, out_values = {0};
    PyObject *result = NULL;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if ((values_o == Py_None) != (out_values_o == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "gather_rows: values and out_values are both given or both None");
        return NULL;
    }
    if (PyObject_GetBuffer(rows_o, &rows, flags) < 0) goto done;
    if (PyObject_GetBuffer(indptr_o, &indptr, flags) < 0) goto done;
    if (PyObject_GetBuffer(indices_o, &indices, flags) < 0) goto done;
    if (values_o != Py_None && PyObject_GetBuffer(values_o, &values, flags) < 0) goto done;
    if (PyObject_GetBuffer(out_indices_o, &out_indices, flags | PyBUF_WRITABLE) < 0) goto done;
    if (out_values_o != Py_None && PyObject_GetBuffer(out_values_o, &out_values, flags | PyBUF_WRITABLE) < 0) goto done;
    Py_ssize_t row_size = item_of(&rows, "ilq"), index_size = item_of(&indptr, "ilq");
    Py_ssize_t value_size = values_o == Py_None ? 0 : values.itemsize;
    if ((row_size != 4 && row_size != 8) || (index_size != 4 && index_size != 8) || item_of(&indices, "il") != 4 ||
        item_of(&out_indices, "il") != 4 ||
        (value_size && (item_of(&values, "fdilq") != value_size || item_of(&out_values, "fdilq") != value_size))) {
        PyErr_SetString(PyExc_TypeError,
                        "gather_rows: int32/int64 rows and row pointers, int32 indices, values of one type (native, aligned)");
        goto done;
    }
    Py_ssize_t count = rows.len / row_size, n = indptr.len / index_size - 1;
    int64_t links = indices.len / 4, room = out_indices.len / 4;
    if (value_size && (values.len / value_size < links || out_values.len / value_size < room)) {
        PyErr_SetString(PyExc_IndexError, "gather_rows: fewer values than links");
        goto done;
    }
    const char *v = value_size ? values.buf : NULL;
    char *ov = value_size ? out_values.buf : NULL;
    const int32_t *from = indices.buf;
    int32_t *to = out_indices.buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t at = 0;
    for (Py_ssize_t k = 0; k < count && !bad; k++) {
        int64_t row = row_size == 4 ? ((int32_t *)rows.buf)[k] : ((int64_t *)rows.buf)[k];
        if (row < 0 || row >= n) {
            bad = 1;
            break;
        }
        int64_t lo = index_size == 4 ? ((int32_t *)indptr.buf)[row] : ((int64_t *)indptr.buf)[row];
        int64_t hi = index_size == 4 ? ((int32_t *)indptr.buf)[row + 1] : ((int64_t *)indptr.buf)[row + 1];
        if (lo < 0 || hi < lo || hi > links || hi - lo > room - at) {
            bad = 1;
            break;
        }
        memcpy(to + at, from + lo, (size_t)(hi - lo) * 4);
        if (v != NULL) memcpy(ov + at * value_size, v + lo * value_size, (size_t)(hi - lo) * (size_t)value_size);
        at += hi - lo;
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_IndexError, "gather_rows: a row, a row pointer or the output out of range");
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&indptr);
    PyBuffer_Release(&indices);
    if (values.obj != NULL) PyBuffer_Release(&values);
    PyBuffer_Release(&out_indices);
    if (out_values.obj != NULL) PyBuffer_Release(&out_values);
    return result;
}

static PyMethodDef methods[] = {
    {"row_sums", row_sums, METH_VARARGS,
     "row_sums(indptr, indices, values, z, out, start, stop, fill): out[i] = fill + row i of P times z, "
     "for rows [start, stop), without the GIL."},
    {"gather_rows", gather_rows, METH_VARARGS,
     "gather_rows(rows, indptr, indices, values, out_indices, out_values): the links (and values) of each of "
     "rows in turn, without the GIL."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {.m_base = PyModuleDef_HEAD_INIT, .m_name = "_fastproduct", .m_size = -1,
                                    .m_methods = methods};

PyMODINIT_FUNC PyInit__fastproduct(void) { return PyModule_Create(&module); }
