/* Fuzzer for the GraphQL executable-document parser: any input either parses or fails with
 * PX_EPARSE/PX_ETOOBIG, never crashes, leaks or reads out of bounds, and what it reports holds
 * together (each top-level field name is a GraphQL Name inside the input; with the nodes kept,
 * every node lies inside its parent's subtree [parent, end), which the scope walk relies on). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "addons/addon_graphql_parse.h"
#include "base/px_err.h"

static int fuzz_is_name(const addon_str_t *n, const uint8_t *data, size_t size)
{
    if (n->len == 0 || n->base < (const char *)data || n->base + n->len > (const char *)data + size)
        return 0;
    for (size_t i = 0; i < n->len; i++) {
        unsigned char c = (unsigned char)n->base[i];
        int ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                 (i > 0 && c >= '0' && c <= '9');
        if (!ok)
            return 0;
    }
    return 1;
}

/* The nodes of addon_gql_parse_nodes: parents before children, subtrees nested. */
static void fuzz_nodes(const uint8_t *data, size_t size)
{
    addon_gql_doc_t *doc = NULL;
    if (addon_gql_parse_nodes((const char *)data, size, &doc, NULL, 0) != 0)
        return;
    size_t n = addon_gql_node_count(doc);
    for (size_t i = 0; i < n; i++) {
        const addon_gql_node_t *a = addon_gql_node(doc, i);
        if (a->end <= i || a->end > n)
            abort();
        if (a->parent == ADDON_GQL_NONE)
            continue;
        const addon_gql_node_t *p = addon_gql_node(doc, a->parent);
        if (a->parent >= i || i >= p->end || a->end > p->end)
            abort();
    }
    addon_gql_free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_nodes(data, size);
    char err[256];
    addon_gql_doc_t *doc = NULL;
    int rc = addon_gql_parse((const char *)data, size, &doc, err, sizeof(err));
    if (rc != 0) {
        if (doc != NULL || (rc != PX_EPARSE && rc != PX_ETOOBIG && rc != PX_ENOMEM))
            abort();
        return 0;
    }
    for (size_t i = 0; i < addon_gql_count(doc); i++) {
        const addon_gql_op_t *op = addon_gql_op(doc, i);
        if (op->nfields == 0 && !op->root_spread)
            abort(); /* a selection set has at least one selection */
        for (size_t k = 0; k < op->nfields; k++) {
            if (!fuzz_is_name(&op->fields[k], data, size))
                abort();
        }
    }
    addon_gql_free(doc);
    return 0;
}
