#include <stdio.h>

int main(void)
{
    puts("airlock " AIRLOCK_VERSION);
    return 0;
}
