/* proxy_addon._fastscan: the scanner of proxy_addon/rewrite.py (_scan_python), in C.
 *
 * The same state machine, token for token: the pure-Python version stays the
 * reference (tests/test_rewrite.py checks both give the same answer on real
 * pages and on random tag soup) and the fallback where this module is not
 * built.  It spends about 8 ms on a 290 KB page in Python's regex engine;
 * here, well under one.
 *
 * scan(text) -> (links, body_at, head_at, html_at, doctype_end, extras, raw)
 *   links   list of (offset after the start tag, href, False) for <a>/<area>
 *           with an href, outside templates and foreign content, when the href
 *           has no character reference and there is no rel (most links); else
 *           (offset, raw href, raw rel or None), for the Python side to decode
 *   raw     how many links are of the second kind
 *   *_at    offset after the first <body>/<head>/<html> start tag, or None
 *   doctype_end  offset after the first <!doctype ...>, or None
 *   extras  list of (name, attrs start, attrs end) for <base> and <meta>
 *           outside templates, in order, for the Python side to read
 *
 * Case-insensitive comparisons are ASCII-only, as in the HTML standard (the
 * Python reference uses re.ASCII for the same reason).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The text as one byte per character: only ASCII decides anything here, so a
   string of two or four bytes a character is read through a copy with every
   character above 0x7f as 0x80 (offsets unchanged); a one-byte string as it is. */
typedef struct {
    const unsigned char *data;
    Py_ssize_t n;
} Text;

#define CH(t, i) ((Py_UCS4)(t)->data[(i)])

static inline int is_ws(Py_UCS4 c) { return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '; }
static inline int is_alpha(Py_UCS4 c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static inline Py_UCS4 lower(Py_UCS4 c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
static inline int ends_name(Py_UCS4 c) { return is_ws(c) || c == '/' || c == '>'; }

static Py_ssize_t find_char(const Text *t, Py_UCS4 c, Py_ssize_t from, Py_ssize_t to) {
    for (Py_ssize_t i = from; i < to; i++)
        if (CH(t, i) == c) return i;
    return -1;
}

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

static const char *INTERESTING[] = {"a", "area", "base", "body", "head", "html", "iframe", "meta", "math",
                                    "noembed", "noframes", "noscript", "plaintext", "svg", "script", "style",
                                    "template", "textarea", "title", "xmp", NULL};
static const char *INTERESTING_END[] = {"template", "svg", "math", NULL};
static const char *RAW_TEXT[] = {"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript",
                                 "textarea", "title", NULL};
static const char *BREAKOUT[] = {
    "b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em", "embed", "h1",
    "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing", "menu", "meta", "nobr", "ol", "p",
    "pre", "ruby", "s", "small", "span", "strong", "strike", "sub", "sup", "table", "tt", "u", "ul", "var", NULL};
static const char *INTEGRATION[] = {"foreignobject", "desc", "title", "annotation-xml", NULL};

/* one of `names` at `at`, followed by a tab, newline, form feed, return, space, '/' or '>' */
static int names_one_of(const Text *t, Py_ssize_t at, const char **names) {
    Py_ssize_t len = 0, n = t->n;
    while (at + len < n && !ends_name(CH(t, at + len))) {
        if (++len > 14) return 0; /* longer than any name in these lists ("annotation-xml") */
    }
    if (at + len >= n) return 0;
    Py_UCS4 first = lower(CH(t, at));
    for (const char **name = names; *name; name++)
        if ((Py_UCS4)(*name)[0] == first && name_is(t, at, at + len, *name)) return 1;
    return 0;
}

static int in_list(const Text *t, Py_ssize_t s, Py_ssize_t e, const char **names) {
    for (const char **name = names; *name; name++)
        if (name_is(t, s, e, *name)) return 1;
    return 0;
}

/* The rest of a tag the scan skips: (?:[^>"']++|"[^"]*+"|'[^']*+')*+> ; the offset after '>' or -1. */
static Py_ssize_t skip_tag_body(const Text *t, Py_ssize_t i) {
    while (i < t->n) {
        Py_UCS4 c = CH(t, i);
        if (c == '>') return i + 1;
        if (c == '"' || c == '\'') {
            Py_ssize_t close = find_char(t, c, i + 1, t->n);
            if (close < 0) return -1;
            i = close + 1;
        } else {
            i++;
        }
    }
    return -1;
}

/* The next '<' at or after `from`, or the length: the text between tags, read by the string's width. */
static Py_ssize_t next_lt(const Text *t, Py_ssize_t from) {
    Py_ssize_t n = t->n;
    if (from >= n) return n;
    const unsigned char *found = memchr(t->data + from, '<', (size_t)(n - from));
    return found ? found - t->data : n;
}

/* Text, a lone '<' and tags whose names do not matter, as _SKIP in rewrite.py. */
static Py_ssize_t skip(const Text *t, Py_ssize_t pos) {
    Py_ssize_t n = t->n;
    while (pos < n) {
        pos = next_lt(t, pos);
        if (pos >= n) return n;
        if (pos + 1 >= n) return n;  /* a lone '<' at the very end */
        Py_UCS4 c = CH(t, pos + 1);
        if (is_alpha(c)) {
            if (!names_one_of(t, pos + 1, INTERESTING)) {
                Py_ssize_t after = skip_tag_body(t, pos + 2);
                if (after >= 0) {
                    pos = after;
                    continue;
                }
            }
            return pos;
        }
        if (c == '/') {
            if (pos + 2 < n && is_alpha(CH(t, pos + 2)) && !names_one_of(t, pos + 2, INTERESTING_END)) {
                Py_ssize_t after = skip_tag_body(t, pos + 3);
                if (after >= 0) {
                    pos = after;
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
    int end_tag;
    Py_ssize_t name_start, name_end, attrs_start, attrs_end, after;
    int closed;
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
    while (i < n) {
        Py_UCS4 c = CH(t, i);
        if (is_ws(c) || c == '/') {
            i++;
            continue;
        }
        if (c == '>') break;
        i++; /* an attribute name */
        while (i < n && (c = CH(t, i), !is_ws(c) && c != '/' && c != '=' && c != '>')) i++;
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
                    if (close >= 0) {
                        i = close + 1;
                        continue;
                    }
                }
                if (!is_ws(c) && c != '>') { /* unquoted, or a quote never closed */
                    while (i < n && (c = CH(t, i), !is_ws(c) && c != '>')) i++;
                }
            }
        }
    }
    tag->attrs_end = i;
    tag->closed = i < n;
    tag->after = i < n ? i + 1 : n;
    return 1;
}

/* The href and rel of a link's attributes, as _link in rewrite.py (raw values). */
static PyObject *link_tuple(PyObject *text, const Text *t, Py_ssize_t s, Py_ssize_t e, Py_ssize_t position) {
    Py_ssize_t href_s = -1, href_e = -1, rel_s = -1, rel_e = -1, i = s;
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
        if (href_s < 0 && name_is(t, ns, ne, "href")) {
            href_s = vs;
            href_e = ve;
        } else if (rel_s < 0 && name_is(t, ns, ne, "rel")) {
            rel_s = vs;
            rel_e = ve;
        }
    }
    if (href_s < 0) Py_RETURN_NONE;
    PyObject *href = PyUnicode_Substring(text, href_s, href_e);
    if (href != NULL && (rel_s < 0 || rel_s == rel_e) && find_char(t, '&', href_s, href_e) < 0)
        return Py_BuildValue("(nNO)", position, href, Py_False); /* nothing to decode, follows */
    PyObject *rel = rel_s < 0 ? (Py_INCREF(Py_None), Py_None) : PyUnicode_Substring(text, rel_s, rel_e);
    if (href == NULL || rel == NULL) {
        Py_XDECREF(href);
        Py_XDECREF(rel);
        return NULL;
    }
    return Py_BuildValue("(nNN)", position, href, rel);
}

/* Append the link a start tag makes (if it has an href) to `links`, counting the raw ones; -1 on error. */
static int add_link(PyObject *links, PyObject *text, const Text *t, const Tag *tag, Py_ssize_t *raw) {
    PyObject *link = link_tuple(text, t, tag->attrs_start, tag->attrs_end, tag->after);
    if (link == NULL) return -1;
    if (link != Py_None && PyTuple_GET_ITEM(link, 2) != Py_False) ++*raw;
    int status = link == Py_None ? 0 : PyList_Append(links, link);
    Py_DECREF(link);
    return status;
}

/* (?i)\b(color|face|size)\s*= in a font tag's attributes (ASCII), which ends foreign content */
static int font_breaks_out(const Text *t, Py_ssize_t s, Py_ssize_t e) {
    static const char *words[] = {"color", "face", "size", NULL};
    for (Py_ssize_t i = s; i < e; i++) {
        if (i > s) {
            Py_UCS4 p = CH(t, i - 1);
            if (is_alpha(p) || (p >= '0' && p <= '9') || p == '_') continue;
        }
        for (const char **w = words; *w; w++) {
            Py_ssize_t len = (Py_ssize_t)strlen(*w);
            if (!spells(t, i, e, *w)) continue;
            Py_ssize_t j = i + len;
            while (j < e && (CH(t, j) == ' ' || (CH(t, j) >= 9 && CH(t, j) <= 13))) j++;
            if (j < e && CH(t, j) == '=') return 1;
        }
    }
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *arg) {
    if (!PyUnicode_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "scan() takes a str");
        return NULL;
    }
    if (PyUnicode_READY(arg) < 0) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(arg), position = 0;
    int kind = PyUnicode_KIND(arg);
    const void *source = PyUnicode_DATA(arg);
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
    Text text = {narrow ? narrow : (const unsigned char *)source, n};
    const Text *t = &text;
    Py_ssize_t body_at = -1, head_at = -1, html_at = -1, doctype_end = -1, raw = 0;
    /* foreign-content stack: 's' svg, 'm' math, 'h' an HTML integration point (a push takes a tag of
       three characters or more, so n + 1 entries always suffice) */
    char *stack = PyMem_Malloc(n + 1);
    Py_ssize_t depth = 0, template_depth = 0;
    PyObject *links = PyList_New(0), *extras = PyList_New(0);
    if (stack == NULL || links == NULL || extras == NULL) goto fail;

    for (;;) {
        int foreign = depth > 0 && stack[depth - 1] != 'h';
        Py_ssize_t start;
        if (foreign) {
            start = find_char(t, '<', position, n);
        } else {
            start = skip(t, position);
            if (start >= n) break;
        }
        if (start < 0 || start + 1 >= n) break;
        Py_UCS4 following = CH(t, start + 1);
        if (following == '!') {
            if (starts_with(t, start, "<!--")) {
                if (starts_with(t, start, "<!-->") || starts_with(t, start, "<!--->")) {
                    position = find_char(t, '>', start + 4, n) + 1;
                    continue;
                }
                Py_ssize_t close = find_ascii(t, "-->", start + 4), bang = find_ascii(t, "--!>", start + 4);
                if (close < 0 && bang < 0) break;
                position = (close < 0 || (bang >= 0 && bang < close)) ? bang + 4 : close + 3;
                continue;
            }
            if (foreign && starts_with(t, start, "<![CDATA[")) {
                Py_ssize_t close = find_ascii(t, "]]>", start + 9);
                if (close < 0) break;
                position = close + 3;
                continue;
            }
            Py_ssize_t close = find_char(t, '>', start + 2, n);
            if (close < 0) break;
            if (doctype_end < 0 && start + 9 <= n && spells(t, start + 2, start + 9, "doctype")) doctype_end = close + 1;
            position = close + 1;
            continue;
        }
        if (following == '?') {
            Py_ssize_t close = find_char(t, '>', start + 2, n);
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
        if (is_a && !tag.end_tag && depth == 0 && template_depth == 0) {
            if (add_link(links, arg, t, &tag, &raw) < 0) goto fail;
            continue;
        }
        int self_closing = 0;
        for (Py_ssize_t k = tag.attrs_end - 1; k >= tag.attrs_start; k--) {
            Py_UCS4 c = CH(t, k);
            if (is_ws(c)) continue;
            self_closing = c == '/';
            break;
        }
        char top = depth ? stack[depth - 1] : 0;
        if (tag.end_tag) {
            if (name_is(t, ns, ne, "template") && template_depth) {
                template_depth--;
            } else if (depth && ((name_is(t, ns, ne, "svg") && top == 's') || (name_is(t, ns, ne, "math") && top == 'm'))) {
                depth--;
            } else if (depth && top == 'h' && in_list(t, ns, ne, INTEGRATION)) {
                depth--;
            }
            continue;
        }
        if (foreign) {
            if (in_list(t, ns, ne, BREAKOUT) ||
                (name_is(t, ns, ne, "font") && font_breaks_out(t, tag.attrs_start, tag.attrs_end))) {
                depth = 0;
                foreign = 0;
            } else {
                char push = 0;
                if ((name_is(t, ns, ne, "foreignobject") || name_is(t, ns, ne, "desc") || name_is(t, ns, ne, "title"))
                    && top == 's' && !self_closing) {
                    push = 'h';
                } else if (name_is(t, ns, ne, "annotation-xml") && top == 'm' && !self_closing) {
                    push = 'h';
                } else if (name_is(t, ns, ne, "svg") && !self_closing) {
                    push = 's';
                } else if (name_is(t, ns, ne, "math") && !self_closing) {
                    push = 'm';
                }
                if (push) stack[depth++] = push;
                continue;
            }
        }
        if (name_is(t, ns, ne, "svg") || name_is(t, ns, ne, "math")) {
            if (!self_closing) {
                stack[depth++] = lower(CH(t, ns)) == 's' ? 's' : 'm';
            }
            continue;
        }
        if (in_list(t, ns, ne, RAW_TEXT)) {
            /* </name followed by a tab, newline, form feed, return, space, '/' or '>' */
            Py_ssize_t len = ne - ns, found = -1;
            for (Py_ssize_t i = position; i + 2 + len < n; i++) {
                if (CH(t, i) != '<' || CH(t, i + 1) != '/') continue;
                Py_ssize_t k = 0;
                while (k < len && lower(CH(t, i + 2 + k)) == lower(CH(t, ns + k))) k++;
                if (k == len && ends_name(CH(t, i + 2 + len))) {
                    found = i;
                    break;
                }
            }
            if (found < 0) break;
            position = found;
            continue;
        }
        if (name_is(t, ns, ne, "plaintext")) break;
        if (name_is(t, ns, ne, "template")) {
            template_depth++;
            continue;
        }
        if (is_a || name_is(t, ns, ne, "area")) {
            if (!template_depth && add_link(links, arg, t, &tag, &raw) < 0) goto fail;
        } else if (name_is(t, ns, ne, "body")) {
            if (body_at < 0) body_at = position;
        } else if (name_is(t, ns, ne, "head")) {
            if (head_at < 0) head_at = position;
        } else if (name_is(t, ns, ne, "html")) {
            if (html_at < 0) html_at = position;
        } else if ((name_is(t, ns, ne, "base") || name_is(t, ns, ne, "meta")) && !template_depth) {
            PyObject *extra = Py_BuildValue("(snn)", lower(CH(t, ns)) == 'b' ? "base" : "meta", tag.attrs_start,
                                            tag.attrs_end);
            if (extra == NULL || PyList_Append(extras, extra) < 0) {
                Py_XDECREF(extra);
                goto fail;
            }
            Py_DECREF(extra);
        }
    }
#define OPT(v) ((v) < 0 ? (Py_INCREF(Py_None), Py_None) : PyLong_FromSsize_t(v))
    PyMem_Free(stack);
    PyMem_Free(narrow);
    return Py_BuildValue("(NNNNNNn)", links, OPT(body_at), OPT(head_at), OPT(html_at), OPT(doctype_end), extras,
                         raw);
fail:
    PyMem_Free(stack);
    PyMem_Free(narrow);
    Py_XDECREF(links);
    Py_XDECREF(extras);
    return NULL;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_O, "scan(text) -> (links, body_at, head_at, html_at, doctype_end, extras, raw)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastscan", "The rewrite scanner in C.", -1, methods};

PyMODINIT_FUNC PyInit__fastscan(void) { return PyModule_Create(&module); }
