# ngx_bottle build.  `make` builds libbottle (build/lib/libbottle.a, from
# lib/), the module build/ngx_bottle_module.so (ngx_bottle_module/, linked
# with libbottle) against Debian's nginx-dev (configure + headers in
# /usr/share/nginx/src), and the C unit tests; `make test` runs the whole
# suite.  See docs/install.md and docs/architecture.md.

SHELL      := /bin/bash
NGX_SRC    ?= /usr/share/nginx/src
BUILD      ?= build
NGX_BUILD   = $(BUILD)/nginx
MODULE      = $(BUILD)/ngx_bottle_module.so

# Flags Debian builds its nginx with (dpkg-buildflags), so the module matches.
DEB_CC_OPT  = -g -O2 -fstack-protector-strong -Wformat \
              -Werror=format-security -fPIC -D_FORTIFY_SOURCE=2
DEB_LD_OPT  = -Wl,-z,relro -Wl,-z,now -fPIC
CC_OPT     ?=
LD_OPT     ?=
# For an nginx source tree without Debian's conf_flags: the arguments that
# make a module binary-compatible with the nginx it will be loaded into.
NGX_CONFIGURE_ARGS ?= --with-compat --with-stream=dynamic --with-http_ssl_module --with-stream_ssl_module --with-threads

LIB_SRCS    = $(wildcard lib/*.c)
LIB_HDRS    = $(wildcard lib/*.h)
LIB_OBJS    = $(patsubst lib/%.c,$(BUILD)/lib/%.o,$(LIB_SRCS))
LIBBOTTLE   = $(BUILD)/lib/libbottle.a
# libbottle is linked into the .so: the module's flags (and sanitizers)
LIB_CFLAGS  = -std=c99 -Wall -Wextra -Werror $(DEB_CC_OPT) $(CC_OPT)
UNIT_SRCS   = $(wildcard t/unit/*_test.c)
UNIT_BINS   = $(patsubst t/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))
UNIT_CFLAGS = -std=c99 -Wall -Wextra -Werror -O1 -g -Ilib
LIB_LIBS    = -lcurl -lhiredis -ljansson -lcrypto -lhs -lpcre2-8 -lz -lbrotlidec -lbrotlienc -lpthread -lm
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -Ilib

.PHONY: all lib module unit ctl ctl-asan gitgate gitgate-asan supervise \
        supervise-asan test test-asan asan fuzz clean run stop install \
        uninstall

# `make run`: a gateway on LISTEN from the shipped nginx-conf/; POLICY is
# a policy file or directory, or a store URL (redis://..., unix:/path);
# RUN_OPTS: more of scripts/bottle-gateway's options (--module, --nginx)
RUN_DIR    ?= /tmp/ngx-bottle
POLICY     ?= nginx-conf/policy.example.json
LISTEN     ?= 127.0.0.1:9099
RESOLVER   ?=
RUN_OPTS   ?=

all: lib module unit ctl gitgate supervise

lib: $(LIBBOTTLE)

$(LIBBOTTLE): $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/lib/%.o: lib/%.c $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -c -o $@ $<

# nginx's objs/Makefile does not know the .so depends on libbottle.a; the
# copy's name is this make's own (.ci/run runs make compat and make test at once)
module: $(NGX_BUILD)/objs/Makefile $(LIBBOTTLE)
	if [ $(LIBBOTTLE) -nt $(NGX_BUILD)/objs/ngx_bottle_module.so ]; then \
	    rm -f $(NGX_BUILD)/objs/ngx_bottle_module.so; fi
	$(MAKE) -C $(NGX_BUILD) -f objs/Makefile objs/ngx_bottle_module.so
	tmp=$(MODULE).$$$$.tmp; cp $(NGX_BUILD)/objs/ngx_bottle_module.so $$tmp \
	    && mv -f $$tmp $(MODULE)

# config globs ngx_bottle_module/{core,stream,http}/*.[ch]: configure again
# when the list changes
MODULE_SRCS = $(sort $(wildcard ngx_bottle_module/core/*.[ch] \
                                ngx_bottle_module/stream/*.[ch] \
                                ngx_bottle_module/http/*.[ch]))

$(BUILD)/module-sources: FORCE
	@mkdir -p $(BUILD)
	@echo '$(MODULE_SRCS)' | cmp -s - $@ || echo '$(MODULE_SRCS)' > $@

.PHONY: FORCE
FORCE:

$(NGX_BUILD)/objs/Makefile: config $(BUILD)/module-sources
	rm -rf $(NGX_BUILD)
	mkdir -p $(BUILD)
	cp -a $(NGX_SRC) $(NGX_BUILD)
	cd $(NGX_BUILD) && \
	export BOTTLE_LIBBOTTLE=$(CURDIR)/$(LIBBOTTLE) && \
	if [ -f conf_flags ]; then \
	    source ./conf_flags; args=("$${NGX_CONF_FLAGS[@]}" --with-stream=dynamic); \
	else \
	    args=($(NGX_CONFIGURE_ARGS)); \
	fi; \
	if [ -x ./configure ]; then conf=./configure; else conf=auto/configure; fi; \
	$$conf "$${args[@]}" \
	    --with-cc-opt="$(DEB_CC_OPT) $(CC_OPT)" \
	    --with-ld-opt="$(DEB_LD_OPT) $(LD_OPT)" \
	    --add-dynamic-module=$(CURDIR) >configure.log 2>&1 \
	|| { tail -30 configure.log; exit 1; }

# bottlectl, the control plane's CLI (docs/bottlectl.md): libbottle and
# hiredis; `make ctl-asan` builds build-asan/bottlectl with the sanitizers
CTL_SRCS    = $(wildcard bottlectl/*.c)
CTL_HDRS    = $(wildcard bottlectl/*.h)
CTL_CFLAGS  = -std=c99 -Wall -Wextra -Werror $(DEB_CC_OPT) $(CC_OPT) -Ilib
CTL_LIBS    = $(LIB_LIBS)

ctl: $(BUILD)/bottlectl

$(BUILD)/bottlectl: $(CTL_SRCS) $(CTL_HDRS) $(LIBBOTTLE)
	@mkdir -p $(dir $@)
	$(CC) $(CTL_CFLAGS) $(DEB_LD_OPT) $(LD_OPT) -o $@ $(CTL_SRCS) \
	    $(LIBBOTTLE) $(CTL_LIBS)

ctl-asan:
	$(MAKE) BUILD=build-asan \
	    CC_OPT="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined" \
	    LD_OPT="-fsanitize=address,undefined" ctl

# git-gate's push scan (gitgate-helper/README.md): libbottle and libgit2;
# `make gitgate-asan` builds build-asan/gitgate-scan with the sanitizers,
# `make bench-gitgate` measures it
GG_MAINS    = gitgate-helper/gitgate-scan.c gitgate-helper/gitgate-cgi.c \
              gitgate-helper/gitgate-hook.c
GG_SRCS     = $(filter-out $(GG_MAINS), $(wildcard gitgate-helper/*.c))
GG_HDRS     = $(wildcard gitgate-helper/*.h)
# the pack reader alone (its unit test, its fuzz target)
GG_PACK_SRCS = gitgate-helper/gg_pack.c gitgate-helper/gg_pack_delta.c \
               gitgate-helper/gg_pack_read.c gitgate-helper/gg_pack_ext.c \
               gitgate-helper/gg_pack_stored.c gitgate-helper/gg_pack_entry.c
GG_PACK_HDRS = gitgate-helper/gg_pack.h gitgate-helper/gg_pack_int.h
GG_CFLAGS   = -std=c99 -Wall -Wextra -Werror $(DEB_CC_OPT) $(CC_OPT) -Ilib \
              -Igitgate-helper $(shell pkg-config --cflags libgit2)
GG_LIBS     = $(shell pkg-config --libs libgit2) -lisal -lhiredis $(LIB_LIBS)

gitgate: $(BUILD)/gitgate-scan $(BUILD)/gitgate-cgi $(BUILD)/gitgate-hook

# git-gate's smart HTTP behind nginx + fcgiwrap, and the gate's
# pre-receive hook (the same binary, run as "pre-receive")
$(BUILD)/gitgate-cgi: gitgate-helper/gitgate-cgi.c $(GG_SRCS) $(GG_HDRS) \
                      $(LIBBOTTLE)
	@mkdir -p $(dir $@)
	$(CC) $(GG_CFLAGS) $(DEB_LD_OPT) $(LD_OPT) -o $@ \
	    gitgate-helper/gitgate-cgi.c $(GG_SRCS) -Wl,--as-needed \
	    $(LIBBOTTLE) $(GG_LIBS)

$(BUILD)/gitgate-scan: gitgate-helper/gitgate-scan.c $(GG_SRCS) $(GG_HDRS) \
                       $(LIBBOTTLE)
	@mkdir -p $(dir $@)
	$(CC) $(GG_CFLAGS) $(DEB_LD_OPT) $(LD_OPT) -o $@ \
	    gitgate-helper/gitgate-scan.c $(GG_SRCS) $(LIBBOTTLE) $(GG_LIBS)

# the gate's pre-receive hook as a client of the resident scanner: libc
# only, static (no loader at start-up) but with the sanitizers; with musl
# where musl-tools is installed (scripts/install-deps.sh installs it): a
# static program's start and exit cost about half a millisecond less
# than with glibc's on the dev VM, a tenth of a 1 MB push's CPU
GG_HOOK_STATIC = $(if $(findstring sanitize,$(LD_OPT)),,-static)
GG_HOOK_CC = $(if $(findstring sanitize,$(LD_OPT)),$(CC),$(if \
             $(shell command -v musl-gcc),musl-gcc,$(CC)))
$(BUILD)/gitgate-hook: gitgate-helper/gitgate-hook.c \
                       gitgate-helper/gg_scand_msg.c gitgate-helper/gg_scand.h
	@mkdir -p $(dir $@)
	$(GG_HOOK_CC) -std=c99 -Wall -Wextra -Werror $(DEB_CC_OPT) $(CC_OPT) \
	    -Igitgate-helper $(LD_OPT) $(GG_HOOK_STATIC) -o $@ \
	    gitgate-helper/gitgate-hook.c gitgate-helper/gg_scand_msg.c

# the process floor of gitgate_scan_bench: an empty program built as the
# hook is
$(BUILD)/bench_empty: bench/bench_empty.c
	@mkdir -p $(dir $@)
	$(GG_HOOK_CC) -std=c99 -Wall -Wextra -Werror $(DEB_CC_OPT) $(CC_OPT) \
	    $(LD_OPT) $(GG_HOOK_STATIC) -o $@ bench/bench_empty.c

# scan MB/s of a generated push of BENCH_GITGATE_MB (150) MB of added
# lines, per kind of change, in fast-import's pack and as a real push's
# thin pack leaves it (push-*; bench/README.md); BENCH_GITGATE_MODES picks
BENCH_GITGATE_MB ?= 150
BENCH_GITGATE_MODES ?= add append edit push-add push-append push-edit

$(BUILD)/gitgate_scan_bench: bench/gitgate_scan_bench.c $(GG_SRCS) \
                             $(GG_HDRS) $(LIBBOTTLE)
	$(CC) $(GG_CFLAGS) -o $@ bench/gitgate_scan_bench.c $(GG_SRCS) \
	    $(LIBBOTTLE) $(GG_LIBS)

.PHONY: bench-gitgate
bench-gitgate: $(BUILD)/gitgate_scan_bench $(BUILD)/bench_empty
	@for mode in $(BENCH_GITGATE_MODES); do \
	    dir=$$(mktemp -d /tmp/gitgate-bench.XXXXXX); \
	    set -- $$(python3 bench/gitgate_bench.py $$dir/r.git $$mode \
	              $(BENCH_GITGATE_MB)); \
	    echo "== $$mode: $(BENCH_GITGATE_MB) MB of added lines"; \
	    $(BUILD)/gitgate_scan_bench $$dir/r.git $$1 $$2 refs/heads/main; \
	    rm -rf $$dir; \
	done

# the push scan per text shape (issue 34), the hook's own process timed
# too (start-up included): BENCH_GITGATE_SHAPES x push-add, push-append
# (the first push after a clone, before the gate's pass over the fetched
# files: no blob tails), push-cloned (the same push after that pass,
# `gitgate-scan --tails`, unmeasured, as the gate runs it after a fill),
# push-again (an append after an earlier push appended to the same files:
# that one scanned first, unmeasured, as the gate would have, leaving its
# blob tails), push-edit, at 1 MB and at BENCH_GITGATE_SHAPE_MB (50)
BENCH_GITGATE_SHAPES ?= words code json long base64
BENCH_GITGATE_SHAPE_MODES ?= push-add push-append push-cloned push-again \
                             push-edit
BENCH_GITGATE_SHAPE_MB ?= 50
# the hook measured: the resident scanner's client (its child's CPU
# counted), or $(BUILD)/gitgate-scan, a process per push
BENCH_GITGATE_HOOK ?= $(BUILD)/gitgate-hook
# runs of each (the best one counts; the warm child's: runs pushes)
BENCH_GITGATE_RUNS ?= 5

.PHONY: bench-gitgate-shapes
bench-gitgate-shapes: $(BUILD)/gitgate_scan_bench $(BUILD)/gitgate-scan \
                      $(BUILD)/gitgate-hook $(BUILD)/bench_empty
	@for shape in $(BENCH_GITGATE_SHAPES); do \
	  for mode in $(BENCH_GITGATE_SHAPE_MODES); do \
	    for mb in 1 $(BENCH_GITGATE_SHAPE_MB); do \
	      dir=$$(mktemp -d /tmp/gitgate-bench.XXXXXX); \
	      gen=$$mode; [ $$mode != push-cloned ] || gen=push-append; \
	      set -- $$(python3 bench/gitgate_bench.py $$dir/r.git $$gen \
	                $$mb $$shape); \
	      if [ $$mode = push-cloned ]; then \
	        $(BUILD)/gitgate-scan --tails $$dir/r.git > /dev/null; \
	      fi; \
	      if [ -n "$$3" ]; then \
	        git -C $$dir/r.git update-ref refs/heads/main $$3; \
	        BENCH_KEEP_TAILS=1 $(BUILD)/gitgate_scan_bench $$dir/r.git \
	            $$3 $$1 refs/heads/main 1 > /dev/null; \
	        git -C $$dir/r.git update-ref refs/heads/main $$1; \
	      fi; \
	      echo "== $$shape $$mode: $$mb MB of added lines"; \
	      HOOK=$(BENCH_GITGATE_HOOK) $(BUILD)/gitgate_scan_bench \
	          $$dir/r.git $$1 $$2 refs/heads/main $(BENCH_GITGATE_RUNS); \
	      rm -rf $$dir; \
	    done; \
	  done; \
	done

# a 100 MB clone through git-gate next to one straight from the fake
# forge (t/gitgate_clone_bench.t; BENCH_GITGATE_CLONE_MB)
.PHONY: bench-gitgate-clone
bench-gitgate-clone: module gitgate
	BENCH_GITGATE_CLONE=1 prove -v t/gitgate_clone_bench.t

# a push of 50 MB of new text through git-gate next to one straight to the
# fake forge (t/gitgate_push_bench.t; BENCH_GITGATE_PUSH_MB)
.PHONY: bench-gitgate-push
bench-gitgate-push: module gitgate
	BENCH_GITGATE_PUSH=1 prove -v t/gitgate_push_bench.t

gitgate-asan:
	$(MAKE) BUILD=build-asan \
	    CC_OPT="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined" \
	    LD_OPT="-fsanitize=address,undefined" gitgate

# The operator page's files (supervise-helper/operator/, docs/supervise.md)
# embedded in supervise-helper as C arrays (xxd -i)
OP_ASSETS   = supervise-helper/operator/index.html \
              supervise-helper/operator/app.js \
              supervise-helper/operator/style.css
OP_EMBED    = $(BUILD)/supervise/sv_operator_assets.c

$(OP_EMBED): $(OP_ASSETS)
	@mkdir -p $(dir $@)
	for f in $(OP_ASSETS); do \
	    xxd -i -n sv_operator_$$(basename $$f | tr . _) $$f \
	    | sed 's/^unsigned/const unsigned/' || exit 1; \
	done > $@.tmp
	mv -f $@.tmp $@

# supervise-helper, the agent's MCP server (docs/supervise.md):
# libbottle, libmicrohttpd and hiredis; `make supervise-asan` builds
# build-asan/supervise-helper with the sanitizers
SV_SRCS     = $(wildcard supervise-helper/*.c)
SV_HDRS     = $(wildcard supervise-helper/*.h)
SV_CFLAGS   = -std=c99 -Wall -Wextra -Werror $(DEB_CC_OPT) $(CC_OPT) -Ilib \
              -Isupervise-helper
SV_LIBS     = -lmicrohttpd $(LIB_LIBS)

supervise: $(BUILD)/supervise-helper

$(BUILD)/supervise-helper: $(SV_SRCS) $(SV_HDRS) $(OP_EMBED) $(LIBBOTTLE)
	@mkdir -p $(dir $@)
	$(CC) $(SV_CFLAGS) $(DEB_LD_OPT) $(LD_OPT) -o $@ $(SV_SRCS) \
	    $(OP_EMBED) $(LIBBOTTLE) $(SV_LIBS)

supervise-asan:
	$(MAKE) BUILD=build-asan \
	    CC_OPT="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined" \
	    LD_OPT="-fsanitize=address,undefined" supervise

unit: $(UNIT_BINS) $(BUILD)/unit/gg_ref_scan

# git-gate's C unit tests (also built by `make asan`)
.PHONY: unit-gitgate
unit-gitgate: $(BUILD)/unit/gg_pack_test $(BUILD)/unit/gg_delta_test \
              $(BUILD)/unit/gg_extent_test $(BUILD)/unit/gg_lmatch_test \
              $(BUILD)/unit/gg_tail_test $(BUILD)/unit/gg_ref_scan

# git-gate's pack reader: its own sources, ISA-L, zlib (the test
# builds packs); CC_OPT too, so `make BUILD=build-asan CC_OPT=... unit`
# gives build-asan/unit/gg_pack_test (t/unit/gg_pack.t)
$(BUILD)/unit/gg_pack_test: t/unit/gg_pack_test.c $(GG_PACK_SRCS) \
                            $(GG_PACK_HDRS) t/unit/tap.h t/unit/sh.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(CC_OPT) $(LD_OPT) -Igitgate-helper -o $@ $< \
	    $(GG_PACK_SRCS) -lisal -lz

# git-gate's added lines from a pack's delta: the whole scan (libgit2,
# libbottle), over packs git writes (t/unit/gg_delta.t)
$(BUILD)/unit/gg_delta_test: t/unit/gg_delta_test.c $(GG_SRCS) $(GG_HDRS) \
                             $(LIBBOTTLE) t/unit/tap.h t/unit/sh.h
	@mkdir -p $(dir $@)
	$(CC) $(GG_CFLAGS) $(LD_OPT) -o $@ $< $(GG_SRCS) $(LIBBOTTLE) $(GG_LIBS)

# git-gate's added lines from extents, neither version built, against
# git's diff (t/unit/gg_extent.t)
$(BUILD)/unit/gg_extent_test: t/unit/gg_extent_test.c $(GG_SRCS) $(GG_HDRS) \
                              $(LIBBOTTLE) t/unit/tap.h t/unit/sh.h \
                              t/unit/gg_added.h
	@mkdir -p $(dir $@)
	$(CC) $(GG_CFLAGS) $(LD_OPT) -o $@ $< $(GG_SRCS) $(LIBBOTTLE) $(GG_LIBS)

# git-gate's line matcher (gg_lmatch.c) through gg_match_lines(), against
# a reference LCS and git diff --no-index (t/unit/gg_lmatch.t)
$(BUILD)/unit/gg_lmatch_test: t/unit/gg_lmatch_test.c $(GG_SRCS) $(GG_HDRS) \
                              $(LIBBOTTLE) t/unit/tap.h t/unit/sh.h \
                              t/unit/gg_added.h
	@mkdir -p $(dir $@)
	$(CC) $(GG_CFLAGS) $(LD_OPT) -o $@ $< $(GG_SRCS) $(LIBBOTTLE) $(GG_LIBS)

# git-gate's blob tails' cache (gg_tail.c) through gg_tail_put() and
# gg_tail_get(): its bound, buckets and checks (t/unit/gg_tail.t)
$(BUILD)/unit/gg_tail_test: t/unit/gg_tail_test.c $(GG_SRCS) $(GG_HDRS) \
                            $(LIBBOTTLE) t/unit/tap.h t/unit/sh.h
	@mkdir -p $(dir $@)
	$(CC) $(GG_CFLAGS) $(LD_OPT) -o $@ $< $(GG_SRCS) $(LIBBOTTLE) $(GG_LIBS)

# the differential check's reference detectors (t/gitgate_diff.t):
# libbottle's scanner alone, no git-gate source
$(BUILD)/unit/gg_ref_scan: t/unit/gg_ref_scan.c $(LIBBOTTLE) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) $(CC_OPT) $(LD_OPT) -o $@ $< $(LIBBOTTLE) \
	    $(LIB_LIBS)

$(BUILD)/unit/%_test: t/unit/%_test.c $(LIBBOTTLE) $(LIB_HDRS) t/unit/tap.h
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) -o $@ $< $(LIBBOTTLE) $(LIB_LIBS)

# The module (and bottlectl) with AddressSanitizer and UBSan; nginx must
# then run with the sanitizer runtime preloaded (docs/install.md,
# docs/testing.md).
asan:
	$(MAKE) BUILD=build-asan \
	    CC_OPT="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined" \
	    LD_OPT="-fsanitize=address,undefined" module ctl supervise gitgate \
	    unit-gitgate

FUZZ_BINS   = $(patsubst fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard fuzz/*_fuzz.c))

fuzz: $(FUZZ_BINS)

# git-gate's ref-update parser: its own source, no libbottle
$(BUILD)/fuzz/gg_update_fuzz: fuzz/gg_update_fuzz.c fuzz/fuzz.h \
                              gitgate-helper/gg_update.c \
                              gitgate-helper/gg_update.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Igitgate-helper -o $@ $< gitgate-helper/gg_update.c

# git-gate's commit trailer reader: its own source, no libbottle
$(BUILD)/fuzz/gg_trailer_fuzz: fuzz/gg_trailer_fuzz.c fuzz/fuzz.h \
                               gitgate-helper/gg_trailer.c \
                               gitgate-helper/gg_trailer.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Igitgate-helper -o $@ $< gitgate-helper/gg_trailer.c

# git-gate's pkt-line and protocol v2 readers: their own source
$(BUILD)/fuzz/gg_pkt_fuzz: fuzz/gg_pkt_fuzz.c fuzz/fuzz.h \
                           gitgate-helper/gg_pkt.c gitgate-helper/gg_pkt.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Igitgate-helper -o $@ $< gitgate-helper/gg_pkt.c

# git-gate's blob reader: git cat-file's answers, its own source
$(BUILD)/fuzz/gg_blob_fuzz: fuzz/gg_blob_fuzz.c fuzz/fuzz.h \
                            gitgate-helper/gg_blob.c \
                            gitgate-helper/gg_blob.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Igitgate-helper -o $@ $< gitgate-helper/gg_blob.c

# git-gate's pack reader: its own sources and ISA-L
$(BUILD)/fuzz/gg_pack_fuzz: fuzz/gg_pack_fuzz.c fuzz/fuzz.h \
                            $(GG_PACK_SRCS) $(GG_PACK_HDRS) \
                            gitgate-helper/gg_blob.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Igitgate-helper -o $@ $< $(GG_PACK_SRCS) \
	    -lisal

# git-gate's raw object readers (tree entries, header lines): their own
# source
$(BUILD)/fuzz/gg_object_fuzz: fuzz/gg_object_fuzz.c fuzz/fuzz.h \
                              gitgate-helper/gg_object.c \
                              gitgate-helper/gg_object.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Igitgate-helper -o $@ $< gitgate-helper/gg_object.c

# git-gate's line matcher and the rule it feeds: the helper's sources,
# libbottle's, libgit2 (linked, not called)
$(BUILD)/fuzz/gg_lmatch_fuzz: fuzz/gg_lmatch_fuzz.c fuzz/fuzz.h $(GG_SRCS) \
                              $(GG_HDRS) $(LIB_SRCS) $(LIB_HDRS) \
                              t/unit/gg_added.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Igitgate-helper -o $@ $< $(GG_SRCS) $(LIB_SRCS) \
	    $(GG_LIBS)

# the differential check of the push scan (issue 26): gg_scan_push()
# against a reference that reads objects whole with libgit2's odb and
# uses libbottle's scanner alone
$(BUILD)/fuzz/gg_diff_fuzz: fuzz/gg_diff_fuzz.c fuzz/gg_diff_ref.c \
                            fuzz/gg_diff.h fuzz/fuzz.h $(GG_SRCS) \
                            $(GG_HDRS) $(LIB_SRCS) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Igitgate-helper -o $@ $< fuzz/gg_diff_ref.c \
	    $(GG_SRCS) $(LIB_SRCS) $(GG_LIBS)

# git-gate's decoded views (gg_decode.c): the helper's sources, libbottle's
# decoder, libgit2 (linked, not called)
$(BUILD)/fuzz/gg_decode_fuzz: fuzz/gg_decode_fuzz.c fuzz/fuzz.h $(GG_SRCS) \
                              $(GG_HDRS) $(LIB_SRCS) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Igitgate-helper -o $@ $< $(GG_SRCS) $(LIB_SRCS) \
	    $(GG_LIBS)

# supervise-helper's JSON-RPC parser: its own source, libbottle (the
# UTF-8 fix of its error messages) and jansson
$(BUILD)/fuzz/supervise_rpc_fuzz: fuzz/supervise_rpc_fuzz.c fuzz/fuzz.h \
                                  supervise-helper/sv_rpc.c \
                                  supervise-helper/supervise.h \
                                  $(LIB_SRCS) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Isupervise-helper -o $@ $< \
	    supervise-helper/sv_rpc.c $(LIB_SRCS) $(LIB_LIBS)

# the resident scanner's request parser (libc only)
$(BUILD)/fuzz/gg_scand_fuzz: fuzz/gg_scand_fuzz.c fuzz/fuzz.h \
                             gitgate-helper/gg_scand_msg.c \
                             gitgate-helper/gg_scand.h
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Igitgate-helper -o $@ $< \
	    gitgate-helper/gg_scand_msg.c

# git-gate's request path parser, with libbottle's grant grammar
$(BUILD)/fuzz/gg_path_fuzz: fuzz/gg_path_fuzz.c fuzz/fuzz.h \
                            gitgate-helper/gg_path.c \
                            gitgate-helper/gg_path.h $(LIB_SRCS) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Igitgate-helper -o $@ $< gitgate-helper/gg_path.c \
	    $(LIB_SRCS) $(LIB_LIBS)

$(BUILD)/fuzz/%_fuzz: fuzz/%_fuzz.c fuzz/fuzz.h $(LIB_SRCS) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< $(LIB_SRCS) $(LIB_LIBS)

# the suite, then the nginx-level tests again with the sanitizer build;
# two test files at a time (their ports never collide: docs/testing.md),
# which keeps CI (.ci/run) well within its 45 minutes
test: all asan
	prove -j2 --timer -r t/
	$(MAKE) --no-print-directory test-asan

# The nginx-level tests with build-asan/: Debian's nginx is not
# instrumented, so both sanitizer runtimes are preloaded into it, libasan
# first (libasan alone dies in libhs with a "real___cxa_throw" CHECK).
# docs/testing.md and docs/install.md show this recipe; t/docs.t checks
# that they show it as it is here.
test-asan: asan
	BOTTLECTL=build-asan/bottlectl \
	TEST_NGINX_MODULE=build-asan/ngx_bottle_module.so \
	GITGATE_CGI=build-asan/gitgate-cgi GITGATE_SCAN=build-asan/gitgate-scan \
	GG_PACK_TEST=build-asan/unit/gg_pack_test GG_DELTA_TEST=build-asan/unit/gg_delta_test \
	GG_EXTENT_TEST=build-asan/unit/gg_extent_test GG_LMATCH_TEST=build-asan/unit/gg_lmatch_test \
	GG_TAIL_TEST=build-asan/unit/gg_tail_test \
	SUPERVISE_HELPER=build-asan/supervise-helper \
	TEST_NGINX_PRELOAD="$$(gcc -print-file-name=libasan.so):$$(gcc -print-file-name=libubsan.so)" \
	    prove -j2 --timer t/ t/unit/gg_pack.t t/unit/gg_delta.t t/unit/gg_extent.t \
	    t/unit/gg_lmatch.t t/unit/gg_tail.t

# `make compat`: the module (--with-compat) and nginx built from each
# release source in NGINX_SOURCES, the core end-to-end files run against
# each and against Debian's nginx; a table to stdout and build/compat.md
# (scripts/nginx-compat, docs/install.md "Which nginx")
NGINX_SOURCES ?= ../shared/nginx

.PHONY: compat
compat: module ctl gitgate supervise
	scripts/nginx-compat --src $(NGINX_SOURCES) --jobs 2

run: module
	scripts/bottle-gateway start --dir $(RUN_DIR) --policy '$(POLICY)' \
	    --listen $(LISTEN) $(if $(RESOLVER),--resolver $(RESOLVER)) \
	    $(RUN_OPTS)

stop:
	scripts/bottle-gateway stop --dir $(RUN_DIR)

# `make demo`: a gateway with a local upstream, a resolver that knows only
# its name and a policy routed to it, for a machine with no network
# (scripts/bottle-demo, README.md "Try it"); DEMO_OPTS: its options
.PHONY: demo demo-stop
DEMO_DIR   ?= /tmp/ngx-bottle-demo
DEMO_OPTS  ?=

demo: module
	scripts/bottle-demo start --dir $(DEMO_DIR) $(DEMO_OPTS)

demo-stop:
	scripts/bottle-demo stop --dir $(DEMO_DIR)

# `make install` (DESTDIR and PREFIX aware; scripts/bottle-install,
# docs/install.md): the module where Debian's nginx looks, its
# modules-available snippet and the 70-mod-bottle.conf link that loads it
# after the stream module, the config pieces in /etc/nginx/bottle/ (an
# operator's edited file is kept, the new one written as FILE.dist),
# HELPER_BINS in $(PREFIX)/bin, HELPER_LIBEXEC (git-gate's gitgate-cgi,
# which fcgiwrap runs) in $(PREFIX)/lib/ngx-bottle, the helpers' systemd
# units in $(UNITDIR) and their users in $(SYSUSERSDIR) (neither enabled
# nor created: docs/install.md).  `make uninstall` removes what it wrote.
PREFIX     ?= /usr/local
DESTDIR    ?=
UNITDIR    ?= /usr/lib/systemd/system
SYSUSERSDIR ?= /usr/lib/sysusers.d
HELPER_BINS = bottlectl gitgate-scan supervise-helper
HELPER_LIBEXEC = gitgate-cgi gitgate-hook

install: module ctl gitgate supervise
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" BUILD="$(BUILD)" \
	    BINS="$(HELPER_BINS)" LIBEXEC="$(HELPER_LIBEXEC)" \
	    RESOLVER="$(RESOLVER)" UNITDIR="$(UNITDIR)" \
	    SYSUSERSDIR="$(SYSUSERSDIR)" scripts/bottle-install install

uninstall:
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" \
	    scripts/bottle-install uninstall

# `make bench`: the gateway side by side with a direct connection, plain
# nginx and mitmproxy, on loopback (bench/README.md); BENCH_QUICK=1 for a
# short smoke run
.PHONY: bench
bench: module ctl gitgate bench-journal
	python3 bench/run.py
	$(MAKE) --no-print-directory bench-gitgate-clone bench-gitgate-push \
	    bench-gitgate-shapes

# journal events/s of one writer, the chained append against a plain XADD
# in the same run (bench/journal_bench.c, bench/README.md)
BENCH_JOURNAL_EVENTS ?= 100000
.PHONY: bench-journal
bench-journal: $(BUILD)/journal_bench
	@dir=$$(mktemp -d /tmp/journal-bench.XXXXXX); \
	redis-server --port 0 --unixsocket $$dir/r.sock --save '' \
	    --appendonly no --dir $$dir --logfile $$dir/r.log & pid=$$!; \
	for i in $$(seq 50); do [ -S $$dir/r.sock ] && break; sleep 0.1; done; \
	$(BUILD)/journal_bench $$dir/r.sock $(BENCH_JOURNAL_EVENTS) 3; \
	rc=$$?; kill $$pid; wait $$pid 2>/dev/null; rm -rf $$dir; exit $$rc

$(BUILD)/journal_bench: bench/journal_bench.c $(LIBBOTTLE) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(UNIT_CFLAGS) -O2 -o $@ bench/journal_bench.c $(LIBBOTTLE) \
	    $(LIB_LIBS)

clean:
	rm -rf $(BUILD) build-asan
