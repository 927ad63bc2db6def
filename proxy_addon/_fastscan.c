/* proxy_addon._fastscan: the scanner of proxy_addon/rewrite.py (_scan_python), in C.
 *
 * The same state machine, token for token: the pure-Python version stays the
 * reference (tests/test_rewrite.py checks both give the same answer on real
 * pages and on random tag soup, and runs every rewriter test on each) and the
 * fallback where this module is not built.  Both follow the HTML standard's
 * tokenizer where it decides where a bar may go (attributes, comments, bogus
 * comments, RCDATA, RAWTEXT, script data with its escaped and double-escaped
 * states, PLAINTEXT, CDATA in foreign content) and enough of its tree builder
 * to know SVG/MathML from HTML: the elements open in foreign content, breakout,
 * integration points.  Their tables of element names come from one generator,
 * tools/gen_scan_tables.py (here: _scan_tables.h).
 *
 * scan(text) -> (links, body_at, head_at, extras, raw, end_is_markup, icons)
 *   links   list of (where the bar goes, href, False) for <a>/<area>
 *           with an href in HTML content outside templates, when the href has
 *           no character reference and there is no rel (most links); else
 *           (offset, raw href, raw rel or None), for the Python side to decode
 *   raw     the indices in `links` of those of the second kind
 *   *_at    offset after the first <body>/<head> start tag, or None
 *   extras  list of (name, attrs start, attrs end) for <base>, <frameset> and the <meta>
 *           tags that may be robots or CSP ones (_may_matter) outside templates, in order,
 *           for the Python side to read
 *   end_is_markup  the file ends in HTML content, outside any tag, comment,
 *           text element, SVG/MathML or template: markup appended is read as such
 *   icons   the offsets of the links that hold no text (or none before their bar stayed after the start tag)
 *   An HTML link's bar goes before its </a> where the link holds only text and LINK_CONTENT
 *   (elements that close nothing around it), else after its start tag: _scan_python.scan says why.
 * scan(data, encoding) the same for bytes in an encoding where every byte below
 *           0x80 is that ASCII character and no other byte is one (UTF-8, the
 *           single-byte charsets): offsets in bytes, hrefs and rels decoded.
 *
 * The rest of a page's rewrite that runs per link, each with its Python twin in
 * rewrite.py: place(links, table, own, nofollow_all) (each link's bar from its
 * href's mark, or the hrefs without one) and splice(data, edits) (the inserts
 * put in).
 *
 * Case-insensitive comparisons are ASCII-only, as in the HTML standard (the
 * Python reference uses re.ASCII for the same reason).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_scan_tables.h"

/* The text as one byte per character: only ASCII decides anything here, so a
   string of two or four bytes a character is read through a copy with every
   character above 0x7f as 0x80 (offsets unchanged); a one-byte string as it is. */
typedef struct {
    const unsigned char *data;
    Py_ssize_t n;
    PyObject *source;     /* the str, or the bytes */
    const char *encoding; /* of the bytes (NULL for a str): a charset where every byte below 0x80 is ASCII */
} Text;

#define CH(t, i) ((Py_UCS4)(t)->data[(i)])

/* What each byte is to the tokenizer, one bit a class (the characters read are below 0x100). */
enum { WS = 1, ENDS_NAME = 2, ENDS_ATTRIBUTE_NAME = 4, ENDS_UNQUOTED = 8, ALPHA = 16 };
static unsigned char CLASS[256];
/* The lists' names by first letter: bit `len` set where one of that length begins with that letter. */
static unsigned int INTERESTING_SHAPES[256], INTERESTING_END_SHAPES[256];

static void fill_classes(void) {
    const char *ws = "\t\n\f\r ";
    for (const char *c = ws; *c; c++) CLASS[(unsigned char)*c] |= WS | ENDS_NAME | ENDS_ATTRIBUTE_NAME | ENDS_UNQUOTED;
    CLASS['/'] |= ENDS_NAME | ENDS_ATTRIBUTE_NAME;
    CLASS['>'] |= ENDS_NAME | ENDS_ATTRIBUTE_NAME | ENDS_UNQUOTED;
    CLASS['='] |= ENDS_ATTRIBUTE_NAME;
    for (int c = 'a'; c <= 'z'; c++) CLASS[c] |= ALPHA, CLASS[c - 32] |= ALPHA;
    for (const char *const *name = INTERESTING; *name; name++)
        INTERESTING_SHAPES[(unsigned char)(*name)[0]] |= 1u << strlen(*name);
    for (const char *const *name = INTERESTING_END; *name; name++)
        INTERESTING_END_SHAPES[(unsigned char)(*name)[0]] |= 1u << strlen(*name);
}

static inline int is_ws(Py_UCS4 c) { return c < 256 && (CLASS[c] & WS); }
static inline int is_alpha(Py_UCS4 c) { return c < 256 && (CLASS[c] & ALPHA); }
static inline Py_UCS4 lower(Py_UCS4 c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
static inline int ends_name(Py_UCS4 c) { return c < 256 && (CLASS[c] & ENDS_NAME); }

/* The first `c` (ASCII) in [from, to), or -1; the text is one byte a character.  Sixteen bytes at a
   time where SSE2 is (every x86-64): most distances between tags and quotes are too short for memchr's
   call to pay. */
#if defined(__SSE2__)
#include <emmintrin.h>
static Py_ssize_t find_char(const Text *t, Py_UCS4 c, Py_ssize_t from, Py_ssize_t to) {
    const unsigned char *data = t->data;
    const __m128i needle = _mm_set1_epi8((char)c);
    Py_ssize_t i = from;
    for (; i + 16 <= to; i += 16) {
        int mask = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(data + i)), needle));
        if (mask) return i + __builtin_ctz((unsigned)mask);
    }
    for (; i < to; i++)
        if (data[i] == c) return i;
    return -1;
}
#else
static Py_ssize_t find_char(const Text *t, Py_UCS4 c, Py_ssize_t from, Py_ssize_t to) {
    if (from >= to) return -1;
    const unsigned char *found = memchr(t->data + from, (int)c, (size_t)(to - from));
    return found ? found - t->data : -1;
}
#endif

static Py_ssize_t find_ascii(const Text *t, const char *s, Py_ssize_t from) {
    Py_ssize_t len = (Py_ssize_t)strlen(s);
    for (Py_ssize_t i = from; i + len <= t->n; i++) {
        if (CH(t, i) != (Py_UCS4)s[0]) continue;
        Py_ssize_t k = 1;
        while (k < len && CH(t, i + k) == (Py_UCS4)s[k]) k++;
        if (k == len) return i;
    }
    return -1;
}

/* The offset after the first "-->" or "--!>" from `from`, or -1: one pass for both endings (a search
   for each would run to the end of the file on a page that never uses the other, once per comment). */
static Py_ssize_t comment_end(const Text *t, Py_ssize_t from) {
    for (Py_ssize_t i = from; i + 2 < t->n; i++) {
        if (CH(t, i) != '-' || CH(t, i + 1) != '-') continue;
        if (CH(t, i + 2) == '>') return i + 3;
        if (CH(t, i + 2) == '!' && i + 3 < t->n && CH(t, i + 3) == '>') return i + 4;
    }
    return -1;
}

static int starts_with(const Text *t, Py_ssize_t at, const char *s) {
    Py_ssize_t len = (Py_ssize_t)strlen(s);
    if (at + len > t->n) return 0;
    for (Py_ssize_t k = 0; k < len; k++)
        if (CH(t, at + k) != (Py_UCS4)s[k]) return 0;
    return 1;
}

/* ASCII case-insensitive: does the text at `at` spell `name` (lower case)? */
static int spells(const Text *t, Py_ssize_t at, Py_ssize_t end, const char *name) {
    Py_ssize_t len = (Py_ssize_t)strlen(name);
    if (at + len > end) return 0;
    for (Py_ssize_t k = 0; k < len; k++)
        if (lower(CH(t, at + k)) != (Py_UCS4)name[k]) return 0;
    return 1;
}

/* the name span [s, e) is exactly `name` (ASCII case-insensitive) */
static int name_is(const Text *t, Py_ssize_t s, Py_ssize_t e, const char *name) {
    return (Py_ssize_t)strlen(name) == e - s && spells(t, s, e, name);
}

/* The next '<' at or after `from`, or the length: the text between tags, read by the string's width. */
static Py_ssize_t next_lt(const Text *t, Py_ssize_t from) {
    Py_ssize_t found = find_char(t, '<', from, t->n);
    return found < 0 ? t->n : found;
}

/* The end of the tag name that starts at `at`: the first tab, newline, form feed, return, space, '/' or
   '>' after it, or the length. */
static Py_ssize_t name_end(const Text *t, Py_ssize_t at) {
    Py_ssize_t n = t->n;
    while (at < n && !ends_name(CH(t, at))) at++;
    return at;
}

/* Is the name [s, e), ended before the file is, one of `names` (ASCII case-insensitive)?  `shapes`: the
   lengths of the names each first letter begins (most tag names are rejected on these alone). */
static int names_one_of(const Text *t, Py_ssize_t s, Py_ssize_t e, const char *const *names,
                        const unsigned int *shapes) {
    Py_ssize_t len = e - s;
    Py_UCS4 first = lower(CH(t, s));
    if (e >= t->n || len > LONGEST_NAME || first >= 256 || !(shapes[first] >> len & 1u)) return 0;
    for (const char *const *name = names; *name; name++) {
        if ((Py_UCS4)(*name)[0] != first) continue;
        Py_ssize_t k = 1;
        while (k < len && (*name)[k] && lower(CH(t, s + k)) == (Py_UCS4)(unsigned char)(*name)[k]) k++;
        if (k == len && (*name)[k] == 0) return 1;
    }
    return 0;
}

static int in_list(const Text *t, Py_ssize_t s, Py_ssize_t e, const char *const *names) {
    for (const char *const *name = names; *name; name++)
        if (name_is(t, s, e, *name)) return 1;
    return 0;
}

/* [s, e) holds a character other than the standard's ASCII white space (a non-ASCII one counts). */
static int has_text(const Text *t, Py_ssize_t s, Py_ssize_t e) {
    for (Py_ssize_t i = s; i < e; i++)
        if (!(CLASS[t->data[i]] & WS)) return 1;
    return 0;
}

/* The link open in HTML content, whose end tag is looked for (index -1: none): the elements opened in it
   and still open (names as spans of the text; past MAX_INSIDE the bar stays after its start tag), and
   whether it holds text. */
#define MAX_INSIDE 32
typedef struct {
    Py_ssize_t index, depth;
    Py_ssize_t starts[MAX_INSIDE], ends[MAX_INSIDE];
    int text;
} OpenLink;

/* The open link's bar stays after its start tag: an icon's, out of the flow, if no text came before (-1 on
   error). */
static int fall_back(PyObject *links, PyObject *icons, OpenLink *open) {
    int status = open->text ? 0 : PyList_Append(icons, PyTuple_GET_ITEM(PyList_GET_ITEM(links, open->index), 0));
    open->index = -1;
    return status;
}

/* links[index]'s offset moved to `at`: the tuple made anew (-1 on error). */
static int move_link(PyObject *links, Py_ssize_t index, Py_ssize_t at) {
    PyObject *old = PyList_GET_ITEM(links, index), *offset = PyLong_FromSsize_t(at);
    if (offset == NULL) return -1;
    PyObject *moved = PyTuple_Pack(3, offset, PyTuple_GET_ITEM(old, 1), PyTuple_GET_ITEM(old, 2));
    Py_DECREF(offset);
    if (moved == NULL) return -1;
    PyList_SET_ITEM(links, index, moved);
    Py_DECREF(old);
    return 0;
}

/* The content model a start tag of this name switches the tokenizer to (MODEL_DATA for most). */
static int content_model(const Text *t, Py_ssize_t s, Py_ssize_t e) {
    for (int k = 0; TEXT_ELEMENTS[k]; k++)
        if (name_is(t, s, e, TEXT_ELEMENTS[k])) return TEXT_ELEMENT_MODELS[k];
    return MODEL_DATA;
}

/* A tag's attributes from `i` (just after its name), as _ATTRS_SOURCE in rewrite.py: the offset of
   the '>' that ends the tag, or -1 when the file ends first (a quote left open runs to the end).
   *self_closing: a '/' came right before that '>', outside any value. */
static Py_ssize_t attributes_end(const Text *t, Py_ssize_t i, int *self_closing) {
    Py_ssize_t n = t->n;
    int slash = 0;
    while (i < n) {
        Py_UCS4 c = CH(t, i);
        if (c == '>') {
            *self_closing = slash;
            return i;
        }
        if (is_ws(c) || c == '/') {
            slash = c == '/';
            i++;
            continue;
        }
        slash = 0;
        i++; /* an attribute name: its first character may be '=' or a quote */
        while (i < n && !(CLASS[t->data[i]] & ENDS_ATTRIBUTE_NAME)) i++;
        Py_ssize_t j = i;
        while (j < n && is_ws(CH(t, j))) j++;
        if (j < n && CH(t, j) == '=') {
            j++;
            while (j < n && is_ws(CH(t, j))) j++;
            i = j;
            if (j < n) {
                c = CH(t, j);
                if (c == '"' || c == '\'') {
                    Py_ssize_t close = find_char(t, c, j + 1, n);
                    if (close < 0) return -1;
                    i = close + 1;
                } else if (c != '>') { /* unquoted: quotes inside are its own characters */
                    while (i < n && !(CLASS[t->data[i]] & ENDS_UNQUOTED)) i++;
                }
            }
        }
    }
    return -1;
}

/* Text, a lone '<', bogus comments begun by '</' and tags whose names do not matter, as _SKIP in
   rewrite.py: the offset of the next token the scan needs to look at, or the length. */
static Py_ssize_t skip(const Text *t, Py_ssize_t pos) {
    Py_ssize_t n = t->n;
    int self_closing;
    while (pos < n) {
        pos = next_lt(t, pos);
        if (pos >= n) return n;
        if (pos + 1 >= n) return n; /* a lone '<' at the very end */
        Py_UCS4 c = CH(t, pos + 1);
        if (is_alpha(c)) {
            Py_ssize_t i = name_end(t, pos + 2);
            if (!names_one_of(t, pos + 1, i, INTERESTING, INTERESTING_SHAPES)) {
                Py_ssize_t close = attributes_end(t, i, &self_closing);
                if (close >= 0) {
                    pos = close + 1;
                    continue;
                }
            }
            return pos;
        }
        if (c == '/') {
            if (pos + 2 < n && is_alpha(CH(t, pos + 2))) {
                Py_ssize_t i = name_end(t, pos + 3);
                if (!names_one_of(t, pos + 2, i, INTERESTING_END, INTERESTING_END_SHAPES)) {
                    Py_ssize_t close = attributes_end(t, i, &self_closing);
                    if (close >= 0) {
                        pos = close + 1;
                        continue;
                    }
                }
                return pos;
            }
            if (pos + 2 < n) { /* '</' and no letter: a bogus comment to the next '>' */
                Py_ssize_t close = find_char(t, '>', pos + 2, n);
                if (close >= 0) {
                    pos = close + 1;
                    continue;
                }
            }
            return pos;
        }
        if (c == '!' || c == '?') return pos;
        pos++;
    }
    return pos;
}

typedef struct {
    int end_tag, closed, self_closing;
    Py_ssize_t name_start, name_end, attrs_start, attrs_end, after;
} Tag;

/* _TAG in rewrite.py: 0 when there is no tag at `start`. */
static int parse_tag(const Text *t, Py_ssize_t start, Tag *tag) {
    Py_ssize_t n = t->n, i = start + 1;
    tag->end_tag = 0;
    if (i < n && CH(t, i) == '/') {
        tag->end_tag = 1;
        i++;
    }
    if (i >= n || !is_alpha(CH(t, i))) return 0;
    tag->name_start = i++;
    while (i < n && !ends_name(CH(t, i))) i++;
    tag->name_end = tag->attrs_start = i;
    tag->self_closing = 0;
    Py_ssize_t close = attributes_end(t, i, &tag->self_closing);
    tag->closed = close >= 0;
    tag->attrs_end = close >= 0 ? close : n;
    tag->after = close >= 0 ? close + 1 : n;
    return 1;
}

/* Each attribute of a tag's attribute text [s, e), in order: calls `visit` with the name and raw
   value spans (an attribute without a value has an empty one) until it returns nonzero. */
typedef int (*AttributeVisit)(const Text *t, Py_ssize_t ns, Py_ssize_t ne, Py_ssize_t vs, Py_ssize_t ve,
                              void *state);

static void each_attribute(const Text *t, Py_ssize_t s, Py_ssize_t e, AttributeVisit visit, void *state) {
    Py_ssize_t i = s;
    while (i < e) {
        Py_UCS4 c = CH(t, i);
        if (ends_name(c)) {
            i++;
            continue;
        }
        Py_ssize_t ns = i++;
        while (i < e && (c = CH(t, i), !is_ws(c) && c != '/' && c != '=' && c != '>')) i++;
        Py_ssize_t ne = i, vs = i, ve = i; /* no value: "" */
        Py_ssize_t j = i;
        while (j < e && is_ws(CH(t, j))) j++;
        if (j < e && CH(t, j) == '=') {
            j++;
            while (j < e && is_ws(CH(t, j))) j++;
            i = vs = ve = j;
            if (j < e) {
                c = CH(t, j);
                Py_ssize_t close = (c == '"' || c == '\'') ? find_char(t, c, j + 1, e) : -1;
                if (close >= 0) {
                    vs = j + 1;
                    ve = close;
                    i = close + 1;
                } else if (!is_ws(c) && c != '>') {
                    while (i < e && (c = CH(t, i), !is_ws(c) && c != '>')) i++;
                    vs = j;
                    ve = i;
                }
            }
        }
        if (visit(t, ns, ne, vs, ve, state)) return;
    }
}

typedef struct {
    Py_ssize_t href_s, href_e, rel_s, rel_e;
} LinkAttributes;

static int visit_link(const Text *t, Py_ssize_t ns, Py_ssize_t ne, Py_ssize_t vs, Py_ssize_t ve, void *state) {
    LinkAttributes *link = state;
    if (link->href_s < 0 && name_is(t, ns, ne, "href")) {
        link->href_s = vs;
        link->href_e = ve;
    } else if (link->rel_s < 0 && name_is(t, ns, ne, "rel")) {
        link->rel_s = vs;
        link->rel_e = ve;
    }
    return 0;
}

/* The text in [s, e) as a str: a slice of a str; of bytes, decoded (ASCII needs no codec). */
static PyObject *substring(const Text *t, Py_ssize_t s, Py_ssize_t e) {
    if (t->encoding == NULL) return PyUnicode_Substring(t->source, s, e);
    Py_ssize_t i = s;
    while (i < e && t->data[i] < 0x80) i++;
    if (i == e) return PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, t->data + s, e - s);
    return PyUnicode_Decode((const char *)t->data + s, e - s, t->encoding, "surrogateescape");
}

/* (position, first, second), taking the references to `first` and `second` (NULL if either is NULL) */
static PyObject *triple(Py_ssize_t position, PyObject *first, PyObject *second) {
    PyObject *offset = first && second ? PyLong_FromSsize_t(position) : NULL;
    PyObject *tuple = offset ? PyTuple_New(3) : NULL;
    if (tuple == NULL) {
        Py_XDECREF(offset);
        Py_XDECREF(first);
        Py_XDECREF(second);
        return NULL;
    }
    PyTuple_SET_ITEM(tuple, 0, offset);
    PyTuple_SET_ITEM(tuple, 1, first);
    PyTuple_SET_ITEM(tuple, 2, second);
    return tuple;
}

/* The href and rel of a link's attributes, as _link in rewrite.py (raw values). */
static PyObject *link_tuple(const Text *t, Py_ssize_t s, Py_ssize_t e, Py_ssize_t position) {
    LinkAttributes found = {-1, -1, -1, -1};
    each_attribute(t, s, e, visit_link, &found);
    if (found.href_s < 0) Py_RETURN_NONE;
    PyObject *href = substring(t, found.href_s, found.href_e);
    if (href == NULL) return NULL;
    if ((found.rel_s < 0 || found.rel_s == found.rel_e) && find_char(t, '&', found.href_s, found.href_e) < 0)
        return triple(position, href, Py_NewRef(Py_False)); /* nothing to decode, follows */
    PyObject *rel = found.rel_s < 0 ? Py_NewRef(Py_None) : substring(t, found.rel_s, found.rel_e);
    if (rel == NULL) {
        Py_DECREF(href);
        return NULL;
    }
    return triple(position, href, rel);
}

/* Append the link a start tag makes (if it has an href) to `links`, and the index of a raw one to `raw`
   (a page's few links with a rel or a reference are found without a pass over all); -1 on error. */
static int add_link(PyObject *links, const Text *t, const Tag *tag, PyObject *raw) {
    PyObject *link = link_tuple(t, tag->attrs_start, tag->attrs_end, tag->after);
    if (link == NULL) return -1;
    if (link == Py_None) {
        Py_DECREF(link);
        return 0;
    }
    int status = 0;
    if (PyTuple_GET_ITEM(link, 2) != Py_False) {
        PyObject *index = PyLong_FromSsize_t(PyList_GET_SIZE(links));
        status = index == NULL ? -1 : PyList_Append(raw, index);
        Py_XDECREF(index);
    }
    if (status == 0) status = PyList_Append(links, link);
    Py_DECREF(link);
    return status;
}

static int visit_font(const Text *t, Py_ssize_t ns, Py_ssize_t ne, Py_ssize_t vs, Py_ssize_t ve, void *state) {
    (void)vs;
    (void)ve;
    if (in_list(t, ns, ne, FONT_BREAKOUT_ATTRIBUTES)) *(int *)state = 1;
    return *(int *)state;
}

/* the first encoding attribute's raw value names HTML (undecoded, as _open_foreign reads it) */
static int visit_encoding(const Text *t, Py_ssize_t ns, Py_ssize_t ne, Py_ssize_t vs, Py_ssize_t ve, void *state) {
    if (!name_is(t, ns, ne, "encoding")) return 0;
    *(int *)state = in_list(t, vs, ve, ANNOTATION_XML_HTML_ENCODINGS);
    return 1;
}

/* An open element in or under SVG/MathML, as _Foreign in rewrite.py: namespace 's', 'm' or 'h'
   (an HTML element inside an integration point), what it integrates (0, 'h' HTML, 't' MathML
   text), whether it is a root, and its name in the text. */
typedef struct {
    char ns, integrates, root;
    Py_ssize_t name_start, name_end;
} Open;

typedef struct {
    Open *items;
    Py_ssize_t depth, capacity;
} Stack;

static int push(Stack *stack, char ns, char integrates, char root, Py_ssize_t s, Py_ssize_t e) {
    if (stack->depth == stack->capacity) {
        Py_ssize_t capacity = stack->capacity ? 2 * stack->capacity : 16;
        Open *items = PyMem_Realloc(stack->items, (size_t)capacity * sizeof(Open));
        if (items == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        stack->items = items;
        stack->capacity = capacity;
    }
    stack->items[stack->depth++] = (Open){ns, integrates, root, s, e};
    return 0;
}

/* the two names, each a span of the text, are the same (ASCII case-insensitive) */
static int same_name(const Text *t, Py_ssize_t as, Py_ssize_t ae, Py_ssize_t bs, Py_ssize_t be) {
    if (ae - as != be - bs) return 0;
    for (Py_ssize_t k = 0; k < ae - as; k++)
        if (lower(CH(t, as + k)) != lower(CH(t, bs + k))) return 0;
    return 1;
}

/* _leave_foreign in rewrite.py */
static void leave_foreign(Stack *stack) {
    while (stack->depth && !stack->items[stack->depth - 1].integrates && stack->items[stack->depth - 1].ns != 'h')
        stack->depth--;
}

/* _close_html in rewrite.py */
static void close_html(const Text *t, Stack *stack, Py_ssize_t s, Py_ssize_t e) {
    for (Py_ssize_t k = stack->depth - 1; k >= 0 && stack->items[k].ns == 'h'; k--) {
        if (same_name(t, stack->items[k].name_start, stack->items[k].name_end, s, e)) {
            stack->depth = k;
            return;
        }
    }
}

/* _close_foreign in rewrite.py: 1 when HTML content reads the end tag too */
static int close_foreign(const Text *t, Stack *stack, Py_ssize_t s, Py_ssize_t e) {
    for (Py_ssize_t k = stack->depth - 1; k >= 0; k--) {
        if (same_name(t, stack->items[k].name_start, stack->items[k].name_end, s, e)) {
            stack->depth = k;
            return 0;
        }
        if (stack->items[k].root) break;
    }
    if (in_list(t, s, e, END_TAG_BREAKOUT) || in_list(t, s, e, HTML_ELEMENTS)) {
        leave_foreign(stack);
        return 1;
    }
    return 0;
}

/* _open_foreign in rewrite.py */
static int open_foreign(const Text *t, Stack *stack, const Tag *tag) {
    const Open *top = &stack->items[stack->depth - 1];
    Py_ssize_t s = tag->name_start, e = tag->name_end;
    char ns = (name_is(t, s, e, "svg") && name_is(t, top->name_start, top->name_end, "annotation-xml")) ? 's' : top->ns;
    char integrates = 0;
    if (ns == 's' && in_list(t, s, e, SVG_HTML_INTEGRATION)) {
        integrates = 'h';
    } else if (ns == 'm' && in_list(t, s, e, MATHML_TEXT_INTEGRATION)) {
        integrates = 't';
    } else if (ns == 'm' && name_is(t, s, e, "annotation-xml")) {
        int html = 0;
        each_attribute(t, tag->attrs_start, tag->attrs_end, visit_encoding, &html);
        if (html) integrates = 'h';
    }
    return push(stack, ns, integrates, 0, s, e);
}

/* RCDATA or RAWTEXT: the offset of the '</name' (then white space, '/' or '>') that ends it, or -1 */
static Py_ssize_t text_end(const Text *t, Py_ssize_t from, Py_ssize_t ns, Py_ssize_t ne) {
    Py_ssize_t len = ne - ns, n = t->n;
    for (Py_ssize_t i = from; i + 2 + len < n; i++) {
        if (CH(t, i) != '<' || CH(t, i + 1) != '/') continue;
        Py_ssize_t k = 0;
        while (k < len && lower(CH(t, i + 2 + k)) == lower(CH(t, ns + k))) k++;
        if (k == len && ends_name(CH(t, i + 2 + len))) return i;
    }
    return -1;
}

/* '<' + `s` + (white space, '/' or '>') at `at`, ASCII case-insensitive; `s` in lower case */
static int tag_spelled(const Text *t, Py_ssize_t at, const char *s) {
    Py_ssize_t len = (Py_ssize_t)strlen(s);
    return at + 1 + len < t->n && CH(t, at) == '<' && spells(t, at + 1, t->n, s) && ends_name(CH(t, at + 1 + len));
}

/* _may_matter in rewrite.py: might a <meta> tag of the attributes [s, e) be a robots or a CSP one?  Most
   (charset, viewport, description) are not, and are not handed to Python at all. */
static int may_matter(const Text *t, Py_ssize_t s, Py_ssize_t e) {
    if (find_char(t, '&', s, e) >= 0) return 1; /* a character reference could spell either word */
    for (Py_ssize_t i = s; i < e; i++) {
        Py_UCS4 c = lower(CH(t, i));
        if ((c == 'r' && spells(t, i, e, "robots")) || (c == 'c' && spells(t, i, e, "content-security-policy")))
            return 1;
    }
    return 0;
}

/* _script_end in rewrite.py: script data with its escaped and double-escaped states */
static Py_ssize_t script_end(const Text *t, Py_ssize_t i) {
    Py_ssize_t n = t->n;
    enum { DATA, ESCAPED, DOUBLE_ESCAPED } state = DATA;
    while (i < n) {
        Py_UCS4 c = CH(t, i);
        if (state == DATA) {
            i = next_lt(t, i);
            if (i >= n) return -1;
            if (tag_spelled(t, i, "/script")) return i;
            if (starts_with(t, i, "<!--")) {
                state = ESCAPED;
                i += 2; /* the dashes of '<!--' count towards a '-->' */
            } else {
                i++;
            }
            continue;
        }
        if (c == '-' && starts_with(t, i, "-->")) {
            state = DATA;
            i += 3;
        } else if (c == '<' && state == ESCAPED && tag_spelled(t, i, "/script")) {
            return i;
        } else if (c == '<' && state == ESCAPED && tag_spelled(t, i, "script")) {
            state = DOUBLE_ESCAPED;
            i += 8;
        } else if (c == '<' && state == DOUBLE_ESCAPED && tag_spelled(t, i, "/script")) {
            state = ESCAPED;
            i += 9;
        } else {
            i++;
        }
    }
    return -1;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *arg;
    const char *encoding = NULL;
    if (!PyArg_ParseTuple(args, "O|s:scan", &arg, &encoding)) return NULL;
    if (PyBytes_Check(arg)) {
        if (encoding == NULL) {
            PyErr_SetString(PyExc_TypeError, "scan() of bytes needs their encoding");
            return NULL;
        }
    } else if (!PyUnicode_Check(arg) || encoding != NULL) {
        PyErr_SetString(PyExc_TypeError, "scan() takes a str, or bytes and their encoding");
        return NULL;
    } else if (PyUnicode_READY(arg) < 0) {
        return NULL;
    }
    int bytes = encoding != NULL;
    Py_ssize_t n = bytes ? PyBytes_GET_SIZE(arg) : PyUnicode_GET_LENGTH(arg), position = 0;
    int kind = bytes ? PyUnicode_1BYTE_KIND : PyUnicode_KIND(arg);
    const void *source = bytes ? (const void *)PyBytes_AS_STRING(arg) : PyUnicode_DATA(arg);
    unsigned char *narrow = NULL; /* the one-byte copy of a wider string */
    if (kind != PyUnicode_1BYTE_KIND) {
        narrow = PyMem_Malloc(n + 1);
        if (narrow == NULL) return PyErr_NoMemory();
        if (kind == PyUnicode_2BYTE_KIND) { /* one plain loop per width: the compiler vectorises it */
            const Py_UCS2 *wide = source;
            for (Py_ssize_t i = 0; i < n; i++) narrow[i] = wide[i] < 0x80 ? (unsigned char)wide[i] : 0x80;
        } else {
            const Py_UCS4 *wide = source;
            for (Py_ssize_t i = 0; i < n; i++) narrow[i] = wide[i] < 0x80 ? (unsigned char)wide[i] : 0x80;
        }
    }
    Text text = {narrow ? narrow : (const unsigned char *)source, n, arg, encoding};
    const Text *t = &text;
    Py_ssize_t body_at = -1, head_at = -1, template_depth = 0;
    int end_is_markup = 0;
    Stack stack = {NULL, 0, 0};
    OpenLink open = {-1, 0, {0}, {0}, 0};
    PyObject *links = PyList_New(0), *extras = PyList_New(0), *raw = PyList_New(0), *icons = PyList_New(0);
    if (links == NULL || extras == NULL || raw == NULL || icons == NULL) goto fail;

    for (;;) {
        const Open *top = stack.depth ? &stack.items[stack.depth - 1] : NULL;
        int foreign = top && !top->integrates && top->ns != 'h';
        Py_ssize_t start;
        if (top) {
            start = find_char(t, '<', position, n); /* in or under SVG/MathML every tag counts */
            if (start < 0) break;
        } else if (open.index >= 0) {
            start = find_char(t, '<', position, n); /* in a link every tag counts, and its text */
            if (!open.text && has_text(t, position, start < 0 ? n : start)) open.text = 1;
            if (start < 0) {
                end_is_markup = template_depth == 0;
                break;
            }
        } else {
            start = skip(t, position);
            if (start >= n) {
                end_is_markup = template_depth == 0;
                break;
            }
        }
        if (start + 1 >= n) break;
        Py_UCS4 following = CH(t, start + 1);
        if (following == '!') {
            if (starts_with(t, start, "<!--")) {
                if (starts_with(t, start, "<!-->") || starts_with(t, start, "<!--->")) {
                    position = find_char(t, '>', start + 4, n) + 1;
                    continue;
                }
                position = comment_end(t, start + 4);
                if (position < 0) break;
                continue;
            }
            /* CDATA where the current node is SVG/MathML (an integration point too, before any HTML in it) */
            if (top && top->ns != 'h' && starts_with(t, start, "<![CDATA[")) {
                Py_ssize_t close = find_ascii(t, "]]>", start + 9);
                if (close < 0) break;
                position = close + 3;
                continue;
            }
            Py_ssize_t close = find_char(t, '>', start + 2, n); /* doctype or bogus comment */
            if (close < 0) break;
            position = close + 1;
            continue;
        }
        if (following == '?' || (following == '/' && !(start + 2 < n && is_alpha(CH(t, start + 2))))) {
            Py_ssize_t close = find_char(t, '>', start + 2, n); /* bogus comment; '</' at the end is text */
            if (close < 0) break;
            position = close + 1;
            continue;
        }
        Tag tag;
        if (!parse_tag(t, start, &tag)) {
            position = start + 1;
            continue;
        }
        position = tag.after;
        if (!tag.closed) break; /* end of file inside a tag: browsers drop it */
        Py_ssize_t ns = tag.name_start, ne = tag.name_end;
        int is_a = ne - ns == 1 && lower(CH(t, ns)) == 'a';
        if (open.index >= 0 && !top) { /* a tag in an HTML link */
            if (tag.end_tag && is_a) {
                if (move_link(links, open.index, start) < 0) goto fail;
                if (!open.text) {
                    PyObject *at = PyLong_FromSsize_t(start);
                    if (at == NULL || PyList_Append(icons, at) < 0) {
                        Py_XDECREF(at);
                        goto fail;
                    }
                    Py_DECREF(at);
                }
                open.index = -1;
                continue;
            }
            Py_ssize_t k = open.depth;
            if (tag.end_tag)
                while (k > 0 && !same_name(t, open.starts[k - 1], open.ends[k - 1], ns, ne)) k--;
            if (tag.end_tag && k > 0) {
                open.depth = k - 1;
            } else if (!tag.end_tag && in_list(t, ns, ne, LINK_CONTENT)) {
                if (!in_list(t, ns, ne, VOID_ELEMENTS) && !name_is(t, ns, ne, "svg") && !name_is(t, ns, ne, "math")) {
                    if (open.depth == MAX_INSIDE) {
                        if (fall_back(links, icons, &open) < 0) goto fail;
                    } else {
                        open.starts[open.depth] = ns;
                        open.ends[open.depth++] = ne;
                    }
                }
            } else {
                /* it may close the link, or be moved out of it: the bar stays after the start tag */
                if (fall_back(links, icons, &open) < 0) goto fail;
            }
        }
        if (is_a && !tag.end_tag && !top && template_depth == 0) {
            Py_ssize_t before = PyList_GET_SIZE(links);
            if (add_link(links, t, &tag, raw) < 0) goto fail;
            if (PyList_GET_SIZE(links) > before) {
                open.index = before;
                open.depth = 0;
                open.text = 0;
            }
            continue;
        }
        if (tag.end_tag) {
            if (top && top->ns == 'h') {
                close_html(t, &stack, ns, ne);
            } else if (top && !close_foreign(t, &stack, ns, ne)) {
                continue;
            }
            if (template_depth && name_is(t, ns, ne, "template")) template_depth--;
            continue;
        }
        if (foreign) {
            int breaks_out = in_list(t, ns, ne, BREAKOUT);
            if (!breaks_out && name_is(t, ns, ne, "font"))
                each_attribute(t, tag.attrs_start, tag.attrs_end, visit_font, &breaks_out);
            if (breaks_out) {
                leave_foreign(&stack);
                /* HTML again, where this tag may close the link the SVG/MathML is in */
                if (open.index >= 0 && fall_back(links, icons, &open) < 0) goto fail;
            } else {
                if (!tag.self_closing && open_foreign(t, &stack, &tag) < 0) goto fail;
                continue;
            }
        } else if (top && top->integrates == 't' && in_list(t, ns, ne, MATHML_TEXT_INTEGRATION_FOREIGN)) {
            if (!tag.self_closing && push(&stack, 'm', 0, 0, ns, ne) < 0) goto fail;
            continue;
        }
        int svg = name_is(t, ns, ne, "svg"), math = name_is(t, ns, ne, "math");
        int model = content_model(t, ns, ne);
        if (stack.depth && !svg && !math && model == MODEL_DATA && !in_list(t, ns, ne, VOID_ELEMENTS)) {
            if (push(&stack, 'h', 0, 0, ns, ne) < 0) goto fail; /* an HTML element inside an integration point */
        }
        if (svg || math) {
            if (!tag.self_closing && push(&stack, svg ? 's' : 'm', 0, 1, ns, ne) < 0) goto fail;
            continue;
        }
        if (model != MODEL_DATA) {
            if (model == MODEL_PLAINTEXT) break;
            position = model == MODEL_SCRIPT_DATA ? script_end(t, position) : text_end(t, position, ns, ne);
            if (position < 0) break;
            continue;
        }
        if (name_is(t, ns, ne, "template")) {
            template_depth++;
            continue;
        }
        if (is_a || name_is(t, ns, ne, "area")) {
            if (!template_depth && add_link(links, t, &tag, raw) < 0) goto fail;
        } else if (template_depth) {
            continue;
        } else if (name_is(t, ns, ne, "body")) {
            if (body_at < 0) body_at = position;
        } else if (name_is(t, ns, ne, "head")) {
            if (head_at < 0) head_at = position;
        } else if (name_is(t, ns, ne, "base") || name_is(t, ns, ne, "meta") || name_is(t, ns, ne, "frameset")) {
            char first = lower(CH(t, ns));
            if (first == 'm' && !may_matter(t, tag.attrs_start, tag.attrs_end)) continue;
            PyObject *extra = Py_BuildValue("(snn)", first == 'b' ? "base" : first == 'm' ? "meta" : "frameset",
                                            tag.attrs_start, tag.attrs_end);
            if (extra == NULL || PyList_Append(extras, extra) < 0) {
                Py_XDECREF(extra);
                goto fail;
            }
            Py_DECREF(extra);
        }
    }
    if (open.index >= 0 && fall_back(links, icons, &open) < 0) goto fail; /* the file ends in a link */
#define OPT(v) ((v) < 0 ? (Py_INCREF(Py_None), Py_None) : PyLong_FromSsize_t(v))
    PyMem_Free(stack.items);
    PyMem_Free(narrow);
    return Py_BuildValue("(NNNNNON)", links, OPT(body_at), OPT(head_at), extras, raw,
                         end_is_markup ? Py_True : Py_False, icons);
fail:
    PyMem_Free(stack.items);
    PyMem_Free(narrow);
    Py_XDECREF(links);
    Py_XDECREF(extras);
    Py_XDECREF(raw);
    Py_XDECREF(icons);
    return NULL;
}

/* splice(data, edits): `data` (str, or bytes) with each insert of `edits`, a list of (offset, insert)
   in order of offset, put in before the character (or byte) at its offset; the inserts of bytes data
   are bytes, or ASCII str.  _splice_python in rewrite.py is its twin. */
static PyObject *splice(PyObject *self, PyObject *args) {
    PyObject *data, *edits;
    if (!PyArg_ParseTuple(args, "OO!:splice", &data, &PyList_Type, &edits)) return NULL;
    int bytes = PyBytes_Check(data);
    if (!bytes && !PyUnicode_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "splice() takes a str or bytes");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(edits), n = bytes ? PyBytes_GET_SIZE(data) : PyUnicode_GET_LENGTH(data);
    Py_ssize_t previous = 0, total = n;
    Py_UCS4 widest = bytes ? 0 : PyUnicode_MAX_CHAR_VALUE(data);
    for (Py_ssize_t k = 0; k < count; k++) { /* check every edit, and size the result */
        PyObject *edit = PyList_GET_ITEM(edits, k);
        if (!PyTuple_Check(edit) || PyTuple_GET_SIZE(edit) != 2) {
            PyErr_SetString(PyExc_TypeError, "an edit is an (offset, insert) pair");
            return NULL;
        }
        Py_ssize_t offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(edit, 0));
        if (offset == -1 && PyErr_Occurred()) return NULL;
        if (offset < previous || offset > n) {
            PyErr_SetString(PyExc_ValueError, "edits out of order or out of range");
            return NULL;
        }
        previous = offset;
        PyObject *insert = PyTuple_GET_ITEM(edit, 1);
        if (bytes && PyBytes_Check(insert)) {
            total += PyBytes_GET_SIZE(insert);
        } else if (PyUnicode_Check(insert) && (!bytes || PyUnicode_IS_ASCII(insert))) {
            total += PyUnicode_GET_LENGTH(insert);
            if (!bytes && PyUnicode_MAX_CHAR_VALUE(insert) > widest) widest = PyUnicode_MAX_CHAR_VALUE(insert);
        } else {
            PyErr_SetString(PyExc_TypeError,
                            bytes ? "the inserts into bytes are bytes or ASCII str" : "the inserts into a str are str");
            return NULL;
        }
    }
    if (bytes) {
        PyObject *out = PyBytes_FromStringAndSize(NULL, total);
        if (out == NULL) return NULL;
        char *to = PyBytes_AS_STRING(out);
        const char *from = PyBytes_AS_STRING(data);
        previous = 0;
        for (Py_ssize_t k = 0; k < count; k++) {
            PyObject *edit = PyList_GET_ITEM(edits, k), *insert = PyTuple_GET_ITEM(edit, 1);
            Py_ssize_t offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(edit, 0));
            memcpy(to, from + previous, (size_t)(offset - previous));
            to += offset - previous;
            previous = offset;
            Py_ssize_t size = PyBytes_Check(insert) ? PyBytes_GET_SIZE(insert) : PyUnicode_GET_LENGTH(insert);
            memcpy(to, PyBytes_Check(insert) ? PyBytes_AS_STRING(insert) : (const char *)PyUnicode_DATA(insert),
                   (size_t)size);
            to += size;
        }
        memcpy(to, from + previous, (size_t)(n - previous));
        return out;
    }
    PyObject *out = PyUnicode_New(total, widest);
    if (out == NULL) return NULL;
    Py_ssize_t at = 0;
    previous = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *edit = PyList_GET_ITEM(edits, k), *insert = PyTuple_GET_ITEM(edit, 1);
        Py_ssize_t offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(edit, 0));
        if (PyUnicode_CopyCharacters(out, at, data, previous, offset - previous) < 0 ||
            PyUnicode_CopyCharacters(out, at + offset - previous, insert, 0, PyUnicode_GET_LENGTH(insert)) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        at += offset - previous + PyUnicode_GET_LENGTH(insert);
        previous = offset;
    }
    if (PyUnicode_CopyCharacters(out, at, data, previous, n - previous) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* The href of links[k], an (offset, href, nofollow) tuple (borrowed), or NULL with TypeError. */
static PyObject *link_href(PyObject *links, Py_ssize_t k) {
    PyObject *link = PyList_GET_ITEM(links, k);
    if (!PyTuple_Check(link) || PyTuple_GET_SIZE(link) != 3) {
        PyErr_SetString(PyExc_TypeError, "a link is an (offset, href, nofollow) tuple");
        return NULL;
    }
    return PyTuple_GET_ITEM(link, 1);
}

/* place(links, table, own, nofollow_all) -> (edits, bars, ranked, missing): for each link whose href's
   mark (in `table`, else in `own`) is not None, the edit (offset, its bar): the mark's second bar for a
   nofollow link, or for every link when `nofollow_all`; `missing` empty.  When some hrefs have no mark
   in either, (None, 0, 0, those hrefs, distinct, in order): one pass tells a page whose hrefs are all
   marked (most) from one with new hrefs.  _place_python in rewrite.py is its twin. */
static PyObject *place(PyObject *self, PyObject *args) {
    PyObject *links, *table, *own;
    int nofollow_all;
    if (!PyArg_ParseTuple(args, "O!O!O!p:place", &PyList_Type, &links, &PyDict_Type, &table, &PyDict_Type, &own,
                          &nofollow_all))
        return NULL;
    PyObject *edits = PyList_New(0), *missing = PyList_New(0), *seen = NULL;
    if (edits == NULL || missing == NULL) goto fail;
    Py_ssize_t ranked = 0;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(links); k++) {
        PyObject *href = link_href(links, k), *link = PyList_GET_ITEM(links, k);
        if (href == NULL) goto fail;
        PyObject *mark = PyDict_GetItemWithError(table, href);
        if (mark == NULL && !PyErr_Occurred()) mark = PyDict_GetItemWithError(own, href);
        if (mark == NULL) {
            if (PyErr_Occurred()) goto fail;
            if (seen == NULL && (seen = PySet_New(NULL)) == NULL) goto fail;
            int again = PySet_Contains(seen, href);
            if (again < 0) goto fail;
            if (!again && (PySet_Add(seen, href) < 0 || PyList_Append(missing, href) < 0)) goto fail;
            continue;
        }
        if (mark == Py_None || seen != NULL) continue; /* no bar; or the edits are given up already */
        if (!PyTuple_Check(mark) || PyTuple_GET_SIZE(mark) != 3) {
            PyErr_SetString(PyExc_TypeError, "a mark is a (bar, nofollow bar, ranked) tuple");
            goto fail;
        }
        Py_INCREF(mark); /* the dicts' own reference could go while its `ranked` is read */
        int nofollow = nofollow_all || PyTuple_GET_ITEM(link, 2) == Py_True;
        int is_ranked = PyObject_IsTrue(PyTuple_GET_ITEM(mark, 2));
        PyObject *bar = PyTuple_GET_ITEM(mark, nofollow ? 1 : 0);
        PyObject *edit = is_ranked < 0 ? NULL : PyTuple_Pack(2, PyTuple_GET_ITEM(link, 0), bar);
        Py_DECREF(mark);
        if (edit == NULL || PyList_Append(edits, edit) < 0) {
            Py_XDECREF(edit);
            goto fail;
        }
        ranked += is_ranked;
        Py_DECREF(edit);
    }
    if (seen != NULL) {
        Py_DECREF(seen);
        Py_DECREF(edits);
        return Py_BuildValue("(OnnN)", Py_None, (Py_ssize_t)0, (Py_ssize_t)0, missing);
    }
    return Py_BuildValue("(NnnN)", edits, PyList_GET_SIZE(edits), ranked, missing);
fail:
    Py_XDECREF(seen);
    Py_XDECREF(edits);
    Py_XDECREF(missing);
    return NULL;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(text) or scan(data, encoding) -> (links, body_at, head_at, extras, raw, end_is_markup, icons)"},
    {"splice", splice, METH_VARARGS, "splice(data, edits) -> data with each (offset, insert) of edits inserted"},
    {"place", place, METH_VARARGS,
     "place(links, table, own, nofollow_all) -> (edits, bars, ranked, missing); edits None if any is missing"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastscan", "The rewrite scanner in C.", -1, methods};

PyMODINIT_FUNC PyInit__fastscan(void) {
    fill_classes();
    return PyModule_Create(&module);
}
