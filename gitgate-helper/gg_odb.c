/*
 * git-gate's push scan: libgit2 reads the push's commits, trees and tags
 * through git-gate's own pack reader (gg_pack.h), ahead of its own
 * backends.  A quarantine's pack over GG_PACK_COPY is read there with
 * pread() alone; libgit2's pack backend would map it whole and fault its
 * pages in, and unmap it when the scan ends (on a VM, a twentieth of a
 * 1 MB push's CPU).  An object the reader does not have, or reads no
 * further (over GG_BLOB_MAX, a chain too deep, its memory), is left to
 * libgit2's backends as before: the repository's, then the quarantine's.
 */

#include <stdlib.h>
#include <string.h>

#include <git2.h>
#include <git2/sys/odb_backend.h>

#include "gg_scan_int.h"


/* above libgit2's own backends' priorities (1 and 2) */
#define GG_ODB_PRIORITY  1000


typedef struct {
    git_odb_backend   parent;
    gg_pack_t        *pack;
} gg_odb_t;


static int
gg_odb_read(void **data, size_t *len, git_object_t *type,
    git_odb_backend *b, const git_oid *id)
{
    int         rc;
    char        err[256];
    void       *d;
    gg_odb_t   *o;
    gg_pobj_t  *po;

    o = (gg_odb_t *) b;
    rc = gg_pack_get(&po, o->pack, id->id, err, sizeof(err));
    if (rc == 1) {
        return GIT_ENOTFOUND;
    }
    if (rc != 0) {
        return GIT_PASSTHROUGH;
    }

    d = git_odb_backend_data_alloc(b, po->len + 1);
    if (d == NULL) {
        gg_pack_put(o->pack, po);
        return GIT_PASSTHROUGH;
    }
    memcpy(d, po->data, po->len);
    ((unsigned char *) d)[po->len] = '\0';
    *data = d;
    *len = po->len;
    /* GG_OBJ_COMMIT .. GG_OBJ_TAG are git's types, libgit2's values */
    *type = (git_object_t) po->type;
    gg_pack_put(o->pack, po);
    return 0;
}


static void
gg_odb_free(git_odb_backend *b)
{
    free(b);
}


int
gg_odb_add(git_odb *odb, gg_pack_t *pack)
{
    gg_odb_t  *o;

    o = calloc(1, sizeof(*o));
    if (o == NULL
        || git_odb_init_backend(&o->parent, GIT_ODB_BACKEND_VERSION) != 0)
    {
        free(o);
        return -1;
    }
    o->parent.read = gg_odb_read;
    o->parent.free = gg_odb_free;
    o->pack = pack;
    /* a backend of the repository's own (not an alternate), asked first */
    if (git_odb_add_backend(odb, &o->parent, GG_ODB_PRIORITY) != 0) {
        free(o);
        return -1;
    }
    return 0;
}
