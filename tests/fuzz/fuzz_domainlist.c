/* Fuzzes the domain-list reader (and format detection) with arbitrary bytes; whatever loads is
 * decided, described and printed as an effective allowlist that must load back as airlock YAML
 * and decide the same (fuzz_common_policy.h). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    (void)addon_policy_format_detect(text, size);
    addon_policy_t *p = NULL;
    char err[512];
    int rc = addon_policy_load_buffer_as("fuzz.txt", text, size, ADDON_POLICY_FORMAT_DOMAIN_LIST,
                                         &p, err, sizeof(err));
    if (rc != 0) {
        if (p != NULL || strlen(err) >= sizeof(err) || strncmp(err, "fuzz.txt:", 9) != 0)
            __builtin_trap();
        return 0;
    }
    fuzz_policy_roundtrip(p, data, size);
    addon_policy_unref(p);
    return 0;
}
