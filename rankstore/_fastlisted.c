/* A page's listed links -> its set of links: the C twin of rankstore.extract.listed_targets.
 *
 * listed_targets(links, cache, resolve, page_nofollow, clean, casts_no_vote) reads a page's links as
 * written (ListedLink: href, rel, anchor_text) by resolve_listed's rules, in two passes as the twin does:
 * each href once (in-page links left out, nofollow only if every occurrence is, the first anchor text that
 * says something, cleaned), then each target once (the hrefs resolved: `cache` holds the answers of
 * `resolve` for this page's directory, and `resolve` is asked what it lacks; nofollow only if every href
 * to it is, or the page says so at its first; the first anchor that says something).  The result is the
 * list of (target, nofollow, 1.0, anchor) a build's page holds.  Anchor texts and rels in ASCII are read
 * here; others by `clean` and `casts_no_vote` themselves.  None where a link is not made of str (the twin
 * reads it). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_ANCHOR 200 /* rankstore.extract.MAX_ANCHOR: the module checks it at import */

static PyObject *HREF, *REL, *ANCHOR_TEXT, *EMPTY, *ONE;

static inline int ascii_space(unsigned char c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
}

/* " ".join(text.split())[:MAX_ANCHOR] */
static PyObject *cleaned(PyObject *text, PyObject *clean) {
    if (!PyUnicode_IS_ASCII(text)) return PyObject_CallOneArg(clean, text);
    const unsigned char *s = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    char out[MAX_ANCHOR];
    Py_ssize_t w = 0, i = 0;
    int changed = 0;
    while (i < n && w < MAX_ANCHOR) {
        if (ascii_space(s[i])) {
            Py_ssize_t j = i;
            while (j < n && ascii_space(s[j])) j++;
            if (w > 0 && j < n) { /* between words: one space */
                if (j - i != 1 || s[i] != ' ') changed = 1;
                out[w++] = ' ';
            } else {
                changed = 1; /* at either end: dropped */
            }
            i = j;
            continue;
        }
        out[w++] = (char)s[i++];
    }
    if (!changed && w == n) return Py_NewRef(text);
    return PyUnicode_FromStringAndSize(out, w);
}

/* rankstore.sources.casts_no_vote: a word of the rel, lower-cased, is nofollow, ugc or sponsored */
static int no_vote(PyObject *rel, PyObject *casts_no_vote) {
    if (!PyUnicode_IS_ASCII(rel)) {
        PyObject *said = PyObject_CallOneArg(casts_no_vote, rel);
        if (!said) return -1;
        int r = PyObject_IsTrue(said);
        Py_DECREF(said);
        return r;
    }
    const unsigned char *p = PyUnicode_DATA(rel), *end = p + PyUnicode_GET_LENGTH(rel);
    while (p < end) {
        while (p < end && ascii_space(*p)) p++;
        const unsigned char *word = p;
        while (p < end && !ascii_space(*p)) p++;
        Py_ssize_t len = p - word;
        if (len == 8 || len == 3 || len == 9) {
            char lower[9];
            for (Py_ssize_t i = 0; i < len; i++) lower[i] = (char)Py_TOLOWER(word[i]);
            if ((len == 8 && !memcmp(lower, "nofollow", 8)) || (len == 3 && !memcmp(lower, "ugc", 3)) ||
                (len == 9 && !memcmp(lower, "sponsored", 9)))
                return 1;
        }
    }
    return 0;
}

/* an href of a fragment of the page itself: "#...", or blanks before it */
static int in_page(PyObject *href) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(href);
    if (n == 0) return 1;
    int kind = PyUnicode_KIND(href);
    const void *data = PyUnicode_DATA(href);
    Py_UCS4 first = PyUnicode_READ(kind, data, 0);
    if (first == '#') return 1;
    if (!Py_UNICODE_ISSPACE(first)) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (!Py_UNICODE_ISSPACE(c)) return c == '#';
    }
    return 0;
}

typedef struct {
    PyObject *key; /* borrowed from the links (href) or owned (target) */
    PyObject *anchor; /* owned */
    int nofollow;
} Kept;

typedef struct {
    Kept *items;
    Py_ssize_t count;
    PyObject *index; /* key -> its place, as a Python int */
} Table;

static void table_clear(Table *table, int owns_keys) {
    for (Py_ssize_t i = 0; i < table->count; i++) {
        if (owns_keys) Py_XDECREF(table->items[i].key);
        Py_XDECREF(table->items[i].anchor);
    }
    PyMem_Free(table->items);
    Py_XDECREF(table->index);
}

/* the place of `key` in the table: -1 if new (then added, at table->count - 1), -2 on error */
static Py_ssize_t table_find(Table *table, PyObject *key, int owns) {
    PyObject *at = PyDict_GetItemWithError(table->index, key);
    if (at) return PyLong_AsSsize_t(at);
    if (PyErr_Occurred()) return -2;
    PyObject *place = PyLong_FromSsize_t(table->count);
    if (!place) return -2;
    int r = PyDict_SetItem(table->index, key, place);
    Py_DECREF(place);
    if (r < 0) return -2;
    Kept *item = &table->items[table->count++];
    item->key = owns ? Py_NewRef(key) : key;
    item->anchor = NULL;
    item->nofollow = 0;
    return -1;
}

static PyObject *listed_targets(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "listed_targets(links, cache, resolve, page_nofollow, clean, casts_no_vote)");
        return NULL;
    }
    PyObject *links = args[0], *cache = args[1], *resolve = args[2], *clean = args[4], *casts = args[5];
    int page_nofollow = PyObject_IsTrue(args[3]);
    if (page_nofollow < 0) return NULL;
    if (!PyList_Check(links) || (cache != Py_None && !PyDict_Check(cache))) {
        PyErr_SetString(PyExc_TypeError, "links: a list; cache: a dict or None");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(links);
    Table hrefs = {PyMem_Calloc((size_t)n + 1, sizeof(Kept)), 0, PyDict_New()};
    Table targets = {PyMem_Calloc((size_t)n + 1, sizeof(Kept)), 0, PyDict_New()};
    PyObject *result = NULL, *attrs[3] = {NULL, NULL, NULL};
    if (!hrefs.items || !hrefs.index || !targets.items || !targets.index) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *link = PyList_GET_ITEM(links, i);
        PyObject *names[3] = {HREF, REL, ANCHOR_TEXT};
        for (int a = 0; a < 3; a++) {
            attrs[a] = PyObject_GetAttr(link, names[a]);
            if (!attrs[a]) goto done;
            if (!PyUnicode_CheckExact(attrs[a])) {
                result = Py_NewRef(Py_None); /* not ours to read */
                goto done;
            }
        }
        PyObject *href = attrs[0], *rel = attrs[1], *text = attrs[2];
        if (!in_page(href)) {
            int nofollow = PyUnicode_GET_LENGTH(rel) ? no_vote(rel, casts) : 0;
            if (nofollow < 0) goto done;
            Py_ssize_t at = table_find(&hrefs, href, 1);
            if (at == -2) goto done;
            if (at == -1) {
                Kept *item = &hrefs.items[hrefs.count - 1];
                item->nofollow = nofollow;
                item->anchor = PyUnicode_GET_LENGTH(text) ? cleaned(text, clean) : Py_NewRef(EMPTY);
                if (!item->anchor) goto done;
            } else {
                Kept *item = &hrefs.items[at];
                item->nofollow = item->nofollow && nofollow;
                if (!PyUnicode_GET_LENGTH(item->anchor) && PyUnicode_GET_LENGTH(text)) {
                    PyObject *anchor = cleaned(text, clean);
                    if (!anchor) goto done;
                    Py_SETREF(item->anchor, anchor);
                }
            }
        }
        for (int a = 0; a < 3; a++) Py_CLEAR(attrs[a]);
    }
    for (Py_ssize_t i = 0; i < hrefs.count; i++) {
        Kept *href = &hrefs.items[i];
        PyObject *target = cache != Py_None ? PyDict_GetItemWithError(cache, href->key) : NULL;
        if (target) {
            Py_INCREF(target);
        } else {
            if (PyErr_Occurred()) goto done;
            target = PyObject_CallOneArg(resolve, href->key);
            if (!target) goto done;
        }
        if (target == Py_None) {
            Py_DECREF(target);
            continue;
        }
        Py_ssize_t at = table_find(&targets, target, 1);
        Py_DECREF(target);
        if (at == -2) goto done;
        if (at == -1) {
            Kept *item = &targets.items[targets.count - 1];
            item->nofollow = page_nofollow || href->nofollow;
            item->anchor = Py_NewRef(href->anchor);
        } else {
            Kept *item = &targets.items[at];
            item->nofollow = item->nofollow && href->nofollow;
            if (!PyUnicode_GET_LENGTH(item->anchor)) Py_SETREF(item->anchor, Py_NewRef(href->anchor));
        }
    }
    result = PyList_New(targets.count);
    if (!result) goto done;
    for (Py_ssize_t i = 0; i < targets.count; i++) {
        Kept *item = &targets.items[i];
        PyObject *tuple = PyTuple_Pack(4, item->key, item->nofollow ? Py_True : Py_False, ONE, item->anchor);
        if (!tuple) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, tuple);
    }
done:
    for (int a = 0; a < 3; a++) Py_XDECREF(attrs[a]);
    table_clear(&hrefs, 1);
    table_clear(&targets, 1);
    return result;
}

static PyMethodDef methods[] = {
    {"listed_targets", (PyCFunction)(void (*)(void))listed_targets, METH_FASTCALL,
     "listed_targets(links, cache, resolve, page_nofollow, clean, casts_no_vote) -> [(target, nofollow, 1.0, "
     "anchor)], or None: read them in Python"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastlisted", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastlisted(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    HREF = PyUnicode_InternFromString("href");
    REL = PyUnicode_InternFromString("rel");
    ANCHOR_TEXT = PyUnicode_InternFromString("anchor_text");
    EMPTY = PyUnicode_FromStringAndSize("", 0);
    ONE = PyFloat_FromDouble(1.0);
    if (!HREF || !REL || !ANCHOR_TEXT || !EMPTY || !ONE || PyModule_AddIntConstant(m, "MAX_ANCHOR", MAX_ANCHOR) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
