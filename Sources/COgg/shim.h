#ifndef ARIATA_COGG_SHIM_H
#define ARIATA_COGG_SHIM_H
/* libogg: page framing for the audio journal's recovery (complete pages, end-of-stream
   flag, CRC). Nothing here needs a wrapper; the header is the module's entry point. */
#include <ogg/ogg.h>
#endif
