#ifndef ARIATA_CCRYPTO_SHIM_H
#define ARIATA_CCRYPTO_SHIM_H
/* SHA-1 for the name-based (v5) UUIDs of batch ids: OpenSSL's libcrypto. */
#include <openssl/sha.h>
#endif
