/* The C twin of rankstore.store.gaps: sorted int32 lists packed as LEB128 varints of their gaps, and
 * unpacked, without the GIL.
 *
 * A list [s0, s1, ...] (ascending, no repeats) is written as s0, then s_i - s_(i-1) - 1 for each next
 * one, each a little-endian base-128 varint (7 bits a byte, the high bit set on every byte but a
 * value's last).  The lists of a block are written one after the other; a list's bytes start at its
 * offset, so a reader unpacks one list without the others. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static int contiguous(PyObject *object, Py_buffer *view, int writable) {
    return PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0));
}

/* One varint list's values, from at to end, each in turn as `value` to BODY (which may break): the loop
 * both passes of a graph's load share.  Sets bad on bytes that are no list (a varint cut short or too long,
 * a value past int32). */
#define EACH_VALUE(d, at, end, bad, value, BODY)                                                              \
    do {                                                                                                       \
        int64_t last_ = -1;                                                                                    \
        while ((at) < (end)) {                                                                                 \
            uint64_t v_ = 0;                                                                                   \
            int shift_ = 0;                                                                                    \
            /* most gaps take one byte: that case without the loop */                                          \
            if ((d)[(at)] < 128) v_ = (d)[(at)++];                                                             \
            else for (;;) {                                                                                    \
                if ((at) >= (end) || shift_ > 28) {                                                            \
                    (bad) = 1;                                                                                 \
                    break;                                                                                     \
                }                                                                                              \
                uint8_t byte_ = (d)[(at)++];                                                                   \
                v_ |= (uint64_t)(byte_ & 127) << shift_;                                                       \
                shift_ += 7;                                                                                   \
                if (byte_ < 128) break;                                                                        \
            }                                                                                                  \
            if (bad) break;                                                                                    \
            int64_t value = last_ + 1 + (int64_t)v_;                                                           \
            if (value > INT32_MAX) {                                                                           \
                (bad) = 1;                                                                                     \
                break;                                                                                         \
            }                                                                                                  \
            last_ = value;                                                                                     \
            BODY                                                                                               \
        }                                                                                                      \
    } while (0)

/* pack(indptr int64[n+1], indices int32, out uint8 (5 bytes a link at most), offsets uint32[n+1]) ->
 * bytes written.  indptr is relative to indices' start. */
static PyObject *pack(PyObject *self, PyObject *args) {
    PyObject *indptr_o, *indices_o, *out_o, *offsets_o;
    if (!PyArg_ParseTuple(args, "OOOO", &indptr_o, &indices_o, &out_o, &offsets_o)) return NULL;
    Py_buffer indptr = {0}, indices = {0}, out = {0}, offsets = {0};
    PyObject *result = NULL;
    if (contiguous(indptr_o, &indptr, 0) < 0 || contiguous(indices_o, &indices, 0) < 0 ||
        contiguous(out_o, &out, 1) < 0 || contiguous(offsets_o, &offsets, 1) < 0)
        goto done;
    Py_ssize_t rows = indptr.len / 8 - 1, links = indices.len / 4;
    if (rows < 0 || offsets.len / 4 != rows + 1 || out.len < 5 * links) {
        PyErr_SetString(PyExc_ValueError, "pack: arrays of the wrong sizes");
        goto done;
    }
    const int64_t *ptr = indptr.buf;
    const int32_t *src = indices.buf;
    uint8_t *o = out.buf;
    uint32_t *offs = offsets.buf;
    int bad = 0;
    uint64_t at = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = 0; i < rows && !bad; i++) {
        int64_t lo = ptr[i], hi = ptr[i + 1];
        if (lo < 0 || hi < lo || hi > links || at > UINT32_MAX) {
            bad = 1;
            break;
        }
        offs[i] = (uint32_t)at;
        int64_t last = -1;
        for (int64_t k = lo; k < hi; k++) {
            int64_t value = (int64_t)src[k];
            if (value <= last) {
                bad = 2;
                break;
            }
            uint64_t v = (uint64_t)(value - last - 1);
            last = value;
            while (v >= 128) {
                o[at++] = (uint8_t)(v | 128);
                v >>= 7;
            }
            o[at++] = (uint8_t)v;
        }
    }
    if (!bad) {
        if (at > UINT32_MAX) bad = 1;
        else offs[rows] = (uint32_t)at;
    }
    Py_END_ALLOW_THREADS;
    if (bad == 1) PyErr_SetString(PyExc_ValueError, "pack: row pointers out of order, or a block over 4 GiB");
    else if (bad == 2) PyErr_SetString(PyExc_ValueError, "pack: a list is not ascending without repeats");
    else result = PyLong_FromUnsignedLongLong(at);
done:
    if (indptr.obj) PyBuffer_Release(&indptr);
    if (indices.obj) PyBuffer_Release(&indices);
    if (out.obj) PyBuffer_Release(&out);
    if (offsets.obj) PyBuffer_Release(&offsets);
    return result;
}

/* unpack(data uint8, offsets uint32[n+1], out int32) -> values written: the lists of rows [0, n) one
 * after the other.  Raises ValueError on bytes that are no list of int32 (a varint cut short or too
 * long, a value past int32) or an out too small. */
static PyObject *unpack(PyObject *self, PyObject *args) {
    PyObject *data_o, *offsets_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOO", &data_o, &offsets_o, &out_o)) return NULL;
    Py_buffer data = {0}, offsets = {0}, out = {0};
    PyObject *result = NULL;
    if (contiguous(data_o, &data, 0) < 0 || contiguous(offsets_o, &offsets, 0) < 0 ||
        contiguous(out_o, &out, 1) < 0)
        goto done;
    Py_ssize_t rows = offsets.len / 4 - 1, room = out.len / 4;
    const uint8_t *d = data.buf;
    const uint32_t *offs = offsets.buf;
    int32_t *o = out.buf;
    Py_ssize_t n = 0;
    int bad = rows < 0;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = 0; i < rows && !bad; i++) {
        uint64_t at = offs[i], end = offs[i + 1];
        if (end < at || end > (uint64_t)data.len) {
            bad = 1;
            break;
        }
        EACH_VALUE(d, at, end, bad, value, {
            if (n >= room) {
                bad = 1;
                break;
            }
            o[n++] = (int32_t)value;
        });
    }
    Py_END_ALLOW_THREADS;
    if (bad) PyErr_SetString(PyExc_ValueError, "unpack: bytes that are no packed lists, or out too small");
    else result = PyLong_FromSsize_t(n);
done:
    if (data.obj) PyBuffer_Release(&data);
    if (offsets.obj) PyBuffer_Release(&offsets);
    if (out.obj) PyBuffer_Release(&out);
    return result;
}


/* Values decoded before their scattered reads and writes are made: the reads are asked for as they are
 * decoded (prefetch), so that many are under way at once rather than one after the other. */
#define HELD 64

/* tally(data uint8, offsets uint32[n+1], lengths int32[n], counts int32[m]) -> values read: each list's
 * length into lengths, and counts[v] += 1 for each value v (a graph's out-degrees, from its in-link lists),
 * without keeping the values.  Raises ValueError on bytes that are no list or a value past m. */
static PyObject *tally(PyObject *self, PyObject *args) {
    PyObject *data_o, *offsets_o, *lengths_o, *counts_o;
    if (!PyArg_ParseTuple(args, "OOOO", &data_o, &offsets_o, &lengths_o, &counts_o)) return NULL;
    Py_buffer data = {0}, offsets = {0}, lengths = {0}, counts = {0};
    PyObject *result = NULL;
    if (contiguous(data_o, &data, 0) < 0 || contiguous(offsets_o, &offsets, 0) < 0 ||
        contiguous(lengths_o, &lengths, 1) < 0 || contiguous(counts_o, &counts, 1) < 0)
        goto done;
    Py_ssize_t rows = offsets.len / 4 - 1, m = counts.len / 4;
    const uint8_t *d = data.buf;
    const uint32_t *offs = offsets.buf;
    int32_t *len = lengths.buf, *cnt = counts.buf;
    int32_t held[HELD];  /* values decoded, their counts asked for ahead (scattered over the counts) */
    int kept = 0;
    Py_ssize_t n = 0;
    int bad = rows < 0 || lengths.len / 4 != rows;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = 0; i < rows && !bad; i++) {
        uint64_t at = offs[i], end = offs[i + 1];
        if (end < at || end > (uint64_t)data.len) {
            bad = 1;
            break;
        }
        Py_ssize_t before = n;
        EACH_VALUE(d, at, end, bad, value, {
            if (value >= m) {
                bad = 1;
                break;
            }
            __builtin_prefetch(cnt + value, 1);
            held[kept++] = (int32_t)value;
            if (kept == HELD) {
                for (int j = 0; j < kept; j++) cnt[held[j]]++;
                kept = 0;
            }
            n++;
        });
        len[i] = (int32_t)(n - before);
    }
    for (int j = 0; j < kept; j++) cnt[held[j]]++;
    Py_END_ALLOW_THREADS;
    if (bad) PyErr_SetString(PyExc_ValueError, "tally: bytes that are no packed lists, or a value past the counts");
    else result = PyLong_FromSsize_t(n);
done:
    if (data.obj) PyBuffer_Release(&data);
    if (offsets.obj) PyBuffer_Release(&offsets);
    if (lengths.obj) PyBuffer_Release(&lengths);
    if (counts.obj) PyBuffer_Release(&counts);
    return result;
}

/* Writes out[where[j]] = ren[held[j]] for the values held; 1 if one is renamed below 0. */
static int place(const int32_t *ren, int32_t *o, const int32_t *held, const int64_t *where, int kept) {
    for (int j = 0; j < kept; j++) {
        int32_t name = ren[held[j]];
        if (name < 0) return 1;
        o[where[j]] = name;
    }
    return 0;
}

/* unpack_placed(data uint8, offsets uint32[n+1], rows int32[n], indptr int64[r+1], rename int32[m], out int32)
 * -> values written: list i's values v, each as rename[v], into row rows[i] of the CSR indptr/out (the row
 * must be as long as the list; rows[i] < 0: the list must be empty).  A graph read straight into an order of
 * its own, in one pass.  Raises ValueError on bytes that are no list, a value past m or renamed below 0, a
 * row of another length. */
static PyObject *unpack_placed(PyObject *self, PyObject *args) {
    PyObject *data_o, *offsets_o, *rows_o, *indptr_o, *rename_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOOOOO", &data_o, &offsets_o, &rows_o, &indptr_o, &rename_o, &out_o)) return NULL;
    Py_buffer data = {0}, offsets = {0}, rows_b = {0}, indptr = {0}, rename = {0}, out = {0};
    PyObject *result = NULL;
    if (contiguous(data_o, &data, 0) < 0 || contiguous(offsets_o, &offsets, 0) < 0 ||
        contiguous(rows_o, &rows_b, 0) < 0 || contiguous(indptr_o, &indptr, 0) < 0 ||
        contiguous(rename_o, &rename, 0) < 0 || contiguous(out_o, &out, 1) < 0)
        goto done;
    Py_ssize_t lists = offsets.len / 4 - 1, m = rename.len / 4, r = indptr.len / 8 - 1, room = out.len / 4;
    const uint8_t *d = data.buf;
    const uint32_t *offs = offsets.buf;
    const int32_t *row = rows_b.buf, *ren = rename.buf;
    const int64_t *ptr = indptr.buf;
    int32_t *o = out.buf;
    int32_t held[HELD];  /* values decoded, their new names asked for ahead (scattered over rename) */
    int64_t where[HELD];
    int kept = 0;
    Py_ssize_t n = 0;
    int bad = lists < 0 || r < 0 || rows_b.len / 4 != lists;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = 0; i < lists && !bad; i++) {
        uint64_t at = offs[i], end = offs[i + 1];
        if (end < at || end > (uint64_t)data.len) {
            bad = 1;
            break;
        }
        int64_t k = 0, stop = 0;
        if (row[i] >= 0) {
            if (row[i] >= r || ptr[row[i]] < 0 || ptr[row[i] + 1] < ptr[row[i]] || ptr[row[i] + 1] > room) {
                bad = 1;
                break;
            }
            k = ptr[row[i]];
            stop = ptr[row[i] + 1];
        }
        EACH_VALUE(d, at, end, bad, value, {
            if (value >= m || k >= stop) {
                bad = 1;
                break;
            }
            __builtin_prefetch(ren + value, 0);
            held[kept] = (int32_t)value;
            where[kept++] = k++;
            if (kept == HELD) {
                bad = place(ren, o, held, where, kept);
                kept = 0;
                if (bad) break;
            }
            n++;
        });
        if (k != stop) bad = 1;
    }
    if (!bad) bad = place(ren, o, held, where, kept);
    Py_END_ALLOW_THREADS;
    if (bad)
        PyErr_SetString(PyExc_ValueError,
                        "unpack_placed: bytes that are no packed lists, a value past rename or renamed below 0, "
                        "or a list of another length than its row");
    else result = PyLong_FromSsize_t(n);
done:
    if (data.obj) PyBuffer_Release(&data);
    if (offsets.obj) PyBuffer_Release(&offsets);
    if (rows_b.obj) PyBuffer_Release(&rows_b);
    if (indptr.obj) PyBuffer_Release(&indptr);
    if (rename.obj) PyBuffer_Release(&rename);
    if (out.obj) PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"pack", pack, METH_VARARGS,
     "pack(indptr, indices, out, offsets) -> bytes written: sorted int32 lists as varint gaps, without the GIL."},
    {"unpack", unpack, METH_VARARGS,
     "unpack(data, offsets, out) -> values written: the lists back, without the GIL."},
    {"tally", tally, METH_VARARGS,
     "tally(data, offsets, lengths, counts) -> values read: each list's length, and counts[v] += 1 a value."},
    {"unpack_placed", unpack_placed, METH_VARARGS,
     "unpack_placed(data, offsets, rows, indptr, rename, out) -> values written: each list renamed into its row."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {.m_base = PyModuleDef_HEAD_INIT, .m_name = "_fastgaps", .m_size = -1,
                                    .m_methods = methods};

PyMODINIT_FUNC PyInit__fastgaps(void) { return PyModule_Create(&module); }
