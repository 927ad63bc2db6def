/* A page's links, titles, bases, robots tags and canonical links read by the HTML standard's tokenizer:
 * the C fast path of rankstore.extract.extract, whose reference is the lexbor tree that extract walks.
 *
 * read(document) -> None, or (links, titles, bases, metas, canonicals) for extract to finish:
 *   links       [(href, rel, text, is_area)]: each <a href> and <area href> in document order; an <a>'s
 *               text its text runs joined by spaces (as lexbor's text(deep=True, separator=" ")), an
 *               <area>'s its alt
 *   titles      [text]: each HTML <title>'s text, in order
 *   bases       [href]: each <base href>'s
 *   metas       [(name, content)]: each <meta name>'s
 *   canonicals  [(rel, href)]: each <link rel href>'s
 * Values are as written (character references undecoded); an attribute written without a value is None.
 *
 * A tokenizer sees the tree that lexbor builds only where no tree-construction rule moves or closes an
 * element holding a link: it reads on while it can tell so, and answers None (extract parses the page with
 * lexbor) where it cannot.  The checks, each conservative:
 *   - inside an <a>, only phrasing elements (well nested, closed in order), voids and SVG drawings; an
 *     end tag that closes anything else, or a second <a> inside one of them, is not followed;
 *   - an <a>, <area>, <title>, <base>, <meta> or <link> in a table but not in a cell or caption (foster
 *     parenting puts it before the table), or inside a <select>;
 *   - SVG other than drawing elements (a foreign <a>, <title>, <foreignObject>, a breakout, CDATA), any
 *     MathML, <template>, <frameset>, <plaintext> inside an <a>, a NUL byte, or a value that is not UTF-8.
 * <noscript> is read as markup: lexbor parses with scripting off, as a crawler does.
 * tests/test_fastextract.py holds the two to the same pages: the doc sites, html5lib's tree-construction
 * inputs, and generated ones.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef struct {
    const unsigned char *d;
    Py_ssize_t n;
} Doc;

static inline int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }
static inline int is_alpha(unsigned char c) { return ((c | 32) >= 'a' && (c | 32) <= 'z'); }
static inline unsigned char lower(unsigned char c) { return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c; }

/* [s, e) spells `name` (lower case), ASCII case-insensitively */
static int spells(const Doc *t, Py_ssize_t s, Py_ssize_t e, const char *name) {
    Py_ssize_t k = 0;
    for (; s + k < e; k++) {
        if (!name[k] || lower(t->d[s + k]) != (unsigned char)name[k]) return 0;
    }
    return name[k] == 0;
}

static int one_of(const Doc *t, Py_ssize_t s, Py_ssize_t e, const char *const *names) {
    for (; *names; names++)
        if (spells(t, s, e, *names)) return 1;
    return 0;
}

/* elements an <a> may hold and still hold all their text in its place: phrasing content that no start tag
   of the same kind closes (formatting elements are adopted only when misnested, which the checks refuse) */
static const char *const PHRASING[] = {"span", "em",   "strong", "b",     "i",    "code",   "tt",  "kbd",
                                       "samp", "var",  "abbr",   "cite",  "dfn",  "q",      "small", "sub",
                                       "sup",  "mark", "time",   "data",  "bdi",  "bdo",    "u",   "s",
                                       "big",  "strike", "ins",  "del",   "font", "label",  "picture", "acronym", NULL};
static const char *const VOID_IN_A[] = {"img", "br", "wbr", "input", "source", NULL};
/* blocks that close a <p> in button scope and nothing else: in an <a>, while no <p> may be open */
static const char *const BLOCKS[] = {"address", "article", "aside",  "blockquote", "center", "details", "dialog",
                                     "dir",     "div",     "dl",     "fieldset",   "figcaption", "figure", "footer",
                                     "header",  "hgroup",  "main",   "menu",       "nav",    "ol",      "section",
                                     "summary", "ul",      "search", NULL};
static const char *const HEADINGS[] = {"h1", "h2", "h3", "h4", "h5", "h6", NULL};
/* what bounds a button scope (but tables, counted apart): a <p> outside one is not closed inside it */
static const char *const SCOPES[] = {"button", "object", "marquee", "applet", NULL};
/* SVG elements that hold no HTML and no link: an icon's drawing */
static const char *const DRAWING[] = {"svg",     "g",        "path",           "circle",         "rect",
                                      "line",    "polyline", "polygon",        "ellipse",        "use",
                                      "defs",    "symbol",   "lineargradient", "radialgradient", "stop",
                                      "clippath", "mask",    "pattern",        "text",           "tspan",
                                      NULL};
static const char *const RAWTEXT[] = {"style", "xmp", "iframe", "noembed", "noframes", NULL};
static const char *const REFUSED[] = {"math", "template", "frameset", NULL};

#define WANTED 3
typedef struct {
    Py_ssize_t ns, ne; /* the name */
    int self_closing;
    Py_ssize_t end; /* after its '>' */
    /* the first of each wanted attribute: -1 absent, -2 present without a value, else its value's span */
    Py_ssize_t vs[WANTED], ve[WANTED];
} Tag;

/* A tag from its name's first character, by the tokenizer's tag states; -1 if the file ends inside it (the
   standard drops the tag, and nothing follows it).  `wanted`: up to WANTED attribute names, lower case. */
static int read_tag(const Doc *t, Py_ssize_t i, Tag *tag, const char *const *wanted) {
    const unsigned char *d = t->d;
    Py_ssize_t n = t->n;
    tag->ns = i;
    while (i < n && !is_ws(d[i]) && d[i] != '/' && d[i] != '>') i++;
    tag->ne = i;
    tag->self_closing = 0;
    for (int k = 0; k < WANTED; k++) tag->vs[k] = tag->ve[k] = -1;
    for (;;) {
        while (i < n && is_ws(d[i])) i++; /* before attribute name */
        if (i >= n) return -1;
        if (d[i] == '>') {
            tag->end = i + 1;
            return 0;
        }
        if (d[i] == '/') { /* self-closing start tag: else reconsumed before an attribute name */
            if (++i >= n) return -1;
            if (d[i] == '>') {
                tag->self_closing = 1;
                tag->end = i + 1;
                return 0;
            }
            continue;
        }
        Py_ssize_t as = i++; /* an attribute name: its first character may be '=' */
        while (i < n && !is_ws(d[i]) && d[i] != '/' && d[i] != '>' && d[i] != '=') i++;
        Py_ssize_t ae = i;
        while (i < n && is_ws(d[i])) i++; /* after attribute name */
        if (i >= n) return -1;
        Py_ssize_t vs = -2, ve = -2;
        if (d[i] == '=') {
            i++;
            while (i < n && is_ws(d[i])) i++; /* before attribute value */
            if (i >= n) return -1;
            if (d[i] == '"' || d[i] == '\'') {
                const unsigned char *close = memchr(d + i + 1, d[i], (size_t)(n - i - 1));
                if (close == NULL) return -1;
                vs = i + 1;
                ve = close - d;
                i = ve + 1;
            } else if (d[i] == '>') {
                vs = ve = -2; /* a missing value: as lexbor holds it, none (as `<a href>`), not "" */
            } else {
                vs = i;
                while (i < n && !is_ws(d[i]) && d[i] != '>') i++;
                if (i >= n) return -1;
                ve = i;
            }
        }
        if (wanted != NULL)
            for (int k = 0; k < WANTED && wanted[k]; k++)
                if (tag->vs[k] == -1 && spells(t, as, ae, wanted[k])) { /* the first of a name stands */
                    tag->vs[k] = vs;
                    tag->ve[k] = ve;
                }
    }
}

/* '</' + name (lower case) + white space, '/' or '>' at `i` */
static int end_tag_at(const Doc *t, Py_ssize_t i, const char *name) {
    Py_ssize_t len = (Py_ssize_t)strlen(name);
    if (i + 2 + len >= t->n || t->d[i] != '<' || t->d[i + 1] != '/') return 0;
    if (!spells(t, i + 2, i + 2 + len, name)) return 0;
    unsigned char c = t->d[i + 2 + len];
    return is_ws(c) || c == '/' || c == '>';
}

/* RCDATA or RAWTEXT of element `name`: where its end tag starts, or the file's end */
static Py_ssize_t text_end(const Doc *t, Py_ssize_t i, const char *name) {
    for (;;) {
        const unsigned char *lt = memchr(t->d + i, '<', (size_t)(t->n - i));
        if (lt == NULL) return t->n;
        i = lt - t->d;
        if (end_tag_at(t, i, name)) return i;
        i++;
    }
}

static int starts_with(const Doc *t, Py_ssize_t at, const char *s) {
    Py_ssize_t len = (Py_ssize_t)strlen(s);
    return at + len <= t->n && memcmp(t->d + at, s, (size_t)len) == 0;
}

/* script data with its escaped and double-escaped states: where its end tag starts, or the file's end */
static Py_ssize_t script_end(const Doc *t, Py_ssize_t i) {
    Py_ssize_t n = t->n;
    enum { DATA, ESCAPED, DOUBLE_ESCAPED } state = DATA;
    while (i < n) {
        unsigned char c = t->d[i];
        if (state == DATA) {
            const unsigned char *lt = memchr(t->d + i, '<', (size_t)(n - i));
            if (lt == NULL) return n;
            i = lt - t->d;
            if (end_tag_at(t, i, "script")) return i;
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
        } else if (c == '<' && state == ESCAPED && end_tag_at(t, i, "script")) {
            return i;
        } else if (c == '<' && state == ESCAPED && i + 7 < n && spells(t, i + 1, i + 7, "script") &&
                   (is_ws(t->d[i + 7]) || t->d[i + 7] == '/' || t->d[i + 7] == '>')) {
            state = DOUBLE_ESCAPED;
            i += 8;
        } else if (c == '<' && state == DOUBLE_ESCAPED && end_tag_at(t, i, "script")) {
            state = ESCAPED;
            i += 9;
        } else {
            i++;
        }
    }
    return n;
}

/* a bogus comment (or a doctype) from `i`: the offset after its '>', or the file's end */
static Py_ssize_t bogus_end(const Doc *t, Py_ssize_t i) {
    const unsigned char *gt = memchr(t->d + i, '>', (size_t)(t->n - i));
    return gt ? gt - t->d + 1 : t->n;
}

/* after '<!': the offset after a comment, a doctype or a bogus comment */
static Py_ssize_t declaration_end(const Doc *t, Py_ssize_t i) {
    const unsigned char *d = t->d;
    Py_ssize_t n = t->n;
    if (starts_with(t, i, "--")) {
        i += 2;
        if (i < n && d[i] == '>') return i + 1; /* <!--> */
        if (i + 1 < n && d[i] == '-' && d[i + 1] == '>') return i + 2; /* <!---> */
        for (; i + 2 < n; i++) {
            if (d[i] != '-' || d[i + 1] != '-') continue;
            if (d[i + 2] == '>') return i + 3;
            if (d[i + 2] == '!' && i + 3 < n && d[i + 3] == '>') return i + 4;
        }
        return n;
    }
    return bogus_end(t, i);
}

/* a str of the span, None for -2 (no value); NULL with no exception set where it is not UTF-8 */
static PyObject *value(const Doc *t, Py_ssize_t s, Py_ssize_t e) {
    if (s == -2) Py_RETURN_NONE;
    PyObject *v = PyUnicode_DecodeUTF8((const char *)t->d + s, e - s, NULL);
    if (v == NULL) PyErr_Clear();
    return v;
}

typedef struct {
    char *data;
    Py_ssize_t len, room;
} Buffer;

static int append(Buffer *b, const unsigned char *s, Py_ssize_t len) {
    if (b->len + len + 1 > b->room) {
        Py_ssize_t room = (b->room ? b->room * 2 : 256);
        while (room < b->len + len + 1) room *= 2;
        char *data = PyMem_Realloc(b->data, (size_t)room);
        if (data == NULL) return -1;
        b->data = data;
        b->room = room;
    }
    memcpy(b->data + b->len, s, (size_t)len);
    b->len += len;
    return 0;
}

#define MOST_NESTED 64
typedef struct {
    Doc t;
    PyObject *links, *titles, *bases, *metas, *canonicals;
    /* the open <a>: its href and rel (new references, or NULL when none is open) and its text so far */
    int in_a;
    PyObject *href, *rel;
    Buffer text;
    Py_ssize_t nested[MOST_NESTED][2]; /* the elements open inside it, names as spans */
    int depth;
    Py_ssize_t svg[MOST_NESTED][2]; /* the SVG elements open */
    int svg_depth;
    int tables, in_cell[MOST_NESTED]; /* the tables open, and whether each has a cell or caption open */
    int in_select;
    /* <p>s begun and not ended by </p> (implicit ends uncounted: more, never fewer, than are open), the scope
       bounds begun (never uncounted), and whether a </p> came where it may have closed none (after a bound or
       in a table): then any may be open */
    int paragraphs, scopes, unsure;
} Reader;

/* no <p> may be open: a block that closes one would close the <a> around it */
static int no_paragraph(const Reader *r) { return r->paragraphs == 0 && !r->unsure; }

enum { REFUSE = -2, FAIL = -1, OK = 0 };

/* the <a> open ends: its link is added (one with an href) */
static int close_a(Reader *r) {
    int status = OK;
    if (r->href != NULL) {
        PyObject *text = PyUnicode_DecodeUTF8(r->text.data ? r->text.data : "", r->text.len, NULL);
        if (text == NULL) {
            PyErr_Clear();
            status = REFUSE;
        } else {
            PyObject *link = PyTuple_Pack(4, r->href, r->rel, text, Py_False);
            Py_DECREF(text);
            if (link == NULL || PyList_Append(r->links, link) < 0) status = FAIL;
            Py_XDECREF(link);
        }
    }
    Py_CLEAR(r->href);
    Py_CLEAR(r->rel);
    r->in_a = 0;
    r->text.len = 0;
    r->depth = 0;
    return status;
}

/* an attribute's value as a new reference (None when absent or without a value); NULL to refuse */
static PyObject *attribute(Reader *r, const Tag *tag, int k) {
    if (tag->vs[k] == -1) Py_RETURN_NONE;
    return value(&r->t, tag->vs[k], tag->ve[k]);
}

static int add_pair(Reader *r, PyObject *list, const Tag *tag) {
    PyObject *first = attribute(r, tag, 0);
    if (first == NULL) return PyErr_Occurred() ? FAIL : REFUSE;
    PyObject *second = attribute(r, tag, 1);
    if (second == NULL) {
        Py_DECREF(first);
        return PyErr_Occurred() ? FAIL : REFUSE;
    }
    PyObject *pair = PyTuple_Pack(2, first, second);
    Py_DECREF(first);
    Py_DECREF(second);
    int status = (pair == NULL || PyList_Append(list, pair) < 0) ? FAIL : OK;
    Py_XDECREF(pair);
    return status;
}

static const char *const HREF_REL[] = {"href", "rel", NULL};
static const char *const AREA[] = {"href", "rel", "alt"};
static const char *const META[] = {"name", "content", NULL};
static const char *const REL_HREF[] = {"rel", "href", NULL};

/* a start tag (its name at `i`): how the reading goes on, and where (`*next`) */
static int start_tag(Reader *r, Py_ssize_t i, Py_ssize_t *next) {
    const Doc *t = &r->t;
    Tag tag;
    Py_ssize_t ns = i, ne = i;
    while (ne < t->n && !is_ws(t->d[ne]) && t->d[ne] != '/' && t->d[ne] != '>') ne++;
    const char *const *wanted = NULL;
    int is_a = spells(t, ns, ne, "a"), is_area = spells(t, ns, ne, "area");
    if (is_a)
        wanted = HREF_REL;
    else if (is_area)
        wanted = AREA;
    else if (spells(t, ns, ne, "meta"))
        wanted = META;
    else if (spells(t, ns, ne, "link"))
        wanted = REL_HREF;
    else if (spells(t, ns, ne, "base"))
        wanted = HREF_REL;
    if (read_tag(t, i, &tag, wanted) < 0) {
        *next = t->n; /* dropped at the file's end */
        return OK;
    }
    *next = tag.end;
    if (r->svg_depth > 0) { /* in an SVG drawing: only more drawing */
        if (!one_of(t, ns, ne, DRAWING)) return REFUSE;
        if (!tag.self_closing) {
            if (r->svg_depth == MOST_NESTED) return REFUSE;
            r->svg[r->svg_depth][0] = ns;
            r->svg[r->svg_depth++][1] = ne;
        }
        return OK;
    }
    if (r->in_select) { /* options only: anything else ends the select, or is dropped */
        return (spells(t, ns, ne, "option") || spells(t, ns, ne, "optgroup") || spells(t, ns, ne, "hr")) ? OK
                                                                                                            : REFUSE;
    }
    if (one_of(t, ns, ne, REFUSED)) return REFUSE;
    if (spells(t, ns, ne, "svg")) {
        if (!tag.self_closing) {
            r->svg[0][0] = ns;
            r->svg[0][1] = ne;
            r->svg_depth = 1;
        }
        return OK;
    }
    if (r->in_a) {
        if (is_a) {
            if (r->depth > 0) return REFUSE; /* adopted: the outer <a> is split around what it holds */
            int status = close_a(r);
            if (status != OK) return status;
        } else if (one_of(t, ns, ne, PHRASING)) {
            if (r->depth == MOST_NESTED) return REFUSE;
            r->nested[r->depth][0] = ns; /* a self-closing flag closes no HTML element but a void */
            r->nested[r->depth++][1] = ne;
            return OK;
        } else if (one_of(t, ns, ne, VOID_IN_A)) {
            return OK;
        } else if (spells(t, ns, ne, "hr")) {
            return no_paragraph(r) ? OK : REFUSE;
        } else {
            /* a block: closes a <p> open; a heading pops a heading; a list item closes the one open up to a
               block, and so only straight inside its list */
            Py_ssize_t *top = r->depth > 0 ? r->nested[r->depth - 1] : NULL;
            int fits;
            if (one_of(t, ns, ne, BLOCKS))
                fits = 1;
            else if (one_of(t, ns, ne, HEADINGS))
                fits = top == NULL || !one_of(t, top[0], top[1], HEADINGS);
            else if (spells(t, ns, ne, "li"))
                fits = top != NULL && (spells(t, top[0], top[1], "ul") || spells(t, top[0], top[1], "ol") ||
                                       spells(t, top[0], top[1], "menu"));
            else if (spells(t, ns, ne, "dd") || spells(t, ns, ne, "dt"))
                fits = top != NULL && spells(t, top[0], top[1], "dl");
            else
                return REFUSE;
            if (!fits || !no_paragraph(r) || r->depth == MOST_NESTED) return REFUSE;
            r->nested[r->depth][0] = ns;
            r->nested[r->depth++][1] = ne;
            return OK;
        }
    }
    int in_table = r->tables > 0 && !r->in_cell[r->tables - 1];
    if (is_a || is_area) {
        if (in_table) return REFUSE; /* foster parented */
        if (is_a) {
            r->in_a = 1;
            r->depth = 0;
            r->text.len = 0;
            if (tag.vs[0] != -1) { /* an <a> without href is no link, but it is open */
                r->href = attribute(r, &tag, 0);
                if (r->href == NULL) return PyErr_Occurred() ? FAIL : REFUSE;
                r->rel = attribute(r, &tag, 1);
                if (r->rel == NULL) return PyErr_Occurred() ? FAIL : REFUSE;
            }
            return OK;
        }
        if (tag.vs[0] == -1) return OK;
        PyObject *href = attribute(r, &tag, 0), *rel = NULL, *alt = NULL, *link = NULL;
        int status = FAIL;
        if (href != NULL && (rel = attribute(r, &tag, 1)) != NULL && (alt = attribute(r, &tag, 2)) != NULL) {
            link = PyTuple_Pack(4, href, rel, alt, Py_True);
            status = (link == NULL || PyList_Append(r->links, link) < 0) ? FAIL : OK;
        } else if (!PyErr_Occurred()) {
            status = REFUSE;
        }
        Py_XDECREF(href);
        Py_XDECREF(rel);
        Py_XDECREF(alt);
        Py_XDECREF(link);
        return status;
    }
    /* in a table but not in a cell, these are foster parented: put before the table, out of document order */
    if (in_table && (spells(t, ns, ne, "title") || spells(t, ns, ne, "base") || spells(t, ns, ne, "meta") ||
                     spells(t, ns, ne, "link")))
        return REFUSE;
    if (spells(t, ns, ne, "title") || spells(t, ns, ne, "textarea")) {
        const char *name = spells(t, ns, ne, "title") ? "title" : "textarea";
        Py_ssize_t end = text_end(t, tag.end, name);
        if (name[1] == 'i') {
            PyObject *text = value(t, tag.end, end);
            if (text == NULL) return REFUSE;
            int failed = PyList_Append(r->titles, text);
            Py_DECREF(text);
            if (failed) return FAIL;
        }
        *next = end;
        return OK;
    }
    if (spells(t, ns, ne, "script")) {
        *next = script_end(t, tag.end);
        return OK;
    }
    for (const char *const *name = RAWTEXT; *name; name++)
        if (spells(t, ns, ne, *name)) {
            *next = text_end(t, tag.end, *name);
            return OK;
        }
    if (spells(t, ns, ne, "plaintext")) {
        *next = t->n;
        return OK;
    }
    if (spells(t, ns, ne, "base")) {
        if (tag.vs[0] == -1) return OK;
        PyObject *href = attribute(r, &tag, 0);
        if (href == NULL) return PyErr_Occurred() ? FAIL : REFUSE;
        int failed = PyList_Append(r->bases, href);
        Py_DECREF(href);
        return failed ? FAIL : OK;
    }
    if (spells(t, ns, ne, "meta")) return tag.vs[0] == -1 ? OK : add_pair(r, r->metas, &tag);
    if (spells(t, ns, ne, "link")) return (tag.vs[0] == -1 || tag.vs[1] == -1) ? OK : add_pair(r, r->canonicals, &tag);
    if (spells(t, ns, ne, "select")) {
        r->in_select = 1;
        return OK;
    }
    if (spells(t, ns, ne, "p")) {
        r->paragraphs++;
        return OK;
    }
    if (one_of(t, ns, ne, SCOPES)) {
        r->scopes++;
        return OK;
    }
    if (spells(t, ns, ne, "table")) {
        if (in_table) r->tables--; /* a table in a table (not in a cell) ends the first */
        if (r->tables == MOST_NESTED) return REFUSE;
        r->in_cell[r->tables++] = 0;
        return OK;
    }
    if (r->tables > 0) {
        if (spells(t, ns, ne, "td") || spells(t, ns, ne, "th") || spells(t, ns, ne, "caption"))
            r->in_cell[r->tables - 1] = 1;
        else if (spells(t, ns, ne, "tr") || spells(t, ns, ne, "tbody") || spells(t, ns, ne, "thead") ||
                 spells(t, ns, ne, "tfoot") || spells(t, ns, ne, "colgroup") || spells(t, ns, ne, "col"))
            r->in_cell[r->tables - 1] = 0;
    }
    return OK;
}

/* the name [s, e) is the open element's `open` (a span), ASCII case-insensitively */
static int same_name(const Doc *t, Py_ssize_t s, Py_ssize_t e, const Py_ssize_t *open) {
    if (e - s != open[1] - open[0]) return 0;
    for (Py_ssize_t k = 0; k < e - s; k++)
        if (lower(t->d[s + k]) != lower(t->d[open[0] + k])) return 0;
    return 1;
}

/* an end tag (its name at `i`) */
static int end_tag(Reader *r, Py_ssize_t i, Py_ssize_t *next) {
    const Doc *t = &r->t;
    Tag tag;
    if (read_tag(t, i, &tag, NULL) < 0) {
        *next = t->n;
        return OK;
    }
    *next = tag.end;
    Py_ssize_t ns = tag.ns, ne = tag.ne;
    if (r->svg_depth > 0) { /* closes the drawing's last element open, or refused */
        if (!same_name(t, ns, ne, r->svg[r->svg_depth - 1])) return REFUSE;
        r->svg_depth--;
        return OK;
    }
    if (r->in_select) {
        if (spells(t, ns, ne, "select")) r->in_select = 0;
        else if (!spells(t, ns, ne, "option") && !spells(t, ns, ne, "optgroup")) return REFUSE;
        return OK;
    }
    if (r->in_a) {
        if (r->depth > 0) { /* closes the last element open in the link, or refused */
            if (!same_name(t, ns, ne, r->nested[r->depth - 1])) return REFUSE;
            r->depth--;
            return OK;
        }
        return spells(t, ns, ne, "a") ? close_a(r) : REFUSE;
    }
    if (spells(t, ns, ne, "p")) {
        if (r->scopes > 0 || r->tables > 0) r->unsure = 1; /* it may close one, or none and make an empty one */
        if (r->paragraphs > 0) r->paragraphs--;
        return OK;
    }
    /* a scope bound's end tag is not counted: it may end none (a </button> with an <object> open), so the
       bounds once opened stay counted, and every </p> after them leaves the <p>s unsure */
    if (r->tables > 0) {
        if (spells(t, ns, ne, "table"))
            r->tables--;
        else if (spells(t, ns, ne, "td") || spells(t, ns, ne, "th") || spells(t, ns, ne, "caption") ||
                 spells(t, ns, ne, "tr") || spells(t, ns, ne, "tbody") || spells(t, ns, ne, "thead") ||
                 spells(t, ns, ne, "tfoot"))
            r->in_cell[r->tables - 1] = 0;
    }
    return OK;
}

/* the text [s, e) as the open <a>'s, a space before it (lexbor's separator between text nodes) */
static int text(Reader *r, Py_ssize_t s, Py_ssize_t e) {
    if (!r->in_a || r->href == NULL || s >= e) return OK;
    if (r->text.len > 0 && append(&r->text, (const unsigned char *)" ", 1) < 0) return FAIL;
    return append(&r->text, r->t.d + s, e - s) < 0 ? FAIL : OK;
}

static int read_document(Reader *r) {
    const Doc *t = &r->t;
    const unsigned char *d = t->d;
    Py_ssize_t n = t->n, i = 0, run = 0; /* the text run from `run` */
    int status = OK;
    while (i < n && status == OK) {
        const unsigned char *lt = memchr(d + i, '<', (size_t)(n - i));
        if (lt == NULL) break;
        Py_ssize_t at = lt - d;
        if (at + 1 >= n) break; /* a '<' at the end: text */
        unsigned char c = d[at + 1];
        Py_ssize_t next;
        if (c == '!') {
            if (r->svg_depth > 0 && starts_with(t, at + 2, "[CDATA[")) return REFUSE; /* text in SVG */
            /* in a link, a doctype is dropped and the text around it is one node: not followed */
            if (r->in_a && !starts_with(t, at + 2, "--")) return REFUSE;
            next = declaration_end(t, at + 2);
        } else if (c == '?') {
            next = bogus_end(t, at + 1);
        } else if (c == '/') {
            if (at + 2 >= n) break; /* '</' at the end: text */
            unsigned char c2 = d[at + 2];
            if (is_alpha(c2)) {
                if ((status = text(r, run, at)) != OK) break;
                status = end_tag(r, at + 2, &next);
                i = run = next;
                continue;
            }
            if (c2 == '>' && r->in_a) return REFUSE; /* '</>' is dropped: the text around it is one node */
            next = c2 == '>' ? at + 3 : bogus_end(t, at + 2);
        } else if (is_alpha(c)) {
            if ((status = text(r, run, at)) != OK) break;
            status = start_tag(r, at + 1, &next);
            i = run = next;
            continue;
        } else {
            i = at + 1; /* a '<' that starts no tag: text */
            continue;
        }
        if ((status = text(r, run, at)) != OK) break; /* a comment ends a text node */
        i = run = next;
    }
    if (status == OK) status = text(r, run, n);
    if (status == OK && r->in_a) status = close_a(r); /* the file's end closes it */
    return status;
}

static PyObject *read_page(PyObject *self, PyObject *arg) {
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "read() wants bytes");
        return NULL;
    }
    Reader r;
    memset(&r, 0, sizeof r);
    r.t.d = (const unsigned char *)PyBytes_AS_STRING(arg);
    r.t.n = PyBytes_GET_SIZE(arg);
    if (memchr(r.t.d, 0, (size_t)r.t.n) != NULL) Py_RETURN_NONE; /* NUL: the tree drops or replaces it */
    r.links = PyList_New(0);
    r.titles = PyList_New(0);
    r.bases = PyList_New(0);
    r.metas = PyList_New(0);
    r.canonicals = PyList_New(0);
    PyObject *result = NULL;
    if (r.links && r.titles && r.bases && r.metas && r.canonicals) {
        int status = read_document(&r);
        if (status == OK)
            result = PyTuple_Pack(5, r.links, r.titles, r.bases, r.metas, r.canonicals);
        else if (status == REFUSE && !PyErr_Occurred())
            result = Py_NewRef(Py_None);
    }
    Py_XDECREF(r.href);
    Py_XDECREF(r.rel);
    PyMem_Free(r.text.data);
    Py_XDECREF(r.links);
    Py_XDECREF(r.titles);
    Py_XDECREF(r.bases);
    Py_XDECREF(r.metas);
    Py_XDECREF(r.canonicals);
    return result;
}

static PyMethodDef methods[] = {
    {"read", read_page, METH_O, "A page's links, titles, bases, metas and canonical links, or None: lexbor's to read."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastextract", "extract's tokenizer in C.", -1, methods};

PyMODINIT_FUNC PyInit__fastextract(void) { return PyModule_Create(&module); }
