#ifndef ARIATA_CALSA_SHIM_H
#define ARIATA_CALSA_SHIM_H
#include <alsa/asoundlib.h>

/* alsa-lib prints its own diagnostics to stderr; this handler drops them (ALSADiagnostics). */
static void ariata_alsa_drop_error(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

/* Drops alsa-lib's diagnostics (quiet != 0) or prints them again (0). */
static inline int ariata_alsa_quiet(int quiet) {
    return snd_lib_error_set_handler(quiet ? ariata_alsa_drop_error : NULL);
}
#endif
