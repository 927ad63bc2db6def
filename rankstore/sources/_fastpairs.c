/* The C twin of rankstore.sources.pairs.VerticesPython: a graph's vertex names (byte strings)
 * numbered 0, 1, 2... in order of first appearance, kept across the blocks of an edge list.
 * split(block) takes a block of plain "SRC<sep>DST" lines apart without the GIL; add(tokens)
 * numbers a list of tokens (the line-by-line path).  The Python twin is the reference; the
 * tests hold this one to its answers. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_TOKEN (32 * 1024)

/* what each byte is to bytes.split() and to the acceptance rule */
enum { TOKEN = 0, SEPARATOR = 1, NEWLINE = 2, SPACE = 3, HASH = 4 };
static unsigned char kind[256];

static uint64_t hash_bytes(const unsigned char *p, Py_ssize_t n) {
    /* eight bytes at a time, mixed as in splitmix64 */
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n, w;
    while (n >= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    w = 0;
    memcpy(&w, p, (size_t)n);
    h = (h ^ w) * 0x94D049BB133111EBULL;
    return h ^ (h >> 29);
}

/* An open-addressing table of vertex numbers (four bytes a slot, so that it stays in cache; it
 * doubles at half full) over the vertices' own arrays: hash, and the name's place in an arena
 * that holds every name once.  All memory is raw (PyMem_Raw*): split runs without the GIL. */
typedef struct {
    PyObject_HEAD
    int32_t *slots;       /* -1: empty */
    Py_ssize_t capacity;  /* a power of two */
    uint64_t *hashes;     /* of each vertex's name */
    int64_t *offsets;     /* of each name in the arena */
    int32_t *lengths;
    Py_ssize_t count, room;
    unsigned char *arena;
    int64_t used, size;
    int busy;             /* split is running (without the GIL): no other call may touch the table */
} Vertices;

enum { PLAIN = 0, NOT_PLAIN = 1, NO_MEMORY = 2 };

static int table_grow(Vertices *t) {
    Py_ssize_t capacity = t->capacity ? t->capacity * 2 : 1024, room = capacity / 2;
    if (room > INT32_MAX) return -1;
    int32_t *slots = PyMem_RawMalloc((size_t)capacity * sizeof(int32_t));
    uint64_t *hashes = PyMem_RawRealloc(t->hashes, (size_t)room * sizeof(uint64_t));
    if (hashes != NULL) t->hashes = hashes;
    int64_t *offsets = PyMem_RawRealloc(t->offsets, (size_t)room * sizeof(int64_t));
    if (offsets != NULL) t->offsets = offsets;
    int32_t *lengths = PyMem_RawRealloc(t->lengths, (size_t)room * sizeof(int32_t));
    if (lengths != NULL) t->lengths = lengths;
    if (slots == NULL || hashes == NULL || offsets == NULL || lengths == NULL) {
        PyMem_RawFree(slots);
        return -1;
    }
    memset(slots, 0xff, (size_t)capacity * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < t->count; i++) {
        Py_ssize_t slot = (Py_ssize_t)(t->hashes[i] & (uint64_t)(capacity - 1));
        while (slots[slot] >= 0) slot = (slot + 1) & (capacity - 1);
        slots[slot] = (int32_t)i;
    }
    PyMem_RawFree(t->slots);
    t->slots = slots;
    t->capacity = capacity;
    t->room = room;
    return 0;
}

/* The vertex number of a name, added when new; -1 when out of memory. */
static int32_t number_of(Vertices *t, const unsigned char *name, Py_ssize_t length) {
    uint64_t hash = hash_bytes(name, length);
    Py_ssize_t slot = (Py_ssize_t)(hash & (uint64_t)(t->capacity - 1));
    for (;;) {
        int32_t index = t->slots[slot];
        if (index < 0) break;
        if (t->hashes[index] == hash && t->lengths[index] == length &&
            memcmp(t->arena + t->offsets[index], name, (size_t)length) == 0)
            return index;
        slot = (slot + 1) & (t->capacity - 1);
    }
    if (t->count == t->room) {
        if (table_grow(t) < 0) return -1;
        slot = (Py_ssize_t)(hash & (uint64_t)(t->capacity - 1));
        while (t->slots[slot] >= 0) slot = (slot + 1) & (t->capacity - 1);
    }
    if (t->used + length > t->size) {
        int64_t size = t->size ? t->size : 1 << 16;
        while (size < t->used + length) size *= 2;
        unsigned char *arena = PyMem_RawRealloc(t->arena, (size_t)size);
        if (arena == NULL) return -1;
        t->arena = arena;
        t->size = size;
    }
    memcpy(t->arena + t->used, name, (size_t)length);
    int32_t index = (int32_t)t->count++;
    t->hashes[index] = hash;
    t->offsets[index] = t->used;
    t->lengths[index] = (int32_t)length;
    t->used += length;
    t->slots[slot] = index;
    return index;
}

/* Forget the vertices numbered from `count` on.  They are the newest, so no older vertex's probe
 * sequence runs through their slots (a doubling re-inserts in number order, which keeps that). */
static void roll_back(Vertices *t, Py_ssize_t count) {
    for (Py_ssize_t i = t->count - 1; i >= count; i--) {
        Py_ssize_t slot = (Py_ssize_t)(t->hashes[i] & (uint64_t)(t->capacity - 1));
        while (t->slots[slot] != i) slot = (slot + 1) & (t->capacity - 1);
        t->slots[slot] = -1;
    }
    if (count < t->count) t->used = t->offsets[count];
    t->count = count;
}

/* A block of plain pairs: each token's vertex number into out.  No Python objects, no GIL. */
static int scan(Vertices *t, const unsigned char *text, Py_ssize_t size, Py_ssize_t expected, int32_t *out) {
    Py_ssize_t tokens = 0, separators = 0, i = 0;
    while (i < size) {
        unsigned char k = kind[text[i]];
        if (k != TOKEN) {
            if (k == SEPARATOR) {
                separators++;
            } else if (k == NEWLINE) {
                if (separators != 1) return NOT_PLAIN;
                separators = 0;
            } else if (k == HASH) {
                return NOT_PLAIN;
            }
            i++;
            continue;
        }
        Py_ssize_t start = i;
        while (i < size && kind[text[i]] == TOKEN) i++;
        if (i < size && kind[text[i]] == HASH) return NOT_PLAIN; /* '#' ends no token: it is in one */
        Py_ssize_t length = i - start;
        if (length > MAX_TOKEN || tokens == expected) return NOT_PLAIN;
        int32_t number = number_of(t, text + start, length);
        if (number < 0) return NO_MEMORY;
        out[tokens++] = number;
    }
    return separators == 1 && tokens == expected ? PLAIN : NOT_PLAIN;
}

/* (names of the vertices numbered from `first` on as a list of bytes, numbers) */
static PyObject *answer(Vertices *t, Py_ssize_t first, PyObject *numbers) {
    PyObject *names = PyList_New(t->count - first);
    if (names == NULL) return NULL;
    for (Py_ssize_t i = first; i < t->count; i++) {
        PyObject *name = PyBytes_FromStringAndSize((const char *)t->arena + t->offsets[i], t->lengths[i]);
        if (name == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        PyList_SET_ITEM(names, i - first, name);
    }
    PyObject *result = PyTuple_Pack(2, names, numbers);
    Py_DECREF(names);
    return result;
}

static int claim(Vertices *t) {
    if (t->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Vertices is in use by another thread");
        return -1;
    }
    if (t->capacity == 0 && table_grow(t) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    t->busy = 1;
    return 0;
}

static PyObject *vertices_split(Vertices *t, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *text = (const unsigned char *)view.buf;
    Py_ssize_t size = view.len;
    Py_ssize_t lines = 1;
    for (const unsigned char *at = text; (at = memchr(at, '\n', (size_t)(text + size - at))) != NULL; at++) lines++;
    Py_ssize_t expected = 2 * lines; /* tokens of a block of plain pairs */
    if (expected > INT32_MAX) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    PyObject *numbers = PyBytes_FromStringAndSize(NULL, expected * (Py_ssize_t)sizeof(int32_t));
    if (numbers == NULL || claim(t) < 0) {
        Py_XDECREF(numbers);
        PyBuffer_Release(&view);
        return NULL;
    }
    int32_t *out = (int32_t *)PyBytes_AS_STRING(numbers); /* nobody else holds it yet */
    Py_ssize_t first = t->count;
    int found;
    Py_BEGIN_ALLOW_THREADS
    found = scan(t, text, size, expected, out);
    if (found != PLAIN) roll_back(t, first);
    Py_END_ALLOW_THREADS
    t->busy = 0;
    PyBuffer_Release(&view);
    PyObject *result = NULL;
    if (found == NO_MEMORY) {
        PyErr_NoMemory();
    } else if (found == NOT_PLAIN) {
        result = Py_NewRef(Py_None);
    } else {
        result = answer(t, first, numbers);
        if (result == NULL) roll_back(t, first);
    }
    Py_DECREF(numbers);
    return result;
}

static PyObject *vertices_add(Vertices *t, PyObject *arg) {
    PyObject *tokens = PySequence_Fast(arg, "add() takes a list of bytes");
    if (tokens == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(tokens);
    PyObject *numbers = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (numbers == NULL || claim(t) < 0) {
        Py_XDECREF(numbers);
        Py_DECREF(tokens);
        return NULL;
    }
    int32_t *out = (int32_t *)PyBytes_AS_STRING(numbers);
    Py_ssize_t first = t->count;
    PyObject **items = PySequence_Fast_ITEMS(tokens);
    PyObject *result = NULL;
    Py_ssize_t i = 0;
    for (; i < n; i++) {
        if (!PyBytes_Check(items[i])) {
            PyErr_SetString(PyExc_TypeError, "add() takes a list of bytes");
            break;
        }
        if (PyBytes_GET_SIZE(items[i]) > INT32_MAX ||
            (out[i] = number_of(t, (const unsigned char *)PyBytes_AS_STRING(items[i]), PyBytes_GET_SIZE(items[i]))) < 0) {
            PyErr_NoMemory();
            break;
        }
    }
    t->busy = 0;
    if (i == n) result = answer(t, first, numbers);
    if (result == NULL) roll_back(t, first);
    Py_DECREF(numbers);
    Py_DECREF(tokens);
    return result;
}

static Py_ssize_t vertices_len(Vertices *t) { return t->count; }

static void vertices_dealloc(Vertices *t) {
    PyMem_RawFree(t->slots);
    PyMem_RawFree(t->hashes);
    PyMem_RawFree(t->offsets);
    PyMem_RawFree(t->lengths);
    PyMem_RawFree(t->arena);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyMethodDef vertices_methods[] = {
    {"split", (PyCFunction)vertices_split, METH_O,
     "split(block) -> (names of new vertices, int32 numbers as bytes) or None: see pairs.VerticesPython.split."},
    {"add", (PyCFunction)vertices_add, METH_O,
     "add(tokens) -> (names of new vertices, int32 numbers as bytes): see pairs.VerticesPython.add."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods vertices_sequence = {.sq_length = (lenfunc)vertices_len};

static PyTypeObject VerticesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rankstore.sources._fastpairs.Vertices",
    .tp_basicsize = sizeof(Vertices),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A graph's vertex names numbered in order of first appearance (see pairs.VerticesPython).",
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)vertices_dealloc,
    .tp_methods = vertices_methods,
    .tp_as_sequence = &vertices_sequence,
};

static struct PyModuleDef module = {.m_base = PyModuleDef_HEAD_INIT, .m_name = "_fastpairs", .m_size = -1};

PyMODINIT_FUNC PyInit__fastpairs(void) {
    kind['\t'] = kind[' '] = SEPARATOR;
    kind['\n'] = NEWLINE;
    kind['\r'] = kind['\x0b'] = kind['\x0c'] = SPACE;
    kind['#'] = HASH;
    if (PyType_Ready(&VerticesType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Vertices", (PyObject *)&VerticesType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
