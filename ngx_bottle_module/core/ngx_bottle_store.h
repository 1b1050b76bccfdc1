
/*
 * The bottles a worker serves: one entry per bottle, found by id or by
 * identity-token digest, whatever the source (the file, or the Redis
 * control plane: ngx_bottle_store_redis.c).  An entry is reference
 * counted: a request or a tunnel that found it keeps it (and its policy
 * and scanner databases) until it ends, while a change swaps a new entry
 * in for the next ones.
 */

#ifndef _NGX_BOTTLE_STORE_H_INCLUDED_
#define _NGX_BOTTLE_STORE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include "bottle_limits.h"
#include "bottle_policy.h"
#include "bottle_scan.h"
#include "bottle_store.h"


typedef struct ngx_bottle_entry_s   ngx_bottle_entry_t;
typedef struct ngx_bottle_store_s   ngx_bottle_store_t;
typedef struct ngx_bottle_waiter_s  ngx_bottle_waiter_t;

typedef void (*ngx_bottle_waiter_pt)(ngx_bottle_waiter_t *w, ngx_int_t rc);


struct ngx_bottle_waiter_s {
    ngx_queue_t              queue;
    ngx_bottle_waiter_pt     handler;
    void                    *data;
};


struct ngx_bottle_entry_s {
    ngx_rbtree_node_t        id_node;       /* key: crc32 of the id */
    ngx_rbtree_node_t        token_node;    /* key: the digest's head */
    const bottle_t          *bottle;
    bottle_policy_t         *policy;        /* owned; NULL: the cycle's */
    bottle_scan_secrets_t   *secrets;       /* NULL until compiled */
    ngx_bottle_store_t      *store;
    uint64_t                 version;
    size_t                   size;          /* bytes, for the stats */
    size_t                   json_len;      /* of its stored JSON */
    ngx_uint_t               refs;
    ngx_queue_t              waiters;       /* for the secrets */
    ngx_queue_t              lru;           /* in store->compiled */
    unsigned                 listed:1;      /* in the table */
    unsigned                 compiling:1;
    unsigned                 failed:1;      /* the secrets could not be
                                               compiled */
    unsigned                 permanent:1;   /* the file's: freed with the
                                               cycle */
};


struct ngx_bottle_store_s {
    ngx_rbtree_t             ids;
    ngx_rbtree_node_t        ids_sentinel;
    ngx_rbtree_t             tokens;
    ngx_rbtree_node_t        tokens_sentinel;
    ngx_uint_t               count;
    size_t                   bytes;         /* of listed entries */
    size_t                   json_bytes;    /* their stored JSON */
    uint64_t                 version_max;   /* highest version put */
    bottle_limits_t          limits;        /* bottle_store_limits */

    /* the store's compiled scanners, least recently used first */
    ngx_queue_t              compiled;
    ngx_uint_t               ncompiled;
    ngx_uint_t               max_compiled;  /* bottle_store_scanners */

    bottle_scan_db_t        *scan_db;
#if (NGX_THREADS)
    ngx_thread_pool_t       *thread_pool;   /* secrets compiled lazily */
#endif
    ngx_log_t               *log;

    /* the Redis source, NULL for the file */
    void                    *redis;
    ngx_msec_t               stale_max;     /* bottle_store_stale_max */
    ngx_int_t              (*usable)(ngx_bottle_store_t *st,
                                     const char **reason);
};


ngx_bottle_store_t *ngx_bottle_store_create(ngx_pool_t *pool,
    bottle_scan_db_t *db, ngx_log_t *log);

/*
 * Lists a new entry, unlisting (and releasing) the one of the same id.
 * The table keeps a reference.
 */
void ngx_bottle_store_put(ngx_bottle_store_t *st, ngx_bottle_entry_t *e);
void ngx_bottle_store_remove(ngx_bottle_store_t *st, ngx_bottle_entry_t *e);

/*
 * What the store reports up, registered from above: the bottles changed
 * (or may no longer be served from), for the open connections
 * (ngx_bottle_conns.c); and the gateway's own checks of a bottle read
 * from the store (the audit journal's, the full log's), run in order in a
 * thread, 0 or -1 with the reason in err.
 */
typedef int (*ngx_bottle_store_check_pt)(const bottle_policy_t *p,
    char *err, size_t errlen);

#define NGX_BOTTLE_STORE_CHECKS  4

void ngx_bottle_store_on_change(void (*handler)(void));
void ngx_bottle_store_changed(void);
ngx_int_t ngx_bottle_store_check_add(ngx_bottle_store_check_pt check);
int ngx_bottle_store_check(const bottle_policy_t *p, char *err,
    size_t errlen);

/* a new entry owning policy (one bottle), or NULL */
ngx_bottle_entry_t *ngx_bottle_entry_create(ngx_bottle_store_t *st,
    bottle_policy_t *policy, uint64_t version);
void ngx_bottle_entry_release(ngx_bottle_entry_t *e);
#define ngx_bottle_entry_ref(e)  if (!(e)->permanent) (e)->refs++

/* a reference until pool is destroyed */
ngx_int_t ngx_bottle_entry_hold(ngx_bottle_entry_t *e, ngx_pool_t *pool);

/*
 * The listed entry of a token or an id, without a reference (hold it if
 * it must outlive this event).  NULL with a reason when there is none, or
 * when the store cannot be trusted any more (a lost control plane, past
 * its staleness bound).
 */
ngx_bottle_entry_t *ngx_bottle_find_token(const u_char *token, size_t len,
    const char **reason);
ngx_bottle_entry_t *ngx_bottle_find_digest(const u_char *digest,
    const char **reason);
ngx_bottle_entry_t *ngx_bottle_find_id(const u_char *id, size_t len,
    const char **reason);

/* NGX_OK if the store may be served from, else NGX_DECLINED + reason */
ngx_int_t ngx_bottle_store_usable(const char **reason);

/*
 * The entry's scanner databases: NGX_OK (*out set), NGX_ERROR, or
 * NGX_AGAIN: they are being compiled in the thread pool and w->handler
 * runs when they are (w must stay valid until then: a request keeps
 * itself alive with r->main->blocked).
 */
ngx_int_t ngx_bottle_entry_secrets(ngx_bottle_entry_t *e,
    ngx_bottle_waiter_t *w, bottle_scan_secrets_t **out);

/* an entry that got its scanner another way (compiled before its swap) */
void ngx_bottle_entry_compiled(ngx_bottle_entry_t *e,
    bottle_scan_secrets_t *secrets);

/*
 * size bytes were freed (an entry, a policy read): past a megabyte in
 * all, the worker's free memory goes back to the system (malloc_trim)
 */
void ngx_bottle_store_freed(size_t size);

/* the running cycle's store */
ngx_bottle_store_t *ngx_bottle_store(void);

/* the listed entry of an id, whatever the store's state */
ngx_bottle_entry_t *ngx_bottle_store_get(ngx_bottle_store_t *st,
    const u_char *id, size_t len);


/* the Redis source (ngx_bottle_store_redis.c) */
char *ngx_bottle_store_redis_conf(ngx_conf_t *cf, ngx_bottle_store_t *st,
    ngx_str_t *value);
ngx_int_t ngx_bottle_store_redis_init_process(ngx_cycle_t *cycle,
    ngx_bottle_store_t *st);
void ngx_bottle_store_redis_exit_process(ngx_bottle_store_t *st);
const bottle_store_url_t *ngx_bottle_store_redis_url(ngx_bottle_store_t *st,
    ngx_str_t *addr);


#endif /* _NGX_BOTTLE_STORE_H_INCLUDED_ */
