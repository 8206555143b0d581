/* The C side of the GraphQL differential test (graphql_diff.py): reads records "<length>\n"
 * followed by that many bytes from stdin and prints one line per record:
 *   ok <type>:<field>,<field>[!] ...   one word per operation; '!' = a root fragment spread
 *   err                                 a syntax error
 *   cap                                 over one of the parser's caps */
#include <stdio.h>
#include <stdlib.h>

#include "addons/addon_graphql_parse.h"
#include "base/px_err.h"

static void driver_print(const addon_gql_doc_t *doc)
{
    fputs("ok", stdout);
    for (size_t i = 0; i < addon_gql_count(doc); i++) {
        const addon_gql_op_t *op = addon_gql_op(doc, i);
        printf(" %s:", addon_gql_type_name(op->type));
        for (size_t k = 0; k < op->nfields; k++)
            printf("%s%.*s", k ? "," : "", (int)op->fields[k].len, op->fields[k].base);
        if (op->root_spread)
            putchar('!');
    }
    putchar('\n');
}

int main(void)
{
    size_t len;
    while (scanf("%zu", &len) == 1 && getchar() == '\n') {
        char *buf = malloc(len + 1);
        if (buf == NULL || fread(buf, 1, len, stdin) != len)
            return 1;
        addon_gql_doc_t *doc;
        char err[256];
        int rc = addon_gql_parse(buf, len, &doc, err, sizeof(err));
        if (rc == 0)
            driver_print(doc);
        else
            puts(rc == PX_ETOOBIG ? "cap" : "err");
        addon_gql_free(doc);
        free(buf);
    }
    return 0;
}
