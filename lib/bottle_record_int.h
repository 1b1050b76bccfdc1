
/*
 * What the records' JSON writer (bottle_record.c) shares with their
 * scrubbing (bottle_record_scrub.c: a bottle's secrets and their encoded
 * forms, built once per record when a field can hold one) and their UTF-8
 * checks (bottle_record_utf8.c).
 */

#ifndef BOTTLE_RECORD_INT_H
#define BOTTLE_RECORD_INT_H

#include <stdint.h>
#include <string.h>

#include "bottle_record.h"


/* a secret's form the records mask: RECORD_FORM_* of bottle_record_scrub.c */
typedef struct {
    const char      *data;
    size_t           len;
    unsigned         kind;
} bottle_record_form_t;


typedef struct {
    bottle_record_form_t  *forms;
    size_t                 n;
    char                  *mem;
    size_t                 b64_min;    /* the shortest base64 form; 0: none */
    unsigned               pct:1;      /* a percent form */
    unsigned               json:1;     /* a \\u00XX form */
    unsigned               built:1;
} bottle_record_scrub_t;


/*
 * Eight bytes at a time: a word with no byte that the caller looks for is
 * passed over whole.  Each test says only whether some byte of the word
 * matches; the bytes are then looked at one by one.
 */

#define RECORD_ONES   0x0101010101010101ULL
#define RECORD_HIGHS  0x8080808080808080ULL

#define record_has_zero(x)  (((x) - RECORD_ONES) & ~(x) & RECORD_HIGHS)
#define record_has_byte(x, c)  record_has_zero((x) ^ (RECORD_ONES * (c)))
#define record_has_less(x, n)  (((x) - RECORD_ONES * (n)) & ~(x)          \
                                & RECORD_HIGHS)


static inline uint64_t
record_word(const unsigned char *p)
{
    uint64_t  w;

    memcpy(&w, p, 8);
    return w;
}


/* a body's bytes that record_escape() writes as more than themselves */

#define record_word_escapes(w)                                                \
    (record_has_less(w, 0x20) | record_has_byte(w, '"')                       \
     | record_has_byte(w, '\\') | record_has_byte(w, 0x7f))


int bottle_record_scrub_build(bottle_record_scrub_t *sc, const bottle_t *b);
void bottle_record_scrub_free(bottle_record_scrub_t *sc);
size_t bottle_record_scrub_with(const bottle_record_scrub_t *sc,
    unsigned char *buf, size_t len, int cut);
size_t bottle_record_scrub_literal(const bottle_t *b, unsigned char *buf,
    size_t len, int cut);
int bottle_record_scrub_needed(const bottle_t *b, const unsigned char *buf,
    size_t len, int cut);

size_t bottle_record_utf8(const unsigned char *buf, size_t len, int cut,
    int *whole);


#endif /* BOTTLE_RECORD_INT_H */
