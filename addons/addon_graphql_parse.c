/* GraphQL executable documents: a lexer over UTF-8 bytes and a recursive-descent parser with a
 * depth cap. Written from the grammar of the GraphQL specification (Appendix B/C); the lexical
 * corner cases (numbers followed by names, surrogate-pair escapes, \u{...}) follow what the
 * reference implementation's lexer (graphql-js, graphql-core) accepts. */
#include "addons/addon_graphql_parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "base/px_grow.h"

typedef enum gql_tok {
    GQL_EOF = 0,
    GQL_PUNCT, /* one of ! $ & ( ) : = @ [ ] { | } */
    GQL_SPREAD,
    GQL_NAME,
    GQL_INT,
    GQL_FLOAT,
    GQL_STRING,
} gql_tok_t;

struct addon_gql_doc {
    addon_gql_op_t *ops;
    size_t nops;
    addon_str_t *fields;
    size_t nfields, fcap;
    size_t *first; /* ops[i]'s first field index, until the pointers are fixed at the end */
    addon_gql_node_t *nodes; /* addon_gql_parse_nodes: fields, variables and argument values */
    size_t nnodes, ncap;
};

typedef struct gql_parser {
    const char *s;
    size_t len;
    size_t pos;
    gql_tok_t tok; /* the current token */
    size_t tstart, tlen;
    size_t ntokens;
    int depth;
    int rc; /* the first error; every function returns it once set */
    char *err;
    size_t errlen;
    addon_gql_doc_t *doc;
    int record;      /* keep nodes (addon_gql_parse_nodes) */
    size_t cur;      /* the node new nodes belong to */
    addon_str_t key; /* the name the next value is bound to */
} gql_parser_t;

/* ---- errors ------------------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static int gql_fail(gql_parser_t *p, int rc, const char *fmt,
                                                          ...)
{
    if (p->rc != 0)
        return p->rc;
    p->rc = rc;
    unsigned line = 1, col = 1;
    for (size_t i = 0; i < p->tstart && i < p->len; i++) {
        if (p->s[i] == '\n' || (p->s[i] == '\r' && (i + 1 >= p->len || p->s[i + 1] != '\n'))) {
            line++;
            col = 1;
        } else if (((unsigned char)p->s[i] & 0xC0) != 0x80) {
            col++;
        }
    }
    if (p->err != NULL && p->errlen > 0) {
        int n = snprintf(p->err, p->errlen, "%u:%u: ", line, col);
        if (n >= 0 && (size_t)n < p->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

/* ---- lexer -------------------------------------------------------------------------------- */

static int gql_name_start(unsigned char c)
{
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int gql_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int gql_hex(unsigned char c)
{
    if (gql_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Length of the valid UTF-8 sequence at s[i] (no overlongs, surrogates or values past
 * U+10FFFF), or 0. */
static size_t gql_utf8(const char *s, size_t len, size_t i)
{
    const unsigned char *u = (const unsigned char *)s + i;
    size_t left = len - i;
    if (u[0] < 0x80)
        return 1;
    if (u[0] >= 0xC2 && u[0] <= 0xDF)
        return left >= 2 && (u[1] & 0xC0) == 0x80 ? 2 : 0;
    if (u[0] >= 0xE0 && u[0] <= 0xEF) {
        if (left < 3 || (u[1] & 0xC0) != 0x80 || (u[2] & 0xC0) != 0x80)
            return 0;
        if ((u[0] == 0xE0 && u[1] < 0xA0) || (u[0] == 0xED && u[1] >= 0xA0))
            return 0;
        return 3;
    }
    if (u[0] >= 0xF0 && u[0] <= 0xF4) {
        if (left < 4 || (u[1] & 0xC0) != 0x80 || (u[2] & 0xC0) != 0x80 || (u[3] & 0xC0) != 0x80)
            return 0;
        if ((u[0] == 0xF0 && u[1] < 0x90) || (u[0] == 0xF4 && u[1] >= 0x90))
            return 0;
        return 4;
    }
    return 0;
}

/* Four hex digits at s[i..i+4) as a value, or -1. */
static long gql_hex4(const gql_parser_t *p, size_t i)
{
    if (i + 4 > p->len)
        return -1;
    long v = 0;
    for (size_t k = 0; k < 4; k++) {
        int h = gql_hex((unsigned char)p->s[i + k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* The escape at s[i] ('\\'): its length, or 0 when invalid. */
static size_t gql_escape(const gql_parser_t *p, size_t i)
{
    if (i + 1 >= p->len)
        return 0;
    char c = p->s[i + 1];
    if (c != 'u')
        return strchr("\"\\/bfnrt", c) != NULL && c != '\0' ? 2 : 0;
    if (i + 2 < p->len && p->s[i + 2] == '{') {
        unsigned long v = 0;
        size_t k = i + 3;
        for (; k < p->len && k < i + 12 && p->s[k] != '}'; k++) {
            int h = gql_hex((unsigned char)p->s[k]);
            if (h < 0)
                return 0;
            v = v * 16 + (unsigned long)h;
        }
        if (k >= p->len || p->s[k] != '}' || k == i + 3)
            return 0;
        if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
            return 0;
        return k + 1 - i;
    }
    long v = gql_hex4(p, i + 2);
    if (v < 0)
        return 0;
    if (v < 0xD800 || v > 0xDFFF)
        return 6;
    if (v <= 0xDBFF && i + 8 <= p->len && p->s[i + 6] == '\\' && p->s[i + 7] == 'u') {
        long t = gql_hex4(p, i + 8);
        if (t >= 0xDC00 && t <= 0xDFFF)
            return 12;
    }
    return 0;
}

static int gql_lex_string(gql_parser_t *p)
{
    size_t i = p->pos + 1;
    while (i < p->len) {
        char c = p->s[i];
        if (c == '"') {
            p->pos = i + 1;
            return 0;
        }
        if (c == '\n' || c == '\r')
            break;
        size_t n = c == '\\' ? gql_escape(p, i) : gql_utf8(p->s, p->len, i);
        if (n == 0)
            return gql_fail(p, PX_EPARSE,
                            c == '\\' ? "invalid escape sequence in a string"
                                      : "invalid UTF-8 in a string");
        i += n;
    }
    return gql_fail(p, PX_EPARSE, "unterminated string");
}

static int gql_lex_block_string(gql_parser_t *p)
{
    size_t i = p->pos + 3;
    while (i < p->len) {
        if (p->s[i] == '"' && i + 2 < p->len && p->s[i + 1] == '"' && p->s[i + 2] == '"') {
            p->pos = i + 3;
            return 0;
        }
        if (p->s[i] == '\\' && i + 3 < p->len && memcmp(p->s + i + 1, "\"\"\"", 3) == 0) {
            i += 4;
            continue;
        }
        size_t n = gql_utf8(p->s, p->len, i);
        if (n == 0)
            return gql_fail(p, PX_EPARSE, "invalid UTF-8 in a block string");
        i += n;
    }
    return gql_fail(p, PX_EPARSE, "unterminated block string");
}

/* Digits at s[i]: at least one; the index after them, or 0 with the error set. */
static size_t gql_lex_digits(gql_parser_t *p, size_t i)
{
    if (i >= p->len || !gql_digit((unsigned char)p->s[i])) {
        gql_fail(p, PX_EPARSE, "invalid number: expected a digit");
        return 0;
    }
    while (i < p->len && gql_digit((unsigned char)p->s[i]))
        i++;
    return i;
}

static int gql_lex_number(gql_parser_t *p)
{
    size_t i = p->pos;
    int is_float = 0;
    if (p->s[i] == '-')
        i++;
    if (i < p->len && p->s[i] == '0') {
        i++;
        if (i < p->len && gql_digit((unsigned char)p->s[i]))
            return gql_fail(p, PX_EPARSE, "invalid number: a digit after a leading 0");
    } else if ((i = gql_lex_digits(p, i)) == 0) {
        return p->rc;
    }
    if (i < p->len && p->s[i] == '.') {
        is_float = 1;
        if ((i = gql_lex_digits(p, i + 1)) == 0)
            return p->rc;
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        is_float = 1;
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        if ((i = gql_lex_digits(p, i)) == 0)
            return p->rc;
    }
    if (i < p->len && (p->s[i] == '.' || gql_name_start((unsigned char)p->s[i])))
        return gql_fail(p, PX_EPARSE, "invalid number: followed by '%c'", p->s[i]);
    p->tok = is_float ? GQL_FLOAT : GQL_INT;
    p->pos = i;
    return 0;
}

/* Skips ignored tokens: BOM, white space, line terminators, commas, comments. */
static int gql_skip(gql_parser_t *p)
{
    while (p->pos < p->len) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == ' ' || c == '\t' || c == ',' || c == '\n' || c == '\r') {
            p->pos++;
        } else if (c == 0xEF && p->pos + 2 < p->len && (unsigned char)p->s[p->pos + 1] == 0xBB &&
                   (unsigned char)p->s[p->pos + 2] == 0xBF) {
            p->pos += 3;
        } else if (c == '#') {
            while (p->pos < p->len && p->s[p->pos] != '\n' && p->s[p->pos] != '\r') {
                size_t n = gql_utf8(p->s, p->len, p->pos);
                if (n == 0) {
                    p->tstart = p->pos;
                    return gql_fail(p, PX_EPARSE, "invalid UTF-8 in a comment");
                }
                p->pos += n;
            }
        } else {
            break;
        }
    }
    return 0;
}

/* Reads the next token into p->tok/tstart/tlen. */
static int gql_next(gql_parser_t *p)
{
    if (p->rc != 0 || gql_skip(p) != 0)
        return p->rc;
    p->tstart = p->pos;
    if (p->pos >= p->len) {
        p->tok = GQL_EOF;
        p->tlen = 0;
        return 0;
    }
    if (++p->ntokens > ADDON_GQL_MAX_TOKENS)
        return gql_fail(p, PX_ETOOBIG, "more than %d tokens", ADDON_GQL_MAX_TOKENS);
    unsigned char c = (unsigned char)p->s[p->pos];
    int rc = 0;
    if (c != '\0' && strchr("!$&():=@[]{|}", c) != NULL) {
        p->tok = GQL_PUNCT;
        p->pos++;
    } else if (c == '.') {
        if (p->pos + 2 >= p->len || p->s[p->pos + 1] != '.' || p->s[p->pos + 2] != '.')
            return gql_fail(p, PX_EPARSE, "unexpected '.'");
        p->tok = GQL_SPREAD;
        p->pos += 3;
    } else if (gql_name_start(c)) {
        p->tok = GQL_NAME;
        while (p->pos < p->len && (gql_name_start((unsigned char)p->s[p->pos]) ||
                                   gql_digit((unsigned char)p->s[p->pos])))
            p->pos++;
    } else if (c == '-' || gql_digit(c)) {
        rc = gql_lex_number(p);
    } else if (c == '"') {
        p->tok = GQL_STRING;
        int block = p->pos + 2 < p->len && p->s[p->pos + 1] == '"' && p->s[p->pos + 2] == '"';
        rc = block ? gql_lex_block_string(p) : gql_lex_string(p);
    } else {
        return gql_fail(p, PX_EPARSE, "unexpected character 0x%02x", c);
    }
    p->tlen = p->pos - p->tstart;
    return rc;
}

/* ---- parser helpers ----------------------------------------------------------------------- */

static int gql_is(const gql_parser_t *p, char punct)
{
    return p->tok == GQL_PUNCT && p->s[p->tstart] == punct;
}

static int gql_is_name(const gql_parser_t *p, const char *word)
{
    size_t n = strlen(word);
    return p->tok == GQL_NAME && p->tlen == n && memcmp(p->s + p->tstart, word, n) == 0;
}

static int gql_unexpected(gql_parser_t *p, const char *wanted)
{
    if (p->tok == GQL_EOF)
        return gql_fail(p, PX_EPARSE, "expected %s, got the end of the document", wanted);
    return gql_fail(p, PX_EPARSE, "expected %s, got '%.*s'", wanted,
                    (int)(p->tlen > 40 ? 40 : p->tlen), p->s + p->tstart);
}

static int gql_expect(gql_parser_t *p, char punct)
{
    if (p->rc != 0)
        return p->rc;
    if (!gql_is(p, punct)) {
        char w[4] = {'\'', punct, '\'', '\0'};
        return gql_unexpected(p, w);
    }
    return gql_next(p);
}

/* A Name into *out (may be NULL). */
static int gql_name(gql_parser_t *p, addon_str_t *out)
{
    if (p->rc != 0)
        return p->rc;
    if (p->tok != GQL_NAME)
        return gql_unexpected(p, "a name");
    if (out != NULL)
        *out = (addon_str_t){p->s + p->tstart, p->tlen};
    return gql_next(p);
}

static int gql_enter(gql_parser_t *p)
{
    if (++p->depth > ADDON_GQL_MAX_DEPTH)
        return gql_fail(p, PX_ETOOBIG, "nested deeper than %d", ADDON_GQL_MAX_DEPTH);
    return 0;
}

/* Records a node under p->cur when nodes are kept; its index (ADDON_GQL_NONE when not kept). */
static size_t gql_node(gql_parser_t *p, addon_gql_nkind_t kind, addon_str_t key, addon_str_t text)
{
    addon_gql_doc_t *d = p->doc;
    if (!p->record || p->rc != 0)
        return ADDON_GQL_NONE;
    if (px_grow(&d->nodes, &d->ncap, d->nnodes + 1, sizeof(*d->nodes), 64, SIZE_MAX) != 0) {
        gql_fail(p, PX_ENOMEM, "out of memory");
        return ADDON_GQL_NONE;
    }
    d->nodes[d->nnodes] = (addon_gql_node_t){kind, key, text, p->cur, d->nnodes + 1};
    return d->nnodes++;
}

/* Node i's subtree ends here (after its last child); i may be ADDON_GQL_NONE. */
static void gql_node_close(gql_parser_t *p, size_t i)
{
    if (i != ADDON_GQL_NONE && i < p->doc->nnodes)
        p->doc->nodes[i].end = p->doc->nnodes;
}

static addon_str_t gql_token(const gql_parser_t *p)
{
    return (addon_str_t){p->s + p->tstart, p->tlen};
}

/* ---- values, types, directives -------------------------------------------------------------- */

static int gql_value(gql_parser_t *p, int is_const);

static int gql_value_list(gql_parser_t *p, int is_const)
{
    size_t outer = p->cur;
    p->cur = gql_node(p, ADDON_GQL_N_LIST, p->key, gql_token(p));
    p->key = (addon_str_t){NULL, 0};
    if (gql_next(p) != 0 || gql_enter(p) != 0)
        return p->rc;
    while (p->rc == 0 && !gql_is(p, ']'))
        gql_value(p, is_const);
    p->depth--;
    gql_node_close(p, p->cur);
    p->cur = outer;
    return gql_expect(p, ']');
}

static int gql_value_object(gql_parser_t *p, int is_const)
{
    size_t outer = p->cur;
    p->cur = gql_node(p, ADDON_GQL_N_OBJECT, p->key, gql_token(p));
    if (gql_next(p) != 0 || gql_enter(p) != 0)
        return p->rc;
    while (p->rc == 0 && !gql_is(p, '}')) {
        gql_name(p, &p->key);
        gql_expect(p, ':');
        gql_value(p, is_const);
    }
    p->depth--;
    gql_node_close(p, p->cur);
    p->cur = outer;
    return gql_expect(p, '}');
}

static int gql_value(gql_parser_t *p, int is_const)
{
    if (p->rc != 0)
        return p->rc;
    static const addon_gql_nkind_t kinds[] = {
        [GQL_INT] = ADDON_GQL_N_INT,
        [GQL_FLOAT] = ADDON_GQL_N_FLOAT,
        [GQL_STRING] = ADDON_GQL_N_STRING,
        [GQL_NAME] = ADDON_GQL_N_NAME,
    };
    addon_str_t var = {NULL, 0};
    switch (p->tok) {
    case GQL_INT:
    case GQL_FLOAT:
    case GQL_STRING:
    case GQL_NAME: /* true, false, null or an enum value */
        gql_node(p, kinds[p->tok], p->key, gql_token(p));
        return gql_next(p);
    case GQL_PUNCT:
        if (gql_is(p, '$') && !is_const) {
            gql_next(p);
            gql_name(p, &var);
            gql_node(p, ADDON_GQL_N_VAR, p->key, var);
            return p->rc;
        }
        if (gql_is(p, '['))
            return gql_value_list(p, is_const);
        if (gql_is(p, '{'))
            return gql_value_object(p, is_const);
        break;
    default:
        break;
    }
    return gql_unexpected(p, is_const ? "a constant value" : "a value");
}

static int gql_type(gql_parser_t *p)
{
    if (p->rc != 0)
        return p->rc;
    if (gql_is(p, '[')) {
        if (gql_next(p) != 0 || gql_enter(p) != 0)
            return p->rc;
        gql_type(p);
        p->depth--;
        gql_expect(p, ']');
    } else {
        gql_name(p, NULL);
    }
    if (p->rc == 0 && gql_is(p, '!'))
        gql_next(p);
    return p->rc;
}

/* Arguments? : ( Name : Value ... ) with at least one argument. */
static int gql_arguments(gql_parser_t *p, int is_const)
{
    if (p->rc != 0 || !gql_is(p, '('))
        return p->rc;
    gql_next(p);
    do {
        gql_name(p, &p->key);
        gql_expect(p, ':');
        gql_value(p, is_const);
    } while (p->rc == 0 && !gql_is(p, ')'));
    return gql_expect(p, ')');
}

static int gql_directives(gql_parser_t *p, int is_const)
{
    while (p->rc == 0 && gql_is(p, '@')) {
        gql_next(p);
        gql_name(p, NULL);
        gql_arguments(p, is_const);
    }
    return p->rc;
}

/* ---- selections ------------------------------------------------------------------------------ */

static int gql_add_field(gql_parser_t *p, addon_str_t name)
{
    addon_gql_doc_t *d = p->doc;
    if (d->nfields == ADDON_GQL_MAX_FIELDS)
        return gql_fail(p, PX_ETOOBIG, "more than %d top-level fields", ADDON_GQL_MAX_FIELDS);
    if (px_grow(&d->fields, &d->fcap, d->nfields + 1, sizeof(*d->fields), 16,
                ADDON_GQL_MAX_FIELDS) != 0)
        return gql_fail(p, PX_ENOMEM, "out of memory");
    d->fields[d->nfields++] = name;
    return 0;
}

/* Where a selection set sits: level 0 is an operation's root, 1 an inline fragment in it, 2 an
 * inline fragment in that; fields there are top-level fields. -1: not collected. */
static int gql_selection_set(gql_parser_t *p, int level);

static void gql_root_spread(gql_parser_t *p, int level)
{
    if (level >= 0)
        p->doc->ops[p->doc->nops - 1].root_spread = 1;
}

static int gql_field(gql_parser_t *p, int level)
{
    addon_str_t name = {NULL, 0};
    gql_name(p, &name);
    if (p->rc == 0 && gql_is(p, ':')) {
        gql_next(p);
        gql_name(p, &name);
    }
    if (p->rc == 0 && level >= 0)
        gql_add_field(p, name);
    size_t outer = p->cur;
    p->cur = gql_node(p, ADDON_GQL_N_FIELD, name, name);
    gql_arguments(p, 0);
    gql_directives(p, 0);
    if (p->rc == 0 && gql_is(p, '{'))
        gql_selection_set(p, -1);
    gql_node_close(p, p->cur);
    p->cur = outer;
    return p->rc;
}

/* After "...": a named fragment spread, or an inline fragment. */
static int gql_fragment(gql_parser_t *p, int level)
{
    gql_next(p);
    if (p->rc == 0 && p->tok == GQL_NAME && !gql_is_name(p, "on")) {
        gql_root_spread(p, level);
        gql_next(p);
        return gql_directives(p, 0);
    }
    if (p->rc == 0 && gql_is_name(p, "on")) {
        gql_next(p);
        gql_name(p, NULL);
    }
    gql_directives(p, 0);
    if (level == 2)
        gql_root_spread(p, level); /* deeper than the reference resolves: fail-secure */
    return gql_selection_set(p, level >= 0 && level < 2 ? level + 1 : -1);
}

static int gql_selection_set(gql_parser_t *p, int level)
{
    if (gql_expect(p, '{') != 0 || gql_enter(p) != 0)
        return p->rc;
    do {
        if (p->tok == GQL_SPREAD)
            gql_fragment(p, level);
        else
            gql_field(p, level);
    } while (p->rc == 0 && !gql_is(p, '}'));
    p->depth--;
    return gql_expect(p, '}');
}

/* ---- definitions --------------------------------------------------------------------------- */

static int gql_variable_definitions(gql_parser_t *p)
{
    if (p->rc != 0 || !gql_is(p, '('))
        return p->rc;
    gql_next(p);
    do {
        addon_str_t name = {NULL, 0};
        gql_expect(p, '$');
        gql_name(p, &name);
        gql_expect(p, ':');
        gql_type(p);
        p->cur = gql_node(p, ADDON_GQL_N_VARDEF, name, name);
        p->key = (addon_str_t){NULL, 0};
        if (p->rc == 0 && gql_is(p, '=')) {
            gql_next(p);
            gql_value(p, 1);
        }
        gql_directives(p, 1);
        gql_node_close(p, p->cur);
        p->cur = ADDON_GQL_NONE;
    } while (p->rc == 0 && !gql_is(p, ')'));
    return gql_expect(p, ')');
}

static int gql_operation(gql_parser_t *p)
{
    addon_gql_doc_t *d = p->doc;
    if (d->nops == ADDON_GQL_MAX_OPS)
        return gql_fail(p, PX_ETOOBIG, "more than %d operations", ADDON_GQL_MAX_OPS);
    addon_gql_op_t *op = &d->ops[d->nops];
    memset(op, 0, sizeof(*op));
    d->first[d->nops++] = d->nfields;
    if (!gql_is(p, '{')) {
        if (gql_is_name(p, "mutation"))
            op->type = ADDON_GQL_MUTATION;
        else if (gql_is_name(p, "subscription"))
            op->type = ADDON_GQL_SUBSCRIPTION;
        gql_next(p);
        if (p->rc == 0 && p->tok == GQL_NAME)
            gql_name(p, &op->name);
        gql_variable_definitions(p);
        gql_directives(p, 0);
    }
    gql_selection_set(p, 0);
    op->nfields = d->nfields - d->first[d->nops - 1];
    return p->rc;
}

static int gql_fragment_definition(gql_parser_t *p)
{
    gql_next(p);
    if (p->rc == 0 && gql_is_name(p, "on"))
        return gql_unexpected(p, "a fragment name other than 'on'");
    gql_name(p, NULL);
    if (p->rc == 0 && !gql_is_name(p, "on"))
        return gql_unexpected(p, "'on'");
    gql_next(p);
    gql_name(p, NULL);
    gql_directives(p, 0);
    return gql_selection_set(p, -1);
}

static int gql_definition(gql_parser_t *p)
{
    if (gql_is(p, '{') || gql_is_name(p, "query") || gql_is_name(p, "mutation") ||
        gql_is_name(p, "subscription"))
        return gql_operation(p);
    if (gql_is_name(p, "fragment"))
        return gql_fragment_definition(p);
    if (p->tok == GQL_NAME || p->tok == GQL_STRING)
        return gql_fail(p, PX_EPARSE,
                        "only operations and fragments are allowed (an executable document), "
                        "got '%.*s'",
                        (int)(p->tlen > 40 ? 40 : p->tlen), p->s + p->tstart);
    return gql_unexpected(p, "an operation or a fragment");
}

static int gql_parse(const char *src, size_t len, int record, addon_gql_doc_t **out, char *err,
                     size_t errlen)
{
    *out = NULL;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    gql_parser_t p = {.s = src,
                      .len = len,
                      .err = err,
                      .errlen = errlen,
                      .record = record,
                      .cur = ADDON_GQL_NONE};
    if (len > ADDON_GQL_MAX_SIZE)
        return gql_fail(&p, PX_ETOOBIG, "document longer than %d bytes", ADDON_GQL_MAX_SIZE);
    addon_gql_doc_t *d = calloc(1, sizeof(*d));
    if (d != NULL) {
        d->ops = calloc(ADDON_GQL_MAX_OPS, sizeof(*d->ops));
        d->first = calloc(ADDON_GQL_MAX_OPS, sizeof(*d->first));
    }
    if (d == NULL || d->ops == NULL || d->first == NULL) {
        addon_gql_free(d);
        return PX_ENOMEM;
    }
    p.doc = d;
    gql_next(&p);
    do {
        gql_definition(&p);
    } while (p.rc == 0 && p.tok != GQL_EOF);
    if (p.rc != 0) {
        addon_gql_free(d);
        return p.rc;
    }
    for (size_t i = 0; i < d->nops; i++)
        d->ops[i].fields = d->fields != NULL ? d->fields + d->first[i] : NULL;
    *out = d;
    return 0;
}

int addon_gql_parse(const char *src, size_t len, addon_gql_doc_t **out, char *err, size_t errlen)
{
    return gql_parse(src, len, 0, out, err, errlen);
}

int addon_gql_parse_nodes(const char *src, size_t len, addon_gql_doc_t **out, char *err,
                          size_t errlen)
{
    return gql_parse(src, len, 1, out, err, errlen);
}

size_t addon_gql_node_count(const addon_gql_doc_t *d)
{
    return d != NULL ? d->nnodes : 0;
}

const addon_gql_node_t *addon_gql_node(const addon_gql_doc_t *d, size_t i)
{
    return d != NULL && i < d->nnodes ? &d->nodes[i] : NULL;
}

size_t addon_gql_count(const addon_gql_doc_t *d)
{
    return d != NULL ? d->nops : 0;
}

const addon_gql_op_t *addon_gql_op(const addon_gql_doc_t *d, size_t i)
{
    return d != NULL && i < d->nops ? &d->ops[i] : NULL;
}

void addon_gql_free(addon_gql_doc_t *d)
{
    if (d == NULL)
        return;
    free(d->ops);
    free(d->first);
    free(d->fields);
    free(d->nodes);
    free(d);
}

const char *addon_gql_type_name(addon_gql_type_t t)
{
    switch (t) {
    case ADDON_GQL_MUTATION:
        return "mutation";
    case ADDON_GQL_SUBSCRIPTION:
        return "subscription";
    default:
        return "query";
    }
}
