/* A small YAML/JSON document loader over libyaml (JSON is read as YAML flow syntax).
 *
 * The whole document becomes a read-only tree of mappings, sequences and scalars. Each node
 * keeps its 1-based line and column so that configuration errors read "file:line:col: message".
 * Plain scalars are resolved with the YAML 1.2 core schema: null (~, null, empty), true/false,
 * integers (decimal, 0x, 0o), floats; everything else, and every quoted or block scalar, is a
 * string. So `ports: [8443]` holds an integer and `ports: ["8443"]` a string. Anchors are
 * ignored, aliases, tags other than !!str/!!map/!!seq, duplicate keys and non-scalar keys are
 * errors, as is a second document. */
#ifndef ADDON_YAML_H
#define ADDON_YAML_H

#include <stddef.h>
#include <stdint.h>

/* Hard caps. */
#define ADDON_YAML_MAX_FILE (4 * 1024 * 1024) /* bytes in one document */
#define ADDON_YAML_MAX_DEPTH 64               /* nested collections */
#define ADDON_YAML_MAX_NODES 100000           /* nodes in one document, keys included */
#define ADDON_YAML_ERR_MAX 512                /* a buffer that holds any error message */

typedef struct addon_yaml_doc addon_yaml_doc_t;
typedef struct addon_yaml_node addon_yaml_node_t;

typedef enum addon_yaml_type {
    ADDON_YAML_NULL = 0,
    ADDON_YAML_BOOL,
    ADDON_YAML_INT,
    ADDON_YAML_FLOAT,
    ADDON_YAML_STRING,
    ADDON_YAML_SEQ,
    ADDON_YAML_MAP,
} addon_yaml_type_t;

/* Parses data[0..len) (borrowed) into *out, which the caller frees with addon_yaml_free. name
 * (copied) prefixes messages. 0; PX_EPARSE (syntax, alias, tag, duplicate key, ...), PX_ETOOBIG
 * (a cap) or PX_ENOMEM, each with "name:line:col: message" written to err. */
int addon_yaml_load_buffer(const char *name, const char *data, size_t len, addon_yaml_doc_t **out,
                           char *err, size_t errlen);

/* Reads and parses the file at path (the name in messages). As addon_yaml_load_buffer, plus
 * PX_ENOENT (no such file) and PX_EIO (unreadable), reported as "path: reason". */
int addon_yaml_load_file(const char *path, addon_yaml_doc_t **out, char *err, size_t errlen);

/* Reads the whole file at path (at most ADDON_YAML_MAX_FILE bytes) into *out (malloc'd, taken
 * by the caller, not NUL-terminated) and *outlen. 0; PX_ENOENT, PX_EIO, PX_ETOOBIG or PX_ENOMEM
 * with "path: reason" in err. */
int addon_yaml_read_file(const char *path, char **out, size_t *outlen, char *err, size_t errlen);

/* Frees the document and every node in it. NULL is allowed. */
void addon_yaml_free(addon_yaml_doc_t *doc);

/* Like addon_yaml_free, but first zeroes every node and text (for documents holding secrets).
 * libyaml's own transient copies are freed by libyaml without zeroing. NULL is allowed. */
void addon_yaml_free_wipe(addon_yaml_doc_t *doc);

/* The name given at load (borrowed from doc). */
const char *addon_yaml_name(const addon_yaml_doc_t *doc);

/* The root node, or NULL when the stream holds no document (empty file, only comments). */
const addon_yaml_node_t *addon_yaml_root(const addon_yaml_doc_t *doc);

/* The node's type, and a name for messages ("a mapping", "an integer", ...). */
addon_yaml_type_t addon_yaml_type(const addon_yaml_node_t *n);
const char *addon_yaml_type_name(addon_yaml_type_t type);

/* 1-based position of the node's first character. */
unsigned addon_yaml_line(const addon_yaml_node_t *n);
unsigned addon_yaml_col(const addon_yaml_node_t *n);

/* 1 when the scalar was quoted or a block scalar (| or >), 0 when plain or not a scalar. */
int addon_yaml_quoted(const addon_yaml_node_t *n);

/* A scalar's text as written (after YAML unescaping), NUL-terminated but possibly holding NULs;
 * *len gets its length when len is not NULL. "" for collections. Borrowed from the document. */
const char *addon_yaml_text(const addon_yaml_node_t *n, size_t *len);

/* Items in a sequence or pairs in a mapping; 0 for scalars. */
size_t addon_yaml_count(const addon_yaml_node_t *n);

/* Item i of a sequence, key or value of pair i of a mapping; NULL when out of range or when n
 * has the wrong type. Borrowed from the document. */
const addon_yaml_node_t *addon_yaml_item(const addon_yaml_node_t *n, size_t i);
const addon_yaml_node_t *addon_yaml_key(const addon_yaml_node_t *n, size_t i);
const addon_yaml_node_t *addon_yaml_value(const addon_yaml_node_t *n, size_t i);

/* The value under key (exact, case-sensitive) in mapping n, or NULL. Borrowed. */
const addon_yaml_node_t *addon_yaml_get(const addon_yaml_node_t *n, const char *key);

/* Writes "name:line:col: " and the formatted message to err (truncated to errlen) and returns
 * PX_ECONFIG, so that callers can `return addon_yaml_errorf(...)`. */
int addon_yaml_errorf(const addon_yaml_node_t *n, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Typed getters: 0 and the value, or PX_ECONFIG with "name:line:col: what: expected ..., got
 * ..." in err. what labels the value in the message (e.g. "url_prefixes[0].host"); may be NULL. */
int addon_yaml_expect(const addon_yaml_node_t *n, addon_yaml_type_t type, const char *what,
                      char *err, size_t errlen);
int addon_yaml_get_string(const addon_yaml_node_t *n, const char *what, const char **s, size_t *len,
                          char *err, size_t errlen);
int addon_yaml_get_bool(const addon_yaml_node_t *n, const char *what, int *out, char *err,
                        size_t errlen);
/* Also fails when the integer is outside [min, max]. */
int addon_yaml_get_int(const addon_yaml_node_t *n, const char *what, int64_t min, int64_t max,
                       int64_t *out, char *err, size_t errlen);

/* 0 when every key of mapping n is in allowed (a NULL-terminated list), else PX_ECONFIG with
 * "name:line:col: what: unknown key 'k' (expected a, b or c)" at the offending key. */
int addon_yaml_check_keys(const addon_yaml_node_t *n, const char *const *allowed, const char *what,
                          char *err, size_t errlen);

#endif
