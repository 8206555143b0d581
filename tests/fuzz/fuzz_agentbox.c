/* Fuzzes the agentbox reader: toml++ through the C++ bridge (addon_agentbox_toml.cpp) into the
 * C builder (defaults, allow_hosts with ports, block_hosts removal), allow_file left unread.
 * Whatever loads goes through fuzz_common_policy.h's checks, its effective text read back. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "addons/addon_policy_int.h"
#include "base/px_err.h"
#include "fuzz_common_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    addon_policy_t *p = NULL;
    char err[512];
    int rc = addon__policy_load("fuzz.toml", text, size, ADDON_POLICY_FORMAT_AGENTBOX, 0, &p, err,
                                sizeof(err));
    if (rc != 0) {
        if (p != NULL || strlen(err) >= sizeof(err) ||
            (rc != PX_ENOMEM && strncmp(err, "fuzz.toml:", 10) != 0))
            __builtin_trap();
        return 0;
    }
    fuzz_policy_roundtrip(p, data, size);
    addon_policy_unref(p);
    return 0;
}
