# Build, install and uninstall ariata-agent as a system service.
#   make                 release build (as yourself, not as root): the agent, and the iroh
#                        bridge (the way to a Virtues box) when scripts/fetch-iroh.sh has put
#                        its library in .iroh/<arch>/lib (scripts/install-deps.sh runs it)
#   sudo make install    installs what `make` built: binary, unit, service user, example
#                        config (kept if present), and the bridge with its library in
#                        $(PREFIX)/lib/ariata-agent (linked beside the binary, where the agent
#                        looks for it); it never builds, so nothing is built as root
#   sudo make uninstall  stops and removes the service, binary and bridge; keeps config and data
#   sudo make purge      also removes /etc/ariata, /var/lib/ariata and the user
#   make install-user    a user service for your own account (no root)
#   make deb             the Debian package ariata-agent_<version>_<arch>.deb (scripts/build-deb.sh)
#   sudo make debs       the Debian 12 amd64, Debian 13 amd64 and Debian 13 arm64 packages
#                        (scripts/build-debs.sh; Debian 13's Swift in a debootstrap root)
#   sudo make test-debs  the Debian 13 packages, each in a clean root of its kind (arm64 under qemu)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
UNITDIR ?= /etc/systemd/system
SYSUSERSDIR ?= /etc/sysusers.d
CONFDIR ?= /etc/ariata
# The bridge and its library, together: the bridge finds the library beside itself ($ORIGIN).
PKGLIBDIR ?= $(PREFIX)/lib/ariata-agent
SWIFT ?= swift
# Where Package.swift links the bridge against the iroh library (scripts/fetch-iroh.sh).
IROH_ARCH := $(if $(filter aarch64 arm64,$(shell uname -m)),arm64,amd64)
IROH_LIB := $(if $(ARIATA_IROH_LIB_DIR),$(ARIATA_IROH_LIB_DIR),.iroh/$(IROH_ARCH)/lib)/libiroh_ffi.so
BRIDGE := ariata-iroh-bridge

.PHONY: all build install uninstall purge install-user test demo deps deb test-deb debs test-debs

all: build

deps:
	bash scripts/install-deps.sh --build-only

build:
	$(SWIFT) build -c release --product ariata-agent
	@if [ -f $(IROH_LIB) ]; then \
	  echo "$(SWIFT) build -c release --product $(BRIDGE)"; \
	  $(SWIFT) build -c release --product $(BRIDGE); \
	else \
	  echo "make: $(BRIDGE) (the way to a Virtues box) is not built: $(IROH_LIB) is missing. Run scripts/fetch-iroh.sh, then make again."; \
	fi

install:
	@test -x .build/release/ariata-agent || { \
	  echo "make install: .build/release/ariata-agent is not built. Build it as yourself first:" >&2; \
	  echo "  make && sudo make install" >&2; exit 1; }
	install -D -m 0755 .build/release/ariata-agent $(DESTDIR)$(BINDIR)/ariata-agent
	@if [ -x .build/release/$(BRIDGE) ] && [ -f $(IROH_LIB) ]; then \
	  set -x; \
	  install -D -m 0755 .build/release/$(BRIDGE) $(DESTDIR)$(PKGLIBDIR)/$(BRIDGE); \
	  install -m 0644 $(IROH_LIB) $(DESTDIR)$(PKGLIBDIR)/libiroh_ffi.so; \
	  ln -sfn $(PKGLIBDIR)/$(BRIDGE) $(DESTDIR)$(BINDIR)/$(BRIDGE); \
	else \
	  echo "make install: $(BRIDGE) is not built, so this agent cannot reach a Virtues box (Ariata and Virtues servers need no bridge)."; \
	  echo "  To add it: scripts/fetch-iroh.sh && make (as yourself), then sudo make install again."; \
	fi
	sed 's|/usr/local/bin/ariata-agent|$(BINDIR)/ariata-agent|' systemd/ariata-agent.service > ariata-agent.service.tmp
	install -D -m 0644 ariata-agent.service.tmp $(DESTDIR)$(UNITDIR)/ariata-agent.service
	rm -f ariata-agent.service.tmp
	install -D -m 0644 systemd/ariata-agent.sysusers $(DESTDIR)$(SYSUSERSDIR)/ariata-agent.conf
	install -d -m 0750 $(DESTDIR)$(CONFDIR)
	test -e $(DESTDIR)$(CONFDIR)/agent.toml || install -m 0600 etc/agent.toml $(DESTDIR)$(CONFDIR)/agent.toml
	@if [ -z "$(DESTDIR)" ]; then \
	  if command -v systemd-sysusers >/dev/null; then systemd-sysusers $(SYSUSERSDIR)/ariata-agent.conf; \
	  else id ariata >/dev/null 2>&1 || useradd --system --home-dir /var/lib/ariata --shell /usr/sbin/nologin --user-group ariata; \
	       usermod -aG audio,dialout ariata; fi; \
	  chown -R ariata:ariata $(CONFDIR); \
	  if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi; \
	  echo "installed. Next: sudo ariata-agent onboard   (it writes $(CONFDIR)/agent.toml and starts the service)"; \
	fi

uninstall:
	-@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl disable --now ariata-agent 2>/dev/null; fi
	rm -f $(DESTDIR)$(BINDIR)/ariata-agent $(DESTDIR)$(UNITDIR)/ariata-agent.service $(DESTDIR)$(SYSUSERSDIR)/ariata-agent.conf
	rm -f $(DESTDIR)$(BINDIR)/$(BRIDGE) $(DESTDIR)$(PKGLIBDIR)/$(BRIDGE) $(DESTDIR)$(PKGLIBDIR)/libiroh_ffi.so
	-rmdir $(DESTDIR)$(PKGLIBDIR) 2>/dev/null
	-@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi
	@echo "removed the service, the binary and the bridge; kept $(CONFDIR) and /var/lib/ariata (make purge removes them)"

purge: uninstall
	rm -rf $(DESTDIR)$(CONFDIR) $(DESTDIR)/var/lib/ariata
	-@if [ -z "$(DESTDIR)" ]; then userdel ariata 2>/dev/null; fi

install-user: build
	install -D -m 0755 .build/release/ariata-agent $(HOME)/.local/bin/ariata-agent
	@if [ -x .build/release/$(BRIDGE) ] && [ -f $(IROH_LIB) ]; then \
	  set -x; \
	  install -D -m 0755 .build/release/$(BRIDGE) $(HOME)/.local/lib/ariata-agent/$(BRIDGE); \
	  install -m 0644 $(IROH_LIB) $(HOME)/.local/lib/ariata-agent/libiroh_ffi.so; \
	  ln -sfn $(HOME)/.local/lib/ariata-agent/$(BRIDGE) $(HOME)/.local/bin/$(BRIDGE); \
	fi
	install -D -m 0644 systemd/user/ariata-agent.service $(HOME)/.config/systemd/user/ariata-agent.service
	install -d -m 0700 $(HOME)/.config/ariata $(HOME)/.local/state/ariata
	@echo "installed for $(USER). Next: ariata-agent onboard --user-service   (it writes ~/.config/ariata/agent.toml and starts the user service)"

test:
	bash scripts/test.sh

deb:
	bash scripts/build-deb.sh

test-deb:
	bash scripts/test-deb.sh

debs:
	bash scripts/build-debs.sh

test-debs:
	bash scripts/test-debs.sh

demo:
	bash scripts/demo.sh
