/* The libyaml reader: parses a stream event by event into the document of addon_yaml_tree.c,
 * resolving plain scalars and turning libyaml's marks and offsets into "name:line:col" once,
 * here. The only file that includes yaml.h. */
#include "addons/addon_yaml.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "addons/addon_yaml_int.h"
#include "base/px_err.h"
#include "base/px_grow.h"

#define ADDON__YAML_TAG_STR "tag:yaml.org,2002:str"
#define ADDON__YAML_TAG_SEQ "tag:yaml.org,2002:seq"
#define ADDON__YAML_TAG_MAP "tag:yaml.org,2002:map"

/* An open collection: its node, and where its children start on the pending stack. */
typedef struct addon__yaml_frame {
    addon_yaml_node_t *node;
    size_t base;
} addon__yaml_frame_t;

typedef struct addon__yaml_builder {
    addon_yaml_doc_t *doc;
    const char *data;
    size_t len;
    const addon_yaml_node_t **pending; /* finished children of the open collections */
    size_t npending;
    size_t cap;
    addon__yaml_frame_t frames[ADDON_YAML_MAX_DEPTH];
    size_t depth;
    int docs;
    char *err;
    size_t errlen;
} addon__yaml_builder_t;

/* Writes "name:line:col: message" to err and returns rc. */
static int yaml_report(int rc, char *err, size_t errlen, const char *name, unsigned line,
                       unsigned col, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static int yaml_report(int rc, char *err, size_t errlen, const char *name, unsigned line,
                       unsigned col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    addon__yaml_vreport(err, errlen, name, line, col, fmt, ap);
    va_end(ap);
    return rc;
}

static unsigned yaml_u(size_t v)
{
    return v >= 0xFFFFFFFFu ? 0xFFFFFFFFu : (unsigned)v + 1;
}

/* The 1-based line and column of byte offset off in the input (libyaml gives no mark for
 * reader errors, only an offset). */
static void yaml_offset_pos(const char *data, size_t len, size_t off, unsigned *line, unsigned *col)
{
    size_t l = 0;
    size_t c = 0;
    if (off > len)
        off = len;
    for (size_t i = 0; i < off; i++) {
        if (data[i] == '\n') {
            l++;
            c = 0;
        } else {
            c++;
        }
    }
    *line = yaml_u(l);
    *col = yaml_u(c);
}

static int yaml_parser_failure(addon__yaml_builder_t *b, const yaml_parser_t *ps)
{
    const char *name = b->doc->name;
    const char *problem = ps->problem != NULL ? ps->problem : "unknown error";
    if (ps->error == YAML_MEMORY_ERROR)
        return yaml_report(PX_ENOMEM, b->err, b->errlen, name, 1, 1, "out of memory");
    if (ps->error == YAML_READER_ERROR) {
        unsigned line;
        unsigned col;
        yaml_offset_pos(b->data, b->len, ps->problem_offset, &line, &col);
        if (ps->problem_value == -1)
            return yaml_report(PX_EPARSE, b->err, b->errlen, name, line, col, "%s", problem);
        return yaml_report(PX_EPARSE, b->err, b->errlen, name, line, col, "%s (byte 0x%02x)",
                           problem, (unsigned)ps->problem_value & 0xFFu);
    }
    unsigned line = yaml_u(ps->problem_mark.line);
    unsigned col = yaml_u(ps->problem_mark.column);
    /* An unquoted `*.example.com` is read by YAML as an alias named ".example.com", which
     * libyaml cannot scan: its message says nothing of host patterns, so say what to do. */
    if (ps->context != NULL && strcmp(ps->context, "while scanning an alias") == 0)
        return yaml_report(PX_EPARSE, b->err, b->errlen, name, line, col,
                           "%s (%s at line %u, column %u): quote host patterns that start with "
                           "`*` (\"*.example.com\")",
                           problem, ps->context, yaml_u(ps->context_mark.line),
                           yaml_u(ps->context_mark.column));
    if (ps->context == NULL)
        return yaml_report(PX_EPARSE, b->err, b->errlen, name, line, col, "%s", problem);
    return yaml_report(PX_EPARSE, b->err, b->errlen, name, line, col,
                       "%s (%s at line %u, column %u)", problem, ps->context,
                       yaml_u(ps->context_mark.line), yaml_u(ps->context_mark.column));
}

static int yaml_text_is(const char *s, size_t len, const char *word)
{
    size_t n = strlen(word);
    return len == n && memcmp(s, word, n) == 0;
}

static int yaml_is_digits(const char *s, size_t len, int base)
{
    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        int ok = base == 16
                     ? ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
                     : (c >= '0' && c < '0' + base);
        if (!ok)
            return 0;
    }
    return 1;
}

static int yaml_is_int(const char *s, size_t len)
{
    if (len > 2 && s[0] == '0' && s[1] == 'x')
        return yaml_is_digits(s + 2, len - 2, 16);
    if (len > 2 && s[0] == '0' && s[1] == 'o')
        return yaml_is_digits(s + 2, len - 2, 8);
    if (len > 0 && (s[0] == '-' || s[0] == '+'))
        return yaml_is_digits(s + 1, len - 1, 10);
    return yaml_is_digits(s, len, 10);
}

/* [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE] [-+]? [0-9]+ )?, plus .inf and .nan. */
static int yaml_is_float(const char *s, size_t len)
{
    size_t i = 0;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        i++;
    const char *rest = s + i;
    size_t rlen = len - i;
    if (yaml_text_is(rest, rlen, ".inf") || yaml_text_is(rest, rlen, ".Inf") ||
        yaml_text_is(rest, rlen, ".INF"))
        return 1;
    if (yaml_text_is(s, len, ".nan") || yaml_text_is(s, len, ".NaN") ||
        yaml_text_is(s, len, ".NAN"))
        return 1;
    size_t digits = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        i++;
        digits++;
    }
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            i++;
            digits++;
        }
    }
    if (digits == 0)
        return 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '-' || s[i] == '+'))
            i++;
        size_t exp = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            i++;
            exp++;
        }
        if (exp == 0)
            return 0;
    }
    return i == len;
}

/* The YAML 1.2 core schema for untagged plain scalars. */
static addon_yaml_type_t yaml_resolve_plain(const char *s, size_t len)
{
    if (len == 0 || yaml_text_is(s, len, "~") || yaml_text_is(s, len, "null") ||
        yaml_text_is(s, len, "Null") || yaml_text_is(s, len, "NULL"))
        return ADDON_YAML_NULL;
    if (yaml_text_is(s, len, "true") || yaml_text_is(s, len, "True") ||
        yaml_text_is(s, len, "TRUE") || yaml_text_is(s, len, "false") ||
        yaml_text_is(s, len, "False") || yaml_text_is(s, len, "FALSE"))
        return ADDON_YAML_BOOL;
    if (yaml_is_int(s, len))
        return ADDON_YAML_INT;
    if (yaml_is_float(s, len))
        return ADDON_YAML_FLOAT;
    return ADDON_YAML_STRING;
}

static addon_yaml_node_t *yaml_node_new(addon__yaml_builder_t *b, const yaml_event_t *ev,
                                        addon_yaml_type_t type, int *rc)
{
    unsigned line = yaml_u(ev->start_mark.line);
    unsigned col = yaml_u(ev->start_mark.column);
    if (b->doc->nodes >= ADDON_YAML_MAX_NODES) {
        *rc = yaml_report(PX_ETOOBIG, b->err, b->errlen, b->doc->name, line, col,
                          "more than %d nodes", ADDON_YAML_MAX_NODES);
        return NULL;
    }
    addon_yaml_node_t *n = addon__yaml_alloc(b->doc, sizeof(*n));
    if (n == NULL) {
        *rc = yaml_report(PX_ENOMEM, b->err, b->errlen, b->doc->name, line, col, "out of memory");
        return NULL;
    }
    b->doc->nodes++;
    memset(n, 0, sizeof(*n));
    n->doc = b->doc;
    n->type = type;
    n->line = line;
    n->col = col;
    n->text = "";
    return n;
}

/* Hands a finished node to its parent, or makes it the root. */
static int yaml_emit(addon__yaml_builder_t *b, const addon_yaml_node_t *n)
{
    if (b->depth == 0) {
        b->doc->root = n;
        return 0;
    }
    if (px_grow(&b->pending, &b->cap, b->npending + 1, sizeof(*b->pending), 64, SIZE_MAX) != 0) {
        return yaml_report(PX_ENOMEM, b->err, b->errlen, b->doc->name, n->line, n->col,
                           "out of memory");
    }
    b->pending[b->npending++] = n;
    return 0;
}

static int yaml_key_cmp(const void *a, const void *b)
{
    const addon_yaml_node_t *x = *(const addon_yaml_node_t *const *)a;
    const addon_yaml_node_t *y = *(const addon_yaml_node_t *const *)b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n > 0 ? memcmp(x->text, y->text, n) : 0;
    if (c != 0)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return 0;
}

/* Keys must be scalars and unique (a duplicate would silently shadow a policy setting). */
static int yaml_check_map(addon__yaml_builder_t *b, const addon_yaml_node_t *map)
{
    for (size_t i = 0; i < map->count; i++) {
        const addon_yaml_node_t *k = map->kids[2 * i];
        if (k->type == ADDON_YAML_SEQ || k->type == ADDON_YAML_MAP) {
            return yaml_report(PX_EPARSE, b->err, b->errlen, b->doc->name, k->line, k->col,
                               "mapping keys must be scalars, got %s",
                               addon_yaml_type_name(k->type));
        }
    }
    if (map->count < 2)
        return 0;
    const addon_yaml_node_t **keys = malloc(map->count * sizeof(*keys));
    if (keys == NULL) {
        return yaml_report(PX_ENOMEM, b->err, b->errlen, b->doc->name, map->line, map->col,
                           "out of memory");
    }
    for (size_t i = 0; i < map->count; i++)
        keys[i] = map->kids[2 * i];
    qsort(keys, map->count, sizeof(*keys), yaml_key_cmp);
    int rc = 0;
    for (size_t i = 1; i < map->count; i++) {
        const addon_yaml_node_t *x = keys[i - 1];
        const addon_yaml_node_t *y = keys[i];
        if (x->len == y->len && (x->len == 0 || memcmp(x->text, y->text, x->len) == 0)) {
            char q[ADDON__YAML_QUOTE_MAX * 4 + 8];
            addon__yaml_quote(y->text, y->len, q, sizeof(q));
            rc = yaml_report(PX_EPARSE, b->err, b->errlen, b->doc->name, y->line, y->col,
                             "duplicate key %s (first at line %u, column %u)", q, x->line, x->col);
            break;
        }
    }
    free(keys);
    return rc;
}

static int yaml_on_end(addon__yaml_builder_t *b)
{
    addon__yaml_frame_t *f = &b->frames[--b->depth];
    addon_yaml_node_t *n = f->node;
    size_t nkids = b->npending - f->base;
    if (nkids > 0) {
        n->kids = addon__yaml_alloc(b->doc, nkids * sizeof(*n->kids));
        if (n->kids == NULL) {
            return yaml_report(PX_ENOMEM, b->err, b->errlen, b->doc->name, n->line, n->col,
                               "out of memory");
        }
        memcpy(n->kids, b->pending + f->base, nkids * sizeof(*n->kids));
    }
    b->npending = f->base;
    n->count = n->type == ADDON_YAML_MAP ? nkids / 2 : nkids;
    if (n->type == ADDON_YAML_MAP) {
        int rc = yaml_check_map(b, n);
        if (rc != 0)
            return rc;
    }
    return yaml_emit(b, n);
}

static int yaml_bad_tag(addon__yaml_builder_t *b, const yaml_event_t *ev, const char *tag)
{
    char q[ADDON__YAML_QUOTE_MAX * 4 + 8];
    addon__yaml_quote(tag, strlen(tag), q, sizeof(q));
    return yaml_report(PX_EPARSE, b->err, b->errlen, b->doc->name, yaml_u(ev->start_mark.line),
                       yaml_u(ev->start_mark.column), "unsupported tag %s", q);
}

static int yaml_on_scalar(addon__yaml_builder_t *b, const yaml_event_t *ev)
{
    const char *text = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    int quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    addon_yaml_type_t type;
    if (tag != NULL) {
        if (strcmp(tag, ADDON__YAML_TAG_STR) != 0)
            return yaml_bad_tag(b, ev, tag);
        type = ADDON_YAML_STRING;
    } else {
        type = quoted ? ADDON_YAML_STRING : yaml_resolve_plain(text, len);
    }
    int rc = 0;
    addon_yaml_node_t *n = yaml_node_new(b, ev, type, &rc);
    if (n == NULL)
        return rc;
    char *copy = addon__yaml_alloc(b->doc, len + 1);
    if (copy == NULL) {
        return yaml_report(PX_ENOMEM, b->err, b->errlen, b->doc->name, n->line, n->col,
                           "out of memory");
    }
    if (len > 0)
        memcpy(copy, text, len);
    copy[len] = '\0';
    n->text = copy;
    n->len = len;
    n->quoted = quoted;
    return yaml_emit(b, n);
}

static int yaml_on_start(addon__yaml_builder_t *b, const yaml_event_t *ev, addon_yaml_type_t type)
{
    const char *tag = (const char *)(type == ADDON_YAML_SEQ ? ev->data.sequence_start.tag
                                                            : ev->data.mapping_start.tag);
    const char *want = type == ADDON_YAML_SEQ ? ADDON__YAML_TAG_SEQ : ADDON__YAML_TAG_MAP;
    if (tag != NULL && strcmp(tag, want) != 0)
        return yaml_bad_tag(b, ev, tag);
    if (b->depth >= ADDON_YAML_MAX_DEPTH) {
        return yaml_report(PX_ETOOBIG, b->err, b->errlen, b->doc->name, yaml_u(ev->start_mark.line),
                           yaml_u(ev->start_mark.column), "nested deeper than %d levels",
                           ADDON_YAML_MAX_DEPTH);
    }
    int rc = 0;
    addon_yaml_node_t *n = yaml_node_new(b, ev, type, &rc);
    if (n == NULL)
        return rc;
    b->frames[b->depth].node = n;
    b->frames[b->depth].base = b->npending;
    b->depth++;
    return 0;
}

static int yaml_on_event(addon__yaml_builder_t *b, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (b->docs++ > 0) {
            return yaml_report(PX_EPARSE, b->err, b->errlen, b->doc->name,
                               yaml_u(ev->start_mark.line), yaml_u(ev->start_mark.column),
                               "only one document is allowed");
        }
        return 0;
    case YAML_ALIAS_EVENT:
        return yaml_report(PX_EPARSE, b->err, b->errlen, b->doc->name, yaml_u(ev->start_mark.line),
                           yaml_u(ev->start_mark.column), "aliases are not supported");
    case YAML_SCALAR_EVENT:
        return yaml_on_scalar(b, ev);
    case YAML_SEQUENCE_START_EVENT:
        return yaml_on_start(b, ev, ADDON_YAML_SEQ);
    case YAML_MAPPING_START_EVENT:
        return yaml_on_start(b, ev, ADDON_YAML_MAP);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (b->depth == 0)
            return 0;
        return yaml_on_end(b);
    default:
        return 0;
    }
}

int addon_yaml_load_buffer(const char *name, const char *data, size_t len, addon_yaml_doc_t **out,
                           char *err, size_t errlen)
{
    *out = NULL;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (name == NULL)
        name = "<buffer>";
    if (len > ADDON_YAML_MAX_FILE) {
        return yaml_report(PX_ETOOBIG, err, errlen, name, 1, 1, "larger than %d bytes",
                           ADDON_YAML_MAX_FILE);
    }
    addon_yaml_doc_t *doc = calloc(1, sizeof(*doc));
    if (doc == NULL)
        return PX_ENOMEM;
    doc->name = strdup(name);
    if (doc->name == NULL) {
        free(doc);
        return PX_ENOMEM;
    }
    addon__yaml_builder_t b;
    memset(&b, 0, sizeof(b));
    b.doc = doc;
    b.data = data;
    b.len = len;
    b.err = err;
    b.errlen = errlen;

    yaml_parser_t ps;
    if (!yaml_parser_initialize(&ps)) {
        addon_yaml_free(doc);
        return PX_ENOMEM;
    }
    yaml_parser_set_input_string(&ps, (const unsigned char *)(len > 0 ? data : ""), len);
    int rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&ps, &ev)) {
            rc = yaml_parser_failure(&b, &ps);
            break;
        }
        rc = yaml_on_event(&b, &ev);
        yaml_event_type_t type = ev.type;
        yaml_event_delete(&ev);
        if (rc != 0 || type == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&ps);
    free(b.pending);
    if (rc != 0) {
        addon_yaml_free(doc);
        return rc;
    }
    *out = doc;
    return 0;
}

/* Reads the whole file at path into a malloc'd buffer; 0, or a negative code with "path: why". */
int addon_yaml_read_file(const char *path, char **out, size_t *outlen, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return e == ENOENT ? PX_ENOENT : PX_EIO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a readable file", path);
        close(fd);
        return PX_EIO;
    }
    /* Sized from fstat so that a regular file is read without realloc (which would leave
     * copies of a secrets file behind). Pipes and growing files still grow by doubling. */
    size_t cap = 4096;
    if (S_ISREG(st.st_mode) && st.st_size >= 0 && st.st_size <= ADDON_YAML_MAX_FILE)
        cap = (size_t)st.st_size + 1;
    size_t len = 0;
    char *buf = malloc(cap);
    int rc = buf == NULL ? PX_ENOMEM : 0;
    while (rc == 0) {
        rc = px_grow(&buf, &cap, len + 1, 1, 4096, SIZE_MAX);
        if (rc != 0)
            break;
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = PX_EIO;
        else if (n == 0)
            break;
        else
            len += (size_t)n;
        if (len > ADDON_YAML_MAX_FILE)
            rc = PX_ETOOBIG;
    }
    int e = errno;
    close(fd);
    if (rc != 0) {
        if (rc == PX_ETOOBIG)
            snprintf(err, errlen, "%s: larger than %d bytes", path, ADDON_YAML_MAX_FILE);
        else if (rc == PX_ENOMEM)
            snprintf(err, errlen, "%s: out of memory", path);
        else
            snprintf(err, errlen, "%s: %s", path, strerror(e));
        if (buf != NULL)
            explicit_bzero(buf, len);
        free(buf);
        return rc;
    }
    *out = buf;
    *outlen = len;
    return 0;
}

int addon_yaml_load_file(const char *path, addon_yaml_doc_t **out, char *err, size_t errlen)
{
    *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    char dummy[1];
    if (err == NULL || errlen == 0) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    int rc = addon_yaml_read_file(path, &buf, &len, err, errlen);
    if (rc != 0)
        return rc;
    rc = addon_yaml_load_buffer(path, buf, len, out, err, errlen);
    explicit_bzero(buf, len); /* the file may hold secrets (replacements) */
    free(buf);
    return rc;
}
