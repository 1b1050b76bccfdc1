/*
 * git-gate's pack reader (gg_pack.h): an entry's header, read where it
 * lies (a mapping, a pack in memory) or, for a quarantine's pack with its
 * file open (gg_packfile_t fd), with one pread() of at most GG_ENTRY_MAX
 * bytes, so that a push's scan touches no page of that pack's mapping (a
 * VM's first touch of a mapped page costs 7-14 us, its unmapping more).
 * The format, as git's Documentation/gitformat-pack.txt describes it: a
 * type and size varint, for an OFS_DELTA a negative offset to its base,
 * for a REF_DELTA its base's oid, then zlib data.  Nothing here trusts the
 * bytes.
 */

#define _GNU_SOURCE

#include <string.h>
#include <unistd.h>

#include "gg_pack_int.h"


/*
 * The header at h (the pack's byte off; have bytes there, at most end -
 * off), whose data must start before end.  Both readers' one parser: a
 * valid header takes at most 9 + GG_PACK_OIDSZ bytes, fewer than
 * GG_ENTRY_MAX, so a header read cut at GG_ENTRY_MAX is read as the
 * whole pack's would be.
 */
static int
gg_entry_parse(int *type, uint64_t *size, uint64_t *data_off,
    uint64_t *base_off, const unsigned char **base_oid,
    const unsigned char *h, uint64_t have, uint64_t off, uint64_t end)
{
    int       shift;
    uint64_t  i, s, d;
    unsigned  c;

    i = 0;
    c = h[i++];
    *type = (c >> 4) & 7;
    s = c & 15;
    shift = 4;
    while (c & 0x80) {
        if (i >= have || shift > 57) {
            return -1;
        }
        c = h[i++];
        s |= (uint64_t) (c & 0x7f) << shift;
        shift += 7;
    }
    *size = s;
    *base_off = 0;
    *base_oid = NULL;

    switch (*type) {

    case GG_OBJ_COMMIT:
    case GG_OBJ_TREE:
    case GG_OBJ_BLOB:
    case GG_OBJ_TAG:
        break;

    case GG_OBJ_OFS_DELTA:
        /* big-endian 7-bit groups, each continuation adding one */
        if (i >= have) {
            return -1;
        }
        c = h[i++];
        d = c & 0x7f;
        while (c & 0x80) {
            if (i >= have || d >= (UINT64_C(1) << 56)) {
                return -1;
            }
            c = h[i++];
            d = ((d + 1) << 7) | (c & 0x7f);
        }
        /* strictly before this entry: an ofs-delta chain cannot loop */
        if (d == 0 || d > off - GG_PACK_HDR) {
            return -1;
        }
        *base_off = off - d;
        break;

    case GG_OBJ_REF_DELTA:
        if (have - i < GG_PACK_OIDSZ) {
            return -1;
        }
        *base_oid = h + i;
        i += GG_PACK_OIDSZ;
        break;

    default:
        return -1;
    }

    if (i >= end - off) {
        return -1;
    }
    *data_off = off + i;
    return 0;
}


int
gg_pack_entry(int *type, uint64_t *size, uint64_t *data_off,
    uint64_t *base_off, const unsigned char **base_oid,
    const unsigned char *pack, size_t pack_len, uint64_t off)
{
    gg_packfile_t  f;

    memset(&f, 0, sizeof(f));
    f.pack = pack;
    f.pack_len = pack_len;
    f.fd = -1;
    return gg_packfile_entry(type, size, data_off, base_off, base_oid, NULL,
                             &f, off);
}


int
gg_packfile_entry(int *type, uint64_t *size, uint64_t *data_off,
    uint64_t *base_off, const unsigned char **base_oid,
    unsigned char hdr[GG_ENTRY_MAX], const gg_packfile_t *f, uint64_t off)
{
    uint64_t              end, have;
    const unsigned char  *h;

    if (f->pack_len < GG_PACK_HDR + GG_PACK_TRAILER) {
        return -1;
    }
    end = f->pack_len - GG_PACK_TRAILER;
    if (off < GG_PACK_HDR || off >= end) {
        return -1;
    }
    have = end - off;
    if (f->fd < 0) {
        h = f->pack + off;
    } else {
        have = have < GG_ENTRY_MAX ? have : GG_ENTRY_MAX;
        if (pread(f->fd, hdr, (size_t) have, (off_t) off) != (ssize_t) have)
        {
            return -1;
        }
        h = hdr;
    }
    return gg_entry_parse(type, size, data_off, base_off, base_oid, h, have,
                          off, end);
}
