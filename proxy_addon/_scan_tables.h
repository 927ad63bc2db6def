/* Tokenizer tables of the rewriter's scanners: written by tools/gen_scan_tables.py, do not edit. */
#ifndef PAGERANK_SCAN_TABLES_H
#define PAGERANK_SCAN_TABLES_H
#define MODEL_DATA 0
#define MODEL_RCDATA 1
#define MODEL_RAWTEXT 2
#define MODEL_SCRIPT_DATA 3
#define MODEL_PLAINTEXT 4
static const char *const TEXT_ELEMENTS[] = {"iframe", "noembed", "noframes", "noscript", "plaintext", "script", "style", "textarea", "title", "xmp", NULL};
static const int TEXT_ELEMENT_MODELS[] = {MODEL_RAWTEXT, MODEL_RAWTEXT, MODEL_RAWTEXT, MODEL_RAWTEXT, MODEL_PLAINTEXT, MODEL_SCRIPT_DATA, MODEL_RAWTEXT, MODEL_RCDATA, MODEL_RCDATA, MODEL_RAWTEXT};
static const char *const BREAKOUT[] = {"b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em", "embed", "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing", "menu", "meta", "nobr", "ol", "p", "pre", "ruby", "s", "small", "span", "strike", "strong", "sub", "sup", "table", "tt", "u", "ul", "var", NULL};
static const char *const FONT_BREAKOUT_ATTRIBUTES[] = {"color", "face", "size", NULL};
static const char *const END_TAG_BREAKOUT[] = {"br", "p", NULL};
static const char *const SVG_HTML_INTEGRATION[] = {"desc", "foreignobject", "title", NULL};
static const char *const MATHML_TEXT_INTEGRATION[] = {"mi", "mn", "mo", "ms", "mtext", NULL};
static const char *const MATHML_TEXT_INTEGRATION_FOREIGN[] = {"malignmark", "mglyph", NULL};
static const char *const ANNOTATION_XML_HTML_ENCODINGS[] = {"application/xhtml+xml", "text/html", NULL};
static const char *const HTML_ELEMENTS[] = {"a", "abbr", "address", "area", "article", "aside", "audio", "b", "base", "bdi", "bdo", "blockquote", "br", "button", "canvas", "caption", "cite", "code", "col", "colgroup", "data", "datalist", "dd", "del", "details", "dfn", "dialog", "div", "dl", "dt", "em", "embed", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "i", "iframe", "img", "input", "ins", "kbd", "label", "legend", "li", "link", "main", "map", "mark", "menu", "meta", "meter", "nav", "noscript", "object", "ol", "optgroup", "option", "output", "p", "picture", "pre", "progress", "q", "rp", "rt", "ruby", "s", "samp", "search", "section", "select", "slot", "small", "source", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "template", "textarea", "tfoot", "th", "thead", "time", "tr", "track", "u", "ul", "var", "video", "wbr", NULL};
static const char *const VOID_ELEMENTS[] = {"area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "img", "input", "keygen", "link", "meta", "param", "source", "track", "wbr", NULL};
static const char *const LINK_CONTENT[] = {"abbr", "b", "bdi", "bdo", "big", "br", "cite", "code", "data", "del", "dfn", "em", "font", "i", "img", "ins", "kbd", "mark", "math", "nobr", "picture", "q", "s", "samp", "small", "source", "span", "strike", "strong", "sub", "sup", "svg", "time", "tt", "u", "var", "wbr", NULL};
static const char *const INTERESTING[] = {"a", "area", "base", "body", "frameset", "head", "html", "iframe", "math", "meta", "noembed", "noframes", "noscript", "plaintext", "script", "style", "svg", "template", "textarea", "title", "xmp", NULL};
static const char *const INTERESTING_END[] = {"math", "svg", "template", NULL};
#define LONGEST_NAME 14
#endif
