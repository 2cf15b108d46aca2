#ifndef ARIATA_CZLIB_SHIM_H
#define ARIATA_CZLIB_SHIM_H
#include <zlib.h>
/* libcurl does not compress request bodies; the uploader's optional gzip uses zlib.
   deflateInit2 is a macro: window bits 15 + 16 asks for a gzip header and trailer
   instead of a raw zlib stream. */
static inline int ariata_deflate_init_gzip(z_stream *s, int level) {
    return deflateInit2(s, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}
#endif
