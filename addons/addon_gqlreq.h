/* The envelope of a GraphQL request over HTTP, read the way the strictest of the servers behind
 * airlock would read it, for the operation allowlist (addon_graphql.h) and the GitHub App
 * repository scope (addon_ghscope.h): the JSON body (its keys once each, a bounded depth, no
 * second spelling of the four request parameters) and the URL's query parameters. */
#ifndef ADDON_GQLREQ_H
#define ADDON_GQLREQ_H

#include <jansson.h>
#include <stddef.h>

#include "addons/addon.h"

#define ADDON_GQLREQ_DEPTH_MAX 32 /* nested arrays and objects in a body (the body is 1) */

/* Reads body[0..len) (borrowed) as one JSON value. Refused (PX_EPARSE, *why one of the static
 * details below) unless it parses, nests at most ADDON_GQLREQ_DEPTH_MAX deep ("<too-deep>"),
 * has no key twice in any object at any depth ("<duplicate-key>"; keys are compared after
 * their escapes are decoded) and, when it is an object, no top-level key that a server
 * folding case could read as query, operationName, variables or extensions without being
 * spelled so ("<ambiguous-key>"). NUL bytes in strings are allowed when allow_nul. 0 and *out
 * (taken by the caller: json_decref) or PX_EPARSE ("<unparseable>" for the rest) or PX_ENOMEM.
 * A JSON array is returned like any other value: the caller decides about batches. */
int addon_gqlreq_load(const char *body, size_t len, int allow_nul, json_t **out, const char **why);

/* 1 when the parameter name name[0..len) (raw, as in the URL: percent-encoded, '+' for space)
 * is one a GraphQL server could read as query, operationName, variables or extensions: after
 * decoding %XX, %uXXXX and '+', dropping white space around it and what follows a '[' or a
 * '.' (qs, Rack and PHP nest "query[a]" and "query.a" under "query") or a NUL, compared without
 * case (also the two non-ASCII letters whose upper case is I and S). 0 otherwise. */
int addon_gqlreq_param_name(const char *name, size_t len);

/* 1 when the query of target (path + query, raw; parameters separated by '&' or ';') carries
 * such a parameter, with its raw name in *name (borrowed from target; may be NULL). 0 if not. */
int addon_gqlreq_url_params(addon_str_t target, addon_str_t *name);

#endif
