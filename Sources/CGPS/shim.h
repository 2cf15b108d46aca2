#ifndef ARIATA_CGPS_SHIM_H
#define ARIATA_CGPS_SHIM_H
#include <gps.h>
#endif
