#ifndef ARIATA_CALSA_SHIM_H
#define ARIATA_CALSA_SHIM_H
#include <alsa/asoundlib.h>
#endif
