/* Names shared only by the parts of the replacement map: the loader (addon_replacements.c), the
 * accessors and describe text (addon_replacements_get.c), the canary list
 * (addon_replacements_canary.c), the value_from sources (addon_replacements_from.c) and the
 * string and key helpers they share (addon_replacements_str.c). */
#ifndef ADDON_REPLACEMENTS_INT_H
#define ADDON_REPLACEMENTS_INT_H

#include <stdatomic.h>
#include <stddef.h>

#include "addons/addon_replacements.h"
#include "addons/addon_yaml.h"

struct addon_ghapp;

typedef struct addon__repl_canaries {
    addon_str_t *names; /* NUL-terminated copies */
    addon_str_t *values;
    size_t n;
    int present; /* the file had a canary list (a second one is an entry, and refused) */
} addon__repl_canaries_t;

typedef struct addon__repl_entry {
    addon_replacements_kind_t kind;
    addon_str_t surrogate;
    addon_str_t value; /* masked */
    addon_str_t from;  /* masked, from value_from: "env NAME", "file PATH", "aws_ssm ID"... */
    addon_str_t *scopes;
    size_t nscopes;
    addon_str_t *headers; /* masked */
    unsigned char *exact; /* per header pattern: no '*', '?', '[' or ']' */
    size_t nheaders;
    int allow_foreign;
    int allow_plain_http; /* the real value may go to a plain-http upstream */
    addon_str_t akid;     /* aws-sigv4 */
    addon_str_t secret;
    addon_str_t token;
    addon_str_t surrogate_token;
    struct addon_ghapp *ghapp; /* github-app */
} addon__repl_entry_t;

struct addon_replacements {
    atomic_int refs;
    char *name;
    addon__repl_entry_t *entries;
    size_t n;
    addon__repl_canaries_t canaries; /* the top-level "canaries" list */
};

/* A NUL-terminated copy of s[0..len) (lowercased when lower is set) into *out. 0 or
 * PX_ENOMEM. */
int addon__repl_dup(const char *s, size_t len, int lower, addon_str_t *out);

/* 1 when s[0..len) holds a control character other than tab: a value that goes into a request
 * header must not be able to end it or smuggle another. */
int addon__repl_has_ctl(const char *s, size_t len);

/* 0 when every key of mapping n is in allowed (NULL-terminated), else PX_ECONFIG at the key.
 * Like addon_yaml_check_keys, without quoting the key: in a damaged file a real value can end
 * up in key position ({"value", "secret"} is a mapping with two keys in YAML flow syntax). */
int addon__repl_check_keys(const addon_yaml_node_t *n, const char *const *allowed, const char *what,
                           char *err, size_t errlen);

/* The "value_from" node n (borrowed) of masked entry what ("entry[3]"): reads the real value
 * from its source (env, file, or the AWS store of addon_awssecret.h) into *out, and the
 * source as `airlock check` shows it into *src (both taken by the entry). 0; or
 * PX_ECONFIG/PX_ETOOBIG/PX_ENOMEM with "name:line:col: message" naming the entry and the
 * source, never the value (never PX_ENOENT: that means "no replacements file"). */
int addon__repl_value_from(const addon_yaml_node_t *n, const char *what, addon_str_t *out,
                           addon_str_t *src, char *err, size_t errlen);

/* 1 when a root (key, value) pair (borrowed) is the canary list: the key "canaries" and a
 * sequence (an entry is a mapping, so no file from before canaries has one). */
int addon__repl_is_canaries(const addon_yaml_node_t *key, const addon_yaml_node_t *value);

/* Parses the list n (borrowed) into c (zeroed before). 0; or PX_ECONFIG/PX_ETOOBIG/PX_ENOMEM
 * with "name:line:col: message" in err, never quoting a value; c may then hold part of the list
 * and must still be freed. */
int addon__repl_canaries_parse(const addon_yaml_node_t *n, addon__repl_canaries_t *c, char *err,
                               size_t errlen);

/* Wipes and frees what c holds. */
void addon__repl_canaries_free(addon__repl_canaries_t *c);

#endif
