/*
 * What every fuzz target shares: the entry point libFuzzer calls, and
 * CHECK(), which aborts with the broken invariant so libFuzzer keeps the
 * input.
 */

#ifndef _BOTTLE_FUZZ_H_INCLUDED_
#define _BOTTLE_FUZZ_H_INCLUDED_


#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>


#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond,         \
                    __FILE__, __LINE__);                                     \
            abort();                                                         \
        }                                                                    \
    } while (0)


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


#endif /* _BOTTLE_FUZZ_H_INCLUDED_ */
