
/*
 * TLS interception: the internal TLS listener presents, for every tunnel, a
 * leaf minted for the name the agent asked for (SNI, else the CONNECT
 * target), signed by the gateway CA.  The certificate is chosen by an
 * OpenSSL callback installed by the module, from a per-worker cache of
 * minted leaves (lib/bottle_mint.c), never by re-parsing PEM per
 * handshake.  A connection with no CONNECT record gets no certificate.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"


#if (NGX_HTTP_SSL)

static int ngx_http_bottle_servername(ngx_ssl_conn_t *ssl_conn, int *ad,
    void *arg);
static int ngx_http_bottle_cert(ngx_ssl_conn_t *ssl_conn, void *arg);
static ngx_int_t ngx_http_bottle_leaf_name(ngx_connection_t *c,
    ngx_ssl_conn_t *ssl_conn, ngx_str_t *out);
static bottle_mint_t *ngx_http_bottle_minter(ngx_http_bottle_srv_conf_t *bscf,
    ngx_log_t *log);
static void ngx_http_bottle_ca_cleanup(void *data);
static void ngx_http_bottle_mint_cleanup(void *data);


/* bottle_ca cert key [chain] */

char *
ngx_http_bottle_ca(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_bottle_srv_conf_t *bscf = conf;

    char                      err[1024];
    ngx_str_t                *value, chain;
    ngx_uint_t                i;
    ngx_pool_cleanup_t       *cln;
    ngx_http_ssl_srv_conf_t  *sscf;

    if (bscf->ca) {
        return "is duplicate";
    }

    value = cf->args->elts;
    ngx_str_null(&chain);

    for (i = 1; i < cf->args->nelts; i++) {
        if (ngx_conf_full_name(cf->cycle, &value[i], 1) != NGX_OK) {
            return NGX_CONF_ERROR;
        }
    }

    if (cf->args->nelts == 4) {
        chain = value[3];
    }

    if (bottle_ca_load(&bscf->ca, (char *) value[1].data,
                       (char *) value[2].data,
                       chain.len ? (char *) chain.data : NULL,
                       err, sizeof(err))
        != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "bottle_ca: %s", err);
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_http_bottle_ca_cleanup;
    cln->data = bscf->ca;

    /*
     * The server has no ssl_certificate of its own: every certificate comes
     * from the callback.  nginx creates the SSL context of such a server
     * only for ssl_reject_handshake, whose servername callback the module
     * then replaces with one that rejects nothing.
     */

    sscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_ssl_module);
    sscf->reject_handshake = 1;

    return NGX_CONF_OK;
}


/* postconfiguration: the callbacks on every server with bottle_ca */

ngx_int_t
ngx_http_bottle_tls_init(ngx_conf_t *cf)
{
    ngx_uint_t                   s;
    ngx_http_ssl_srv_conf_t     *sscf;
    ngx_http_core_srv_conf_t   **cscfp;
    ngx_http_core_main_conf_t   *cmcf;
    ngx_http_bottle_srv_conf_t  *bscf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    cscfp = cmcf->servers.elts;

    for (s = 0; s < cmcf->servers.nelts; s++) {
        bscf = cscfp[s]->ctx->srv_conf[ngx_http_bottle_module.ctx_index];

        if (bscf->ca == NULL) {
            continue;
        }

        sscf = cscfp[s]->ctx->srv_conf[ngx_http_ssl_module.ctx_index];

        if (sscf->ssl.ctx == NULL || sscf->certificates) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "\"bottle_ca\" needs a server that listens with "
                          "\"ssl\" and has no \"ssl_certificate\" of its own");
            return NGX_ERROR;
        }

        SSL_CTX_set_tlsext_servername_callback(sscf->ssl.ctx,
                                               ngx_http_bottle_servername);
        SSL_CTX_set_cert_cb(sscf->ssl.ctx, ngx_http_bottle_cert, bscf);

#if (nginx_version >= 1029002 && defined SSL_CLIENT_HELLO_SUCCESS)

        /*
         * since 1.29.2 nginx picks the server by SNI in a ClientHello
         * callback too, which ssl_reject_handshake makes refuse every
         * name: the servername callback above is the one
         */

        SSL_CTX_set_client_hello_cb(sscf->ssl.ctx, NULL, NULL);
#endif
    }

    return NGX_OK;
}


static int
ngx_http_bottle_servername(ngx_ssl_conn_t *ssl_conn, int *ad, void *arg)
{
    ngx_connection_t  *c;

    c = ngx_ssl_get_connection(ssl_conn);

    if (c->ssl->handshaked) {
        *ad = SSL_AD_NO_RENEGOTIATION;
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }

    /* the SNI is checked against the CONNECT target per request */

    return SSL_TLSEXT_ERR_OK;
}


static int
ngx_http_bottle_cert(ngx_ssl_conn_t *ssl_conn, void *arg)
{
    ngx_http_bottle_srv_conf_t *bscf = arg;

    char               err[256];
    X509              *leaf;
    EVP_PKEY          *key;
    ngx_str_t          name;
    bottle_ip_t        ip;
    size_t             cached;
    bottle_mint_t     *m;
    unsigned long      minted;
    ngx_connection_t  *c;
    STACK_OF(X509)    *chain;

    c = ngx_ssl_get_connection(ssl_conn);

    if (c->ssl->handshaked) {
        return 0;
    }

    if (ngx_http_bottle_leaf_name(c, ssl_conn, &name) != NGX_OK) {
        return 0;
    }

    m = ngx_http_bottle_minter(bscf, c->log);
    if (m == NULL) {
        return 0;
    }

    minted = bottle_mint_count(m);
    cached = bottle_mint_cached(m);

    if (bottle_mint_get(&leaf, &key, &chain, m, (const char *) name.data,
                        name.len,
                        bottle_ip_parse(&ip, (const char *) name.data,
                                        name.len) == 0,
                        err, sizeof(err))
        != 0)
    {
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "bottle: cannot mint a certificate: %s", err);
        return 0;
    }

    /* the minter is this worker's: the deltas are this call's */

    if (bottle_mint_count(m) == minted) {
        ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_LEAF_HITS);

    } else {
        ngx_bottle_metrics_add(NGX_BOTTLE_METRIC_LEAF_MINTS,
                               (ngx_atomic_int_t) (bottle_mint_count(m)
                                                   - minted));
    }

    ngx_bottle_metrics_add(NGX_BOTTLE_METRIC_LEAF_CACHED,
                           (ngx_atomic_int_t) bottle_mint_cached(m)
                           - (ngx_atomic_int_t) cached);

    if (SSL_use_certificate(ssl_conn, leaf) != 1
        || SSL_use_PrivateKey(ssl_conn, key) != 1
        || SSL_set1_chain(ssl_conn, chain) != 1)
    {
        ngx_ssl_error(NGX_LOG_ERR, c->log, 0,
                      "bottle: cannot use the minted certificate");
        return 0;
    }

    return 1;
}


/*
 * The name of the leaf: the SNI the agent sent, else the CONNECT target.
 * Either way the tunnel must have a record: no record, no certificate.
 */

static ngx_int_t
ngx_http_bottle_leaf_name(ngx_connection_t *c, ngx_ssl_conn_t *ssl_conn,
    ngx_str_t *out)
{
    ngx_str_t            key, sni;
    const char          *name;
    ngx_bottle_target_t  target;
    u_char               buf[NGX_BOTTLE_ZONE_KEY_LEN];

    if (c->proxy_protocol == NULL
        || ngx_bottle_zone_key(c, buf, sizeof(buf), &key) != NGX_OK
        || ngx_bottle_zone_find(&key, c->pool, &target) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "bottle refused: TLS on an internal listener without a "
                      "CONNECT record");
        return NGX_DECLINED;
    }

    name = SSL_get_servername(ssl_conn, TLSEXT_NAMETYPE_host_name);

    if (name == NULL || name[0] == '\0') {
        *out = target.host;
        return NGX_OK;
    }

    sni.data = (u_char *) name;
    sni.len = ngx_strlen(name);

    if (ngx_bottle_canonical_host(c->pool, sni.data, sni.len, 0, out)
        != NGX_OK)
    {
        /*
         * not a name a leaf can carry (or "host:port"): the CONNECT
         * target's; the request's SNI check then passes or refuses it
         */
        *out = target.host;
    }

    return NGX_OK;
}


/* one minter per worker, made on the first handshake that needs it */

static bottle_mint_t *
ngx_http_bottle_minter(ngx_http_bottle_srv_conf_t *bscf, ngx_log_t *log)
{
    char                 err[256];
    ngx_pool_cleanup_t  *cln;

    if (bscf->mint) {
        return bscf->mint;
    }

    cln = ngx_pool_cleanup_add(ngx_cycle->pool, 0);
    if (cln == NULL) {
        return NULL;
    }

    if (bottle_mint_create(&bscf->mint, bscf->ca, bscf->leaf_cache,
                           (long) bscf->leaf_validity, err, sizeof(err))
        != 0)
    {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "bottle: cannot create the certificate minter: %s",
                      err);
        bscf->mint = NULL;
        return NULL;
    }

    cln->handler = ngx_http_bottle_mint_cleanup;
    cln->data = bscf->mint;

    return bscf->mint;
}


static void
ngx_http_bottle_ca_cleanup(void *data)
{
    bottle_ca_free(data);
}


static void
ngx_http_bottle_mint_cleanup(void *data)
{
    /* the worker's leaves leave the gauge with it */
    ngx_bottle_metrics_add(NGX_BOTTLE_METRIC_LEAF_CACHED,
                           - (ngx_atomic_int_t) bottle_mint_cached(data));

    bottle_mint_free(data);
}


#else /* !NGX_HTTP_SSL */


char *
ngx_http_bottle_ca(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    return "needs nginx built with the http ssl module";
}


ngx_int_t
ngx_http_bottle_tls_init(ngx_conf_t *cf)
{
    return NGX_OK;
}


#endif
