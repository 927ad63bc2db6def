/* A WAT envelope's JSON -> the part of it rankstore.sources.wat reads: the C twin of orjson.loads followed by
 * the listing of a page's links (wat.unique_links).
 *
 * prune(body, unique_type, link_type) validates the whole document as strict JSON (RFC 8259, UTF-8, no lone
 * surrogate) and builds only the objects WatPages.page_of reads, with the types the full parse would give
 * them: the envelope's WARC headers, the response's status, its Location and Content-Type headers, the
 * page's title, base, meta tags and <link>s, and its links, each href listed once (unique_type, a list of
 * link_type(href, rel, text), by unique_links' rules).  Everything else is read past, never made.
 *
 * It answers None wherever its answer might differ from the full parse's: JSON that a parser rejects or
 * reads otherwise (invalid UTF-8, a lone surrogate, control characters, trailing data, depth), a kept key
 * written twice in one object, a kept object or array of another kind (a kept string of another kind is
 * None, as the reader takes it), a Status that is no integer or string, a non-ASCII rel to be compared.  The
 * caller then parses the body whole (wat._loads) and reads it as before: this module never decides alone
 * what a malformed envelope is.  tests/test_wat_twins.py holds the twins to the same pages. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define DONE 0
#define BAIL 1  /* not sure: the caller parses the body whole */
#define ERROR -1 /* a Python exception is set */
#define MAX_DEPTH 500

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    unsigned char *arena; /* decoded escaped strings: never longer than the body */
    size_t used;
    int depth;
} Scan;

typedef struct {
    const unsigned char *ptr;
    Py_ssize_t len;
    int ascii;
} Str;

/* what a value was, when only its kind matters */
enum { K_NONE, K_STRING, K_NUMBER, K_LITERAL, K_NULL, K_OBJECT, K_ARRAY };

static int skip_value(Scan *s);

static inline void ws(Scan *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
        s->p++;
}

static inline int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int hex4(Scan *s, unsigned *out) {
    if (s->end - s->p < 4) return BAIL;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(s->p[i]);
        if (h < 0) return BAIL;
        v = (v << 4) | (unsigned)h;
    }
    s->p += 4;
    *out = v;
    return DONE;
}

/* the length of a valid UTF-8 sequence at p (its first byte >= 0x80), or 0 */
static inline int utf8_length(const unsigned char *p, const unsigned char *end) {
    unsigned char c = p[0];
    Py_ssize_t room = end - p;
    if (c >= 0xC2 && c <= 0xDF) return room >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (room < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0; /* overlong */
        if (c == 0xED && p[1] >= 0xA0) return 0; /* a surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (room < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0;
        if (c == 0xF4 && p[1] >= 0x90) return 0;
        return 4;
    }
    return 0;
}

static unsigned char *put_utf8(unsigned char *out, unsigned cp) {
    if (cp < 0x80) {
        *out++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *out++ = (unsigned char)(0xC0 | (cp >> 6));
        *out++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *out++ = (unsigned char)(0xE0 | (cp >> 12));
        *out++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        *out++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else {
        *out++ = (unsigned char)(0xF0 | (cp >> 18));
        *out++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        *out++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        *out++ = (unsigned char)(0x80 | (cp & 0x3F));
    }
    return out;
}

/* A string (at its opening quote): checked, and its text as UTF-8 (in the body, or decoded in the arena). */
static int string(Scan *s, Str *out) {
    const unsigned char *start = ++s->p; /* past the quote */
    int ascii = 1, escaped = 0;
    while (1) {
        if (s->p >= s->end) return BAIL;
        unsigned char c = *s->p;
        if (c == '"') break;
        if (c == '\\') {
            escaped = 1;
            if (s->p + 1 >= s->end) return BAIL;
            unsigned char e = s->p[1];
            if (e == 'u') {
                s->p += 2;
                unsigned cp;
                if (hex4(s, &cp) != DONE) return BAIL;
                if (cp >= 0xDC00 && cp <= 0xDFFF) return BAIL; /* a lone low surrogate */
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned low;
                    if (s->end - s->p < 2 || s->p[0] != '\\' || s->p[1] != 'u') return BAIL;
                    s->p += 2;
                    if (hex4(s, &low) != DONE || low < 0xDC00 || low > 0xDFFF) return BAIL;
                }
                if (cp >= 0x80) ascii = 0;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == 0) return BAIL;
            s->p += 2;
            continue;
        }
        if (c < 0x20) return BAIL;
        if (c >= 0x80) {
            int n = utf8_length(s->p, s->end);
            if (!n) return BAIL;
            ascii = 0;
            s->p += n;
            continue;
        }
        s->p++;
    }
    const unsigned char *stop = s->p++; /* past the closing quote */
    out->ascii = ascii;
    if (!escaped) {
        out->ptr = start;
        out->len = stop - start;
        return DONE;
    }
    unsigned char *begin = s->arena + s->used, *w = begin;
    for (const unsigned char *r = start; r < stop;) {
        if (*r != '\\') {
            *w++ = *r++;
            continue;
        }
        unsigned char e = r[1];
        r += 2;
        switch (e) {
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            for (int i = 0; i < 4; i++) cp = (cp << 4) | (unsigned)hexval(r[i]);
            r += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned low = 0;
                for (int i = 0; i < 4; i++) low = (low << 4) | (unsigned)hexval(r[2 + i]);
                r += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            w = put_utf8(w, cp);
            break;
        }
        default: *w++ = e; /* " \ / */
        }
    }
    out->ptr = begin;
    out->len = w - begin;
    s->used += (size_t)(w - begin);
    return DONE;
}

static int skip_string(Scan *s) {
    Str ignored;
    size_t used = s->used;
    int r = string(s, &ignored);
    s->used = used; /* nothing kept */
    return r;
}

/* A number by the JSON grammar; integral: no fraction or exponent. */
static int number(Scan *s, const unsigned char **start, int *integral) {
    const unsigned char *p = s->p;
    *start = p;
    *integral = 1;
    if (p < s->end && *p == '-') p++;
    if (p >= s->end) return BAIL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < s->end && *p >= '0' && *p <= '9') p++;
    } else {
        return BAIL;
    }
    if (p < s->end && *p == '.') {
        *integral = 0;
        p++;
        if (p >= s->end || *p < '0' || *p > '9') return BAIL;
        while (p < s->end && *p >= '0' && *p <= '9') p++;
    }
    if (p < s->end && (*p == 'e' || *p == 'E')) {
        *integral = 0;
        p++;
        if (p < s->end && (*p == '+' || *p == '-')) p++;
        if (p >= s->end || *p < '0' || *p > '9') return BAIL;
        while (p < s->end && *p >= '0' && *p <= '9') p++;
    }
    s->p = p;
    return DONE;
}

static int literal(Scan *s, const char *word, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return BAIL;
    s->p += n;
    return DONE;
}

/* The kind of the value ahead, without reading it. */
static int kind_ahead(Scan *s) {
    if (s->p >= s->end) return K_NONE;
    switch (*s->p) {
    case '"': return K_STRING;
    case '{': return K_OBJECT;
    case '[': return K_ARRAY;
    case 'n': return K_NULL;
    case 't': case 'f': return K_LITERAL;
    default: return K_NUMBER;
    }
}

typedef int (*KeyHandler)(Scan *s, const Str *key, void *context, unsigned *seen);
typedef int (*ItemHandler)(Scan *s, void *context);
static int object(Scan *s, KeyHandler handler, void *context);
static int array(Scan *s, ItemHandler handler, void *context);

static int skip_key(Scan *s, const Str *key, void *context, unsigned *seen) {
    (void)key, (void)context, (void)seen;
    return skip_value(s);
}

static int skip_item(Scan *s, void *context) {
    (void)context;
    return skip_value(s);
}

static int skip_value(Scan *s) {
    const unsigned char *ignored;
    int integral;
    switch (kind_ahead(s)) {
    case K_STRING: return skip_string(s);
    case K_OBJECT: return object(s, skip_key, NULL);
    case K_ARRAY: return array(s, skip_item, NULL);
    case K_NULL: return literal(s, "null", 4);
    case K_LITERAL: return *s->p == 't' ? literal(s, "true", 4) : literal(s, "false", 5);
    case K_NUMBER: return number(s, &ignored, &integral);
    default: return BAIL;
    }
}

/* What a kept object is made into: its dict, the types a page's links are made with, and the keys of the
 * objects of a kept array (Metas, Link). */
typedef struct {
    PyObject *into;
    PyObject *unique_type, *link_type;
    const char *const *keys;
} Into;

/* ---- objects and arrays: each key or item given to a handler; a kept key twice is not for us ---- */

/* Into an object or array (at `open`): MORE if an item follows, DONE if it is empty (and read), else BAIL. */
#define MORE 2

static int opened(Scan *s, unsigned char open, unsigned char close) {
    if (s->p >= s->end || *s->p != open || ++s->depth > MAX_DEPTH) return BAIL;
    s->p++;
    ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        s->depth--;
        return DONE;
    }
    return MORE;
}

/* After an item: MORE past a comma, DONE past the closing character, else BAIL. */
static int after_item(Scan *s, unsigned char close) {
    ws(s);
    if (s->p >= s->end) return BAIL;
    if (*s->p == ',') {
        s->p++;
        ws(s);
        return MORE;
    }
    if (*s->p != close) return BAIL;
    s->p++;
    s->depth--;
    return DONE;
}

static int object(Scan *s, KeyHandler handler, void *context) {
    unsigned seen = 0;
    int r = opened(s, '{', '}');
    while (r == MORE) {
        Str key;
        if (s->p >= s->end || *s->p != '"' || string(s, &key) != DONE) return BAIL;
        ws(s);
        if (s->p >= s->end || *s->p != ':') return BAIL;
        s->p++;
        ws(s);
        r = handler(s, &key, context, &seen);
        if (r == DONE) r = after_item(s, '}');
    }
    return r;
}

static int array(Scan *s, ItemHandler handler, void *context) {
    int r = opened(s, '[', ']');
    while (r == MORE) {
        r = handler(s, context);
        if (r == DONE) r = after_item(s, ']');
    }
    return r;
}

static inline int is_key(const Str *key, const char *name) {
    size_t n = strlen(name);
    return (size_t)key->len == n && memcmp(key->ptr, name, n) == 0;
}

/* which of `names` the key is (its bit), 0 if none; a second time: BAIL */
static int claim(const Str *key, const char *const *names, unsigned *seen, unsigned *bit) {
    *bit = 0;
    for (unsigned i = 0; names[i]; i++) {
        if (is_key(key, names[i])) {
            if (*seen & (1u << i)) return BAIL;
            *seen |= 1u << i;
            *bit = 1u << i;
            return DONE;
        }
    }
    return DONE;
}

static PyObject *make_str(const Str *text) {
    return PyUnicode_DecodeUTF8((const char *)text->ptr, text->len, NULL);
}

/* A kept key's value into `into`: a string as str, null as None; another kind None (other_is_none), or BAIL. */
static int put_string(Scan *s, PyObject *into, const char *name, int other_is_none) {
    int kind = kind_ahead(s);
    PyObject *value;
    if (kind == K_STRING) {
        Str text;
        if (string(s, &text) != DONE) return BAIL;
        value = make_str(&text);
        if (!value) return ERROR;
    } else if (kind == K_NULL) {
        if (literal(s, "null", 4) != DONE) return BAIL;
        value = Py_NewRef(Py_None);
    } else {
        if (!other_is_none) return BAIL;
        int r = skip_value(s);
        if (r != DONE) return r;
        value = Py_NewRef(Py_None); /* read as "not a string", as None is */
    }
    int r = PyDict_SetItemString(into, name, value);
    Py_DECREF(value);
    return r < 0 ? ERROR : DONE;
}

/* A kept key's object (made by `handler` into a new dict) or null; another kind: BAIL. */
static int put_object(Scan *s, const Into *into, const char *name, KeyHandler handler) {
    int kind = kind_ahead(s);
    if (kind == K_NULL) {
        if (literal(s, "null", 4) != DONE) return BAIL;
        return PyDict_SetItemString(into->into, name, Py_None) < 0 ? ERROR : DONE;
    }
    if (kind != K_OBJECT) return BAIL;
    Into made = *into;
    made.into = PyDict_New();
    if (!made.into) return ERROR;
    int r = object(s, handler, &made);
    if (r == DONE && PyDict_SetItemString(into->into, name, made.into) < 0) r = ERROR;
    Py_DECREF(made.into);
    return r;
}

/* ---- the page's links: each href once (wat.unique_links' rules) ---- */

typedef struct {
    Str href, rel, text;
    Py_hash_t hash;
} Listed;

typedef struct {
    Listed *items;
    Py_ssize_t count, room;
    Py_ssize_t *slots; /* index + 1 into items; 0: empty */
    Py_ssize_t size;   /* a power of two */
} Links;

static void links_free(Links *links) {
    PyMem_Free(links->items);
    PyMem_Free(links->slots);
}

static Py_hash_t bytes_hash(const Str *text) { /* FNV-1a, in unsigned arithmetic (it wraps) */
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < text->len; i++) h = (h ^ text->ptr[i]) * 1099511628211ULL;
    return (Py_hash_t)(h >> 1);
}

static int links_grow(Links *links) {
    Py_ssize_t size = links->size ? links->size * 2 : 64;
    Py_ssize_t *slots = PyMem_Calloc((size_t)size, sizeof(Py_ssize_t));
    if (!slots) return ERROR;
    for (Py_ssize_t i = 0; i < links->count; i++) {
        size_t at = (size_t)links->items[i].hash & (size_t)(size - 1);
        while (slots[at]) at = (at + 1) & (size_t)(size - 1);
        slots[at] = i + 1;
    }
    PyMem_Free(links->slots);
    links->slots = slots;
    links->size = size;
    return DONE;
}

/* Python's str.isspace() of a code point */
static inline int space_at(const unsigned char *p, const unsigned char *end, int *length) {
    unsigned char c = *p;
    if (c < 0x80) {
        *length = 1;
        return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    }
    int n = utf8_length(p, end);
    unsigned cp;
    if (n == 2) cp = ((c & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    else if (n == 3) cp = ((c & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    else cp = ((c & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
    *length = n ? n : 1;
    return Py_UNICODE_ISSPACE(cp);
}

/* text.strip() is not empty */
static int says_something(const Str *text) {
    const unsigned char *p = text->ptr, *end = p + text->len;
    while (p < end) {
        int n;
        if (!space_at(p, end, &n)) return 1;
        p += n;
    }
    return 0;
}

/* rankstore.sources.casts_no_vote of an ASCII rel: a word of it, lower-cased, is nofollow, ugc or sponsored */
static int casts_no_vote(const Str *rel) {
    const unsigned char *p = rel->ptr, *end = p + rel->len;
    while (p < end) {
        int n;
        while (p < end && space_at(p, end, &n)) p += n;
        const unsigned char *word = p;
        while (p < end && !space_at(p, end, &n)) p += n;
        Py_ssize_t len = p - word;
        char lower[10];
        if (len == 8 || len == 3 || len == 9) {
            for (Py_ssize_t i = 0; i < len; i++) lower[i] = (char)Py_TOLOWER(word[i]);
            if ((len == 8 && !memcmp(lower, "nofollow", 8)) || (len == 3 && !memcmp(lower, "ugc", 3)) ||
                (len == 9 && !memcmp(lower, "sponsored", 9)))
                return 1;
        }
    }
    return 0;
}

static const Str EMPTY = {(const unsigned char *)"", 0, 1};

/* One <a href> or <area href> as written: listed if its href is new, else read into the one listed. */
static int links_add(Links *links, const Str *href, const Str *rel, const Str *text) {
    if (links->count * 2 >= links->size && links_grow(links) != DONE) return ERROR;
    Py_hash_t hash = bytes_hash(href);
    size_t mask = (size_t)links->size - 1, at = (size_t)hash & mask;
    while (links->slots[at]) {
        Listed *seen = &links->items[links->slots[at] - 1];
        if (seen->hash == hash && seen->href.len == href->len && !memcmp(seen->href.ptr, href->ptr, href->len)) {
            if (seen->rel.len) {
                if (!rel->ascii) return BAIL; /* rel.lower() of other letters: left to the full parse */
                if (!casts_no_vote(rel)) seen->rel = EMPTY; /* this one votes: so does the link */
            }
            if (!seen->text.len && says_something(text)) seen->text = *text;
            return DONE;
        }
        at = (at + 1) & mask;
    }
    if (links->count == links->room) {
        Py_ssize_t room = links->room ? links->room * 2 : 64;
        Listed *items = PyMem_Realloc(links->items, (size_t)room * sizeof(Listed));
        if (!items) return ERROR;
        links->items = items;
        links->room = room;
    }
    Listed *item = &links->items[links->count++];
    item->href = *href;
    item->rel = *rel;
    item->text = says_something(text) ? *text : EMPTY;
    item->hash = hash;
    links->slots[at] = links->count;
    return DONE;
}

typedef struct {
    Links *links;
    Str path, url, rel, text;
    int path_kind, url_kind, rel_kind, text_kind;
} Entry;

static const char *const ENTRY_KEYS[] = {"path", "url", "rel", "text", NULL};

static int entry_key(Scan *s, const Str *key, void *context, unsigned *seen) {
    Entry *entry = context;
    unsigned bit;
    if (claim(key, ENTRY_KEYS, seen, &bit) != DONE) return BAIL;
    if (!bit) return skip_value(s);
    int kind = kind_ahead(s);
    Str *text = bit == 1 ? &entry->path : bit == 2 ? &entry->url : bit == 4 ? &entry->rel : &entry->text;
    int *kept = bit == 1 ? &entry->path_kind : bit == 2 ? &entry->url_kind : bit == 4 ? &entry->rel_kind
                                                                                       : &entry->text_kind;
    *kept = kind;
    if (kind == K_STRING) return string(s, text);
    if (bit == 1 && (kind == K_OBJECT || kind == K_ARRAY)) return BAIL; /* `in` a frozenset raises: not ours */
    return skip_value(s);
}

/* An item of HTML-Metadata.Links: an object is a link as written, anything else is passed over. */
static int link_item(Scan *s, void *context) {
    if (kind_ahead(s) != K_OBJECT) return skip_value(s);
    Entry entry = {context, EMPTY, EMPTY, EMPTY, EMPTY, K_NONE, K_NONE, K_NONE, K_NONE};
    int r = object(s, entry_key, &entry);
    if (r != DONE) return r;
    if (entry.path_kind == K_STRING && entry.url_kind == K_STRING &&
        (is_key(&entry.path, "A@/href") || is_key(&entry.path, "AREA@/href")))
        return links_add(entry.links, &entry.url, entry.rel_kind == K_STRING ? &entry.rel : &EMPTY,
                         entry.text_kind == K_STRING ? &entry.text : &EMPTY);
    return DONE;
}

/* ---- the document's levels ---- */

static PyObject *made_links(Links *links, PyObject *unique_type, PyObject *link_type) {
    PyObject *list = PyObject_CallNoArgs(unique_type);
    if (!list) return NULL;
    PyObject *empty = PyUnicode_FromStringAndSize("", 0);
    if (!empty) goto fail;
    for (Py_ssize_t i = 0; i < links->count; i++) {
        Listed *item = &links->items[i];
        PyObject *href = make_str(&item->href);
        PyObject *rel = item->rel.len ? make_str(&item->rel) : Py_NewRef(empty);
        PyObject *text = item->text.len ? make_str(&item->text) : Py_NewRef(empty);
        PyObject *link = NULL;
        if (href && rel && text) {
            PyObject *args[3] = {href, rel, text};
            link = PyObject_Vectorcall(link_type, args, 3, NULL);
        }
        Py_XDECREF(href);
        Py_XDECREF(rel);
        Py_XDECREF(text);
        if (!link || PyList_Append(list, link) < 0) {
            Py_XDECREF(link);
            Py_DECREF(empty);
            goto fail;
        }
        Py_DECREF(link);
    }
    Py_DECREF(empty);
    return list;
fail:
    Py_DECREF(list);
    return NULL;
}

/* A list of the objects of an array (others passed over), each with `keys` (strings; another kind: None). */
static int pair_key(Scan *s, const Str *key, void *context, unsigned *seen) {
    const Into *into = context;
    unsigned bit;
    if (claim(key, into->keys, seen, &bit) != DONE) return BAIL;
    if (!bit) return skip_value(s);
    return put_string(s, into->into, bit == 1 ? into->keys[0] : into->keys[1], 1);
}

typedef struct {
    PyObject *list;
    const char *const *keys;
} Pairs;

static int pair_item(Scan *s, void *context) {
    if (kind_ahead(s) != K_OBJECT) return skip_value(s); /* not an object: passed over */
    Pairs *pairs = context;
    Into made = {PyDict_New(), NULL, NULL, pairs->keys};
    if (!made.into) return ERROR;
    int r = object(s, pair_key, &made);
    if (r == DONE && PyList_Append(pairs->list, made.into) < 0) r = ERROR;
    Py_DECREF(made.into);
    return r;
}

static int put_pairs(Scan *s, PyObject *into, const char *name, const char *const *keys) {
    int kind = kind_ahead(s);
    if (kind == K_NULL) {
        if (literal(s, "null", 4) != DONE) return BAIL;
        return PyDict_SetItemString(into, name, Py_None) < 0 ? ERROR : DONE;
    }
    if (kind != K_ARRAY) return BAIL;
    Pairs pairs = {PyList_New(0), keys};
    if (!pairs.list) return ERROR;
    int r = array(s, pair_item, &pairs);
    if (r == DONE && PyDict_SetItemString(into, name, pairs.list) < 0) r = ERROR;
    Py_DECREF(pairs.list);
    return r;
}

static const char *const META_KEYS[] = {"name", "content", NULL};
static const char *const LINK_KEYS[] = {"rel", "url", NULL};
static const char *const HEAD_KEYS[] = {"Title", "Base", "Metas", "Link", NULL};

static int head_key(Scan *s, const Str *key, void *context, unsigned *seen) {
    unsigned bit;
    if (claim(key, HEAD_KEYS, seen, &bit) != DONE) return BAIL;
    PyObject *into = ((const Into *)context)->into;
    switch (bit) {
    case 1: return put_string(s, into, "Title", 1);
    case 2: return put_string(s, into, "Base", 1);
    case 4: return put_pairs(s, into, "Metas", META_KEYS);
    case 8: return put_pairs(s, into, "Link", LINK_KEYS);
    default: return skip_value(s);
    }
}

static const char *const HTML_KEYS[] = {"Head", "Links", NULL};

static int html_key(Scan *s, const Str *key, void *context, unsigned *seen) {
    unsigned bit;
    if (claim(key, HTML_KEYS, seen, &bit) != DONE) return BAIL;
    const Into *into = context;
    if (bit == 1) return put_object(s, into, "Head", head_key);
    if (bit != 2) return skip_value(s);
    int kind = kind_ahead(s);
    if (kind == K_NULL) {
        if (literal(s, "null", 4) != DONE) return BAIL;
        return PyDict_SetItemString(into->into, "Links", Py_None) < 0 ? ERROR : DONE;
    }
    if (kind != K_ARRAY) return BAIL;
    Links links = {0};
    int r = array(s, link_item, &links);
    if (r == DONE) {
        PyObject *list = made_links(&links, into->unique_type, into->link_type);
        if (!list || PyDict_SetItemString(into->into, "Links", list) < 0) r = ERROR;
        Py_XDECREF(list);
    }
    links_free(&links);
    return r;
}

/* Headers: only Location and Content-Type, matched without regard to case (the first of each; a second: BAIL) */
static int header_named(const Str *key, const char *name) {
    size_t n = strlen(name);
    if ((size_t)key->len != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (Py_TOLOWER(key->ptr[i]) != (unsigned char)name[i]) return 0;
    return 1;
}

typedef struct {
    Str text;
    int found;
} First;

static int first_string(Scan *s, void *context) {
    First *first = context;
    if (first->found || kind_ahead(s) != K_STRING) return skip_value(s);
    first->found = 1;
    return string(s, &first->text);
}

static int headers_key(Scan *s, const Str *key, void *context, unsigned *seen) {
    unsigned bit = header_named(key, "location") ? 1 : header_named(key, "content-type") ? 2 : 0;
    if (!bit) return skip_value(s);
    if (*seen & bit) return BAIL;
    *seen |= bit;
    PyObject *into = ((const Into *)context)->into, *name = make_str(key);
    if (!name) return ERROR;
    PyObject *value = NULL;
    int kind = kind_ahead(s), r = DONE;
    if (kind == K_STRING) {
        Str text;
        if (string(s, &text) != DONE) {
            Py_DECREF(name);
            return BAIL;
        }
        value = make_str(&text);
    } else if (kind == K_ARRAY) {
        /* a repeated header: its first string stands for it (the rest are never read) */
        First first = {EMPTY, 0};
        r = array(s, first_string, &first);
        if (r == DONE) value = PyList_New(first.found);
        if (value && first.found) {
            PyObject *text = make_str(&first.text);
            if (!text) {
                Py_CLEAR(value);
            } else {
                PyList_SET_ITEM(value, 0, text);
            }
        }
    } else {
        r = skip_value(s);
        if (r == DONE) value = Py_NewRef(Py_None); /* not a string: no value, as the full parse reads it */
    }
    if (r != DONE) {
        Py_DECREF(name);
        return r;
    }
    if (!value || PyDict_SetItem(into, name, value) < 0) r = ERROR;
    Py_DECREF(name);
    Py_XDECREF(value);
    return r;
}

static const char *const MESSAGE_KEYS[] = {"Status", NULL};

static int message_key(Scan *s, const Str *key, void *context, unsigned *seen) {
    unsigned bit;
    if (claim(key, MESSAGE_KEYS, seen, &bit) != DONE) return BAIL;
    if (!bit) return skip_value(s);
    int kind = kind_ahead(s);
    if (kind == K_STRING || kind == K_NULL) return put_string(s, ((const Into *)context)->into, "Status", 0);
    if (kind != K_NUMBER) return BAIL;
    const unsigned char *start;
    int integral;
    if (number(s, &start, &integral) != DONE || !integral || s->p - start > 30) return BAIL;
    char digits[32];
    memcpy(digits, start, (size_t)(s->p - start));
    digits[s->p - start] = 0;
    PyObject *value = PyLong_FromString(digits, NULL, 10);
    if (!value) return ERROR;
    int r = PyDict_SetItemString(((const Into *)context)->into, "Status", value);
    Py_DECREF(value);
    return r < 0 ? ERROR : DONE;
}

static const char *const HTTP_KEYS[] = {"Response-Message", "Headers", "HTML-Metadata", NULL};

static int http_key(Scan *s, const Str *key, void *context, unsigned *seen) {
    unsigned bit;
    if (claim(key, HTTP_KEYS, seen, &bit) != DONE) return BAIL;
    switch (bit) {
    case 1: return put_object(s, context, "Response-Message", message_key);
    case 2: return put_object(s, context, "Headers", headers_key);
    case 4: return put_object(s, context, "HTML-Metadata", html_key);
    default: return skip_value(s);
    }
}

static const char *const PAYLOAD_KEYS[] = {"HTTP-Response-Metadata", NULL};

static int payload_key(Scan *s, const Str *key, void *context, unsigned *seen) {
    unsigned bit;
    if (claim(key, PAYLOAD_KEYS, seen, &bit) != DONE) return BAIL;
    return bit ? put_object(s, context, "HTTP-Response-Metadata", http_key) : skip_value(s);
}

static const char *const WARC_KEYS[] = {"WARC-Type", "WARC-Target-URI", "WARC-Date", NULL};

static int warc_key(Scan *s, const Str *key, void *context, unsigned *seen) {
    unsigned bit;
    if (claim(key, WARC_KEYS, seen, &bit) != DONE) return BAIL;
    if (!bit) return skip_value(s);
    return put_string(s, ((const Into *)context)->into, bit == 1 ? "WARC-Type" : bit == 2 ? "WARC-Target-URI" : "WARC-Date", 1);
}

static const char *const ENVELOPE_KEYS[] = {"WARC-Header-Metadata", "Payload-Metadata", NULL};

static int envelope_key(Scan *s, const Str *key, void *context, unsigned *seen) {
    unsigned bit;
    if (claim(key, ENVELOPE_KEYS, seen, &bit) != DONE) return BAIL;
    if (bit == 1) return put_object(s, context, "WARC-Header-Metadata", warc_key);
    if (bit == 2) return put_object(s, context, "Payload-Metadata", payload_key);
    return skip_value(s);
}

static const char *const ROOT_KEYS[] = {"Envelope", NULL};

static int root_key(Scan *s, const Str *key, void *context, unsigned *seen) {
    unsigned bit;
    if (claim(key, ROOT_KEYS, seen, &bit) != DONE) return BAIL;
    return bit ? put_object(s, context, "Envelope", envelope_key) : skip_value(s);
}

static PyObject *prune(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "prune(body, unique_type, link_type)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    Scan s = {view.buf, (const unsigned char *)view.buf + view.len, NULL, 0, 0};
    s.arena = PyMem_Malloc((size_t)view.len + 1);
    PyObject *document = PyDict_New();
    Into root = {document, args[1], args[2], NULL};
    int r = s.arena && document ? DONE : ERROR;
    if (r == DONE) {
        ws(&s);
        r = object(&s, root_key, &root);
        ws(&s);
        if (r == DONE && s.p != s.end) r = BAIL; /* data after the document */
    }
    PyMem_Free(s.arena);
    PyBuffer_Release(&view);
    if (r == DONE) return document;
    Py_XDECREF(document);
    if (r == ERROR) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    PyErr_Clear();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"prune", (PyCFunction)(void (*)(void))prune, METH_FASTCALL,
     "prune(body, unique_type, link_type) -> the envelope's fields a page is read from, or None: parse it whole"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastwat", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastwat(void) { return PyModule_Create(&module); }
