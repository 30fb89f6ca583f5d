# install.mk — the embeddable producer library, `make install` and
# `make uninstall` (included by the Makefile).
#
#   make install   [PREFIX=/usr/local] [DESTDIR=/stage] [BINDIR=...] ...
#   make uninstall (the same variables: removes exactly what install put there)
#
# Installed: the operators' programs (lapse-producer, lapse-scanner,
# lapse-scale, lapse-console) and their man pages, lapse.conf(5), the producer library
# (static, shared with its soname and development link, its headers under
# include/lapse/, lapse-producer.pc), the documentation (docs/*.md) and the
# example configs in DOCDIR, and the systemd units with the installed paths
# written in (as they are in the man pages). Not installed: lapse-kafka-dev, lapse-kafka-put/-get and
# lapse-tail, which stand in for a Kafka cluster and its tools in
# development and tests; production has the real ones (kcat,
# kafka-console-consumer).
#
# The library is built from its own -fPIC objects ($(BUILD)/pic/), so the
# programs' objects stay as they are; the static archive uses them too, so
# it links into position-independent executables and other shared objects.

PREFIX         ?= /usr/local
EXEC_PREFIX    ?= $(PREFIX)
BINDIR         ?= $(EXEC_PREFIX)/bin
LIBDIR         ?= $(EXEC_PREFIX)/lib
INCLUDEDIR     ?= $(PREFIX)/include
DATAROOTDIR    ?= $(PREFIX)/share
MANDIR         ?= $(DATAROOTDIR)/man
DOCDIR         ?= $(DATAROOTDIR)/doc/lapse
# /etc for a system install (PREFIX=/usr), PREFIX/etc otherwise (GNU).
SYSCONFDIR     ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
PKGCONFIGDIR   ?= $(LIBDIR)/pkgconfig
# systemd reads units from /usr/local/lib/systemd/system as well as /lib/...
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
INSTALL        ?= install
OBJCOPY        ?= objcopy

# The library's version: MAJOR changes with any incompatible change of
# producer.h (or the headers it includes), MINOR with additions.
LAPSE_VERSION  := 1.0.0
SO_MAJOR       := 1
SO_MINOR       := 0
SO_NAME        := liblapse-producer.so.$(SO_MAJOR)
SO_FILE        := $(SO_NAME).$(SO_MINOR)

# The library is producer/lib/ and common/ less what only programs use: the
# HTTP server of /metrics (libmicrohttpd), the Prometheus text, Kafka, the
# event's encoding.
LIB_COMMON := $(filter-out common/httpd.c common/prom.c common/kafka.c common/event.c,$(COMMON_SRC))
LIB_LDLIBS := $(filter-out -lmicrohttpd -lrdkafka -ljansson,$(LDLIBS))
PIC_OBJ   := $(patsubst %.c,$(BUILD)/pic/%.o,$(LIB_COMMON) $(PRODUCER_LIB)) \
             $(BUILD)/pic/common/lua_scripts.o
LIB_A     := $(BUILD)/lib/liblapse-producer.a
LIB_SO    := $(BUILD)/lib/$(SO_FILE)
LIB_PC    := $(BUILD)/lib/lapse-producer.pc
# What a program compiling against the library includes: producer.h and
# line.h, the one header it includes. Neither includes anything but
# <stddef.h> and <stdint.h>, so the dependencies' headers are not needed.
# The configuration is opaque to programs (lapse_config_open): its struct,
# common/config.h, is not installed, so a new config key never changes the
# library's ABI.
INSTALL_HEADERS := producer.h line.h
# Headers older installs put there (config.h until 2026-11-27, then
# lapse_config.h): removed by install and uninstall, so none stays on the
# include path.
OLD_HEADERS := config.h lapse_config.h

INSTALL_PROGRAMS := lapse-producer lapse-scanner lapse-scale lapse-console
MAN1 := man/lapse-producer.1 man/lapse-scanner.1 man/lapse-scale.1 man/lapse-console.1
MAN5 := man/lapse.conf.5
DOCS := lapse.conf.example deploy/lapse.conf.production $(wildcard docs/*.md)
UNITS := lapse-scanner@.service lapse-ingress@.service lapse-autoscale.service lapse-console.service

.PHONY: lib lib-build install uninstall
lib: lib-build $(LIB_PC)
# (make all builds the archive and the shared object, so a change that breaks
# the library breaks the build; the .pc depends on PREFIX: made at install)
lib-build: $(LIB_A) $(LIB_SO)

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (pic)")
	$(Q)$(CC) $(CFLAGS) -fPIC -c $< -o $@
$(BUILD)/pic/common/lua_scripts.o: $(BUILD)/common/lua_scripts.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS) -fPIC -c $< -o $@

# The archive is one object, linked from them all, in which only the
# symbols named lapse_* stay global: lapse's other functions (redis_open,
# config_walk, ...) cannot clash with a program's own. (0700 checks it.)
$(LIB_A): $(PIC_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@ $(BUILD)/lib/liblapse-producer.o
	$(Q)$(LD) -r -o $(BUILD)/lib/liblapse-producer.o $^
	$(Q)$(OBJCOPY) --wildcard --keep-global-symbol='lapse_*' $(BUILD)/lib/liblapse-producer.o
	$(Q)$(AR) rcs $@ $(BUILD)/lib/liblapse-producer.o

# Only the API is exported (lapse-producer.map); --no-undefined makes a
# missing object a link error here, not in the user's program.
$(LIB_SO): $(PIC_OBJ) lapse-producer.map
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) -shared -Wl,-soname,$(SO_NAME) -Wl,--version-script=lapse-producer.map \
	    -Wl,--no-undefined $(LDFLAGS) $(PIC_OBJ) $(LIB_LDLIBS) -o $@

# Paths under PREFIX are written as ${prefix}/..., so the file can be used
# where it was staged (pkg-config --define-variable=prefix=DESTDIR/PREFIX).
pc_rel = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
$(LIB_PC): lapse-producer.pc.in install.mk FORCE
	@mkdir -p $(dir $@)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(call pc_rel,$(LIBDIR))|g' \
	    -e 's|@INCLUDEDIR@|$(call pc_rel,$(INCLUDEDIR))|g' -e 's|@VERSION@|$(LAPSE_VERSION)|g' \
	    $< > $@
# (FORCE: they depend on PREFIX and friends, so they are written afresh for
# every install; not .PHONY, which would skip the pattern rule)
FORCE:
.PHONY: FORCE

# Units name the installed programs and config directory.
$(BUILD)/systemd/%.service: deploy/systemd/%.service.in FORCE
	@mkdir -p $(dir $@)
	$(Q)sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< > $@

# Man pages name the default paths (/usr/local/...); the installed ones name
# the installation's, as the units do. Their SEE ALSO names the documents
# installed in DOCDIR.
$(BUILD)/man/%: man/% FORCE
	@mkdir -p $(dir $@)
	$(Q)sed -e 's|/usr/local/etc/lapse|$(SYSCONFDIR)/lapse|g' -e 's|/usr/local/share/doc/lapse|$(DOCDIR)|g' \
	    -e 's|/usr/local/bin/|$(BINDIR)/|g' $< > $@

# The headers as installed (INSTALL_HEADERS).
$(BUILD)/include/lapse/%.h: producer/lib/%.h
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

install: all $(LIB_PC) $(UNITS:%=$(BUILD)/systemd/%) $(MAN1:%=$(BUILD)/%) $(MAN5:%=$(BUILD)/%) \
         $(INSTALL_HEADERS:%=$(BUILD)/include/lapse/%)
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	    $(DESTDIR)$(INCLUDEDIR)/lapse $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	    $(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSTEMDUNITDIR)
	$(INSTALL) -m 0755 $(INSTALL_PROGRAMS:%=$(BIN)/%) $(DESTDIR)$(BINDIR)
	$(INSTALL) -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)
	$(INSTALL) -m 0755 $(LIB_SO) $(DESTDIR)$(LIBDIR)
	ln -sf $(SO_FILE) $(DESTDIR)$(LIBDIR)/$(SO_NAME)
	ln -sf $(SO_NAME) $(DESTDIR)$(LIBDIR)/liblapse-producer.so
	$(INSTALL) -m 0644 $(LIB_PC) $(DESTDIR)$(PKGCONFIGDIR)
	$(INSTALL) -m 0644 $(INSTALL_HEADERS:%=$(BUILD)/include/lapse/%) $(DESTDIR)$(INCLUDEDIR)/lapse
	@# an older install's headers must not stay on the include path
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/lapse/,$(OLD_HEADERS))
	$(INSTALL) -m 0644 $(MAN1:%=$(BUILD)/%) $(DESTDIR)$(MANDIR)/man1
	$(INSTALL) -m 0644 $(MAN5:%=$(BUILD)/%) $(DESTDIR)$(MANDIR)/man5
	$(INSTALL) -m 0644 $(DOCS) $(DESTDIR)$(DOCDIR)
	$(INSTALL) -m 0644 $(UNITS:%=$(BUILD)/systemd/%) $(DESTDIR)$(SYSTEMDUNITDIR)
	@# the dynamic linker's cache, when installing for this very machine
	$(if $(DESTDIR),,-ldconfig 2>/dev/null)

# Only our files, and only the directories that are ours alone.
uninstall:
	rm -f $(INSTALL_PROGRAMS:%=$(DESTDIR)$(BINDIR)/%)
	rm -f $(DESTDIR)$(LIBDIR)/liblapse-producer.a $(DESTDIR)$(LIBDIR)/$(SO_FILE) \
	    $(DESTDIR)$(LIBDIR)/$(SO_NAME) $(DESTDIR)$(LIBDIR)/liblapse-producer.so
	rm -f $(DESTDIR)$(PKGCONFIGDIR)/lapse-producer.pc
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/lapse/,$(INSTALL_HEADERS) $(OLD_HEADERS))
	-rmdir $(DESTDIR)$(INCLUDEDIR)/lapse 2>/dev/null
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(MAN1)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man5/,$(notdir $(MAN5)))
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(DOCS)))
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null
	rm -f $(UNITS:%=$(DESTDIR)$(SYSTEMDUNITDIR)/%)
