#ifndef ARIATA_CQRENCODE_SHIM_H
#define ARIATA_CQRENCODE_SHIM_H
/* libqrencode: the QR code `onboard --link` shows for the device id (docs/install.md).
   Nothing here needs a wrapper; the header is the module's entry point. */
#include <qrencode.h>
#endif
