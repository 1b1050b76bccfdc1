# The gateway image (docs/install.md, "The image"): nginx with ngx_bottle
# and the helpers under one PID 1 (scripts/bottle-init, on s6).
#
#   docker build -t ngx-bottle .
#   buildah bud --format docker -t ngx-bottle .   (OCI would drop HEALTHCHECK)
#   docker run -v /srv/bottle:/etc/ngx-bottle -p 9099:9099 ngx-bottle
#
# Built from the same scripts/install-deps.sh and make that CI uses; the
# compilers and -dev packages stay in the build stage.  t/image.t checks
# that this file and install-deps.sh agree; t/image_smoke.t builds and
# runs it.

# --- build: install-deps.sh --runtime (build tools and runtime), make of
# what make install installs (not the unit tests), make install into a
# staging root
FROM debian:12-slim AS build

WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN scripts/install-deps.sh --runtime && rm -rf /var/lib/apt/lists/*

COPY . .
RUN make -j"$(nproc)" module ctl gitgate supervise \
    && make install DESTDIR=/out PREFIX=/usr/local RESOLVER=127.0.0.11

# --- the gateway: install-deps.sh --installed (no compiler, no -dev
# package) and what make install wrote
FROM debian:12-slim

# perl is there for git's scripts (send-email, svn...), which git-gate
# never runs (git http-backend, receive-pack, index-pack are C): removed,
# with git's manual (docs/install.md, "What the image holds")
COPY scripts/install-deps.sh /tmp/install-deps.sh
RUN /tmp/install-deps.sh --installed \
    && dpkg --purge --force-depends perl perl-modules-5.36 libperl5.36 \
        liberror-perl git-man \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt/* \
        /var/log/dpkg.log /tmp/install-deps.sh

COPY --from=build /out/ /

# Non-root entirely: the gateway's ports (9099, 9100, 9420) are above
# 1024, nginx's master needs no privilege to bind them, and without root it
# runs its workers as itself.  The uid is fixed so that a volume's files
# can be given to it.
RUN groupadd --system --gid 9099 bottle \
    && useradd --system --uid 9099 --gid bottle --no-create-home \
        --home-dir /var/lib/ngx-bottle --shell /usr/sbin/nologin bottle \
    && mkdir -p /etc/ngx-bottle/ca /run/ngx-bottle /var/log/ngx-bottle \
        /var/lib/ngx-bottle \
    && chown bottle:bottle /run/ngx-bottle /var/log/ngx-bottle \
        /var/lib/ngx-bottle

# bottle-init's settings (docs/install.md); the policy, the CA and the
# forges come from the volume, or the policy from BOTTLE_STORE.  Every log
# line on bottle-init's stdout, each daemon's name in front: nginx's
# access logs too (BOTTLE_ACCESS_LOG)
ENV BOTTLE_GATEWAY_DAEMONS=nginx \
    BOTTLE_ACCESS_LOG=stdout \
    BOTTLE_POLICY=/etc/ngx-bottle/policy.json \
    BOTTLE_CA_DIR=/etc/ngx-bottle/ca \
    BOTTLE_LISTEN=0.0.0.0:9099 \
    BOTTLE_GITGATE_LISTEN=0.0.0.0:9420 \
    BOTTLE_RUN_DIR=/run/ngx-bottle \
    BOTTLE_LOG_DIR=/var/log/ngx-bottle \
    BOTTLE_STATE_DIR=/var/lib/ngx-bottle

VOLUME ["/etc/ngx-bottle", "/var/lib/ngx-bottle"]
EXPOSE 9099 9100 9420

USER bottle

# the proxy answers (a request without credentials gets the module's
# 407) and every daemon is up
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/bottle-init", "health"]

ENTRYPOINT ["/usr/local/bin/bottle-init"]
