/* Fuzzes the sandbox.conf reader (px_sandbox.h) with arbitrary bytes: it accepts or refuses
 * with a reason, and what it accepts holds 1..PX_SB_SOURCES_MAX sources. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/px_sandbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > PX_SB_CONF_MAX)
        return 0;
    char *text = malloc(size + 1);
    px_sandbox_t *sb = calloc(1, sizeof(*sb));
    if (text == NULL || sb == NULL)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    char err[200] = "";
    int rc = px_sandbox_conf_parse(sb, text, err, sizeof(err));
    if (rc == 0 && (sb->scope.nsrc == 0 || sb->scope.nsrc > PX_SB_SOURCES_MAX))
        __builtin_trap();
    if (rc != 0 && err[0] == '\0')
        __builtin_trap();
    free(text);
    free(sb);
    return 0;
}
