/* The C twin of rankstore.sources.pairs.split_pairs_python: an edge list's block of plain
 * "SRC<sep>DST" lines -> (its distinct tokens in order of first appearance, int32 index of each
 * token as native-endian bytes), or None when the block is not all plain pairs.  The Python twin
 * is the reference; tests hold this one to its answers. */

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

/* The table holds indices into the distinct tokens' own arrays (hash, start, length): four bytes a
 * slot, so that it stays in cache; it starts small and doubles at half full.  Its memory is raw
 * (PyMem_Raw*): the scan runs without the GIL, so that another thread can run meanwhile. */
typedef struct {
    int32_t *slots;       /* -1: empty */
    Py_ssize_t capacity;  /* a power of two */
    uint64_t *hashes;     /* of each distinct token */
    Py_ssize_t *starts;
    Py_ssize_t *lengths;
    Py_ssize_t count, room;
} Table;

static int table_grow(Table *t) {
    Py_ssize_t capacity = t->capacity * 2, room = capacity / 2;
    int32_t *slots = PyMem_RawMalloc((size_t)capacity * sizeof(int32_t));
    uint64_t *hashes = PyMem_RawRealloc(t->hashes, (size_t)room * sizeof(uint64_t));
    if (hashes != NULL) t->hashes = hashes;
    Py_ssize_t *starts = PyMem_RawRealloc(t->starts, (size_t)room * sizeof(Py_ssize_t));
    if (starts != NULL) t->starts = starts;
    Py_ssize_t *lengths = PyMem_RawRealloc(t->lengths, (size_t)room * sizeof(Py_ssize_t));
    if (lengths != NULL) t->lengths = lengths;
    if (slots == NULL || hashes == NULL || starts == NULL || lengths == NULL) {
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

static void table_free(Table *t) {
    PyMem_RawFree(t->slots);
    PyMem_RawFree(t->hashes);
    PyMem_RawFree(t->starts);
    PyMem_RawFree(t->lengths);
}

enum { PLAIN = 0, NOT_PLAIN = 1, NO_MEMORY = 2 };

/* Tokens of a block of plain pairs into the table, their indices into out: no Python objects, no GIL. */
static int scan(const unsigned char *text, Py_ssize_t size, Py_ssize_t expected, Table *table, int32_t *out) {
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
        uint64_t hash = hash_bytes(text + start, length);
        Py_ssize_t slot = (Py_ssize_t)(hash & (uint64_t)(table->capacity - 1));
        for (;;) {
            int32_t index = table->slots[slot];
            if (index < 0) {
                if (table->count == table->room) {
                    if (table_grow(table) < 0) return NO_MEMORY;
                    slot = (Py_ssize_t)(hash & (uint64_t)(table->capacity - 1));
                    continue;
                }
                index = (int32_t)table->count++;
                table->hashes[index] = hash;
                table->starts[index] = start;
                table->lengths[index] = length;
                table->slots[slot] = index;
                out[tokens++] = index;
                break;
            }
            if (table->hashes[index] == hash && table->lengths[index] == length &&
                memcmp(text + table->starts[index], text + start, (size_t)length) == 0) {
                out[tokens++] = index;
                break;
            }
            slot = (slot + 1) & (table->capacity - 1);
        }
    }
    return separators == 1 && tokens == expected ? PLAIN : NOT_PLAIN;
}



static PyObject *split_pairs(PyObject *module, PyObject *arg) {
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
    PyObject *indices = PyBytes_FromStringAndSize(NULL, expected * (Py_ssize_t)sizeof(int32_t));
    if (indices == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int32_t *out = (int32_t *)PyBytes_AS_STRING(indices); /* nobody else holds it yet */
    Table table = {NULL, 512, NULL, NULL, NULL, 0, 0};
    int found;
    Py_BEGIN_ALLOW_THREADS
    found = table_grow(&table) < 0 ? NO_MEMORY : scan(text, size, expected, &table, out);
    Py_END_ALLOW_THREADS
    PyObject *distinct = NULL, *result = NULL;
    if (found == NO_MEMORY) {
        PyErr_NoMemory();
    } else if (found == NOT_PLAIN) {
        result = Py_NewRef(Py_None);
    } else if ((distinct = PyList_New(table.count)) != NULL) {
        Py_ssize_t i = 0;
        for (; i < table.count; i++) {
            PyObject *token = PyBytes_FromStringAndSize((const char *)text + table.starts[i], table.lengths[i]);
            if (token == NULL) break;
            PyList_SET_ITEM(distinct, i, token);
        }
        if (i == table.count) result = PyTuple_Pack(2, distinct, indices);
    }
    Py_XDECREF(distinct);
    Py_DECREF(indices);
    table_free(&table);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"split_pairs", split_pairs, METH_O,
     "split_pairs(block) -> (distinct tokens, int32 indices as bytes) or None: see pairs.split_pairs_python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastpairs", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastpairs(void) {
    kind['\t'] = kind[' '] = SEPARATOR;
    kind['\n'] = NEWLINE;
    kind['\r'] = kind['\x0b'] = kind['\x0c'] = SPACE;
    kind['#'] = HASH;
    return PyModule_Create(&module);
}
