/*
 * git-gate's push scan: libgit2 reads the push's commits, trees and tags
 * through git-gate's own pack reader (gg_pack.h), ahead of its own
 * backends.  A quarantine's pack over GG_PACK_COPY is read there with
 * pread() alone; libgit2's pack backend would map it whole and fault its
 * pages in, and unmap it when the scan ends (on a VM, a twentieth of a
 * 1 MB push's CPU).  An object the reader does not have, or reads no
 * further (over GG_BLOB_MAX, a chain too deep, its memory), is left to
 * libgit2's backends as before: the repository's, then the quarantine's.
 *
 * Those backends are made as libgit2 makes them (gg_odb_open()): loose
 * objects, then packs, the repository's and the quarantine's as its
 * alternate; but a pack backend is opened when it is first asked, not
 * with the repository.  Opening one lists and stats its pack directory
 * (a dozen system calls a directory, two a push), and the reader above
 * answers for every object a push's scan asks about in a pack, so it is
 * mostly never asked.
 */

#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>

#include "gg_scan_int.h"


/* above libgit2's own backends' priorities (1 and 2) */
#define GG_ODB_PRIORITY  1000
/* libgit2's own: packs asked before loose objects */
#define GG_ODB_LOOSE     1
#define GG_ODB_PACKED    2


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


/*
 * libgit2's pack backend for a directory, opened at its first use: every
 * call libgit2 makes of a backend it cannot do without (read,
 * read_prefix, read_header, exists, exists_prefix, refresh, foreach)
 * opens it, then passes the call on.  A pack backend writes nothing.
 */
typedef struct {
    git_odb_backend   parent;
    git_odb_backend  *pack;
    char             *dir;
} gg_lazy_t;


static git_odb_backend *
gg_lazy_pack(git_odb_backend *b)
{
    gg_lazy_t  *l;

    l = (gg_lazy_t *) b;
    if (l->pack == NULL) {
        if (git_odb_backend_pack(&l->pack, l->dir) != 0) {
            l->pack = NULL;
            return NULL;
        }
        l->pack->odb = b->odb;
    }
    return l->pack;
}


static int
gg_lazy_read(void **data, size_t *len, git_object_t *type,
    git_odb_backend *b, const git_oid *id)
{
    git_odb_backend  *p;

    p = gg_lazy_pack(b);
    return p == NULL ? GIT_ERROR : p->read(data, len, type, p, id);
}


static int
gg_lazy_read_prefix(git_oid *full, void **data, size_t *len,
    git_object_t *type, git_odb_backend *b, const git_oid *id, size_t n)
{
    git_odb_backend  *p;

    p = gg_lazy_pack(b);
    return p == NULL ? GIT_ERROR
                     : p->read_prefix(full, data, len, type, p, id, n);
}


static int
gg_lazy_read_header(size_t *len, git_object_t *type, git_odb_backend *b,
    const git_oid *id)
{
    git_odb_backend  *p;

    p = gg_lazy_pack(b);
    return p == NULL ? GIT_ERROR : p->read_header(len, type, p, id);
}


static int
gg_lazy_exists(git_odb_backend *b, const git_oid *id)
{
    git_odb_backend  *p;

    p = gg_lazy_pack(b);
    return p == NULL ? GIT_ERROR : p->exists(p, id);
}


static int
gg_lazy_exists_prefix(git_oid *full, git_odb_backend *b, const git_oid *id,
    size_t n)
{
    git_odb_backend  *p;

    p = gg_lazy_pack(b);
    return p == NULL ? GIT_ERROR : p->exists_prefix(full, p, id, n);
}


static int
gg_lazy_refresh(git_odb_backend *b)
{
    gg_lazy_t  *l;

    /* not opened yet: it will list the directory as it is when it is */
    l = (gg_lazy_t *) b;
    return l->pack == NULL ? 0 : l->pack->refresh(l->pack);
}


static int
gg_lazy_foreach(git_odb_backend *b, git_odb_foreach_cb cb, void *payload)
{
    git_odb_backend  *p;

    p = gg_lazy_pack(b);
    return p == NULL ? GIT_ERROR : p->foreach(p, cb, payload);
}


static void
gg_lazy_free(git_odb_backend *b)
{
    gg_lazy_t  *l;

    l = (gg_lazy_t *) b;
    if (l->pack != NULL) {
        l->pack->free(l->pack);
    }
    free(l->dir);
    free(l);
}


/* dir's loose objects and (opened when first asked) packs added to odb,
 * as its own objects or an alternate's: 0 or -1 */
static int
gg_odb_dir(git_odb *odb, const char *dir, int alternate)
{
    gg_lazy_t        *l;
    git_odb_backend  *loose;

    if (git_odb_backend_loose(&loose, dir, -1, 0, 0, 0) != 0) {
        return -1;
    }
    if ((alternate ? git_odb_add_alternate(odb, loose, GG_ODB_LOOSE)
                   : git_odb_add_backend(odb, loose, GG_ODB_LOOSE)) != 0)
    {
        loose->free(loose);
        return -1;
    }

    l = calloc(1, sizeof(*l));
    if (l == NULL
        || git_odb_init_backend(&l->parent, GIT_ODB_BACKEND_VERSION) != 0
        || (l->dir = strdup(dir)) == NULL)
    {
        free(l);
        return -1;
    }
    l->parent.read = gg_lazy_read;
    l->parent.read_prefix = gg_lazy_read_prefix;
    l->parent.read_header = gg_lazy_read_header;
    l->parent.exists = gg_lazy_exists;
    l->parent.exists_prefix = gg_lazy_exists_prefix;
    l->parent.refresh = gg_lazy_refresh;
    l->parent.foreach = gg_lazy_foreach;
    l->parent.free = gg_lazy_free;
    if ((alternate ? git_odb_add_alternate(odb, &l->parent, GG_ODB_PACKED)
                   : git_odb_add_backend(odb, &l->parent, GG_ODB_PACKED)) != 0)
    {
        gg_lazy_free(&l->parent);
        return -1;
    }
    return 0;
}


int
gg_odb_open(git_repository *repo, const char *quarantine)
{
    int          rc;
    char         objects[4096], alt[4096];
    git_odb     *odb;
    const char  *common;

    /* an alternates file (the gate's copies have none): libgit2's own
     * odb, which follows it */
    common = git_repository_commondir(repo);
    if (common == NULL
        || (size_t) snprintf(objects, sizeof(objects), "%sobjects", common)
           >= sizeof(objects)
        || (size_t) snprintf(alt, sizeof(alt), "%s/info/alternates",
                             objects) >= sizeof(alt)
        || access(alt, F_OK) == 0)
    {
        return 1;
    }
    if (quarantine != NULL && *quarantine != '\0'
        && ((size_t) snprintf(alt, sizeof(alt), "%s/info/alternates",
                              quarantine) >= sizeof(alt)
            || access(alt, F_OK) == 0))
    {
        return 1;
    }

    if (git_odb_new(&odb) != 0) {
        return -1;
    }
    rc = gg_odb_dir(odb, objects, 0) == 0
         && (quarantine == NULL || *quarantine == '\0'
             || gg_odb_dir(odb, quarantine, 1) == 0)
         ? 0 : -1;
    if (rc == 0) {
        git_repository_set_odb(repo, odb);
    }
    git_odb_free(odb);
    return rc;
}
