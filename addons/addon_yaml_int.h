/* Names shared only by the two halves of the YAML loader: addon_yaml.c (the libyaml reader that
 * builds a document) and addon_yaml_tree.c (the document it builds: its memory, the node
 * accessors, the typed getters and their messages). Nothing outside addons/ includes this. */
#ifndef ADDON_YAML_INT_H
#define ADDON_YAML_INT_H

#include <stdarg.h>
#include <stddef.h>

#include "addons/addon_yaml.h"

#define ADDON__YAML_QUOTE_MAX 64 /* bytes of a key quoted in a message */

struct addon_yaml_node {
    const addon_yaml_doc_t *doc;
    addon_yaml_type_t type;
    int quoted;
    unsigned line;
    unsigned col;
    const char *text; /* scalars; "" for collections */
    size_t len;
    const addon_yaml_node_t **kids; /* sequence items, or key, value, key, value... */
    size_t count;                   /* items, or pairs */
};

struct addon_yaml_doc {
    char *name;
    const addon_yaml_node_t *root;
    struct addon__yaml_block *blocks; /* the arena: nodes, texts and child arrays */
    size_t nodes;
};

/* size bytes, max_align_t-aligned, from the document's arena (freed with the document, never
 * one by one), or NULL when out of memory. */
void *addon__yaml_alloc(addon_yaml_doc_t *doc, size_t size);

/* Writes s[0..len) (borrowed) as 'text' with non-printable bytes as \xHH, cut at
 * ADDON__YAML_QUOTE_MAX bytes, into out (at least 8 bytes, else left untouched). */
void addon__yaml_quote(const char *s, size_t len, char *out, size_t outlen);

/* Writes "name:line:col: " and the formatted message to err (truncated to errlen); nothing when
 * err is NULL or errlen 0. */
void addon__yaml_vreport(char *err, size_t errlen, const char *name, unsigned line, unsigned col,
                         const char *fmt, va_list ap);

#endif
