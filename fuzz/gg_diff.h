/*
 * What gg_diff_fuzz.c (the generator, the gate's run) and gg_diff_ref.c
 * (the reference) share: the byte buffer, a reference finding, a set of
 * objects, and the reference's state and entry points.
 */

#ifndef _BOTTLE_GG_DIFF_H_INCLUDED_
#define _BOTTLE_GG_DIFF_H_INCLUDED_


#include <stddef.h>

#include <git2.h>

#include "bottle_generic.h"
#include "bottle_scan.h"
#include "gg_scan.h"


#define MAXOBJ     512


typedef struct {
    char           *b;
    size_t          len, cap;
} buf_t;

typedef struct {
    char            rule[128];
    const char     *kind;
    char            commit[GIT_OID_HEXSZ + 1];
    char            path[64];
    char            mode[8];
    buf_t           field;
} finding_t;

typedef struct {
    git_oid  oid[MAXOBJ];
    size_t   n;
} set_t;


/* gg_diff_fuzz.c: the scanners init() sets up, the reference's findings */
extern bottle_scan_t     *rs;
extern bottle_generic_t  *gen;
extern finding_t         *found;
extern size_t             nfound, capfound;

void bput(buf_t *b, const void *p, size_t len);
void bputs(buf_t *b, const char *s);

/* gg_diff_ref.c */
void walk(git_odb *odb, const git_oid *o, const set_t *stop, set_t *out);
void reference(git_odb *odb, const git_oid *base, const git_oid *tips,
    size_t ntips, const char **refs);
int matched(const gg_report_t *r, const finding_t *f);


#endif /* _BOTTLE_GG_DIFF_H_INCLUDED_ */
